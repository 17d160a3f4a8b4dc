import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ClusterHub } from "../core/hub/hub.ts";
import { openStore } from "../core/store/open.ts";
import { cluster, nodePool } from "../dashboard/testkit.ts";
import { buildOverview } from "../dashboard/views.ts";
import { registerDashboardMetrics } from "../metrics/collector.ts";
import { createPricing } from "../pricing/setup.ts";
import type { PriceProvider } from "../pricing/types.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { Registry } from "../shared/metrics.ts";
import { Views } from "./cluster-views.ts";

async function setup() {
  const clock = new FakeClock(Date.UTC(2026, 5, 1));
  const store = await openStore({ backend: "sqlite", path: ":memory:" }, { log: silentLogger });
  const hub = new ClusterHub(store, clock);
  const entry = hub.ensure("c1");
  const machines = (n: number) =>
    cluster(
      Array.from({ length: n }, (_, i) => ({
        name: `n${i}`,
        pool: "general",
        instanceType: "m5.large",
        capacityType: i % 2 ? ("spot" as const) : ("on-demand" as const),
        zone: "us-east-1a",
        cpu: "2",
      })),
    );
  const put = (n: number): void => {
    const { nodes, nodeClaims } = machines(n);
    entry.state.batch(() => {
      entry.state.replaceAll("NodePool", [nodePool("general")]);
      entry.state.replaceAll("NodeClaim", nodeClaims);
      entry.state.replaceAll("Node", nodes);
    });
  };
  put(3);
  // Counts each lookup, so a second pricing pass over the same state shows.
  const real = createPricing({ clock }).provider;
  let lookups = 0;
  const prices: PriceProvider = {
    ...real,
    price: (...a: Parameters<PriceProvider["price"]>) => {
      lookups++;
      return real.price(...a);
    },
  };
  return { clock, store, hub, entry, prices, put, lookups: () => lookups };
}

describe("ClusterViews: one producer per cluster", () => {
  it("prices a state version once for every reader: the API's views, the metrics' views and /metrics", async () => {
    const s = await setup();
    try {
      const api = new Views({ hub: s.hub, prices: s.prices });
      const metricsViews = new Views({ hub: s.hub, prices: s.prices });
      const now = s.clock.now();
      const b = api.of(s.entry).basis(now);
      const after = s.lookups();
      assert.ok(after > 0, "the first reader prices the machines");
      assert.equal(
        metricsViews.of(s.entry).basis(now),
        b,
        "the metrics' views read the same priced machines",
      );
      const registry = new Registry();
      registerDashboardMetrics(registry, {
        hub: s.hub,
        prices: s.prices,
        now: () => now,
        spotPolicies: () => Promise.resolve([]),
        views: metricsViews,
      });
      const text = await registry.render();
      assert.equal(s.lookups(), after, "a scrape of the same state version prices nothing again");
      const o = await api.of(s.entry).overview(now);
      assert.equal(s.lookups(), after, "nor does the API's overview");
      const cost = text
        .split("\n")
        .filter((l) => l.startsWith("wave_nodepool_cost_per_hour_dollars{"))
        .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
      assert.ok(Math.abs(cost - o.costPerHour) < 1e-9, `/metrics ${cost} = overview ${o.costPerHour}`);
      assert.equal(o.nodes, 3);
    } finally {
      await s.store.close();
    }
  });

  it("recomputes after a change of the state, and equals a fresh computation", async () => {
    const s = await setup();
    try {
      const views = new Views({ hub: s.hub, prices: s.prices });
      const now = s.clock.now();
      const before = await views.of(s.entry).overview(now);
      s.put(5);
      const o = await views.of(s.entry).overview(now);
      assert.equal(before.nodes, 3);
      assert.equal(o.nodes, 5);
      assert.deepEqual(o, buildOverview({ ...(await views.of(s.entry).input(now)), basis: undefined }));
    } finally {
      await s.store.close();
    }
  });

  it("serves one live snapshot per state version and history revision to every stream client", async () => {
    const s = await setup();
    try {
      const views = new Views({ hub: s.hub, prices: s.prices, reuseMs: 250 });
      const now = s.clock.now();
      const a = views.of(s.entry).liveJson(now);
      assert.equal(views.of(s.entry).liveJson(now + 100), a, "shared within the throttle");
      assert.notEqual(views.of(s.entry).liveJson(now + 300), a, "rebuilt after it");
      s.put(4);
      const j = JSON.parse(await views.of(s.entry).liveJson(now + 350)) as { overview: { nodes: number } };
      assert.equal(j.overview.nodes, 4, "a change of the state is not served stale");
    } finally {
      await s.store.close();
    }
  });
});
