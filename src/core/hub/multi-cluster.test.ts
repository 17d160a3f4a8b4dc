// Two clusters through the real path: two agents with their own cluster ids → gRPC → one core's
// ingest and hub → the history sampler → the store → the API. Each cluster's live figures,
// lifecycle, history, warmup stats and policies must be its own and complete.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { Agent } from "../../agent/agent.ts";
import { disruptionEvent, node, nodeClaim, nodePool } from "../../agent/fixtures.ts";
import { MemorySource } from "../../agent/source.ts";
import type { WireObject } from "../../wire/wire.ts";
import { build } from "../../api/app.ts";
import type {
  ClusterDto,
  DisruptionDto,
  LifecycleEventDto,
  NodePoolDto,
  OverviewDto,
  SeriesDto,
} from "../../dashboard/dto.ts";
import { dashboardRoutes } from "../../api/routes/dashboard.ts";
import { policyRoutes } from "../../api/routes/policies.ts";
import { startHistory } from "../../cli/parts.ts";
import { KwokPriceProvider } from "../../pricing/kwok.ts";
import { FakeClock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import { Registry } from "../../shared/metrics.ts";
import { DurableWarmupStats } from "../warmup/stats-store.ts";
import { warmupCounts } from "../../warmup/stats.ts";
import { IngestCore } from "../ingest/core.ts";
import { startIngestServer, type IngestServer } from "../ingest/server.ts";
import { openStore } from "../store/open.ts";
import type { Store } from "../store/store.ts";
import { ClusterHub } from "./hub.ts";

const STEP = 60_000;
const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);
const tokens = { admin: "admin-token-0123456789", viewer: "viewer-token-0123456789" };
const V = { authorization: `Bearer ${tokens.viewer}` };
const A = { authorization: `Bearer ${tokens.admin}` };

/** A fixture Node moved into `pool`. */
function nodeIn(i: number, pool: string): WireObject {
  const w = node(i);
  if (w.kind !== "Node") throw new Error("fixture");
  const labels = { ...w.object.metadata.labels, "karpenter.sh/nodepool": pool };
  return { kind: "Node", object: { ...w.object, metadata: { ...w.object.metadata, labels } } };
}

const clock = new FakeClock(T0 + 1_000);
let store: Store;
let hub: ClusterHub;
let server: IngestServer;
let app: FastifyInstance;
let stopHistory: () => Promise<void>;
const ac = new AbortController();
const agents: { id: string; agent: Agent; source: MemorySource; done: Promise<void> }[] = [];
const east = new MemorySource([
  nodePool("east"),
  nodeClaim(1, { pool: "east" }),
  nodeClaim(2, { pool: "east" }),
  nodeIn(1, "east"),
  nodeIn(2, "east"),
]);
const west = new MemorySource([nodePool("west"), nodeClaim(7, { pool: "west" }), nodeIn(7, "west")]);

async function get<T>(url: string): Promise<T> {
  const r = await app.inject({ url, headers: V });
  assert.equal(r.statusCode, 200, `${url}: ${r.body}`);
  return r.json<T>();
}

/** Wakes the sampler at the next step boundary once it is parked. */
async function step(): Promise<void> {
  while (clock.pending === 0) await new Promise((r) => setImmediate(r));
  await clock.advance(STEP);
  // Let the sampler's write land.
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

before(async () => {
  store = await openStore(
    { backend: "sqlite", path: ":memory:" },
    {
      log: silentLogger,
      now: () => clock.now(),
      retention: { tiers: [{ stepMs: STEP, retainMs: 24 * 3_600_000 }], eventRetainMs: 24 * 3_600_000 },
    },
  );
  hub = new ClusterHub(store, clock);
  const ingest = new IngestCore({ sink: hub, clock, coreVersion: "test" });
  server = await startIngestServer({ core: ingest, port: 0, host: "127.0.0.1", tokens: ["t"] });
  for (const [id, source] of [
    ["east", east],
    ["west", west],
  ] as const) {
    const agent = new Agent({
      source,
      coreUrl: `http://127.0.0.1:${server.port}`,
      token: "t",
      clusterId: id,
      kubernetesVersion: "v1.34.0",
      karpenterVersion: "1.8.0",
      agentVersion: "0.1.0",
      clock: new FakeClock(T0),
      metrics: new Registry(),
    });
    agents.push({ id, agent, source, done: agent.run(ac.signal) });
  }
  // Warmup events of east only (its warmup actor's); the API's counters read them per cluster.
  const stats = new DurableWarmupStats({ store, clusterId: "east", clock, log: silentLogger });
  stats.record({ type: "hit", pool: "east", at: T0, node: "node-1" });
  stats.record({ type: "miss", pool: "east", at: T0, pod: "w-1", reason: "ttl" });
  await stats.drain();
  await stats.refresh("east");
  await stats.refresh("west");
  app = await build({
    tokens,
    plugins: [
      dashboardRoutes({
        hub,
        prices: new KwokPriceProvider(),
        now: () => clock.now(),
        clock,
        warmupStats: (id) => warmupCounts(stats.counters(id)),
      }),
      policyRoutes({ store, defaultClusterId: "east", now: () => clock.now() }),
    ],
  });
  for (const a of agents) await a.agent.until((x) => x.outbox.lastAcked >= 3);
  stopHistory = await startHistory({
    store,
    hub,
    prices: new KwokPriceProvider(),
    clock,
    log: silentLogger,
    signal: ac.signal,
  });
});

after(async () => {
  ac.abort();
  await Promise.all(agents.map((a) => a.done.catch(() => undefined)));
  await stopHistory();
  await app.close();
  await server.close();
  await store.close();
});

describe("two clusters, one core", { timeout: 30_000 }, () => {
  it("lists both, connected, with each one's own live state", async () => {
    const cs = await get<ClusterDto[]>("/api/v1/clusters");
    assert.deepEqual(
      cs.map((c) => [c.id, c.connected]),
      [
        ["east", true],
        ["west", true],
      ],
    );
    assert.deepEqual(
      (await get<NodePoolDto[]>("/api/v1/clusters/east/nodepools")).map((p) => [p.name, p.nodes]),
      [["east", 2]],
    );
    assert.deepEqual(
      (await get<NodePoolDto[]>("/api/v1/clusters/west/nodepools")).map((p) => [p.name, p.nodes]),
      [["west", 1]],
    );
    assert.equal((await get<{ id: string }>("/api/v1/clusters/west")).id, "west");
    assert.equal((await app.inject({ url: "/api/v1/clusters/north/overview", headers: V })).statusCode, 404);
  });

  it("records history for every connected cluster, each in its own series", async () => {
    await step();
    await step();
    const series = async (id: string): Promise<SeriesDto> =>
      get<SeriesDto>(`/api/v1/clusters/${id}/series?window=600`);
    const e = await series("east");
    const w = await series("west");
    assert.ok(e.points.length >= 2, JSON.stringify(e));
    assert.ok(
      e.points.every((p) => p.nodes === 2),
      `east: 2 nodes in every point ${JSON.stringify(e.points)}`,
    );
    assert.ok(w.points.length >= 2 && w.points.every((p) => p.nodes === 1), JSON.stringify(w.points));
    assert.deepEqual(
      (await get<SeriesDto>("/api/v1/clusters/east/series?window=600&pool=west")).points.filter(
        (p) => p.nodes > 0,
      ),
      [],
      "no point of west's pool in east's history",
    );
  });

  it("keeps each cluster's lifecycle apart and complete", async () => {
    // Karpenter disrupts east's claim-2 (an Event on its node), then deletes it; west is untouched.
    const [eastAgent] = agents;
    assert.ok(eastAgent);
    east.push({ type: "upsert", object: disruptionEvent("node-2", "Underutilized", T0) });
    east.push({ type: "delete", object: nodeClaim(2, { pool: "east" }) });
    await eastAgent.agent.until((x) => x.outbox.lastAcked >= 5);
    const events = async (id: string): Promise<string[]> =>
      (await get<LifecycleEventDto[]>(`/api/v1/clusters/${id}/events?from=0&limit=100`))
        .map((e) => `${e.nodeClaim}/${e.phase}`)
        .sort();
    const e = await events("east");
    for (const k of ["claim-1/Launched", "claim-2/Launched", "claim-2/Disrupted", "claim-2/Terminated"])
      assert.ok(e.includes(k), `${k} in ${e.join(", ")}`);
    assert.ok(!e.some((k) => k.startsWith("claim-7/")), `east has none of west's claims: ${e.join(", ")}`);
    const w = await events("west");
    assert.ok(w.includes("claim-7/Launched"), w.join(", "));
    assert.ok(
      !w.some((k) => k.startsWith("claim-1/") || k.startsWith("claim-2/")),
      `west has none of east's: ${w.join(", ")}`,
    );
    const disruptions = async (id: string): Promise<string[]> =>
      (await get<DisruptionDto[]>(`/api/v1/clusters/${id}/disruptions?limit=100`)).map(
        (d) => `${d.nodeClaim}/${d.reason}`,
      );
    assert.deepEqual(await disruptions("east"), ["claim-2/Underutilized"]);
    assert.deepEqual(await disruptions("west"), []);
  });

  it("shows each cluster its own warmup stats", async () => {
    const e = await get<OverviewDto>("/api/v1/clusters/east/overview");
    const w = await get<OverviewDto>("/api/v1/clusters/west/overview");
    assert.deepEqual([e.warmup.hits, e.warmup.misses], [1, 1]);
    assert.deepEqual([w.warmup.hits, w.warmup.misses], [0, 0]);
  });

  it("keeps each cluster's policies to itself", async () => {
    const put = await app.inject({
      method: "PUT",
      url: "/api/v1/clusters/west/policies/spot/Deployment/shop/web",
      headers: A,
      payload: { threshold: 2, strategy: "Prefer" },
    });
    assert.equal(put.statusCode, 200, put.body);
    const spot = async (id: string): Promise<string[]> =>
      (
        await get<{ policies: { workload: { name: string } }[] }>(`/api/v1/clusters/${id}/policies/spot`)
      ).policies.map((p) => p.workload.name);
    assert.deepEqual(await spot("west"), ["web"]);
    assert.deepEqual(await spot("east"), []);
    assert.deepEqual((await store.listPolicies("east", "spot")).length, 0);
  });
});
