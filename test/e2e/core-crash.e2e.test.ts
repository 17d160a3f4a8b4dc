// Crash faults on the rig (issue 4): `wave core` and `wave agent` run as two processes the way the
// Helm chart runs them (`<component> --config config.yaml`, the chart's WAVE_* environment, mutual
// TLS on gRPC with certificates from one CA, the agent's bearer token, core's SQLite data
// directory), and are SIGKILLed — no shutdown hook, no close, no checkpoint — while changes flow.
//
//   1. the agent is killed while Karpenter launches the test's NodeClaims and restarted: core's
//      sets converge again (it resumes or resyncs);
//   2. core is killed while a scale-up streams, and stays down across a history step boundary; the
//      agent buffers (nothing dropped); a NodeClaim core knew is deleted meanwhile; core restarts
//      on the same port and data directory:
//      - its Node/NodeClaim/NodePool sets (read through its API) converge to the apiserver's;
//      - every lifecycle row from before the kill is still there, every NodeClaim of the
//        apiserver has its Launched (Registered, Initialized) rows, and the deleted one is closed
//        with a Terminated row;
//      - every history point written before the kill is still there, and the outage is a gap in
//        the pool's series with no point inside it (SQLite in WAL mode survives SIGKILL).
//
// Everything is read through core's HTTP API with the viewer token, as the dashboard does. The
// history step is production's (the store's raw tier, one minute), so the test waits for step
// boundaries: ~3 minutes of wall time.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test, type TestContext } from "node:test";
import { freePorts } from "../../hack/rig/lib.ts";
import {
  applyPool as applyPoolNamed,
  deployment as deploymentOn,
  isTrue,
  poolClaims as claimsOf,
} from "./wave-rig.ts";
import { CLIENT_EXT, makePki, SERVER_EXT } from "../support/pki.ts";
import { alive, crashWave, spawnWave, stopWave, type WaveProcess } from "../support/wave-process.ts";
import { defaultRetention } from "../../src/core/history/downsample.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  get,
  kubeconfigPath,
  kubectl,
  list,
  remove,
  requireRig,
  sleep,
  waitFor,
  withRigLogsOnFailure,
  type KubeObject,
} from "./harness.ts";

const CLUSTER = "e2e-core-crash";
/** Core's history step: the finest tier of the retention `wave core` runs with. */
const STEP_MS = defaultRetention.tiers[0]?.stepMs ?? 60_000;
/** Core stays down at least this long, and past the next step boundary (so a bucket is missed). */
const MIN_OUTAGE_MS = 10_000;
/** Bounded waits: a convergence slower than this is a lost update, not a slow machine. */
const CONVERGE_TIMEOUT_MS = 90_000;
const tokens = {
  admin: randomBytes(18).toString("base64url"),
  viewer: randomBytes(18).toString("base64url"),
  agent: randomBytes(18).toString("base64url"),
};

let ns = "";
let pool = "";
let work = "";
let apiPort = 0;
let grpcPort = 0;
let metricsPort = 0;

// ---------------------------------------------------------------- PKI (what cert-manager mounts)

/** work/{grpc,agent}/{tls.crt,tls.key,ca.crt} signed by one CA, as the chart's Certificates. */
function makeChartPki(): void {
  makePki(work, [
    { dir: "grpc", cn: "wave-core", ext: SERVER_EXT },
    { dir: "agent", cn: "wave-agent", ext: CLIENT_EXT },
  ]);
}

// ---------------------------------------------------------------- Wave's processes

const procs: WaveProcess[] = [];

/** `wave <component> --config config.yaml` with the chart's environment (see deploy/helm/wave). */
function startWave(component: "core" | "agent"): WaveProcess {
  const config = join(work, "config.yaml");
  // The chart's ConfigMap, with a local host and data directory.
  writeFileSync(config, JSON.stringify({ host: "127.0.0.1", dataDir: join(work, "data") }));
  const common = {
    WAVE_NAMESPACE: ns,
    WAVE_POD_NAME: `${component}-0`, // a container restart keeps the pod's name
    WAVE_CLUSTER_ID: CLUSTER,
    WAVE_LOG_LEVEL: "info",
    WAVE_AGENT_TOKEN: tokens.agent,
  };
  const env =
    component === "core"
      ? {
          ...common,
          WAVE_PORT: String(apiPort),
          WAVE_GRPC_PORT: String(grpcPort),
          WAVE_GRPC_TLS_DIR: join(work, "grpc"),
          WAVE_ADMIN_TOKEN: tokens.admin,
          WAVE_VIEWER_TOKEN: tokens.viewer,
        }
      : {
          ...common,
          WAVE_AGENT_LEASE: "wave-agent",
          WAVE_CORE_ADDRESS: `https://127.0.0.1:${grpcPort}`,
          WAVE_AGENT_TLS_DIR: join(work, "agent"),
          WAVE_METRICS_PORT: String(metricsPort),
        };
  const p = spawnWave(component, [component, "--config", config], {
    env: { ...env, KUBECONFIG: kubeconfigPath },
    home: work,
  });
  procs.push(p);
  return p;
}

/** SIGKILL: the process gets no chance to flush, close or checkpoint anything. */
async function crash(p: WaveProcess): Promise<void> {
  assert.ok(alive(p), `wave ${p.name} is running before it is killed:\n${p.output.join("\n")}`);
  await crashWave(p);
}

/** SIGTERM, then SIGKILL after `graceMs`; how it ended, for the log. */
async function stop(p: WaveProcess, graceMs = 15_000): Promise<string> {
  const code = await stopWave(p, graceMs);
  return code === "hung" ? "hung (killed)" : String(code ?? p.child.signalCode);
}

async function waitCoreUp(core: WaveProcess): Promise<void> {
  await waitFor(
    "core's API /healthz",
    async () => {
      if (!alive(core)) throw new Error(`wave core exited:\n${core.output.slice(-30).join("\n")}`);
      return (await fetch(`http://127.0.0.1:${apiPort}/healthz`, { signal: AbortSignal.timeout(5_000) })).ok;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

/** GET one of core's API routes with the viewer token. */
async function api<T>(path: string): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${apiPort}${path}`, {
    headers: { authorization: `Bearer ${tokens.viewer}` },
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** The agent's Prometheus samples (unlabelled ones), by name. */
async function agentMetrics(): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(5_000) });
  const out = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    const m = /^(wave_agent_[a-z_]+) (\S+)$/.exec(line);
    if (m?.[1] && m[2]) out.set(m[1], Number(m[2]));
  }
  return out;
}

const metric = (m: Map<string, number>, name: string): number => m.get(name) ?? Number.NaN;

// ---------------------------------------------------------------- core's view vs the apiserver's

interface NodeRow {
  name: string;
  nodeClaim: string | null;
}
interface EventRow {
  at: number;
  nodeClaim: string;
  phase: string;
}
interface SeriesPoint {
  t: number;
  nodes: number;
  spotNodes: number;
  vcpu: number;
  costPerHour: number;
}
interface Series {
  points: SeriesPoint[];
  gaps: { from: number; to: number }[];
}

interface Sets {
  nodes: Set<string>;
  nodeClaims: Set<string>;
  nodePools: Set<string>;
}
const KINDS = ["nodes", "nodeClaims", "nodePools"] as const;

async function apiserverSets(): Promise<Sets> {
  const names = (xs: KubeObject[]): Set<string> => new Set(xs.map((x) => x.metadata.name));
  const [nodes, claims, pools] = await Promise.all([
    list("nodes", { selector: `karpenter.sh/nodepool=${pool}` }),
    list("nodeclaims.karpenter.sh", { selector: `karpenter.sh/nodepool=${pool}` }),
    list("nodepools.karpenter.sh"),
  ]);
  return { nodes: names(nodes), nodeClaims: names(claims), nodePools: names(pools) };
}

/**
 * Core's sets from its API: the pool's machines (a row is a Node once registered — its name is
 * the Node's, which KWOK never gives the NodeClaim's name — else the bare NodeClaim) and every
 * NodePool.
 */
async function coreSets(): Promise<Sets> {
  const [machines, pools] = await Promise.all([
    api<{ items: NodeRow[] }>(`/api/v1/clusters/${CLUSTER}/nodes?pool=${pool}&limit=5000`),
    api<{ name: string }[]>(`/api/v1/clusters/${CLUSTER}/nodepools`),
  ]);
  return {
    nodes: new Set(machines.items.filter((m) => m.name !== m.nodeClaim).map((m) => m.name)),
    nodeClaims: new Set(machines.items.flatMap((m) => (m.nodeClaim === null ? [] : [m.nodeClaim]))),
    nodePools: new Set(pools.map((p) => p.name)),
  };
}

/**
 * Keys where core disagrees with the apiserver both before and after reading core (a change that
 * lands between the reads is not a disagreement; other tests create NodePools on the shared rig).
 */
function disagreements(before: Sets, core: Sets, after: Sets): string[] {
  const out: string[] = [];
  for (const kind of KINDS) {
    for (const k of new Set([...before[kind], ...core[kind], ...after[kind]])) {
      const c = core[kind].has(k);
      if (c !== before[kind].has(k) && c !== after[kind].has(k))
        out.push(`${kind} ${k} ${c ? "only in core" : "missing in core"}`);
    }
  }
  return out;
}

/** Waits until core's agent stream is up and its sets equal the apiserver's; returns the ms. */
async function converged(what: string, since = Date.now()): Promise<number> {
  await waitFor(
    `core's Node/NodeClaim/NodePool sets to equal the apiserver's (${what})`,
    async () => {
      const clusters = await api<{ id: string; connected: boolean }[]>("/api/v1/clusters");
      if (clusters.find((c) => c.id === CLUSTER)?.connected !== true) throw new Error("agent not connected");
      const before = await apiserverSets();
      const core = await coreSets();
      const d = disagreements(before, core, await apiserverSets());
      if (d.length > 0) throw new Error(`${d.length} differ, e.g. ${d.slice(0, 5).join("; ")}`);
      return true;
    },
    { timeoutMs: CONVERGE_TIMEOUT_MS, intervalMs: 250 },
  );
  return Date.now() - since;
}

async function events(): Promise<EventRow[]> {
  return api<EventRow[]>(`/api/v1/clusters/${CLUSTER}/events?pool=${pool}&from=0&limit=1000`);
}

/** The pool's series (or every pool's, summed) over the last half hour, at core's raw step. */
async function series(ofPool = true): Promise<Series> {
  return api<Series>(`/api/v1/clusters/${CLUSTER}/series?window=1800${ofPool ? `&pool=${pool}` : ""}`);
}

const eventKey = (e: EventRow): string => `${e.nodeClaim}/${e.phase}@${e.at}`;
const pointKey = (p: SeriesPoint): string =>
  JSON.stringify([p.t, p.nodes, p.spotNodes, p.vcpu, p.costPerHour]);
const clock = (ms: number): string => new Date(ms).toISOString().slice(11, 19);
const alignDown = (ms: number): number => ms - (ms % STEP_MS);

// ---------------------------------------------------------------- rig objects

const applyPool = (): Promise<void> => applyPoolNamed(pool);
/** 1-CPU pause pods on this test's pool, one per node (so each replica is a NodeClaim). */
const deployment = (replicas: number): object => deploymentOn("web", ns, pool, replicas);
const poolClaims = (): Promise<KubeObject[]> => claimsOf(pool);

// ---------------------------------------------------------------- the test

before(async () => {
  await requireRig();
  ns = await createNamespace("core-crash");
  pool = ns;
  await applyPool();
  work = mkdtempSync(join(tmpdir(), "wave-core-crash-"));
  makeChartPki();
  [apiPort = 0, grpcPort = 0, metricsPort = 0] = await freePorts(3);
  assert.ok(apiPort > 0 && grpcPort > 0 && metricsPort > 0, "three free ports");
});

after(async () => {
  // Children first (also when the test failed or timed out), then the rig objects.
  await Promise.all(procs.map((p) => stop(p, 5_000)));
  if (ns !== "") await deleteNamespace(ns).catch(() => undefined);
  if (pool !== "") await remove("nodepools.karpenter.sh", pool).catch(() => undefined);
  if (work !== "") rmSync(work, { recursive: true, force: true });
});

test(
  "core crash: SIGKILLed agent and core recover; no lifecycle or history row lost; the outage is a gap",
  { timeout: 330_000 },
  (t) => withRigLogsOnFailure(() => scenario(t)),
);

async function scenario(t: TestContext): Promise<void> {
  const say = (msg: string): void => t.diagnostic(msg);
  const t0 = Date.now();
  let core = startWave("core");
  let agent = startWave("agent");
  try {
    await waitCoreUp(core);
    say(`initial sync: core equals the apiserver ${await converged("initial sync", t0)} ms after start`);

    // ---- 1. the agent SIGKILLed while Karpenter launches the pool's NodeClaims ----
    await apply(deployment(3));
    await waitFor(
      "Karpenter to create the pool's first NodeClaim",
      async () => (await poolClaims()).length > 0,
      {
        timeoutMs: 60_000,
        intervalMs: 200,
      },
    );
    const m0 = await agentMetrics();
    await crash(agent);
    const agentKilledAt = Date.now();
    await sleep(2_000); // Karpenter keeps launching while the agent is gone
    agent = startWave("agent");
    const agentRestartAt = Date.now();
    const agentConvergeMs = await converged("after the agent's restart", agentRestartAt);
    const m1 = await agentMetrics();
    say(
      `agent SIGKILLed for ${agentRestartAt - agentKilledAt} ms (it had acked seq ${metric(m0, "wave_agent_last_ack_sequence")}); ` +
        `restarted: converged in ${agentConvergeMs} ms (new process: acked seq ${metric(m1, "wave_agent_last_ack_sequence")}, ` +
        `resyncs ${metric(m1, "wave_agent_resyncs_total")}, ${metric(m1, "wave_agent_objects")} objects)`,
    );
    assert.equal(metric(m1, "wave_agent_connected"), 1, "the restarted agent streams to core");

    // The pool's 3 nodes registered and in core, then a history point of the pool with them.
    await waitFor(
      "3 registered NodeClaims in the pool",
      async () => (await poolClaims()).filter((c) => isTrue(c, "Registered")).length === 3,
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    await converged("3 nodes");
    const firstClaims = (await poolClaims()).map((c) => c.metadata.name).sort();
    const firstPoint = await waitFor(
      "a history point of the pool with its nodes (written at the next step boundary)",
      async () => (await series()).points.find((p) => p.nodes > 0),
      { timeoutMs: STEP_MS + 30_000, intervalMs: 1_000 },
    );
    say(`history: first point of the pool at ${clock(firstPoint.t)} (${firstPoint.nodes} nodes)`);
    await waitFor(
      "Launched, Registered and Initialized rows for the 3 NodeClaims",
      async () => (await events()).length >= 9,
      { timeoutMs: 30_000, intervalMs: 500 },
    );

    // ---- 2. core SIGKILLed while the scale-up streams in ----
    await kubectl(["scale", "deployment", "web", "--replicas=6", "-n", ns]);
    await waitFor(
      "core to receive the first NodeClaim of the scale-up",
      async () => (await coreSets()).nodeClaims.size > 3,
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const [eventsBefore, poolBefore, allBefore, claimsBefore, mBefore] = await Promise.all([
      events(),
      series(),
      series(false),
      coreSets(),
      agentMetrics(),
    ]);
    await crash(core);
    const killAt = Date.now();
    // What SIGKILL left behind: the WAL the restarted core must recover from.
    const wal = join(work, "data", "wave.db-wal");
    const walBytes = existsSync(wal) ? statSync(wal).size : -1;
    const restartNotBefore = Math.max(killAt + MIN_OUTAGE_MS, alignDown(killAt) + STEP_MS + 2_000);
    // A NodeClaim deleted while core is down: the restarted core must close it from the store.
    const victim = firstClaims[0];
    assert.ok(victim !== undefined, "a NodeClaim of the first three");
    await remove("nodeclaims.karpenter.sh", victim);
    let victimGoneMs: number | undefined;
    let bufferedMax = 0;
    while (Date.now() < restartNotBefore || victimGoneMs === undefined) {
      bufferedMax = Math.max(bufferedMax, metric(await agentMetrics(), "wave_agent_buffered_messages"));
      if (victimGoneMs === undefined && (await get("nodeclaims.karpenter.sh", victim)) === undefined)
        victimGoneMs = Date.now() - killAt;
      if (Date.now() > restartNotBefore + 60_000)
        throw new Error(`NodeClaim ${victim} still exists ${Date.now() - killAt} ms after its deletion`);
      await sleep(500);
    }
    core = startWave("core");
    const restartAt = Date.now();
    await waitCoreUp(core);
    const coreUpMs = Date.now() - restartAt;
    const coreConvergeMs = await converged("after core's restart", restartAt);
    const mAfter = await agentMetrics();
    const delta = (name: string): number => metric(mAfter, name) - metric(mBefore, name);
    say(
      `core SIGKILLed for ${restartAt - killAt} ms (${claimsBefore.nodeClaims.size} of 6 NodeClaims in core at the kill): ` +
        `agent buffered up to ${bufferedMax} messages, dropped ${delta("wave_agent_dropped_messages_total")}, ` +
        `reconnects ${delta("wave_agent_reconnects_total")}, resyncs ${delta("wave_agent_resyncs_total")}; ` +
        `restarted on port ${grpcPort}, same data dir (WAL left by the kill: ${walBytes} bytes): ` +
        `API up in ${coreUpMs} ms, converged in ${coreConvergeMs} ms`,
    );
    assert.ok(walBytes >= 0, "core's SQLite store runs in WAL mode (the -wal file outlives the kill)");
    assert.ok(bufferedMax > 0, "the agent buffered the changes made while core was down");
    assert.equal(delta("wave_agent_dropped_messages_total"), 0, "the agent's buffer dropped nothing");
    assert.ok(delta("wave_agent_reconnects_total") >= 1, "the agent reconnected to the restarted core");

    // Lifecycle: nothing from before the kill is lost; every NodeClaim has its rows, and those
    // deleted while core was down are closed.
    const claimsNow = await poolClaims();
    const gone = [...claimsBefore.nodeClaims].filter((n) => !claimsNow.some((c) => c.metadata.name === n));
    assert.ok(
      gone.includes(victim),
      `${victim}, deleted during the outage, is gone (gone: ${gone.join(", ")})`,
    );
    const eventsAfter = await waitFor(
      "lifecycle rows for every NodeClaim of the pool (Launched, and Registered/Initialized once true) and Terminated for those deleted",
      async () => {
        const rows = await events();
        const has = new Set(rows.map((e) => `${e.nodeClaim}/${e.phase}`));
        const missing = [
          ...claimsNow.flatMap((c) =>
            ["Launched", "Registered", "Initialized"]
              .filter((phase) => phase === "Launched" || isTrue(c, phase))
              .map((phase) => `${c.metadata.name}/${phase}`),
          ),
          ...gone.map((n) => `${n}/Terminated`),
        ].filter((k) => !has.has(k));
        if (missing.length > 0) throw new Error(`missing ${missing.join(", ")}`);
        return rows;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    const afterKeys = new Set(eventsAfter.map(eventKey));
    const lostEvents = eventsBefore.filter((e) => !afterKeys.has(eventKey(e)));
    say(
      `lifecycle rows of the pool: ${eventsBefore.length} before the kill, ${eventsAfter.length} after the restart, ` +
        `${lostEvents.length} lost; ${claimsNow.length} NodeClaims in the apiserver all have theirs; ` +
        `deleted during the outage (gone ${victimGoneMs} ms after the kill) and closed with Terminated: ${gone.join(", ")}`,
    );
    assert.ok(eventsBefore.length >= 9, `lifecycle rows for the 3 first NodeClaims before the kill`);
    assert.deepEqual(lostEvents, [], "no lifecycle row written before the kill is lost");

    // History: every point from before the kill is kept; the outage is a gap, not bridged.
    const poolAfter = await waitFor(
      "the restarted core's first history point (at the next step boundary)",
      async () => {
        const s = await series();
        return s.points.some((p) => p.t >= restartAt) ? s : undefined;
      },
      { timeoutMs: STEP_MS + 30_000, intervalMs: 1_000 },
    );
    const allAfter = await series(false);
    const lost = (then: Series, now: Series): SeriesPoint[] => {
      const keys = new Set(now.points.map(pointKey));
      return then.points.filter((p) => !keys.has(pointKey(p)));
    };
    const missed = alignDown(killAt) + STEP_MS; // the first boundary core was down for
    const gap = poolAfter.gaps.find((g) => g.from <= missed && g.to >= restartAt);
    say(
      `history: ${poolBefore.points.length} points of the pool (${allBefore.points.length} of all pools) before the kill, ` +
        `${lost(poolBefore, poolAfter).length} (${lost(allBefore, allAfter).length}) lost; outage [${clock(killAt)} .. ${clock(restartAt)}) ` +
        `gap ${gap ? `[${clock(gap.from)} .. ${clock(gap.to)})` : "none"} (gaps: ${poolAfter.gaps.map((g) => `[${clock(g.from)} .. ${clock(g.to)})`).join(" ") || "none"})`,
    );
    assert.ok(poolBefore.points.length >= 1, "history points of the pool before the kill");
    assert.deepEqual(lost(poolBefore, poolAfter), [], "no history point of the pool is lost");
    assert.deepEqual(lost(allBefore, allAfter), [], "no history point of any pool is lost");
    assert.ok(gap, `a gap covers core's outage (series: ${JSON.stringify(poolAfter)})`);
    assert.deepEqual(
      poolAfter.points.filter((p) => p.t >= gap.from && p.t < gap.to),
      [],
      "no point inside the gap (nothing interpolated)",
    );
    assert.ok(
      poolAfter.points.some((p) => p.t < gap.from) && poolAfter.points.some((p) => p.t >= gap.to),
      "points on both sides of the gap",
    );

    // A clean stop still works after the crash recovery.
    const coreExit = await stop(core);
    const agentExit = await stop(agent);
    say(
      `stopped: core ${coreExit}, agent ${agentExit}; wall ${((Date.now() - t0) / 1000).toFixed(0)} s; load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(", ")}`,
    );
    assert.equal(coreExit, "0", "core exits cleanly on SIGTERM");
    assert.equal(agentExit, "0", "the agent exits cleanly on SIGTERM");
  } catch (err) {
    for (const p of [core, agent])
      say(`wave ${p.name} output (last lines):\n${p.output.slice(-40).join("\n")}`);
    throw err;
  }
}
