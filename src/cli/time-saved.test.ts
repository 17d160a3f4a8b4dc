// Warmup's time saved has one definition (warmup/time-saved.ts): per hit, the pool's cold start
// (median start of its pods that waited for a new node, in the 24 h before the hit) minus the hit's
// own measured start, never negative, stored with the hit. Core's real parts — its state's cold
// start recorder, the warmup relay, the API and /metrics — fed one cluster: the Overview, the
// Warmup page and wave_warmup_time_saved_seconds_total agree, and the sum only grows with hits.
// Warm cost too (issue 38): the Overview's and wave_warmup_warm_cost_dollars are the page's
// figure over core's window (src/views/warm-cost.ts), each warm node from its launch to its end.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { nodePool } from "../agent/fixtures.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { connectTestCluster, deliverSnapshot } from "../core/hub/testing.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import type { OverviewDto, WarmupViewDto } from "../dashboard/dto.ts";
import { NODE_POOL_LABEL } from "../objects/karpenter.ts";
import type { WireObject } from "../wire/wire.ts";
import { KwokPriceProvider, kwokOnDemandPrice } from "../pricing/kwok.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { Registry } from "../shared/metrics.ts";
import { coreApi, coreWarmup, dashboardMetrics } from "./parts.ts";
import { getOk } from "../api/inject.test-helper.ts";
import type { WarmupRelay } from "../core/warmup/relay.ts";

const NOW = Date.parse("2026-03-02T12:00:00Z");
const MIN = 60_000;
const V = { authorization: "Bearer v-token" };
const WARM_TYPE = "c-4x-amd64-linux";
const iso = (ms: number): string => new Date(ms).toISOString();

let store: Store;
let app: FastifyInstance;
let relay: WarmupRelay;

const nodeAt = (name: string, pool: string, created: number): WireObject => ({
  kind: "Node",
  object: {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      uid: name,
      resourceVersion: "1",
      creationTimestamp: iso(created),
      labels: { [NODE_POOL_LABEL]: pool },
    },
    spec: {},
    status: { conditions: [{ type: "Ready", status: "True" }] },
  },
});

/** A pod created at `created` on `node`, Ready `seconds` later. */
const podOn = (name: string, node: string, created: number, seconds: number): WireObject => ({
  kind: "Pod",
  object: {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "apps", uid: name, resourceVersion: "1", creationTimestamp: iso(created) },
    spec: { nodeName: node, containers: [{ name: "app", image: "app:1" }] },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: "True", lastTransitionTime: iso(created + seconds * 1000) }],
    },
  },
});

/** Lets the relay's, the recorder's and the stats' background work finish (no timers involved). */
async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
}

const overview = (): Promise<OverviewDto> => getOk<OverviewDto>(app, "/api/v1/clusters/c1/overview", V);
const page = (): Promise<WarmupViewDto> =>
  getOk<WarmupViewDto>(app, `/api/v1/clusters/c1/warmup?from=${NOW - 24 * 3_600_000}`, V);

before(async () => {
  const clock = new FakeClock(NOW);
  store = await openStore(
    { backend: "sqlite", path: ":memory:" },
    { log: silentLogger, now: () => clock.now() },
  );
  const hub = new ClusterHub(store, clock);
  await connectTestCluster(hub, NOW - 60 * MIN, { agentVersion: "test" });
  const metrics = new Registry();
  const figures = dashboardMetrics({ metrics, hub, prices: new KwokPriceProvider(), store, clock });
  const prices = new KwokPriceProvider();
  const warmup = coreWarmup({ store, hub, clusterId: "c1", clock, log: silentLogger, figures, prices });
  // w1 and w4 were launched for their warmups (w4 before its warmup began: priced from `since`).
  const launched = (node: string, at: number) => ({
    clusterId: "c1",
    nodeClaim: `${node}-claim`,
    nodeClaimUid: `${node}-uid`,
    nodePool: "general",
    nodeName: node,
    instanceType: WARM_TYPE,
    capacityType: "on-demand",
    phase: "Launched" as const,
    at,
  });
  await store.write({ lifecycle: [launched("w1", NOW - 15 * MIN), launched("w4", NOW - 18 * MIN)] });
  relay = warmup.relay;
  // general's pods that waited for a new node started in 60, 70 and 80 s; batch's in 40 s. A pod
  // that found room on an older node (old-1) is no cold start, nor is Wave's own pod.
  await deliverSnapshot(hub, NOW - 30 * MIN, [
    nodePool("general"),
    nodePool("batch"),
    nodeAt("old-1", "general", NOW - 5 * 3_600_000),
    nodeAt("g-1", "general", NOW - 50 * MIN + 20_000),
    nodeAt("g-2", "general", NOW - 40 * MIN + 20_000),
    nodeAt("g-3", "general", NOW - 35 * MIN + 20_000),
    nodeAt("b-1", "batch", NOW - 45 * MIN + 10_000),
    podOn("a", "g-1", NOW - 50 * MIN, 60),
    podOn("b", "g-2", NOW - 40 * MIN, 70),
    podOn("c", "g-3", NOW - 35 * MIN, 80),
    podOn("d", "b-1", NOW - 45 * MIN, 40),
    podOn("e", "old-1", NOW - 44 * MIN, 1),
  ]);
  await settle();
  await relay.record("c1", [
    {
      type: "hit",
      pool: "general",
      at: NOW - 10 * MIN,
      node: "w1",
      pod: "apps/h1",
      since: NOW - 20 * MIN,
      seconds: 3,
    },
    {
      type: "hit",
      pool: "general",
      at: NOW - 9 * MIN,
      node: "w2",
      pod: "apps/h2",
      since: NOW - 20 * MIN,
      seconds: 90,
    },
    {
      type: "hit",
      pool: "batch",
      at: NOW - 8 * MIN,
      node: "w3",
      pod: "apps/h3",
      since: NOW - 20 * MIN,
      seconds: 4,
    },
    { type: "miss", pool: "general", at: NOW - 7 * MIN, node: "w4", reason: "ttl", since: NOW - 17 * MIN },
  ]);
  await settle();
  app = await coreApi({
    config: { clusterId: "c1", publicMetrics: false, serveSourceMaps: false },
    tokens: { admin: "a-token", viewer: "v-token" },
    hub,
    store,
    prices: new KwokPriceProvider(),
    clock,
    metrics,
    warmupTotals: warmup.totals,
    onPolicyChange: () => Promise.resolve(),
  });
});

after(async () => {
  await app.close();
  await store.close();
});

function metric(text: string, pool: string): number {
  const line = text
    .split("\n")
    .find((l) => l.startsWith(`wave_warmup_time_saved_seconds_total{cluster="c1",nodepool="${pool}"}`));
  assert.ok(line, `no time saved sample for ${pool}`);
  return Number(line.split(" ").at(-1));
}

describe("warmup time saved: one figure", () => {
  it("is Σ (pool's cold start − the hit's own start, ≥ 0) on the Overview, the Warmup page and /metrics", async () => {
    const rows = await store.coldStarts({ clusterId: "c1", from: 0, to: NOW });
    assert.deepEqual(rows.map((r) => [r.pod, r.seconds]).sort(), [
      ["apps/a", 60],
      ["apps/b", 70],
      ["apps/c", 80],
      ["apps/d", 40],
    ]);
    // general: cold 70 s (median of 60, 70, 80); hits of 3 s (saved 67) and 90 s (slower: 0);
    // batch: cold 40, hit 4 s → 36.
    const expected = 67 + 0 + 36;
    const o = await overview();
    assert.equal(o.warmup.hits, 3);
    assert.equal(o.warmup.timeSavedSeconds, expected);
    const p = await page();
    const byPool = Object.fromEntries(p.pools.map((x) => [x.nodePool, x]));
    const g = byPool["general"];
    assert.ok(g);
    assert.deepEqual(
      [g.coldStartSeconds, g.coldStartSamples, g.warmStartSeconds, g.warmStartSamples],
      [70, 3, 46.5, 2],
    );
    assert.deepEqual([g.timeSavedSeconds, g.hitsCredited], [67, 1]);
    assert.equal(byPool["batch"]?.timeSavedSeconds, 36);
    assert.equal(
      p.pools.reduce((a, x) => a + x.timeSavedSeconds, 0),
      o.warmup.timeSavedSeconds,
    );
    const text = (await app.inject({ url: "/metrics", headers: V })).body;
    assert.equal(metric(text, "general") + metric(text, "batch"), o.warmup.timeSavedSeconds);
    assert.equal(metric(text, "general"), g.timeSavedSeconds);
  });

  it("only grows as hits are added within the range, and says when warm starts are not faster", async () => {
    const before = (await overview()).warmup.timeSavedSeconds;
    // Slow hits: each saves 0, none takes anything back.
    await relay.record("c1", [
      {
        type: "hit",
        pool: "general",
        at: NOW - 5 * MIN,
        node: "w5",
        pod: "apps/h5",
        since: NOW - 6 * MIN,
        seconds: 200,
      },
      {
        type: "hit",
        pool: "general",
        at: NOW - 4 * MIN,
        node: "w6",
        pod: "apps/h6",
        since: NOW - 6 * MIN,
        seconds: 300,
      },
    ]);
    await settle();
    const o = await overview();
    assert.equal(o.warmup.hits, 5);
    assert.ok(o.warmup.timeSavedSeconds >= before, `${o.warmup.timeSavedSeconds} < ${before}`);
    const g = (await page()).pools.find((x) => x.nodePool === "general");
    assert.equal(g?.warmNotFaster, true, "warm median 200 s ≥ cold 70 s");
    assert.equal(g.timeSavedSeconds, 67);
  });
});

describe("warm cost: one figure", () => {
  it("is each warm node's price from its warmup's launch to its end, on the Overview, the Warmup page and /metrics", async () => {
    // w1: launched 15 min before, hit 10 min before: 5 min. w4: its warmup began 17 min before
    // (after its launch), missed 7 min before: 10 min. Others have no launch row: no price.
    const price = kwokOnDemandPrice(4, 4 * 2 * 2 ** 30);
    const expected = (price * 15) / 60;
    const o = await overview();
    assert.ok(Math.abs(o.warmup.warmCostUsd - expected) < 1e-9, `${o.warmup.warmCostUsd} ≠ ${expected}`);
    assert.equal(o.warmup.to - o.warmup.from, 24 * 3_600_000 + 1, "the window core read");
    const p = await getOk<WarmupViewDto>(
      app,
      `/api/v1/clusters/c1/warmup?from=${o.warmup.from}&to=${o.warmup.to}`,
      V,
    );
    const g = p.pools.find((x) => x.nodePool === "general");
    assert.equal(g?.warmCostUsd, o.warmup.warmCostUsd);
    const text = (await app.inject({ url: "/metrics", headers: V })).body;
    const sample = (pool: string): number =>
      Number(
        text
          .split("\n")
          .find((l) => l.startsWith(`wave_warmup_warm_cost_dollars{cluster="c1",nodepool="${pool}"}`))
          ?.split(" ")
          .at(-1),
      );
    assert.equal(sample("general"), g.warmCostUsd);
    assert.equal(sample("batch"), 0);
  });
});
