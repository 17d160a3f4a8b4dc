// Dashboard API at scale: 5,000 nodes / 150,000 pods in a ClusterHub's ClusterState (synthetic
// objects, no agent), served by the real dashboard routes over HTTP on loopback.
//   npm run bench:dashboard            (add -- --strict to exit 1 when a goal is missed)
// 1. Snapshot latency: sequential keep-alive GETs of overview, nodepools and nodes (the UI's
//    default page of 500), p50/p99, each twice: with the state unchanged between requests, and
//    with a pod changed before every request (a busy cluster: nothing can be reused from the
//    previous request). The baseline, in the same process, is a bare Fastify route that sends
//    the same JSON bytes precomputed: the floor of HTTP + JSON transfer on this machine, so the
//    ratio is what compares across machines. Goal: Wave's p99 ≤ 50 ms on each of these.
//    nodes?limit=5000 (every node, ~2 MB) is printed too, outside the goal, and the node page
//    fetched by 8 clients at once after each change (what open dashboards do after a snapshot).
//    Memory (rss, heap after a full GC) is printed with the state filled and after the first views.
// 2. Change → SSE delivery: a node is added to the state (as an ingest batch would) and the time
//    until a `snapshot` event with the new node count reaches a stream client. Goal: p95 < 1 s.
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, request } from "node:http";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import Fastify from "fastify";
import type { LiveDto } from "../../src/dashboard/dto.ts";
import { build } from "../../src/api/app.ts";
import { dashboardRoutes } from "../../src/api/routes/dashboard.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { openStore } from "../../src/core/store/open.ts";
import type { Disruption, LifecycleEvent } from "../../src/core/store/store.ts";
import type { NodeClaim, NodePool } from "../../src/objects/karpenter.ts";
import type { Node, Pod } from "../../src/objects/kube.ts";
import { createPricing } from "../../src/pricing/setup.ts";
import { realClock } from "../../src/shared/clock.ts";
import { createLogger } from "../../src/shared/log.ts";
import { seeded } from "../../src/shared/random.ts";

const STRICT = process.argv.includes("--strict");
const NODES = 5000;
const PODS_PER_NODE = 30; // 150,000 pods
const POOLS = 20;
const REQUESTS = 200; // per endpoint and server, after warm-up
const WARMUP = 20;
const SSE_CHANGES = 40;
const CLIENTS = 8; // concurrent dashboards in the shared-answer row
const GOAL_P99_MS = 50;
const GOAL_SSE_P95_MS = 1000;
const CLUSTER = "bench";
const TOKEN = "bench-viewer-token-0123456789";

const log = createLogger({ level: "warn" });
const random = seeded(11);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;

const TYPES = [
  { name: "m6i.large", cpu: 2, gib: 8 },
  { name: "m6i.xlarge", cpu: 4, gib: 16 },
  { name: "c6i.2xlarge", cpu: 8, gib: 16 },
  { name: "r6i.2xlarge", cpu: 8, gib: 64 },
  { name: "m6i.4xlarge", cpu: 16, gib: 64 },
  { name: "c7g.4xlarge", cpu: 16, gib: 32 },
];
const ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"];
const T0 = Date.now() - 2 * 3_600_000;

function pool(i: number): NodePool {
  return {
    metadata: { name: `pool-${i}`, resourceVersion: "1" },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: "default" },
          requirements: [
            { key: "karpenter.sh/capacity-type", operator: "In", values: ["spot", "on-demand"] },
          ],
        },
      },
      disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "1m" },
      limits: { cpu: "20000", memory: "80000Gi" },
    },
  };
}

function machine(i: number): { node: Node; claim: NodeClaim; pool: string } {
  const t = pick(TYPES);
  const name = `ip-10-${Math.floor(i / 250)}-${i % 250}.ec2.internal`;
  const poolName = `pool-${i % POOLS}`;
  const labels = {
    "karpenter.sh/nodepool": poolName,
    "karpenter.sh/capacity-type": random() < 0.6 ? "spot" : "on-demand",
    "node.kubernetes.io/instance-type": t.name,
    "topology.kubernetes.io/zone": pick(ZONES),
    "topology.kubernetes.io/region": "us-east-1",
  };
  const created = new Date(T0 + i * 100).toISOString();
  const capacity = { cpu: String(t.cpu), memory: `${t.gib}Gi`, pods: "110" };
  const allocatable = { cpu: `${t.cpu * 1000 - 100}m`, memory: `${t.gib * 1024 - 800}Mi`, pods: "110" };
  const providerID = `aws:///${labels["topology.kubernetes.io/zone"]}/i-${i.toString(16).padStart(17, "0")}`;
  return {
    pool: poolName,
    node: {
      metadata: { name, labels, creationTimestamp: created, resourceVersion: "1" },
      spec: { providerID },
      status: { capacity, allocatable, conditions: [{ type: "Ready", status: "True" }] },
    },
    claim: {
      metadata: {
        name: `${poolName}-${i.toString(36)}`,
        labels,
        creationTimestamp: created,
        resourceVersion: "1",
      },
      spec: {},
      status: { nodeName: name, providerID, capacity, allocatable },
    },
  };
}

function pod(i: number, node: string): Pod {
  return {
    metadata: { name: `app-${i}`, namespace: `ns-${i % 50}`, resourceVersion: "1" },
    spec: {
      nodeName: node,
      containers: [{ name: "app", resources: { requests: { cpu: "50m", memory: "128Mi" } } }],
    },
    status: { phase: "Running" },
  };
}

// A full GC before reading memory, so heap figures compare across runs (the flag set at run time
// exposes `gc` to a fresh context).
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
const mib = (b: number): string => `${(b / 2 ** 20).toFixed(0)} MiB`;
function memory(label: string): void {
  gc();
  const m = process.memoryUsage();
  console.log(`memory ${label}: rss ${mib(m.rss)}, heap used ${mib(m.heapUsed)} (after a full GC)`);
}

const quantile = (sorted: readonly number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;

function get(agent: Agent, port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { agent, host: "127.0.0.1", port, path, headers: { authorization: `Bearer ${TOKEN}` } },
      (res) => {
        let bytes = 0;
        res.on("data", (c: Buffer) => (bytes += c.length));
        res.on("end", () =>
          res.statusCode === 200 ? resolve(bytes) : reject(new Error(`${path}: HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/**
 * Latency of each GET over `rounds`: `before` runs, then `clients` keep-alive clients ask at the
 * same moment (1: sequential requests; more: what every open dashboard does after a snapshot).
 */
async function latencies(
  port: number,
  path: string,
  before?: () => void,
  clients = 1,
): Promise<{ p50: number; p99: number; bytes: number }> {
  const agents = Array.from({ length: clients }, () => new Agent({ keepAlive: true, maxSockets: 1 }));
  const round = async (ms?: number[]): Promise<number> => {
    before?.();
    const sizes = await Promise.all(
      agents.map(async (agent) => {
        const t = performance.now();
        const size = await get(agent, port, path);
        ms?.push(performance.now() - t);
        return size;
      }),
    );
    return sizes[0] ?? 0;
  };
  let bytes = 0;
  for (let i = 0; i < WARMUP; i++) bytes = await round();
  const ms: number[] = [];
  for (let i = 0; i < REQUESTS; i++) await round(ms);
  for (const a of agents) a.destroy();
  ms.sort((a, b) => a - b);
  return { p50: quantile(ms, 0.5), p99: quantile(ms, 0.99), bytes };
}

async function main(): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "wave-bench-dashboard-"));
  const store = await openStore({ backend: "sqlite", path: join(dir, "bench.db") }, { log });
  const hub = new ClusterHub(store, realClock);
  const entry = hub.ensure(CLUSTER);

  // ---- fill the state -------------------------------------------------------------------------
  let t = performance.now();
  const machines = Array.from({ length: NODES }, (_, i) => machine(i));
  entry.state.batch(() => {
    for (let i = 0; i < POOLS; i++) entry.state.apply("NodePool", "add", pool(i));
    for (const m of machines) {
      entry.state.apply("Node", "add", m.node);
      entry.state.apply("NodeClaim", "add", m.claim);
    }
    let p = 0;
    for (const m of machines) {
      for (let k = 0; k < PODS_PER_NODE; k++)
        entry.state.apply("Pod", "add", pod(p++, m.node.metadata.name ?? ""));
    }
  });
  const counts = entry.state.counts();
  const load = loadavg().map((l) => l.toFixed(1));
  console.log(
    `machine: ${availableParallelism()} cores, load average ${load.join(" ")} (absolute times scale with it)`,
  );
  console.log(
    `state: ${counts.nodes} nodes, ${counts.nodeClaims} NodeClaims, ${counts.pods} pods, ${counts.nodePools} pools ` +
      `(filled in ${((performance.now() - t) / 1000).toFixed(1)} s)`,
  );

  memory("with the state filled");

  // An hour of churn history, so the views' store reads and the thrashing detector do real work.
  const now = Date.now();
  const lifecycle: LifecycleEvent[] = [];
  const disruptions: Disruption[] = [];
  for (let i = 0; i < 600; i++) {
    const nodePool = `pool-${i % POOLS}`;
    const nodeClaim = `${nodePool}-old-${i}`;
    const at = now - 3_000_000 + i * 4000;
    const base = {
      clusterId: CLUSTER,
      nodeClaim,
      nodeClaimUid: `uid-${i}`,
      nodePool,
      instanceType: "m6i.large",
    };
    lifecycle.push({ ...base, phase: "Launched", at });
    lifecycle.push({ ...base, phase: "Disrupted", reason: "Underutilized", at: at + 300_000 });
    lifecycle.push({ ...base, phase: "Terminated", at: at + 330_000 });
    disruptions.push({
      clusterId: CLUSTER,
      nodeClaim,
      nodePool,
      reason: "Underutilized",
      at: at + 300_000,
      source: "event",
    });
  }
  await store.write({ lifecycle, disruptions });

  // ---- servers ------------------------------------------------------------------------------
  const pricing = createPricing({ clock: realClock, log });
  const wave = await build({
    tokens: { admin: `${TOKEN}-admin`, viewer: TOKEN },
    plugins: [dashboardRoutes({ hub, prices: pricing.provider, now: () => Date.now() })],
  });
  await wave.listen({ host: "127.0.0.1", port: 0 });
  const wavePort = (wave.server.address() as { port: number }).port;

  const endpoints = [
    "overview",
    "nodepools",
    "nodes", // the UI's request: default page of 500
    "nodes?limit=5000",
  ].map((p) => `/api/v1/clusters/${CLUSTER}/${p}`);
  // The baseline answers with the very bytes Wave answered, precomputed: HTTP + Fastify + auth-free
  // send of a same-size body, i.e. the floor any implementation pays.
  const bodies = new Map<string, string>();
  for (const path of endpoints) {
    const res = await wave.inject({ url: path, headers: { authorization: `Bearer ${TOKEN}` } });
    if (res.statusCode !== 200) throw new Error(`${path}: HTTP ${res.statusCode} ${res.body.slice(0, 200)}`);
    bodies.set(path, res.body);
  }
  memory("after the first views (indexes built)");
  const bare = Fastify({ logger: false });
  for (const route of new Set(endpoints.map((p) => p.split("?")[0] ?? p))) {
    bare.get(route, (req, reply) => {
      void reply.type("application/json").send(bodies.get(req.url) ?? "{}");
    });
  }
  await bare.listen({ host: "127.0.0.1", port: 0 });
  const barePort = (bare.server.address() as { port: number }).port;

  // ---- 1. snapshot latency ----------------------------------------------------------------------
  // A pod's status flips before each request of the "changed" rows: the state's version moves,
  // so nothing computed for the previous request can be reused.
  let flips = 0;
  const change = (): void => {
    const i = flips++ % NODES;
    const p = pod(i * PODS_PER_NODE, machines[i]?.node.metadata.name ?? "");
    p.metadata.resourceVersion = String(2 + flips);
    p.status = { phase: "Running", startTime: new Date(T0 + flips * 1000).toISOString() };
    entry.state.apply("Pod", "add", p);
  };
  const cases = [
    { label: "overview", path: endpoints[0], changed: false, goal: true },
    { label: "overview, changed state", path: endpoints[0], changed: true, goal: true },
    { label: "nodepools", path: endpoints[1], changed: false, goal: true },
    { label: "nodepools, changed state", path: endpoints[1], changed: true, goal: true },
    { label: "nodes (UI page of 500)", path: endpoints[2], changed: false, goal: true },
    { label: "nodes (UI page of 500), changed", path: endpoints[2], changed: true, goal: true },
    { label: "nodes?limit=5000 (no goal)", path: endpoints[3], changed: false, goal: false },
    // Every open dashboard fetches the node table after each stream snapshot.
    { label: `nodes, changed, ${CLIENTS} clients (no goal)`, path: endpoints[2], changed: true, goal: false },
  ];
  let worstP99 = 0;
  let worstRatio = 0;
  console.log(
    `\n${"endpoint".padEnd(36)} ${"bytes".padStart(8)}   wave p50 / p99 ms   baseline p50 / p99 ms   p99 ratio`,
  );
  for (const c of cases) {
    if (c.path === undefined) throw new Error(`no endpoint for ${c.label}`);
    // Wave, then the baseline, per row: background load hits both alike.
    const clients = c.label.includes("clients") ? CLIENTS : 1;
    const w = await latencies(wavePort, c.path, c.changed ? change : undefined, clients);
    const b = await latencies(barePort, c.path, undefined, clients);
    const ratio = w.p99 / b.p99;
    if (c.goal) {
      worstP99 = Math.max(worstP99, w.p99);
      worstRatio = Math.max(worstRatio, ratio);
    }
    console.log(
      `${c.label.padEnd(36)} ${String(w.bytes).padStart(8)}   ${w.p50.toFixed(1).padStart(8)} / ${w.p99.toFixed(1).padEnd(8)}` +
        `  ${b.p50.toFixed(2).padStart(8)} / ${b.p99.toFixed(2).padEnd(8)}    ${ratio.toFixed(1).padStart(5)}×`,
    );
  }

  // ---- 2. change → SSE ------------------------------------------------------------------------
  t = performance.now();
  const streamAbort = new AbortController();
  const res = await fetch(`http://127.0.0.1:${wavePort}/api/v1/clusters/${CLUSTER}/stream`, {
    headers: { authorization: `Bearer ${TOKEN}` },
    signal: streamAbort.signal,
  });
  if (!res.ok || !res.body) throw new Error(`stream: HTTP ${res.status}`);
  const waiters = new Map<number, () => void>();
  let firstSnapshot: () => void = () => undefined;
  const first = new Promise<void>((r) => (firstSnapshot = r));
  void (async () => {
    const decoder = new TextDecoder();
    let buf = "";
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buf.indexOf("\n\n")) >= 0) {
        const frame = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const data = frame
          .split("\n")
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).trimStart())
          .join("\n");
        if (!frame.includes("event: snapshot") || data === "") continue;
        const nodes = (JSON.parse(data) as LiveDto).overview.nodes;
        firstSnapshot();
        waiters.get(nodes)?.();
        waiters.delete(nodes);
      }
    }
  })().catch(() => undefined);
  await first;
  console.log(`\nstream: first snapshot ${(performance.now() - t).toFixed(0)} ms after connecting`);

  const sse: number[] = [];
  for (let i = 0; i < SSE_CHANGES; i++) {
    // Irregular spacing: some changes land inside the stream's 250 ms throttle window, some not.
    await new Promise((r) => setTimeout(r, 100 + random() * 500));
    const m = machine(NODES + i);
    const want = NODES + i + 1;
    const delivered = new Promise<void>((r) => waiters.set(want, r));
    const t1 = performance.now();
    entry.state.batch(() => {
      entry.state.apply("Node", "add", m.node);
      entry.state.apply("NodeClaim", "add", m.claim);
    });
    hub.notify(CLUSTER); // what the hub does after applying an ingest batch
    await delivered;
    sse.push(performance.now() - t1);
  }
  sse.sort((a, b) => a - b);
  const sseP50 = quantile(sse, 0.5);
  const sseP95 = quantile(sse, 0.95);
  console.log(
    `change → SSE snapshot (${SSE_CHANGES} changes): p50 ${sseP50.toFixed(0)} ms, p95 ${sseP95.toFixed(0)} ms, ` +
      `max ${(sse.at(-1) ?? NaN).toFixed(0)} ms`,
  );

  memory("at the end");

  // ---- verdict --------------------------------------------------------------------------------
  const okP99 = worstP99 <= GOAL_P99_MS;
  const okSse = sseP95 < GOAL_SSE_P95_MS;
  console.log(
    `\ngoals: snapshot p99 ≤ ${GOAL_P99_MS} ms: worst ${worstP99.toFixed(1)} ms (${(worstP99 / GOAL_P99_MS).toFixed(2)}× the goal; ` +
      `worst ratio to the baseline ${worstRatio.toFixed(1)}×) ${okP99 ? "OK" : "MISSED"}; ` +
      `SSE p95 < ${GOAL_SSE_P95_MS} ms: ${sseP95.toFixed(0)} ms (${(sseP95 / GOAL_SSE_P95_MS).toFixed(2)}× the goal) ${okSse ? "OK" : "MISSED"}`,
  );

  streamAbort.abort(); // the reader holds the body's lock: abort the request to end the stream
  await wave.close();
  await bare.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
  return STRICT && !(okP99 && okSse) ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
