// Runs the fuzz targets and judges the outcome (used by `npm run fuzz` and by the seed run
// in `npm test`, test/unit/fuzz-seed.test.ts).
import { fuzzAdmission, fuzzIngest, fuzzPolicyApi, type TargetResult } from "./targets.ts";
import { fuzzApiRoutes } from "./api-routes.ts";
import { fuzzPlacement } from "./placement.ts";
import { fuzzWhatif } from "./whatif.ts";
import { fuzzClusterLists, fuzzCopyableCommands, fuzzProxyHeaders } from "./security.ts";

export interface FuzzReport {
  results: TargetResult[];
  /** Uncaught exceptions and unhandled rejections while the targets ran. */
  crashes: string[];
  peakRss: number;
  problems: string[];
  ok: boolean;
}

export async function runFuzz(o: {
  inputs: number;
  seed: number;
  heapBoundBytes: number;
  /** The what-if body (each valid one is two replays): its own count, 0 to leave it out. */
  whatifInputs?: number;
}): Promise<FuzzReport> {
  const crashes: string[] = [];
  const onCrash = (err: unknown): void => void crashes.push(String((err as Error).stack ?? err));
  process.on("uncaughtException", onCrash);
  process.on("unhandledRejection", onCrash);
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  const results: TargetResult[] = [];
  try {
    results.push(await fuzzPolicyApi(o.inputs, o.seed));
    results.push(await fuzzAdmission(o.inputs, o.seed + 1));
    results.push(await fuzzIngest(o.inputs, o.seed + 2));
    results.push(await fuzzApiRoutes(o.inputs, o.seed + 3));
    results.push(await fuzzPlacement(o.inputs, o.seed + 4));
    // Issue 42's targets, each a few seconds at the default inputs (capped: an oracle per input).
    results.push(await fuzzProxyHeaders(Math.min(o.inputs, 2000), o.seed + 6));
    results.push(fuzzCopyableCommands(Math.min(o.inputs, 3000), o.seed + 7));
    results.push(await fuzzClusterLists(Math.min(o.inputs, 400), o.seed + 8));
    if (o.whatifInputs) results.push(await fuzzWhatif(o.whatifInputs, o.seed + 5));
  } finally {
    clearInterval(sampler);
    process.off("uncaughtException", onCrash);
    process.off("unhandledRejection", onCrash);
  }
  const problems: string[] = [];
  for (const r of results) {
    if (r.serverErrors > 0) problems.push(`${r.target}: ${r.serverErrors} server errors`);
    if (r.heapGrowth > o.heapBoundBytes) problems.push(`${r.target}: heap kept ${r.heapGrowth} bytes`);
    if (r.heldStreams) problems.push(`${r.target}: ${r.heldStreams} answered streams still held`);
    if (r.placementViolations) problems.push(`${r.target}: ${r.placementViolations} placement violations`);
    if (r.violations) problems.push(`${r.target}: ${r.violations} violations`);
  }
  if (crashes.length > 0) problems.push(`${crashes.length} crashes`);
  return { results, crashes, peakRss, problems, ok: problems.length === 0 };
}
