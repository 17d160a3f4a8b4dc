// Core's history in the composition root (startHistory + poolSamples over the hub): while the
// agent's stream is down the state is frozen, and the history must show a gap, not repeat it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { node, nodePool } from "../agent/fixtures.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { openStore } from "../core/store/open.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { poolSamples, startHistory } from "./parts.ts";
import { deliverSnapshot } from "../core/hub/testing.ts";

const CLUSTER = "alpha";
const STEP = 60_000;

function info(clock: FakeClock, sessionId: string) {
  return {
    clusterId: CLUSTER,
    kubernetesVersion: "v1.34.0",
    karpenterVersion: "1.8.2",
    agentVersion: "test",
    sessionId,
    connectedAt: clock.now(),
  };
}

describe("core history over the hub", () => {
  it("poolSamples has nothing to sample while the cluster's stream is down", async () => {
    const clock = new FakeClock();
    const store = await openStore({ backend: "sqlite", path: ":memory:" }, { log: silentLogger });
    const hub = new ClusterHub(store, clock);
    const prices = new KwokPriceProvider();
    assert.equal(poolSamples(hub, CLUSTER, prices), undefined, "no agent yet");
    await hub.clusterConnected(info(clock, "s1"));
    await deliverSnapshot(hub, clock.now(), [nodePool("default"), node(1), node(2)], { clusterId: CLUSTER });
    assert.equal(
      poolSamples(hub, CLUSTER, prices)?.reduce((n, s) => n + s.nodes, 0),
      2,
    );

    const changed: string[] = [];
    hub.onChange((id) => changed.push(id));
    hub.clusterDisconnected(CLUSTER);
    assert.equal(hub.get(CLUSTER)?.connected, false);
    assert.deepEqual(changed, [CLUSTER], "readers hear that the cluster went down");
    assert.equal(poolSamples(hub, CLUSTER, prices), undefined, "frozen state is not sampled");
    assert.equal(hub.get(CLUSTER)?.state.nodes().length, 2, "the last known state is kept");

    await hub.clusterConnected(info(clock, "s2"));
    assert.equal(
      poolSamples(hub, CLUSTER, prices)?.reduce((n, s) => n + s.nodes, 0),
      2,
    );
    await store.close();
  });

  it("startHistory records a gap for the agent's outage, never points inside it", async () => {
    const clock = new FakeClock();
    const store = await openStore(
      { backend: "sqlite", path: ":memory:" },
      {
        log: silentLogger,
        now: () => clock.now(),
        retention: { tiers: [{ stepMs: STEP, retainMs: 24 * 3_600_000 }], eventRetainMs: 24 * 3_600_000 },
      },
    );
    const hub = new ClusterHub(store, clock);
    await hub.clusterConnected(info(clock, "s1"));
    await deliverSnapshot(hub, clock.now(), [nodePool("default"), node(1), node(2)], { clusterId: CLUSTER });
    const ac = new AbortController();
    const stop = await startHistory({
      store,
      hub,
      prices: new KwokPriceProvider(),
      clock,
      log: silentLogger,
      signal: ac.signal,
    });
    /** Wakes the sampler at the next step boundary once it is parked. */
    const step = async (): Promise<void> => {
      while (clock.pending === 0) await new Promise((r) => setImmediate(r));
      await clock.advance(STEP);
    };
    const t0 = clock.now();
    for (let i = 0; i < 3; i++) await step();
    hub.clusterDisconnected(CLUSTER);
    const downAt = clock.now();
    for (let i = 0; i < 5; i++) await step();
    await hub.clusterConnected(info(clock, "s2"));
    const upAt = clock.now();
    for (let i = 0; i < 3; i++) await step();
    // Let the last sample's write land, then stop the sampler and wait for it.
    while (clock.pending === 0) await new Promise((r) => setImmediate(r));
    ac.abort();
    await stop();

    const rows = await store.series({ clusterId: CLUSTER, from: t0, to: clock.now() + STEP, stepMs: STEP });
    const gaps = rows.filter((r) => r.kind === "gap");
    const points = rows.filter((r) => r.kind === "point");
    assert.equal(gaps.length, 1, JSON.stringify(rows));
    const gap = gaps[0];
    assert.ok(gap);
    assert.ok(
      gap.ts <= downAt + STEP && gap.until >= upAt,
      `gap [${gap.ts}, ${gap.until}) covers the outage`,
    );
    assert.deepEqual(
      points.filter((p) => p.ts >= gap.ts && p.ts < gap.until),
      [],
      "no point inside the gap",
    );
    assert.ok(points.some((p) => p.ts < downAt) && points.some((p) => p.ts >= upAt), "points on both sides");
    await store.close();
  });
});
