// Ingest benchmark, one cluster size (bench/ingest/run.ts runs several, each in its own process so
// each agent's RSS is its own): a synthetic cluster (default 5,000 nodes, 150,000 pods, 10,000
// NodeClaims) streamed by the real agent to a real core (separate process) over gRPC on loopback,
// then 100 changes/s.
// Prints initial sync time, steady-state CPU and RSS of both sides, and the sync time as a ratio
// to an in-process baseline (trim + encode + decode + apply, no transport) measured in the same
// run — the ratio is what to compare across machines; absolute times depend on the host's load.
//
//   node bench/ingest/size.ts [--seconds 20 --rate 100 --nodes 5000 --pods 150000 --claims 10000]
//                        [--sink memory|hub]   (hub: production's sink, SQLite store + ClusterState)
//                        [--heap service|node] (service: V8 tuned as `wave agent|core` run it,
//                                               src/cli/heap.ts; node: Node's defaults)
//                        [--deadline-seconds 120]  (the sync, and the drain after the steady
//                                               phase, must end within it)
//                        [--max-snapshot-objects N]  (core's snapshot bound; default core's own)
// Exits 1 with the reason when core rejects the sync (a bound) or a deadline passes: never hangs.
import { fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import { availableParallelism, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { Agent, initialSyncDone } from "../../src/agent/agent.ts";
import { node, pod, syntheticObjects } from "../../src/agent/fixtures.ts";
import { project } from "../../src/state/projection.ts";
import { MemorySource } from "../../src/agent/source.ts";
import type { SourceChange } from "../../src/agent/source.ts";
import { stub } from "../../src/kube/informer/informer.ts";
import { objectKey } from "../../src/wire/wire.ts";
import { FOLLOWED_KINDS } from "../../src/state/follow.ts";
import { trim } from "../../src/agent/trim.ts";
import { decodeObject, encodeJson, kindToProto } from "../../src/wire/wire.ts";
import type { WireObject } from "../../src/wire/wire.ts";
import { heapBurst, settleHeap, tuneHeapForService } from "../../src/cli/heap.ts";
import { isStateKind } from "../../src/core/ingest/apply.ts";
import { ClusterState } from "../../src/state/cluster.ts";
import { Registry } from "../../src/shared/metrics.ts";

const { values: args } = parseArgs({
  options: {
    nodes: { type: "string", default: "5000" },
    pods: { type: "string", default: "150000" },
    claims: { type: "string", default: "10000" },
    rate: { type: "string", default: "100" },
    seconds: { type: "string", default: "20" },
    "chunk-kb": { type: "string", default: "1024" },
    sink: { type: "string", default: "memory" },
    heap: { type: "string", default: "service" },
    "deadline-seconds": { type: "string", default: "120" },
    "max-snapshot-objects": { type: "string" },
  },
});
const deadlineMs = Number(args["deadline-seconds"]) * 1000;
if (!(deadlineMs > 0)) throw new Error(`--deadline-seconds must be a positive number`);
const maxSnapshotObjects = args["max-snapshot-objects"];
if (maxSnapshotObjects !== undefined && !(Number(maxSnapshotObjects) > 0))
  throw new Error(`--max-snapshot-objects must be a positive number`);
if (args.heap !== "service" && args.heap !== "node") throw new Error(`--heap must be service or node`);
// Before the synthetic cluster is built: the agent's heap as `wave agent` tunes it.
if (args.heap === "service") tuneHeapForService();
// As `wave agent` does until its initial sync is done (src/cli/agent-component.ts): the
// informers' lists below and the snapshot are one burst, size mode off.
const endBurst = heapBurst({ pinYoung: true });
const sizes = { nodes: Number(args.nodes), pods: Number(args.pods), nodeClaims: Number(args.claims) };
const rate = Number(args.rate);
const seconds = Number(args.seconds);
const GiB = 1024 ** 3;
const mib = (b: number): string => `${(b / 1024 ** 2).toFixed(0)} MiB`;

interface CoreStats {
  type: "stats";
  rss: number;
  cpu: NodeJS.CpuUsage;
  objects: number;
  sequence: number;
}

if (args.sink !== "memory" && args.sink !== "hub") throw new Error(`--sink must be memory or hub`);
// The cluster is generated as it is listed, never held: it stands in for the apiserver, whose
// objects are not in the agent's memory.
const cluster = (): Iterable<WireObject> => syntheticObjects(sizes);
const objectCount = 1 + sizes.nodeClaims + sizes.nodes + sizes.pods;
// What the production agent keeps besides (ADR 0021), built as its informers would: the warmup
// projection (a ClusterState of the followed kinds, projection.ts) and the informers' stub caches.
const kept = keepAsTheAgentDoes();
console.log(
  `cluster: ${sizes.nodes} nodes, ${sizes.pods} pods, ${sizes.nodeClaims} NodeClaims (${objectCount} objects); ` +
    `core sink: ${args.sink === "hub" ? "ClusterHub (SQLite + ClusterState)" : "in-memory"}; ` +
    `heap: ${args.heap === "service" ? "tuned as wave agent|core run (src/cli/heap.ts)" : "Node's defaults"}`,
);

// ---- core in its own process ----
const token = randomUUID();
const child = fork(new URL("./core-child.ts", import.meta.url), [], {
  env: {
    ...process.env,
    WAVE_BENCH_TOKEN: token,
    WAVE_BENCH_SINK: args.sink,
    WAVE_BENCH_HEAP: args.heap,
    ...(maxSnapshotObjects !== undefined ? { WAVE_BENCH_MAX_SNAPSHOT_OBJECTS: maxSnapshotObjects } : {}),
  },
  stdio: ["ignore", "inherit", "inherit", "ipc"],
  execArgv: process.env["WAVE_BENCH_PROF"] ? ["--cpu-prof", "--cpu-prof-dir=/tmp/prof"] : [],
});
const port = await new Promise<number>((resolve, reject) => {
  child.once("message", (m: { type: string; port: number }) => resolve(m.port));
  child.once("exit", (code) => reject(new Error(`core exited with ${code}`)));
});
const coreStats = (): Promise<CoreStats> =>
  new Promise((resolve) => {
    const on = (m: { type: string }): void => {
      if (m.type !== "stats") return;
      child.off("message", on);
      resolve(m as CoreStats);
    };
    child.on("message", on);
    child.send({ type: "stats" });
  });

// ---- agent ----
const source = new MemorySource(cluster);
const agent = new Agent({
  source,
  coreUrl: `http://127.0.0.1:${port}`,
  token,
  clusterId: "bench",
  agentVersion: "bench",
  metrics: new Registry(),
  outbox: { chunkMaxBytes: Number(args["chunk-kb"]) * 1024 },
});
const ac = new AbortController();

/** The run cannot finish: says why on stderr, stops core and exits 1 (instead of waiting forever). */
function fail(reason: string): never {
  console.error(`FAIL: ${reason}`);
  ac.abort();
  child.kill();
  process.exit(1);
}
child.once("exit", (code) => {
  if (!ac.signal.aborted) fail(`core exited with ${code} during the run`);
});

/** `p`, unless core rejects what the agent sends or `ms` passes first: then the run fails. */
async function guarded<T>(p: Promise<T>, what: string, ms = deadlineMs): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(`${what}: not done within the ${deadlineMs / 1000} s deadline (--deadline-seconds)`),
        ),
      ms,
    );
  });
  const rejected = agent
    .until((a) => a.rejection !== undefined)
    .then((): never => {
      throw new Error(`${what}: core rejected it: ${agent.rejection}`);
    });
  try {
    return await Promise.race([p, late, rejected]);
  } catch (err) {
    return fail((err as Error).message);
  } finally {
    clearTimeout(timer);
  }
}

// CPU seconds each side spends on the sync: steadier than wall time on a shared, loaded host.
const core00 = await coreStats();
const agentCpu00 = process.cpuUsage();
const started = performance.now();
const running = agent.run(ac.signal);
const syncDeadline = started + deadlineMs;
const left = (): number => Math.max(1, syncDeadline - performance.now());
await guarded(
  agent.until((a) => a.status !== "idle"),
  "source open",
  left(),
);
const loadedMs = performance.now() - started;
await guarded(
  agent.until((a) => a.status === "streaming"),
  "hello",
  left(),
);
const helloMs = performance.now() - started;
await guarded(agent.until(initialSyncDone), "initial sync", left());
const syncMs = performance.now() - started;
// As `wave agent` does once synced (src/cli/agent-component.ts).
endBurst();
settleHeap();
const agentSyncCpu = process.cpuUsage(agentCpu00);
const afterSync = await coreStats();
if (afterSync.objects !== objectCount)
  throw new Error(`core has ${afterSync.objects} objects, expected ${objectCount}`);
console.log(
  `initial sync: ${(syncMs / 1000).toFixed(2)} s (goal < 10 s): source open ${(loadedMs / 1000).toFixed(2)} s, ` +
    `hello ${((helloMs - loadedMs) / 1000).toFixed(2)} s, ` +
    // The agent trims and encodes each chunk as it streams (Outbox.listFrom), so that work is here.
    `snapshot trim+encode+transfer+apply+ack ${((syncMs - helloMs) / 1000).toFixed(2)} s`,
);
const cpuS = (u: NodeJS.CpuUsage): string => `${((u.user + u.system) / 1e6).toFixed(2)} s`;
console.log(
  `sync CPU: agent ${cpuS(agentSyncCpu)}, core ${cpuS({ user: afterSync.cpu.user - core00.cpu.user, system: afterSync.cpu.system - core00.cpu.system })}`,
);
const agentSyncRss = process.memoryUsage.rss();
console.log(`RSS after sync: agent ${mib(agentSyncRss)}, core ${mib(afterSync.rss)}`);
const heap = process.memoryUsage();
console.log(
  `agent heap after sync: used ${mib(heap.heapUsed)}, V8 heap ${mib(heap.heapTotal)}, ` +
    `external ${mib(heap.external)} (array buffers ${mib(heap.arrayBuffers)})`,
);

// ---- steady state: `rate` changes per second (pod churn and node updates) ----
const agentCpu0 = process.cpuUsage();
const core0 = await coreStats();
const t0 = performance.now();
let sent = 0;
let maxLagMs = 0;
const tick = 100;
for (let elapsed = 0; elapsed < seconds * 1000; elapsed += tick) {
  const due = Math.floor(((elapsed + tick) / 1000) * rate) - sent;
  for (let i = 0; i < due; i++, sent++) {
    const n = sent % 10;
    const change =
      n === 0
        ? { type: "upsert" as const, object: node(sent % sizes.nodes, 2 + sent) }
        : n < 5
          ? { type: "delete" as const, object: pod(sent % sizes.pods, sizes.nodes) }
          : { type: "upsert" as const, object: pod(sent % sizes.pods, sizes.nodes, 2 + sent) };
    source.push(change);
    kept.apply(change);
  }
  await new Promise((r) => setTimeout(r, tick));
  maxLagMs = Math.max(maxLagMs, agent.outbox.lag());
}
await guarded(
  agent.until((a) => a.outbox.buffered === 0),
  "steady-state drain",
);
const wallMs = performance.now() - t0;
const agentCpu = process.cpuUsage(agentCpu0);
const core1 = await coreStats();
const cpuPct = (u: NodeJS.CpuUsage): string => `${(((u.user + u.system) / 1000 / wallMs) * 100).toFixed(1)}%`;
const coreCpu = { user: core1.cpu.user - core0.cpu.user, system: core1.cpu.system - core0.cpu.system };
console.log(`steady: ${sent} changes in ${(wallMs / 1000).toFixed(1)} s, max stream lag ${maxLagMs} ms`);
console.log(`steady CPU (of one core): agent ${cpuPct(agentCpu)}, core ${cpuPct(coreCpu)}`);
const agentRss = process.memoryUsage.rss();
console.log(`RSS: agent ${mib(agentRss)}, core ${mib(core1.rss)} (goal < 1 GiB each)`);

ac.abort();
await running;
child.send({ type: "stop" });
// The baseline is a reference for the machine's speed, not a service: Node's default young
// generation (V8's default growth factor), as in the runs recorded in ADR 0003.
if (args.heap === "service") setFlagsFromString("--semi-space-growth-factor=2 --no-optimize-for-size");
const baselineMs = baseline();
console.log(
  `baseline (in-process trim+encode+decode+apply, no transport): ${(baselineMs / 1000).toFixed(2)} s; ` +
    `gRPC sync = ${(syncMs / baselineMs).toFixed(2)}× baseline`,
);
console.log(
  `load average: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")} on ${availableParallelism()} CPUs`,
);
// Goals are judged by run.ts per size (issue 30's envelope); alone, the 5k goals of ADR 0003.
const ok = syncMs < 10_000 && agentRss < GiB && core1.rss < GiB;
if (process.send) {
  process.send(
    {
      type: "result",
      ...sizes,
      syncMs,
      baselineMs,
      ratio: syncMs / baselineMs,
      agentRss,
      coreRss: core1.rss,
      agentSyncRss,
      coreSyncRss: afterSync.rss,
      maxLagMs,
    },
    () => process.disconnect(),
  );
} else {
  console.log(ok ? "PASS" : "FAIL: a goal was missed");
  process.exitCode = ok ? 0 : 1;
}

// ---- baseline: the same work without a transport (run last: it would inflate the agent's RSS) ----
function baseline(): number {
  const t0 = performance.now();
  // Core applies every object to the cluster's ClusterState (ingest is its writer).
  const state = new ClusterState();
  for (const o of cluster()) {
    const t = trim(o) as WireObject;
    const w = decodeObject({ kind: kindToProto(t.kind), json: encodeJson(t) });
    if (isStateKind(w.kind)) state.apply(w.kind, "add", w.object);
  }
  return performance.now() - t0;
}

/** The warmup projection and the informers' caches, kept current with the source's changes (InformerSource). */
function keepAsTheAgentDoes(): { apply(c: SourceChange): void; state: ClusterState } {
  const state = new ClusterState();
  const stubs = new Map<string, Map<string, unknown>>();
  const followed = (kind: string): kind is (typeof FOLLOWED_KINDS)[number] =>
    (FOLLOWED_KINDS as readonly string[]).includes(kind);
  const apply = (c: SourceChange): void => {
    if (c.type === "replace") return;
    const t = trim(c.object);
    if (!t) return;
    let cache = stubs.get(t.kind);
    if (!cache) stubs.set(t.kind, (cache = new Map<string, unknown>()));
    const key = objectKey(t.object);
    const kind = t.kind;
    // A followed kind's informer caches the projection the state holds; the others stubs.
    const kept = followed(kind) ? project(kind, t.object as never) : stub(t.object);
    if (c.type === "delete") cache.delete(key);
    else cache.set(key, kept);
    if (followed(kind)) state.apply(kind, c.type === "delete" ? "delete" : "add", kept as never);
  };
  for (const object of cluster()) apply({ type: "upsert", object });
  return { apply, state };
}
