// Core's /metrics at scale: 5,000 nodes / 150,000 pods (bench/dashboard's synthetic cluster) in a
// ClusterHub, with 50 spot policies (so the per-workload pass walks every pod) and an hour of
// churn history (so the thrashing detector works). Measures a full scrape — every dashboard
// figure recomputed from the state, plus prom-client's process metrics — over HTTP on loopback,
// with the state unchanged and with a pod changed before every scrape, and the body's size.
// Baseline in the same process: building the dashboard's live snapshot (overview + pools, what
// the UI's stream sends) from the same state, so the ratio compares across machines.
//   npm run bench:metrics            (add -- --strict to exit 1 when a goal is missed)
// Goals: scrape p95 ≤ 100 ms, body ≤ 2 MB.
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { openStore } from "../../src/core/store/open.ts";
import { buildLive, thrashingReports } from "../../src/dashboard/views.ts";
import { registerDashboardMetrics } from "../../src/metrics/collector.ts";
import { createPricing } from "../../src/pricing/setup.ts";
import { realClock } from "../../src/shared/clock.ts";
import { createLogger } from "../../src/shared/log.ts";
import { startMetricsServer } from "../../src/shared/metrics-server.ts";
import { Registry } from "../../src/shared/metrics.ts";
import type { SpotPolicy } from "../../src/policy/spot.ts";
import { churnHistory, fillState, ownedPod, PODS_PER_NODE } from "../dashboard/state.ts";

const STRICT = process.argv.includes("--strict");
const SCRAPES = 30;
const GOAL_MS = 100;
const GOAL_BYTES = 2 * 1024 * 1024;
const CLUSTER = "bench";
const log = createLogger({ level: "warn" });

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};
const ms = (x: number): string => `${x.toFixed(1)} ms`;

async function main(): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "wave-bench-metrics-"));
  const store = await openStore({ backend: "sqlite", path: join(dir, "bench.db") }, { log });
  const hub = new ClusterHub(store, realClock);
  const entry = hub.ensure(CLUSTER);
  entry.connected = true;
  entry.lastSeen = Date.now();
  const machines = fillState(entry.state, { owned: true });
  const now = Date.now();
  await store.write(churnHistory(CLUSTER, now));
  const prices = createPricing({ clock: realClock, log }).provider;
  // One Deployment per namespace under a policy: every pod of the cluster is in a policy's namespace.
  const policies: SpotPolicy[] = Array.from({ length: 50 }, (_, i) => ({
    workload: { namespace: `ns-${i}`, kind: "Deployment", name: `app-${i}` },
    threshold: 2,
    strategy: "Prefer",
  }));

  const registry = new Registry();
  registry.collectDefaults();
  registerDashboardMetrics(registry, {
    hub,
    prices,
    now: () => Date.now(),
    spotPolicies: () => Promise.resolve(policies),
  });
  const server = await startMetricsServer(registry, { port: 0, host: "127.0.0.1" });
  const url = `http://127.0.0.1:${server.port}/metrics`;
  const counts = entry.state.counts();
  console.log(
    `machine: ${availableParallelism()} cores, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  console.log(
    `state: ${counts.nodes} nodes, ${counts.pods} pods, ${counts.nodePools} pools, 50 spot policies`,
  );

  // Wall time and this process's CPU time (server and client both live here): on a loaded
  // machine the wall time waits for the CPU, the CPU time does not.
  const scrape = async (): Promise<{ ms: number; cpuMs: number; bytes: number; series: number }> => {
    const t = performance.now();
    const c = process.cpuUsage();
    const res = await fetch(url);
    const body = await res.text();
    const took = performance.now() - t;
    const cpu = process.cpuUsage(c);
    if (res.status !== 200) throw new Error(`scrape: ${res.status}`);
    return {
      ms: took,
      cpuMs: (cpu.user + cpu.system) / 1000,
      bytes: Buffer.byteLength(body),
      series: body.split("\n").filter((l) => l && !l.startsWith("#")).length,
    };
  };
  const baseline = async (): Promise<number> => {
    const t = performance.now();
    const at = Date.now();
    const { lifecycle: events, disruptions } = await hub.recentHistory(CLUSTER).rows(at - 5_400_000, at + 1);
    const thrashing = thrashingReports({ pools: entry.state.nodePools(), events, disruptions, now: at });
    JSON.stringify(
      buildLive({ clusterId: CLUSTER, state: entry.state, prices, now: at, disruptions, thrashing }),
    );
    return performance.now() - t;
  };

  for (let i = 0; i < 3; i++) {
    await scrape();
    await baseline();
  }
  const rows: [string, number[], number[], number[]][] = [];
  let last = { ms: 0, cpuMs: 0, bytes: 0, series: 0 };
  for (const changing of [false, true]) {
    const s: number[] = [];
    const cpu: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < SCRAPES; i++) {
      if (changing) {
        const m = machines[i % machines.length];
        const p = ownedPod(i * PODS_PER_NODE, m?.node.metadata.name ?? "");
        p.status = { phase: "Running", startTime: new Date(now + i * 1000).toISOString() };
        entry.state.apply("Pod", "add", p);
      }
      last = await scrape();
      s.push(last.ms);
      cpu.push(last.cpuMs);
      if (changing) entry.state.apply("Pod", "add", ownedPod(i * PODS_PER_NODE + 1, ""));
      b.push(await baseline());
    }
    rows.push([changing ? "a pod changed before each scrape" : "state unchanged", s, cpu, b]);
  }
  console.log(`body: ${(last.bytes / 1024).toFixed(0)} KiB, ${last.series} samples`);
  console.log(
    "scrape (HTTP GET /metrics)          p50       p95     | CPU p50   CPU p95 | baseline live snapshot p50  | ratio p50",
  );
  let ok = last.bytes <= GOAL_BYTES;
  let cpuOk = ok;
  for (const [label, s, cpu, b] of rows) {
    const p50 = quantile(s, 0.5);
    const p95 = quantile(s, 0.95);
    const c50 = quantile(cpu, 0.5);
    const c95 = quantile(cpu, 0.95);
    const b50 = quantile(b, 0.5);
    ok &&= p95 <= GOAL_MS;
    cpuOk &&= c95 <= GOAL_MS;
    console.log(
      `${label.padEnd(34)} ${ms(p50).padStart(9)} ${ms(p95).padStart(9)}   | ${ms(c50).padStart(8)} ${ms(c95).padStart(8)} | ${ms(b50).padStart(9)}                  | ${(p50 / b50).toFixed(2)}`,
    );
  }
  console.log(`goal: scrape p95 ≤ ${GOAL_MS} ms and body ≤ 2 MB: ${ok ? "met" : "MISSED"} (wall time)`);
  console.log(
    `      the same in CPU time (what the scrape costs on an otherwise idle core): ${cpuOk ? "met" : "MISSED"}`,
  );
  await server.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
  return STRICT && !ok ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
