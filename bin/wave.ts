#!/usr/bin/env node
import { main } from "../src/cli/main.ts";

await main();
