// Ingest benchmark at several cluster sizes in one invocation (issue 30): each size runs
// bench/ingest/size.ts in its own process (the real agent there, core in a child of it, gRPC on
// loopback), so each agent's RSS is its own. Each size's sync is reported as a ratio to the
// in-process baseline measured in the same process right after it (trim + encode + decode + apply,
// no transport): the ratio is what to compare across runs and machines, not the seconds. Judged
// against the envelope of docs/scaling.md: per size a ratio, agent and core RSS goal (no goal for
// a size outside it: completing is the check). Exits 1 when a size fails or misses a goal.
//
//   npm run bench:ingest [-- --sizes 5000/150000/10000,10000/300000/20000] [--sink hub|memory]
//                        [--seconds 5] [--deadline-seconds 180] [any other option of size.ts]
//   npm run bench:ingest -- --sizes 20000/600000/40000 --deadline-seconds 600   (no goals)
import { fork } from "node:child_process";
import { loadavg, availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import { MALLOC_ENV } from "../../src/cli/heap.ts";

const { values: args, tokens } = parseArgs({
  options: {
    sizes: { type: "string", default: "5000/150000/10000,10000/300000/20000" },
    sink: { type: "string", default: "hub" },
    seconds: { type: "string", default: "5" },
    "deadline-seconds": { type: "string", default: "180" },
  },
  strict: false,
  tokens: true,
});

/** Issue 30's goals per size (nodes/pods): sync ratio to its baseline, seconds, RSS in MiB. */
const GOALS: Record<string, { ratio: number; syncS?: number; agentMiB: number; coreMiB: number }> = {
  "5000/150000": { ratio: 1.65, agentMiB: 250, coreMiB: 700 },
  "10000/300000": { ratio: 2, syncS: 12, agentMiB: 400, coreMiB: 700 },
};

interface Result {
  nodes: number;
  pods: number;
  nodeClaims: number;
  syncMs: number;
  baselineMs: number;
  ratio: number;
  agentRss: number;
  coreRss: number;
  agentSyncRss: number;
  coreSyncRss: number;
  maxLagMs: number;
}

// Every option not handled here goes to size.ts as given.
const passOn: string[] = [];
for (const t of tokens) {
  if (t.kind !== "option" || ["sizes", "sink", "seconds", "deadline-seconds"].includes(t.name)) continue;
  passOn.push(t.rawName, ...(t.value !== undefined ? [t.value] : []));
}

const sizes = String(args.sizes)
  .split(",")
  .map((s) => {
    const [nodes, pods, claims] = s.split("/").map(Number);
    if (!(nodes && nodes > 0 && pods !== undefined && pods >= 0 && claims !== undefined && claims >= 0))
      throw new Error(`--sizes: "${s}" is not nodes/pods/claims`);
    return { nodes, pods, claims };
  });

function runSize(size: { nodes: number; pods: number; claims: number }): Promise<Result> {
  return new Promise((resolve, reject) => {
    let result: Result | undefined;
    const child = fork(
      new URL("./size.ts", import.meta.url),
      [
        ...["--nodes", String(size.nodes), "--pods", String(size.pods), "--claims", String(size.claims)],
        ...["--sink", String(args.sink), "--seconds", String(args.seconds)],
        ...["--deadline-seconds", String(args["deadline-seconds"])],
        ...passOn,
      ],
      // glibc's malloc as in the image (Dockerfile, heap.ts); core's child inherits it.
      { stdio: ["ignore", "inherit", "inherit", "ipc"], env: { ...process.env, ...MALLOC_ENV } },
    );
    child.on("message", (m: { type: string }) => {
      if (m.type === "result") result = m as unknown as Result;
    });
    child.once("exit", (code) => {
      if (result && code === 0) resolve(result);
      else reject(new Error(`${size.nodes} nodes / ${size.pods} pods: the run failed (exit ${code})`));
    });
  });
}

const mib = (b: number): number => Math.round(b / 2 ** 20);
const results: Result[] = [];
const missed: string[] = [];
for (const size of sizes) {
  console.log(`\n== ${size.nodes} nodes / ${size.pods} pods / ${size.claims} NodeClaims ==`);
  try {
    results.push(await runSize(size));
  } catch (err) {
    missed.push((err as Error).message);
  }
}

console.log(`\n== summary (sink: ${args.sink}) ==`);
console.log("nodes / pods        sync s   baseline s   ratio   agent MiB   core MiB   goals");
for (const r of results) {
  const goal = GOALS[`${r.nodes}/${r.pods}`];
  const fails: string[] = [];
  if (goal) {
    if (r.ratio > goal.ratio) fails.push(`ratio ${r.ratio.toFixed(2)} > ${goal.ratio}`);
    if (goal.syncS !== undefined && r.syncMs / 1000 >= goal.syncS) fails.push(`sync ≥ ${goal.syncS} s`);
    if (mib(r.agentRss) > goal.agentMiB) fails.push(`agent > ${goal.agentMiB} MiB`);
    if (mib(r.coreRss) > goal.coreMiB) fails.push(`core > ${goal.coreMiB} MiB`);
  }
  for (const f of fails) missed.push(`${r.nodes}/${r.pods}: ${f}`);
  console.log(
    `${`${r.nodes} / ${r.pods}`.padEnd(18)}  ${(r.syncMs / 1000).toFixed(2).padStart(6)}   ` +
      `${(r.baselineMs / 1000).toFixed(2).padStart(10)}   ${r.ratio.toFixed(2).padStart(5)}×  ` +
      `${String(mib(r.agentRss)).padStart(9)}   ${String(mib(r.coreRss)).padStart(8)}   ` +
      (goal
        ? fails.length === 0
          ? `met (ratio ≤ ${goal.ratio}, agent ≤ ${goal.agentMiB}, core ≤ ${goal.coreMiB})`
          : `MISSED: ${fails.join(", ")}`
        : "none (completes)"),
  );
}
const [a, b] = results;
if (a && b && b.nodes > a.nodes) {
  console.log(
    `scaling ${a.nodes} → ${b.nodes} nodes (×${(b.nodes / a.nodes).toFixed(1)}): sync ×${(b.syncMs / a.syncMs).toFixed(2)}, ` +
      `agent RSS ×${(b.agentRss / a.agentRss).toFixed(2)}, core RSS ×${(b.coreRss / a.coreRss).toFixed(2)}`,
  );
}
console.log(
  `load average: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")} on ${availableParallelism()} CPUs`,
);
if (missed.length > 0) {
  console.log(`FAIL: ${missed.join("; ")}`);
  process.exitCode = 1;
} else console.log("PASS");
