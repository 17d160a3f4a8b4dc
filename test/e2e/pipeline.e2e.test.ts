// Pipeline acceptance on the rig (issue 4): the real agent (hardened informers over the rig's
// apiserver) streams over gRPC (TLS + bearer token) to a real core (IngestCore + ClusterHub +
// SQLite store + the history sampler of the composition root), all in this process and wired here
// so the test can kill core and reopen it on the same port and store file.
//
//   1. core's Node/Pod/NodeClaim/NodePool sets (with resourceVersions) follow the apiserver's: every
//      disagreement is measured (goal: under 2 s) and they are equal after scale-up and after
//      consolidation;
//   2. core killed mid-stream: the agent buffers, reconnects and resyncs; no lifecycle row or
//      history point is lost; the outage is a gap in the history;
//   3. the agent down for a while: a gap in the history, never repeated or interpolated points;
//   4. a peer breaking the protocol gets a clear gRPC status while the rig's stream keeps flowing;
//   5. after consolidation every NodeClaim of the test's NodePool has Launched → Registered →
//      Initialized → Disrupted → Terminated in order, with the consolidation reason.
//
// The shared apiserver is never restarted here: outage recovery of the informers is covered by
// src/kube/informer/informer-http.test.ts against a failing fake apiserver.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { join } from "node:path";
import { after, before, test, type TestContext } from "node:test";
import { Code } from "@connectrpc/connect";
import { Agent } from "../../src/agent/agent.ts";
import { InformerSource } from "../../src/agent/informer-source.ts";
import { startHistory } from "../../src/cli/parts.ts";
import type { SeriesGap, SeriesRow } from "../../src/core/history/series.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { IngestCore } from "../../src/core/ingest/core.ts";
import { startIngestServer, type IngestServer } from "../../src/core/ingest/server.ts";
import type { ClusterInfo, IngestBatch, IngestSink } from "../../src/core/ingest/sink.ts";
import { rawStream } from "../../src/core/ingest/testing.ts";
import type { ClusterState } from "../../src/state/cluster.ts";
import { openStore } from "../../src/core/store/open.ts";
import { lifecyclePhases, type LifecycleEvent, type Store } from "../../src/core/store/store.ts";
import { clientFromKubeconfig } from "../../src/kube/clientnode/kubeconfig.ts";
import type { ClientNodeKube } from "../../src/kube/clientnode/client.ts";
import { KwokPriceProvider } from "../../src/pricing/kwok.ts";
import { realClock } from "../../src/shared/clock.ts";
import { createLogger } from "../../src/shared/log.ts";
import { generateDevCerts, type DevCerts } from "../../src/webhook/certs.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  kubeconfigPath,
  kubectl,
  list,
  remove,
  requireRig,
  sleep,
  waitFor,
  withRigLogsOnFailure,
} from "./harness.ts";
import { applyTaintedPool } from "./pools.ts";

const CLUSTER = "e2e-pipeline";
const TOKEN = randomUUID();
const POOL_LABEL = "wave.dev/e2e-pool";
/** The issue's bound: core's sets equal the apiserver's within 2 s of a change. */
const MAX_LAG_MS = 2_000;
/**
 * Asserted whatever the host's load: a disagreement that lasts this long is a lost or stuck update,
 * not a slow machine.
 */
const FOLLOW_BOUND_MS = 30_000;
/**
 * A host this starved (this process's event loop stalled, or one apiserver list took this long)
 * cannot measure a 2 s bound: the figure is then reported, not asserted.
 */
const STARVED_LOOP_MS = 500;
const STARVED_LIST_MS = 1_000;
/** History step of this test's recorder: short, so "the agent was down for minutes" takes seconds. */
const STEP_MS = 500;
const AGENT_DOWN_MS = 5_000;
const log = createLogger({ level: "warn", base: { app: "wave-e2e" } });

let ns = "";
let pool = "";
let dataDir = "";
let kube: ClientNodeKube | undefined;

// ---------------------------------------------------------------- core and agent, wired here

/**
 * The hub as ingest sink, timing Wave's own part of the lag: from the agent's informer seeing a
 * change (observedAt) to core having it stored and applied.
 */
class TimedSink implements IngestSink {
  readonly #hub: ClusterHub;
  /** Off while an outage is being caught up (a resync's queued deltas are not steady-state lag). */
  measuring = false;
  maxMs = 0;
  maxWriteMs = 0;
  changes = 0;

  constructor(hub: ClusterHub) {
    this.#hub = hub;
  }

  state(clusterId: string): ClusterState {
    return this.#hub.state(clusterId);
  }

  clusterConnected(info: ClusterInfo): Promise<void> {
    return this.#hub.clusterConnected(info);
  }

  clusterDisconnected(clusterId: string): void {
    this.#hub.clusterDisconnected(clusterId);
  }

  async write(batch: IngestBatch): Promise<void> {
    const t0 = Date.now();
    await this.#hub.write(batch);
    const now = Date.now();
    if (!this.measuring) return;
    this.maxWriteMs = Math.max(this.maxWriteMs, now - t0);
    for (const c of batch.changes) this.maxMs = Math.max(this.maxMs, now - c.observedAt);
    this.changes += batch.changes.length;
  }
}

interface Core {
  timed: TimedSink;
  store: Store;
  hub: ClusterHub;
  ingest: IngestCore;
  server: IngestServer;
  /** Cuts the agent's stream mid-flight, then stops the history sampler and closes the store. */
  kill(): Promise<void>;
}

/**
 * Core as its builder wires it (src/cli/core-component.ts): SQLite store, hub, ingest over TLS
 * with a bearer token, and the history sampler (startHistory) at the store's raw step.
 */
async function startCore(port: number, certs: DevCerts): Promise<Core> {
  // The recorder's step is the store's raw tier: a short one here, so outages span many steps.
  const retention = { tiers: [{ stepMs: STEP_MS, retainMs: 3_600_000 }], eventRetainMs: 3_600_000 };
  const store = await openStore({ backend: "sqlite", path: join(dataDir, "wave.db") }, { log, retention });
  const hub = new ClusterHub(store, realClock);
  const timed = new TimedSink(hub);
  const ingest = new IngestCore({ sink: timed, log, coreVersion: "e2e" });
  const server = await startIngestServer({
    core: ingest,
    host: "127.0.0.1",
    port,
    tls: { certFile: certs.certFile, keyFile: certs.keyFile },
    tokens: [TOKEN],
    log,
  });
  const ac = new AbortController();
  const stopHistory = await startHistory({
    store,
    hub,
    prices: new KwokPriceProvider(),
    clock: realClock,
    log,
    signal: ac.signal,
  });
  return {
    timed,
    store,
    hub,
    ingest,
    server,
    kill: async () => {
      await server.close();
      ac.abort();
      await stopHistory();
      await store.close();
    },
  };
}

interface RunningAgent {
  agent: Agent;
  stop(): Promise<void>;
}

function startAgent(port: number, certs: DevCerts): RunningAgent {
  assert.ok(kube);
  const agent = new Agent({
    source: new InformerSource({ client: kube, log }),
    coreUrl: `https://127.0.0.1:${port}`,
    tls: { caFile: certs.caFile, serverName: "localhost" },
    token: TOKEN,
    clusterId: CLUSTER,
    agentVersion: "e2e",
    log,
    backoff: { initialMs: 100, maxMs: 1_000 },
  });
  const ac = new AbortController();
  const done = agent.run(ac.signal);
  return {
    agent,
    stop: async () => {
      ac.abort();
      await done.catch(() => undefined);
    },
  };
}

// ---------------------------------------------------------------- apiserver vs core comparison

type Versions = Map<string, string>;
const KINDS = ["Node", "Pod", "NodeClaim", "NodePool"] as const;

function versionsOf(
  objs: {
    kind: string;
    items: { metadata: { namespace?: string; name?: string; resourceVersion?: string } }[];
  }[],
): Versions {
  const m: Versions = new Map();
  for (const { kind, items } of objs) {
    for (const { metadata: md } of items) {
      const key =
        md.namespace === undefined ? `${kind}/${md.name ?? ""}` : `${kind}/${md.namespace}/${md.name ?? ""}`;
      m.set(key, md.resourceVersion ?? "");
    }
  }
  return m;
}

async function apiserverVersions(): Promise<Versions> {
  assert.ok(kube);
  const k = kube;
  const lists = await Promise.all(KINDS.map(async (kind) => ({ kind, items: (await k.list(kind)).items })));
  return versionsOf(lists);
}

function coreVersions(core: Core): Versions {
  const s = core.hub.get(CLUSTER)?.state;
  if (!s) return new Map();
  return versionsOf([
    { kind: "Node", items: s.nodes() },
    { kind: "Pod", items: s.pods() },
    { kind: "NodeClaim", items: s.nodeClaims() },
    { kind: "NodePool", items: s.nodePools() },
  ]);
}

/** resourceVersion order (etcd revisions); "" (deleted) is the newest of all. */
function atLeast(have: string, want: string): boolean {
  if (have === "" || want === "") return have === want || have === "";
  return BigInt(have) >= BigInt(want);
}

/**
 * Measures how long core lags behind the apiserver, per object. Core's side is exact: on every
 * applied batch (hub.onChange) it records when each resourceVersion (or the deletion) reached
 * core. The apiserver is polled; a version core has not reached yet opens a disagreement at the
 * start of that poll, closed by the time core reaches that version (or a newer one). Paused while
 * core or the agent is down on purpose.
 */
class LagMonitor {
  polls = 0;
  maxLagMs = 0;
  maxLagKey = "";
  /** Every closed disagreement's duration (ms), from the start of the list that showed it. */
  readonly lags: number[] = [];
  /** The same, from the end of that list: a lower bound that leaves the apiserver's time out. */
  readonly lagsAfterList: number[] = [];
  /** The slowest apiserver list (ms): a starved host shows here first. */
  maxListMs = 0;
  #core: Core | undefined;
  #unsubscribe: (() => void) | undefined;
  /** What core holds now, and when it first held each version of each key. */
  #current: Versions = new Map();
  readonly #reached = new Map<string, Map<string, number>>();
  /** key → wanted version and since when. */
  readonly #open = new Map<string, { want: string; since: number; listMs: number }>();
  #stopped = false;
  readonly #loop: Promise<void>;

  constructor() {
    this.#loop = this.#run();
  }

  #record(core: Core): void {
    const now = Date.now();
    const next = coreVersions(core);
    const mark = (k: string, v: string): void => {
      const m = this.#reached.get(k) ?? new Map<string, number>();
      if (!m.has(v)) m.set(v, now);
      this.#reached.set(k, m);
    };
    for (const [k, v] of next) mark(k, v);
    for (const k of this.#current.keys()) if (!next.has(k)) mark(k, "");
    this.#current = next;
    this.#settle();
  }

  /** Closes every open disagreement core has caught up with. */
  #settle(): void {
    for (const [k, o] of this.#open) {
      const reached = [...(this.#reached.get(k) ?? [])].find(([v]) => atLeast(v, o.want));
      if (!reached) continue;
      this.#open.delete(k);
      const lag = Math.max(0, reached[1] - o.since);
      this.lags.push(lag);
      this.lagsAfterList.push(Math.max(0, lag - o.listMs));
      if (lag > this.maxLagMs) {
        this.maxLagMs = lag;
        this.maxLagKey = `${k}@${o.want}, apiserver list took ${o.listMs} ms`;
      }
    }
  }

  get episodes(): number {
    return this.lags.length;
  }

  /** The q-quantile of the closed disagreements (ms). */
  quantile(q: number, lags: readonly number[] = this.lags): number {
    const sorted = [...lags].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  }

  pause(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    if (this.#core) this.#core.timed.measuring = false;
    this.#core = undefined;
    this.#open.clear();
  }

  resume(core: Core): void {
    this.pause();
    this.#core = core;
    core.timed.measuring = true;
    this.#reached.clear();
    this.#current = new Map();
    this.#record(core);
    this.#unsubscribe = core.hub.onChange((id) => {
      if (id === CLUSTER) this.#record(core);
    });
  }

  /** Disagreements still open, with their age (ms). */
  get open(): [string, number][] {
    return [...this.#open].map(([k, o]) => [`${k}@${o.want}`, Date.now() - o.since]);
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const t0 = Date.now();
      const core = this.#core;
      if (core) {
        const api = await apiserverVersions().catch(() => undefined);
        // pause() may have run while the list was in flight.
        if (api && core === this.#core) {
          this.polls++;
          this.maxListMs = Math.max(this.maxListMs, Date.now() - t0);
          for (const k of new Set([...api.keys(), ...this.#current.keys()])) {
            const want = api.get(k) ?? "";
            const reached = [...(this.#reached.get(k) ?? [])].some(([v]) => atLeast(v, want));
            if (!reached && !this.#open.has(k))
              this.#open.set(k, { want, since: t0, listMs: Date.now() - t0 });
          }
          this.#settle();
        }
      }
      await sleep(Math.max(0, 200 - (Date.now() - t0)));
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.pause();
    await this.#loop;
  }
}

/**
 * Keys on which the apiserver's list disagrees with core both just before and just after the list
 * (a change that lands between the two reads is not a disagreement).
 */
function disagreements(api: Versions, before: Versions, after: Versions): Set<string> {
  const out = new Set<string>();
  for (const k of new Set([...api.keys(), ...before.keys(), ...after.keys()])) {
    const a = api.get(k);
    if (a !== before.get(k) && a !== after.get(k)) out.add(k);
  }
  return out;
}

/** Waits until core agrees with the apiserver on every Node, Pod, NodeClaim and NodePool. */
async function converged(core: Core, what: string, timeoutMs = 30_000): Promise<number> {
  const t0 = Date.now();
  await waitFor(
    `core to converge with the apiserver (${what})`,
    async () => {
      const before = coreVersions(core);
      const api = await apiserverVersions();
      const d = disagreements(api, before, coreVersions(core));
      if (d.size > 0) throw new Error(`${d.size} differ, e.g. ${[...d].slice(0, 5).join(", ")}`);
      return true;
    },
    { timeoutMs, intervalMs: 100 },
  );
  return Date.now() - t0;
}

// ---------------------------------------------------------------- rig objects

/** 1-CPU pause pods on this test's pool, one per node (so each replica is a NodeClaim). */
function deployment(name: string, replicas: number): object {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { [POOL_LABEL]: pool },
          tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
          terminationGracePeriodSeconds: 0,
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { labelSelector: { matchLabels: { app: name } }, topologyKey: "kubernetes.io/hostname" },
              ],
            },
          },
          containers: [
            { name: "app", image: "pause:3.10", resources: { requests: { cpu: "1", memory: "128Mi" } } },
          ],
        },
      },
    },
  };
}

async function scale(replicas: number): Promise<void> {
  await kubectl(["scale", "deployment", "web", `--replicas=${replicas}`, "-n", ns]);
}

async function waitRunning(want: number): Promise<void> {
  await waitFor(
    `${want} Running pods of web`,
    async () => {
      const pods = await list("pods", { namespace: ns, selector: "app=web" });
      return pods.filter((p) => p.status?.phase === "Running").length === want;
    },
    { timeoutMs: 90_000, intervalMs: 500 },
  );
}

async function poolClaims(): Promise<string[]> {
  return (await list("nodeclaims.karpenter.sh", { selector: `karpenter.sh/nodepool=${pool}` })).map(
    (c) => c.metadata.name,
  );
}

async function lifecycleRows(store: Store): Promise<LifecycleEvent[]> {
  return store.lifecycle({ clusterId: CLUSTER, from: 0, to: Date.now() + 3_600_000, limit: 100_000 });
}

const rowKey = (e: LifecycleEvent): string => `${e.nodeClaimUid}/${e.phase}`;

// ---------------------------------------------------------------- the test

before(async () => {
  await requireRig();
  ns = await createNamespace("pipeline");
  pool = ns;
  await applyTaintedPool(pool);
  dataDir = mkdtempSync(join(tmpdir(), "wave-pipeline-"));
  kube = clientFromKubeconfig(kubeconfigPath);
});

after(async () => {
  if (ns !== "") await deleteNamespace(ns);
  if (pool !== "") await remove("nodepools.karpenter.sh", pool);
  if (dataDir !== "") rmSync(dataDir, { recursive: true, force: true });
});

test(
  "pipeline: agent → gRPC → core follows the rig, survives faults, keeps history",
  { timeout: 300_000 },
  (t) => withRigLogsOnFailure(() => pipeline(t)),
);

async function pipeline(t: TestContext): Promise<void> {
  const say = (msg: string): void => t.diagnostic(msg);
  // Agent, core and this test share one event loop on a shared 2-core machine: report its stalls.
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  const certs = await generateDevCerts({ dir: join(dataDir, "tls"), hosts: ["localhost", "127.0.0.1"] });
  const t0 = Date.now();
  let core = await startCore(0, certs);
  const port = core.server.port;
  let agent = startAgent(port, certs);
  const monitor = new LagMonitor();
  try {
    say(`initial sync converged in ${await converged(core, "initial snapshot")} ms`);
    monitor.resume(core);

    // ---- 1. create and scale a workload; the monitor measures every disagreement ----
    await apply(deployment("web", 3));
    await waitRunning(3);
    await scale(5);
    await waitRunning(5);
    say(`after scale-up: core equals the apiserver after ${await converged(core, "after scale-up")} ms`);
    const claimsBefore = await poolClaims();
    assert.equal(claimsBefore.length, 5, "one NodeClaim per replica");
    await waitFor(
      "core to hold lifecycle rows up to Initialized for the 5 NodeClaims",
      async () => {
        const rows = (await lifecycleRows(core.store)).filter((e) => e.nodePool === pool);
        return rows.filter((e) => e.phase === "Initialized").length === 5;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    say(
      `scale up: ${monitor.polls} polls, ${monitor.episodes} disagreements, max lag ${monitor.maxLagMs} ms (${monitor.maxLagKey || "none"})`,
    );

    // ---- 2. kill core mid-stream, reopen the same store file on the same port ----
    await sleep(4 * STEP_MS); // a few history buckets of the 5-node pool
    const rowsBefore = await lifecycleRows(core.store);
    const pointsBefore = (await seriesRows(core.store, t0, Date.now())).filter((r) => r.kind === "point");
    monitor.pause();
    await scale(7); // changes keep coming while core is down
    const killAt = Date.now();
    await core.kill();
    const buffered = await waitFor(
      "the agent to buffer changes while core is down",
      () => Promise.resolve(agent.agent.outbox.buffered > 0 && agent.agent.outbox.buffered),
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    await sleep(2_500); // core stays down for several history steps
    const reconnects0 = agent.agent.reconnects;
    const resyncs0 = agent.agent.outbox.resyncs;
    const bufferedMax = Math.max(buffered, agent.agent.outbox.buffered);
    const restartAt = Date.now();
    core = await startCore(port, certs);
    const convergeMs = await converged(core, "after core restart");
    monitor.resume(core);
    const rowsAfter = await lifecycleRows(core.store);
    const afterKeys = new Set(rowsAfter.map(rowKey));
    const lost = rowsBefore.filter((e) => !afterKeys.has(rowKey(e)));
    say(
      `core killed ${restartAt - killAt} ms: agent buffered ${bufferedMax} messages, dropped ${agent.agent.outbox.dropped}; ` +
        `restarted on port ${port}: converged in ${convergeMs} ms, agent reconnects ${agent.agent.reconnects - reconnects0}, ` +
        `resyncs ${agent.agent.outbox.resyncs - resyncs0}, lifecycle rows ${rowsBefore.length} → ${rowsAfter.length}`,
    );
    assert.deepEqual(lost, [], "no lifecycle row is lost across a core restart");
    assert.equal(agent.agent.outbox.dropped, 0, "the agent's buffer held every change while core was down");
    await waitRunning(7);
    await converged(core, "7 replicas after the core restart");
    await sleep(4 * STEP_MS);
    const afterRestart = await seriesRows(core.store, t0, Date.now());
    const pointKeys = new Set(afterRestart.filter((r) => r.kind === "point").map((r) => JSON.stringify(r)));
    const lostPoints = pointsBefore.filter((r) => !pointKeys.has(JSON.stringify(r)));
    assert.ok(
      pointsBefore.length >= 2,
      `history points of the pool before the kill (${pointsBefore.length})`,
    );
    assert.deepEqual(lostPoints, [], "no history point is lost across a core restart");
    const coreGap = afterRestart.filter(isGap).find((r) => r.ts <= killAt + STEP_MS && r.until >= restartAt);
    say(
      `history across the core restart: ${pointsBefore.length} points kept, gap ${coreGap ? `[${iso(coreGap.ts)} .. ${iso(coreGap.until)})` : "none"} for the outage [${iso(killAt)} .. ${iso(restartAt)})`,
    );
    assert.ok(coreGap, `a gap covers core's outage (rows: ${JSON.stringify(afterRestart)})`);
    assertNoPointsIn(afterRestart, coreGap);

    // ---- 3. the agent down for a while: a gap in the history, not interpolated points ----
    monitor.pause();
    const c = core;
    const firstStream = c.ingest.clusters.get(CLUSTER)?.stream;
    await agent.stop();
    const downAt = Date.now();
    await firstStream?.done;
    assert.equal(c.hub.get(CLUSTER)?.connected, false, "core knows the agent's stream is gone");
    await scale(6); // a change the agent misses while it is down
    await sleep(AGENT_DOWN_MS);
    const upAt = Date.now();
    agent = startAgent(port, certs);
    say(
      `agent down for ${upAt - downAt} ms (${Math.round((upAt - downAt) / STEP_MS)} steps of ${STEP_MS} ms)`,
    );
    say(`agent back: converged in ${await converged(core, "after agent restart")} ms`);
    monitor.resume(core);
    await sleep(4 * STEP_MS);
    const series = await seriesRows(core.store, downAt - 10 * STEP_MS, Date.now());
    const gaps = series.filter(isGap);
    const points = series.filter((r) => r.kind === "point");
    say(
      `history around the agent outage: ${points.length} points, gaps ${gaps.map((g) => `[${iso(g.ts)} .. ${iso(g.until)})`).join(" ")}`,
    );
    const gap = gaps.find((g) => g.ts <= downAt + 2 * STEP_MS && g.until >= upAt);
    assert.ok(gap, `a gap covers the agent's outage (rows: ${JSON.stringify(series)})`);
    assertNoPointsIn(series, gap);

    // ---- 4. a bad peer is rejected while the rig's stream keeps flowing ----
    const reconnects1 = agent.agent.reconnects;
    const bad = await rawStream(
      port,
      [
        {
          body: {
            case: "hello",
            value: { clusterId: "e2e-bad-peer", sessionId: "s", agentVersion: "bad", resumeFromSequence: 0n },
          },
        },
        { sequence: 1n, body: { case: "snapshotBegin", value: {} } },
        { sequence: 3n, body: { case: "snapshotEnd", value: { objectCount: 0n } } },
      ],
      TOKEN,
      { caFile: certs.caFile },
    );
    say(`bad peer: ${bad ? `${Code[bad.code]}: ${bad.rawMessage}` : "no error"}`);
    assert.equal(bad?.code, Code.FailedPrecondition);
    assert.match(bad.rawMessage, /sequence gap: got 3, expected 2/);
    const badDelta = await rawStream(
      port,
      [
        {
          body: {
            case: "hello",
            value: {
              clusterId: "e2e-bad-peer",
              sessionId: "s2",
              agentVersion: "bad",
              resumeFromSequence: 0n,
            },
          },
        },
        {
          sequence: 1n,
          body: { case: "delta", value: { op: 1, object: { kind: 1, json: new Uint8Array() } } },
        },
      ],
      TOKEN,
      { caFile: certs.caFile },
    );
    say(
      `bad peer (delta before snapshot): ${badDelta ? `${Code[badDelta.code]}: ${badDelta.rawMessage}` : "no error"}`,
    );
    assert.equal(badDelta?.code, Code.FailedPrecondition);
    await kubectl([
      "annotate",
      "nodepools.karpenter.sh",
      pool,
      `wave.dev/e2e-touch=${Date.now()}`,
      "--overwrite",
    ]);
    const touched = (
      await kubectl(["get", "nodepools.karpenter.sh", pool, "-o", "jsonpath={.metadata.resourceVersion}"])
    ).trim();
    assert.notEqual(touched, "", "the NodePool has a resourceVersion");
    await waitFor(
      "core to see the NodePool change made after the bad peers",
      () =>
        Promise.resolve(
          atLeast(core.hub.get(CLUSTER)?.state.nodePool(pool)?.metadata.resourceVersion ?? "0", touched),
        ),
      { timeoutMs: 30_000, intervalMs: 20 },
    );
    assert.equal(agent.agent.reconnects, reconnects1, "the rig's stream was not interrupted");
    assert.equal(agent.agent.status, "streaming");

    // ---- 5. consolidation: lifecycle rows in order, with reasons ----
    const consolidateAt = Date.now();
    await scale(0);
    await waitFor(
      "this test's NodeClaims to be consolidated away",
      async () => (await poolClaims()).length === 0,
      {
        timeoutMs: 150_000,
        intervalMs: 1_000,
      },
    );
    say(`consolidated in ${((Date.now() - consolidateAt) / 1000).toFixed(1)} s`);
    say(
      `after consolidation: core equals the apiserver after ${await converged(core, "after consolidation")} ms`,
    );
    const byClaim = await waitFor(
      "a Terminated row for every NodeClaim of the pool",
      async () => {
        const rows = (await lifecycleRows(core.store)).filter((e) => e.nodePool === pool);
        const m = new Map<string, LifecycleEvent[]>();
        for (const e of rows) m.set(e.nodeClaimUid, [...(m.get(e.nodeClaimUid) ?? []), e]);
        const done = [...m.values()].every((es) => es.some((e) => e.phase === "Terminated"));
        return m.size >= 7 && done ? m : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 250 },
    );
    const disruptions = await core.store.disruptions({
      clusterId: CLUSTER,
      from: 0,
      to: Date.now() + 3_600_000,
      nodePool: pool,
    });
    const reasons = new Map<string, number>();
    for (const [uid, events] of byClaim) {
      const phases = events.map((e) => e.phase);
      const name = events[0]?.nodeClaim ?? uid;
      assert.deepEqual(
        [...phases].sort((a, b) => lifecyclePhases.indexOf(a) - lifecyclePhases.indexOf(b)),
        [...lifecyclePhases],
        `${name}: every lifecycle phase recorded once (got ${phases.join(",")})`,
      );
      const at = (p: string): number => events.find((e) => e.phase === p)?.at ?? Number.NaN;
      for (let i = 1; i < lifecyclePhases.length; i++) {
        const [a, b] = [lifecyclePhases[i - 1] ?? "", lifecyclePhases[i] ?? ""];
        assert.ok(at(a) <= at(b), `${name}: ${a} (${at(a)}) ≤ ${b} (${at(b)})`);
      }
      const reason = events.find((e) => e.phase === "Disrupted")?.reason ?? "";
      assert.ok(["Empty", "Underutilized"].includes(reason), `${name}: consolidation reason, got ${reason}`);
      assert.equal(
        events.find((e) => e.phase === "Terminated")?.reason,
        reason,
        `${name}: Terminated carries the disruption reason`,
      );
      assert.ok(
        disruptions.some((d) => d.nodeClaim === name && d.reason === reason),
        `${name}: a disruption row with reason ${reason}`,
      );
      reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    }
    say(
      `lifecycle: ${byClaim.size} NodeClaims with Launched → Registered → Initialized → Disrupted → Terminated in order; reasons ${JSON.stringify(Object.fromEntries(reasons))}; ${disruptions.length} disruption rows`,
    );

    // ---- 1. (result) the longest disagreement over the whole run ----
    say(
      `apiserver vs core: ${monitor.polls} polls, ${monitor.episodes} disagreements, max lag ${monitor.maxLagMs} ms (${monitor.maxLagKey || "none"}); agent-observed → core-applied max ${core.timed.maxMs} ms over ${core.timed.changes} changes (this core; longest store write ${core.timed.maxWriteMs} ms); event loop delay max ${(loopDelay.max / 1e6).toFixed(0)} ms; load average ${loadavg()[0]?.toFixed(1) ?? "?"}`,
    );
    const loopMaxMs = Math.round(loopDelay.max / 1e6);
    const over = monitor.lags.filter((l) => l > MAX_LAG_MS).length;
    say(
      `goal "core equals the apiserver within ${MAX_LAG_MS} ms": ${monitor.maxLagMs <= MAX_LAG_MS ? "met" : "missed"} — ` +
        `p50 ${monitor.quantile(0.5)} ms, p95 ${monitor.quantile(0.95)} ms, max ${monitor.maxLagMs} ms, ` +
        `${over} of ${monitor.episodes} disagreements over ${MAX_LAG_MS} ms (slowest apiserver list ${monitor.maxListMs} ms); ` +
        `from the end of the list: p95 ${monitor.quantile(0.95, monitor.lagsAfterList)} ms, max ${monitor.quantile(1, monitor.lagsAfterList)} ms`,
    );
    assert.ok(
      monitor.maxLagMs <= FOLLOW_BOUND_MS,
      `every disagreement closes: max lag ${monitor.maxLagMs} ms ≤ ${FOLLOW_BOUND_MS} ms`,
    );
    if (loopMaxMs <= STARVED_LOOP_MS && monitor.maxListMs <= STARVED_LIST_MS) {
      assert.ok(monitor.maxLagMs <= MAX_LAG_MS, `max lag ${monitor.maxLagMs} ms ≤ ${MAX_LAG_MS} ms`);
    } else {
      say(
        `host starved (event loop stalled ${loopMaxMs} ms, slowest apiserver list ${monitor.maxListMs} ms): the ${MAX_LAG_MS} ms goal is reported above, not asserted`,
      );
    }
  } catch (err) {
    t.diagnostic(`still disagreeing: ${JSON.stringify(monitor.open)}`);
    throw err;
  } finally {
    await monitor.stop();
    await agent.stop();
    await core.kill().catch(() => undefined);
  }
}

const iso = (ms: number): string => new Date(ms).toISOString();
const isGap = (r: SeriesRow): r is SeriesGap => r.kind === "gap";

async function seriesRows(store: Store, from: number, to: number): Promise<SeriesRow[]> {
  return store.series({ clusterId: CLUSTER, from, to, nodePool: pool, stepMs: STEP_MS });
}

/** A gap is a gap: no point recorded (or interpolated) inside it, points on both sides. */
function assertNoPointsIn(rows: readonly SeriesRow[], gap: { ts: number; until: number }): void {
  const points = rows.filter((r) => r.kind === "point");
  assert.deepEqual(
    points.filter((p) => p.ts >= gap.ts && p.ts < gap.until),
    [],
    "no point inside the gap",
  );
  assert.ok(
    points.some((p) => p.ts < gap.ts) && points.some((p) => p.ts >= gap.until),
    "points on both sides of the gap",
  );
}
