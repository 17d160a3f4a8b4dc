// `npm run bench:whatif` (issue 29): what a what-if on the embedded cluster's day costs.
//
// 1. The bare simulated day: the living cluster's 24 h on the replay engine with no Wave policy
//    (the simulator, its demand, the measurement; no admission, no warmup) — the floor a replay
//    of that day cannot beat.
// 2. `wave start` on the simulator with its 24 h of history (core's store holds the day), then
//    `POST …/whatif` as the CLI and the console send it (a spot candidate for shop/api), replayed
//    in core's worker pool: the time of the two replays (current and candidate, run at once in two
//    threads), its ratio to the bare day, and the RSS the process added while they ran (sampled
//    every 50 ms).
//
// Flags: --window-hours H (default 24), --strict (exit 1 when a goal is missed: the what-if ≤ 10 s,
// RSS added ≤ 300 MiB).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startWave } from "../../src/cli/start.ts";
import type { WhatifProgressDto, WhatifReportDto } from "../../src/dashboard/dto.ts";
import { createLogger } from "../../src/shared/log.ts";
import { LIVING_SPOT_POLICIES, seedLivingCluster } from "../../src/sim/living.ts";
import { replay } from "../../src/sim/replay.ts";
import { sseEvents } from "../../src/cli/whatif.ts";
import { simulatedConfig } from "../../test/support/wave.ts";

const HOUR = 3_600_000;
const MiB = 2 ** 20;
const { values } = parseArgs({
  options: { "window-hours": { type: "string" }, strict: { type: "boolean" } },
});
const windowHours = Number(values["window-hours"] ?? 24);
const out = (s: string): void => void process.stdout.write(`${s}\n`);
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

// 1. The bare day.
const day = Date.UTC(2026, 11, 3);
let t0 = performance.now();
const cpu0 = process.cpuUsage();
const bare = await replay({
  workload: (kube) => seedLivingCluster(kube),
  policy: { spot: [], warmup: {} },
  durationMs: windowHours * HOUR,
  catalog: "aws",
  bootDelayMs: 60_000,
  spotInterruptionRate: 0.15,
  seed: 7,
  startMs: day,
  quietStepMs: 30_000,
});
const bareMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
out(
  `bare simulated day (${windowHours} h, no policy): ${(bareMs / 1000).toFixed(1)} s ` +
    `(CPU ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s) — ` +
    `${bare.nodeClaimsCreated} NodeClaims, ${bare.podStart.count} pods started, $${bare.costPerHour.toFixed(2)}/h`,
);

// 2. The embedded cluster's what-if through core.
const tmp = mkdtempSync(join(tmpdir(), "wave-bench-whatif-"));
t0 = performance.now();
const w = await startWave(
  simulatedConfig(tmp, "sim"),
  {},
  { log: createLogger({ level: "error", base: { app: "bench-whatif" } }) },
);
await w.caughtUp;
out(`wave start with 24 h of history: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const current = LIVING_SPOT_POLICIES.find((p) => p.workload.name === "api")?.threshold ?? 0;
gc();
await new Promise((r) => setTimeout(r, 500));
const rssBefore = process.memoryUsage().rss;
let rssPeak = rssBefore;
const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 50);
t0 = performance.now();
// The whole process's CPU: the worker thread's replays and core's handling of the request.
const whatifCpu0 = process.cpuUsage();
const res = await fetch(new URL("api/v1/clusters/sim/whatif", w.url), {
  method: "POST",
  headers: {
    authorization: `Bearer ${w.tokens.viewer}`,
    "content-type": "application/json",
    accept: "text/event-stream",
  },
  body: JSON.stringify({
    spot: [
      {
        workload: { kind: "Deployment", namespace: "shop", name: "api" },
        threshold: current + 3,
        strategy: "Prefer",
      },
    ],
    windowHours,
  }),
});
let report: WhatifReportDto | undefined;
let lastTenth = -1;
if (!res.body) throw new Error(`what-if answered ${res.status} without a body`);
for await (const [event, data] of sseEvents(res.body)) {
  if (event === "progress") {
    const p = data as WhatifProgressDto;
    const tenth = Math.floor(p.fraction * 10);
    if (tenth !== lastTenth)
      process.stderr.write(
        `  ${Math.floor(p.fraction * 100)} % after ${(p.elapsedMs / 1000).toFixed(1)} s, ` +
          `about ${((p.etaMs ?? 0) / 1000).toFixed(0)} s left\n`,
      );
    lastTenth = tenth;
  } else if (event === "result") report = data as WhatifReportDto;
  else if (event === "error") throw new Error(`what-if failed: ${JSON.stringify(data)}`);
}
const whatifMs = performance.now() - t0;
const whatifCpu = process.cpuUsage(whatifCpu0);
const whatifCpuS = (whatifCpu.user + whatifCpu.system) / 1e6;
const bareCpuS = (cpu.user + cpu.system) / 1e6;
clearInterval(sampler);
await w.stop();
rmSync(tmp, { recursive: true, force: true });
if (!report) throw new Error("no what-if result");

const added = (rssPeak - rssBefore) / MiB;
// Core's pool replays the candidate in a second thread while the worker replays the current
// policy (WhatifPool `parallel`, on by default with 2 CPUs or more): the what-if's wall time is
// about one replay's, its CPU both replays'.
out(
  `embedded cluster what-if (${((report.to - report.from) / HOUR).toFixed(1)} h, ${report.workloads.length} workloads, ` +
    `${report.historyBuckets} buckets): ${(whatifMs / 1000).toFixed(1)} s for both replays ` +
    `(CPU ${whatifCpuS.toFixed(1)} s), ${(whatifMs / bareMs).toFixed(2)}× the bare day's wall time; ` +
    `per replay ${(whatifCpuS / 2).toFixed(1)} s CPU, ${(whatifCpuS / 2 / bareCpuS).toFixed(2)}× the bare day's CPU`,
);
const starts = (s: WhatifReportDto["current"]): string =>
  `pod start p50 ${(s.podStart.p50Ms / 1000).toFixed(0)} s / p95 ${(s.podStart.p95Ms / 1000).toFixed(0)} s ` +
  `(${s.podStart.count} pods)`;
out(
  `  current:   $${report.current.costPerHour.toFixed(2)}/h, ${report.current.nodeClaimsCreated} NodeClaims, ` +
    starts(report.current),
);
out(
  `  candidate: $${report.candidate.costPerHour.toFixed(2)}/h, ${report.candidate.nodeClaimsCreated} NodeClaims, ` +
    starts(report.candidate),
);
if (report.recorded) {
  const rec = report.recorded;
  out(
    `  model check: replayed $${report.current.costPerHour.toFixed(2)}/h vs recorded $${rec.costPerHour.toFixed(2)}/h ` +
      `(${(rec.fidelity.costError * 100).toFixed(1)} %; goal within 5 %)`,
  );
  for (const [pool, p] of Object.entries(rec.pools))
    out(
      `    ${pool}: ${(report.current.pools?.[pool]?.nodes ?? 0).toFixed(1)} nodes replayed vs ${p.nodes.toFixed(1)} recorded ` +
        `(${((rec.fidelity.poolNodesError[pool] ?? 0) * 100).toFixed(0)} %)`,
    );
  const ps = rec.podStart;
  const err = rec.fidelity.podStartError;
  out(
    ps && err
      ? `  model check, pod start: replayed p50 ${(report.current.podStart.p50Ms / 1000).toFixed(0)} s / p95 ` +
          `${(report.current.podStart.p95Ms / 1000).toFixed(0)} s vs recorded p50 ${(ps.p50Ms / 1000).toFixed(0)} s / ` +
          `p95 ${(ps.p95Ms / 1000).toFixed(0)} s (${ps.count} pods): ${(err.p50 * 100).toFixed(1)} %, ` +
          `${(err.p95 * 100).toFixed(1)} % (goal within 20 %)`
      : "  model check, pod start: core recorded no pod start in the window",
  );
  out(
    `  node boot / image pull per pool: ` +
      Object.keys(report.poolBootMs ?? {})
        .map(
          (p) => `${p} ${(report.poolBootMs?.[p] ?? 0) / 1000} s / ${(report.poolPullMs?.[p] ?? 0) / 1000} s`,
        )
        .join(", "),
  );
}
out(
  `RSS ${(rssBefore / MiB).toFixed(0)} MiB before, peak ${(rssPeak / MiB).toFixed(0)} MiB: ` +
    `+${added.toFixed(0)} MiB while the replays ran, both at once (goal ≤ 300 per replay; checked on both)`,
);
const missed: string[] = [];
if (whatifMs > 10_000) missed.push(`what-if ${(whatifMs / 1000).toFixed(1)} s > 10 s`);
if (added > 300) missed.push(`RSS added ${added.toFixed(0)} MiB > 300`);
const podErr = report.recorded?.fidelity.podStartError;
if (podErr && Math.max(Math.abs(podErr.p50), Math.abs(podErr.p95)) > 0.2)
  missed.push(`pod start off the recorded by more than 20 %`);
out(missed.length === 0 ? "goals: met" : `goals missed: ${missed.join("; ")}`);
process.exit(values.strict && missed.length > 0 ? 1 : 0);
