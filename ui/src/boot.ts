// The entry module: a few kilobytes that start the first screen's requests (early.ts), then load
// the console itself (main.tsx, React and the pages) while those requests are under way.
import { startEarly } from "./early.ts";
// Every stylesheet in the entry (index.html links it): a stylesheet of the console's chunk would
// hold the chunk back until it has loaded (Vite preloads a dynamic import's CSS before running it).
import "uplot/dist/uPlot.min.css";
import "./style.css";

startEarly(Date.now());
void import("./main.tsx");
