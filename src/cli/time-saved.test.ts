// Warmup's time saved has one definition (dashboard/figures/time-saved.ts): hits × the pool's
// measured node cold start. Core's real app, its /metrics and its warmup relay, fed the same
// cluster: the Overview, the Warmup page and wave_warmup_time_saved_seconds_total agree.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { nodePool } from "../agent/fixtures.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { connectTestCluster, deliverSnapshot } from "../core/hub/testing.ts";
import { openStore } from "../core/store/open.ts";
import type { LifecycleEvent, Store } from "../core/store/store.ts";
import type { OverviewDto, WarmupViewDto } from "../dashboard/dto.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { Registry } from "../shared/metrics.ts";
import { coreApi, coreWarmup, dashboardMetrics } from "./parts.ts";
import { getOk } from "../api/inject.test-helper.ts";

const NOW = Date.parse("2026-03-02T12:00:00Z");
const V = { authorization: "Bearer v-token" };

let store: Store;
let app: FastifyInstance;

/** A NodeClaim of `pool` launched at `at` and initialized `seconds` later. */
function launch(uid: string, pool: string, at: number, seconds: number): LifecycleEvent[] {
  const base = { clusterId: "c1", nodeClaim: uid, nodeClaimUid: uid, nodePool: pool };
  return [
    { ...base, phase: "Launched", at },
    { ...base, phase: "Initialized", at: at + seconds * 1000 },
  ];
}

/** Lets the relay's and the stats' background reads finish (no timers involved). */
async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
}

before(async () => {
  const clock = new FakeClock(NOW);
  store = await openStore(
    { backend: "sqlite", path: ":memory:" },
    { log: silentLogger, now: () => clock.now() },
  );
  const hub = new ClusterHub(store, clock);
  await connectTestCluster(hub, NOW - 60_000, { agentVersion: "test" });
  await deliverSnapshot(hub, NOW, [nodePool("general"), nodePool("batch")]);
  // general's nodes took 60, 70 and 80 s to come up in the last hour; batch's 40 s; one older
  // launch (2 h ago, 500 s) is outside the measured window.
  await store.write({
    lifecycle: [
      ...launch("g1", "general", NOW - 50 * 60_000, 60),
      ...launch("g2", "general", NOW - 40 * 60_000, 70),
      ...launch("g3", "general", NOW - 30 * 60_000, 80),
      ...launch("b1", "batch", NOW - 20 * 60_000, 40),
      ...launch("old", "general", NOW - 2 * 3_600_000, 500),
    ],
  });
  const metrics = new Registry();
  const figures = dashboardMetrics({ metrics, hub, prices: new KwokPriceProvider(), store, clock });
  const { relay, totals } = coreWarmup({ store, hub, clusterId: "c1", clock, log: silentLogger, figures });
  await relay.record("c1", [
    { type: "hit", pool: "general", at: NOW - 10 * 60_000, node: "w1" },
    { type: "hit", pool: "general", at: NOW - 9 * 60_000, node: "w2" },
    { type: "hit", pool: "batch", at: NOW - 8 * 60_000, node: "w3" },
    { type: "miss", pool: "general", at: NOW - 7 * 60_000, node: "w4", reason: "ttl" },
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
    warmupTotals: totals,
    onPolicyChange: () => Promise.resolve(),
  });
});

after(async () => {
  await app.close();
  await store.close();
});

const get = <T>(url: string): Promise<T> => getOk<T>(app, url, V);

describe("warmup time saved: one figure", () => {
  it("is hits × the pool's measured cold start on the Overview, the Warmup page and /metrics", async () => {
    // general: 2 hits × 70 s (median of 60, 70, 80); batch: 1 hit × 40 s.
    const expected = 2 * 70 + 40;
    const overview = await get<OverviewDto>("/api/v1/clusters/c1/overview");
    assert.equal(overview.warmup.hits, 3);
    assert.equal(overview.warmup.timeSavedSeconds, expected);

    const page = await get<WarmupViewDto>(`/api/v1/clusters/c1/warmup?from=${NOW - 24 * 3_600_000}`);
    const byPool = Object.fromEntries(page.pools.map((p) => [p.nodePool, p]));
    assert.equal(byPool["general"]?.savedPerHitSeconds, 70);
    assert.equal(byPool["general"].savedPerHitSamples, 3);
    assert.equal(byPool["general"].timeSavedSeconds, 140);
    assert.equal(byPool["batch"]?.timeSavedSeconds, 40);
    assert.equal(
      page.pools.reduce((a, p) => a + p.timeSavedSeconds, 0),
      overview.warmup.timeSavedSeconds,
    );

    const text = (await app.inject({ url: "/metrics", headers: V })).body;
    const saved = (pool: string): number => {
      const line = text
        .split("\n")
        .find((l) => l.startsWith(`wave_warmup_time_saved_seconds_total{cluster="c1",nodepool="${pool}"}`));
      assert.ok(line, `no time saved sample for ${pool}`);
      return Number(line.split(" ").at(-1));
    };
    assert.equal(saved("general") + saved("batch"), overview.warmup.timeSavedSeconds);
    assert.equal(saved("general"), byPool["general"].timeSavedSeconds);
  });
});
