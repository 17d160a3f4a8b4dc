#!/usr/bin/env node
// Node caches compiled modules on disk (their type stripping included): a second start of any
// command skips most of its compile work. Enabled before the CLI's modules load, hence the
// dynamic import; it never fails a start (an unwritable cache directory only turns it off).
import { enableCompileCache } from "node:module";

enableCompileCache();
const { main } = await import("../src/cli/main.ts");
await main();
