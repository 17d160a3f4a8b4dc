// The entry module: a few kilobytes that start the first screen's requests (early.ts), then load
// the console itself (main.tsx, React and the pages) while those requests are under way.
import { startEarly } from "./early.ts";
import "./style.css";

startEarly(Date.now());
void import("./main.tsx");
