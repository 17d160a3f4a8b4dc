// Two core replicas on one PostgreSQL database behind a round-robin front (a Service, for the
// agent's gRPC stream and for API clients), the way the chart runs core with replicas > 1
// (ADR 0012). One agent streams the rig to whichever replica the front picks: that replica owns
// the cluster; the other reads it through the owner.
//
//   1. every API read and the live stream show the same figures whichever replica answers (each
//      replica asked directly, and through the front);
//   2. the owner is SIGKILLed while a scale-up streams: the agent reconnects through the front to
//      the survivor, which owns and serves the cluster within 30 s; every lifecycle row and
//      history point written before the kill is still there, every NodeClaim has its rows, and
//      the survivor goes on writing the cluster's history.
//
// Everything is read through core's HTTP API with the viewer token, as the dashboard does.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test, type TestContext } from "node:test";
import { freePorts } from "../../hack/rig/lib.ts";
import { defaultRetention } from "../../src/core/history/downsample.ts";
import { CLIENT_EXT, makePki, SERVER_EXT } from "../support/pki.ts";
import { startRoundRobin, type RoundRobinFront } from "../support/round-robin.ts";
import { alive, crashWave, type WaveProcess } from "../support/wave-process.ts";
import {
  createNamespace,
  deleteNamespace,
  kubectl,
  remove,
  requireRig,
  waitFor,
  withRigLogsOnFailure,
  apply,
} from "./harness.ts";
import {
  applyPool,
  call,
  deployment,
  firstSnapshot,
  freshDatabase,
  isTrue,
  poolClaims,
  query,
  startComponent,
  stopAll,
  tokens,
  waitApiUp,
  type EventRow,
  type Series,
} from "./wave-rig.ts";

const CLUSTER = "e2e-replicas";
const STEP_MS = defaultRetention.tiers[0]?.stepMs ?? 60_000;
const TAKEOVER_BOUND_MS = 30_000;

let ns = "";
let pool = "";
let work = "";
let db: { url: string; drop: () => Promise<void> } | undefined;
const fronts: RoundRobinFront[] = [];
const procs: WaveProcess[] = [];

interface Replica {
  name: string;
  api: number;
  grpc: number;
  proc: WaveProcess;
}

before(async () => {
  await requireRig();
  ns = await createNamespace("replicas");
  pool = ns;
  await applyPool(pool);
  work = mkdtempSync(join(tmpdir(), "wave-replicas-"));
  makePki(work, [
    { dir: "grpc", cn: "wave-core", ext: SERVER_EXT },
    { dir: "agent", cn: "wave-agent", ext: CLIENT_EXT },
  ]);
  db = await freshDatabase();
});

after(async () => {
  await stopAll(procs, 5_000);
  for (const f of fronts) await f.close();
  if (ns !== "") await deleteNamespace(ns).catch(() => undefined);
  if (pool !== "") await remove("nodepools.karpenter.sh", pool).catch(() => undefined);
  await db?.drop();
  if (work !== "") rmSync(work, { recursive: true, force: true });
});

test(
  "core replicas: same figures from either replica; SIGKILLed owner → the other serves within 30 s, nothing lost",
  { timeout: 330_000 },
  (t) => withRigLogsOnFailure(() => scenario(t)),
);

async function scenario(t: TestContext): Promise<void> {
  const say = (msg: string): void => t.diagnostic(msg);
  const url = db?.url ?? "";
  const [apiA = 0, grpcA = 0, apiB = 0, grpcB = 0, metrics = 0] = await freePorts(5);
  const core = (name: string, api: number, grpc: number): Replica => {
    const proc = startComponent(work, name, "core", {
      WAVE_NAMESPACE: ns,
      WAVE_CLUSTER_ID: CLUSTER,
      WAVE_PORT: String(api),
      WAVE_GRPC_PORT: String(grpc),
      WAVE_GRPC_TLS_DIR: join(work, "grpc"),
      WAVE_ADMIN_TOKEN: tokens.admin,
      WAVE_VIEWER_TOKEN: tokens.viewer,
      WAVE_DATABASE_URL: url,
      WAVE_ADVERTISE_URL: `http://127.0.0.1:${api}`,
    });
    procs.push(proc);
    return { name, api, grpc, proc };
  };
  const replicas = [core("core-a", apiA, grpcA), core("core-b", apiB, grpcB)];
  for (const r of replicas) await waitApiUp(r.proc, r.api);
  const grpcFront = await startRoundRobin([grpcA, grpcB]);
  const apiFront = await startRoundRobin([apiA, apiB]);
  fronts.push(grpcFront, apiFront);
  const agent = startComponent(work, "agent-0", "agent", {
    WAVE_NAMESPACE: ns,
    WAVE_CLUSTER_ID: CLUSTER,
    WAVE_AGENT_LEASE: "wave-agent",
    WAVE_CORE_ADDRESS: `https://127.0.0.1:${grpcFront.port}`,
    WAVE_AGENT_TLS_DIR: join(work, "agent"),
    WAVE_METRICS_PORT: String(metrics),
  });
  procs.push(agent);
  const owner = async (): Promise<string | undefined> => {
    const rows = await query(
      url,
      `SELECT holder, expires_at FROM cluster_leases WHERE cluster_id = '${CLUSTER}'`,
    );
    const row = rows[0];
    return row && Number(row["expires_at"]) > Date.now() ? String(row["holder"]) : undefined;
  };

  try {
    // ---- the agent lands on one replica, which owns the cluster; the pool scales to 2 ----
    const first = await waitFor("a replica to own the cluster", owner, {
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    await apply(deployment("web", ns, pool, 2));
    await waitFor(
      "2 registered NodeClaims in the pool, in core",
      async () => {
        const claims = (await poolClaims(pool)).filter((c) => isTrue(c, "Initialized"));
        if (claims.length < 2) return false;
        const nodes = await call<{ items: { nodeClaim: string | null }[] }>(
          apiFront.port,
          `/api/v1/clusters/${CLUSTER}/nodes?pool=${pool}`,
        );
        return nodes.body.items.length === 2;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    const firstPoint = await waitFor(
      "a history point of the pool with its nodes (written by the owner at a step boundary)",
      async () =>
        (
          await call<Series>(apiFront.port, `/api/v1/clusters/${CLUSTER}/series?window=1800&pool=${pool}`)
        ).body.points.find((p) => p.nodes > 0),
      { timeoutMs: STEP_MS + 30_000, intervalMs: 1_000 },
    );
    say(
      `owner ${first}; first history point at ${new Date(firstPoint.t).toISOString()} (${firstPoint.nodes} nodes)`,
    );

    // ---- 1. the same figures whichever replica answers ----
    const paths = [
      `/api/v1/clusters`,
      `/api/v1/clusters/${CLUSTER}/nodepools`,
      `/api/v1/clusters/${CLUSTER}/nodes?pool=${pool}&limit=5000`,
      `/api/v1/clusters/${CLUSTER}/events?pool=${pool}&from=0&limit=1000`,
      `/api/v1/clusters/${CLUSTER}/series?window=1800&pool=${pool}`,
      `/api/v1/clusters/${CLUSTER}/policies/spot`,
    ];
    // Volatile fields (lastSeen, the overview's own time) aside, every answer is equal.
    const stable = (path: string, body: unknown): unknown => {
      if (path === "/api/v1/clusters")
        return (body as { id: string; connected: boolean; kubernetesVersion: string | null }[]).map((c) => [
          c.id,
          c.connected,
          c.kubernetesVersion,
        ]);
      // The series' window is [now - window, now): its edges move with the clock, not its points.
      if (path.includes("/series")) return { ...(body as object), from: undefined, to: undefined };
      return body;
    };
    const frontReplicas = new Set<string>();
    await waitFor(
      "every read equal on both replicas and through the front",
      async () => {
        for (const path of paths) {
          const [a, b, f1, f2] = await Promise.all([
            call(apiA, path),
            call(apiB, path),
            call(apiFront.port, path),
            call(apiFront.port, path),
          ]);
          assert.deepEqual(stable(path, b.body), stable(path, a.body), `${path}: core-b = core-a`);
          assert.deepEqual(stable(path, f1.body), stable(path, a.body), `${path}: front = core-a`);
          assert.deepEqual(stable(path, f2.body), stable(path, a.body), `${path}: front = core-a`);
          for (const r of [f1.replica, f2.replica]) if (r) frontReplicas.add(r);
        }
        return true;
      },
      { timeoutMs: 20_000, intervalMs: 500 },
    );
    const other = replicas.find((r) => r.name !== first);
    assert.ok(other);
    const through = await call(other.api, `/api/v1/clusters/${CLUSTER}/nodepools`);
    assert.equal(through.owner, first, `${other.name} reads the cluster through its owner`);
    const live = (d: unknown): unknown => {
      const l = d as {
        overview: { nodes: number; costPerHour: number };
        nodePools: { name: string; nodes: number }[];
      };
      return {
        nodes: l.overview.nodes,
        cost: l.overview.costPerHour,
        pools: l.nodePools.map((p) => [p.name, p.nodes]),
      };
    };
    await waitFor(
      "the live stream's first snapshot equal on both replicas",
      async () => {
        const [sa, sb] = await Promise.all([firstSnapshot(apiA, CLUSTER), firstSnapshot(apiB, CLUSTER)]);
        assert.deepEqual(live(sb.data), live(sa.data));
        return true;
      },
      { timeoutMs: 20_000, intervalMs: 500 },
    );
    say(
      `reads equal on both replicas for ${paths.length} routes and the live stream; ${other.name} reads through ${first}; ` +
        `the front's answers came from ${[...frontReplicas].join(", ")}`,
    );

    // ---- 2. the owner SIGKILLed while the scale-up streams ----
    const events = async (port: number): Promise<EventRow[]> =>
      (await call<EventRow[]>(port, `/api/v1/clusters/${CLUSTER}/events?pool=${pool}&from=0&limit=1000`))
        .body;
    const series = async (port: number, ofPool = true): Promise<Series> =>
      (
        await call<Series>(
          port,
          `/api/v1/clusters/${CLUSTER}/series?window=1800${ofPool ? `&pool=${pool}` : ""}`,
        )
      ).body;
    await kubectl(["scale", "deployment", "web", "--replicas=4", "-n", ns]);
    await waitFor(
      "Karpenter to create the scale-up's first NodeClaim",
      async () => (await poolClaims(pool)).length > 2,
      {
        timeoutMs: 60_000,
        intervalMs: 100,
      },
    );
    const [eventsBefore, poolBefore, allBefore] = await Promise.all([
      events(other.api),
      series(other.api),
      series(other.api, false),
    ]);
    const victim = replicas.find((r) => r.name === first);
    assert.ok(victim && alive(victim.proc));
    await crashWave(victim.proc);
    const killAt = Date.now();

    const servedBy = await waitFor(
      "the survivor to own and serve the cluster (agent connected through the front)",
      async () => {
        const c = await call<{ id: string; connected: boolean }[]>(apiFront.port, "/api/v1/clusters");
        return c.body.find((x) => x.id === CLUSTER)?.connected === true && (await owner()) === other.name
          ? c.replica
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    const takeoverMs = Date.now() - killAt;
    say(
      `${first} SIGKILLed; ${other.name} owns and serves the cluster ${takeoverMs} ms later (answer from ${servedBy})`,
    );
    assert.ok(
      takeoverMs <= TAKEOVER_BOUND_MS,
      `taken over in ${takeoverMs} ms (bound ${TAKEOVER_BOUND_MS} ms)`,
    );

    // Every NodeClaim of the apiserver is in core with its lifecycle rows; nothing from before is lost.
    const eventsAfter = await waitFor(
      "core's machines and lifecycle rows to match the apiserver's NodeClaims",
      async () => {
        const claims = await poolClaims(pool);
        const nodes = await call<{ items: { nodeClaim: string | null }[] }>(
          apiFront.port,
          `/api/v1/clusters/${CLUSTER}/nodes?pool=${pool}&limit=5000`,
        );
        const inCore = new Set(nodes.body.items.map((i) => i.nodeClaim));
        const missingClaims = claims.filter((c) => !inCore.has(c.metadata.name)).map((c) => c.metadata.name);
        if (missingClaims.length > 0) throw new Error(`not in core: ${missingClaims.join(", ")}`);
        const rows = await events(apiFront.port);
        const has = new Set(rows.map((e) => `${e.nodeClaim}/${e.phase}`));
        const missing = claims
          .flatMap((c) =>
            ["Launched", "Registered", "Initialized"]
              .filter((phase) => phase === "Launched" || isTrue(c, phase))
              .map((phase) => `${c.metadata.name}/${phase}`),
          )
          .filter((k) => !has.has(k));
        if (missing.length > 0) throw new Error(`missing ${missing.join(", ")}`);
        return rows;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    const key = (e: EventRow): string => `${e.nodeClaim}/${e.phase}@${e.at}`;
    const afterKeys = new Set(eventsAfter.map(key));
    const lostEvents = eventsBefore.filter((e) => !afterKeys.has(key(e)));
    say(
      `lifecycle rows: ${eventsBefore.length} before the kill, ${eventsAfter.length} after, ${lostEvents.length} lost`,
    );
    assert.ok(eventsBefore.length >= 6, "rows for the first two NodeClaims before the kill");
    assert.deepEqual(lostEvents, [], "no lifecycle row lost");

    // History: every point from before the kill kept; the survivor writes the next ones.
    const pointKey = (p: Series["points"][number]): string =>
      JSON.stringify([p.t, p.nodes, p.vcpu, p.costPerHour]);
    const poolAfter = await waitFor(
      "a history point written by the survivor",
      async () => {
        const s = await series(apiFront.port);
        return s.points.some((p) => p.t >= killAt - (killAt % STEP_MS) + STEP_MS) ? s : undefined;
      },
      { timeoutMs: STEP_MS + 30_000, intervalMs: 1_000 },
    );
    const allAfter = await series(apiFront.port, false);
    const lost = (then: Series, now: Series): number => {
      const keys = new Set(now.points.map(pointKey));
      return then.points.filter((p) => !keys.has(pointKey(p))).length;
    };
    say(
      `history points: pool ${poolBefore.points.length} before, ${poolAfter.points.length} after, ${lost(poolBefore, poolAfter)} lost; ` +
        `all pools ${allBefore.points.length} before, ${lost(allBefore, allAfter)} lost; gaps ${JSON.stringify(poolAfter.gaps)}`,
    );
    assert.ok(poolBefore.points.length >= 1);
    assert.equal(lost(poolBefore, poolAfter), 0, "no history point of the pool lost");
    assert.equal(lost(allBefore, allAfter), 0, "no history point of any pool lost");

    // The live stream through the front is the survivor's.
    const after = await firstSnapshot(apiFront.port, CLUSTER);
    const direct = await call<{ name: string; nodes: number }[]>(
      other.api,
      `/api/v1/clusters/${CLUSTER}/nodepools`,
    );
    const streamed = live(after.data) as { pools: [string, number][] };
    assert.deepEqual(
      streamed.pools.find(([n]) => n === pool),
      [pool, direct.body.find((p) => p.name === pool)?.nodes],
    );
    say(
      `front connections: gRPC ${JSON.stringify([...grpcFront.counts])}, API ${JSON.stringify([...apiFront.counts])}`,
    );
    const ends = await stopAll([other.proc, agent]);
    say(`stopped: ${ends.join(", ")}`);
    assert.ok(
      ends.every((e) => e.endsWith(" 0")),
      "clean exits",
    );
  } catch (err) {
    for (const p of procs) say(`${p.name} output (last lines):\n${p.output.slice(-30).join("\n")}`);
    throw err;
  }
}
