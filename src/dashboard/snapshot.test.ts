import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { dashboardSnapshot } from "./snapshot.ts";
import { cluster, nodePool, pod } from "./testkit.ts";

describe("dashboardSnapshot", () => {
  it("computes every figure for a KWOK rig cluster, exactly priced", () => {
    const now = Date.UTC(2026, 0, 1, 12);
    const { nodes, nodeClaims } = cluster([
      {
        name: "n1",
        pool: "default",
        instanceType: "c-2x-amd64-linux",
        capacityType: "spot",
        zone: "test-zone-a",
        cpu: "2",
        memory: "4Gi",
      },
      {
        name: "n2",
        pool: "default",
        instanceType: "c-2x-amd64-linux",
        capacityType: "on-demand",
        zone: "test-zone-b",
        cpu: "2",
        memory: "4Gi",
      },
    ]);
    const snap = dashboardSnapshot({
      nodes,
      nodeClaims,
      nodePools: [nodePool("default", { limits: { cpu: "8" } })],
      pods: [pod("p", "n1", "1", "1Gi")],
      events: [{ nodeClaim: "n1-nc", nodePool: "default", phase: "Launched", at: now - 60_000 }],
      disruptions: [{ nodeClaim: "old", nodePool: "default", reason: "Empty", at: now - 3_600_000 }],
      prices: new KwokPriceProvider(),
      now,
    });
    const od = 0.05 + (0.001 * 4 * 2 ** 30) / 1e9;
    assert.ok(Math.abs(snap.cost.cluster.usdPerHour - od * 1.7) < 1e-12);
    assert.equal(snap.cost.cluster.source, "kwok");
    assert.equal(snap.nodes[0]?.nodes, 2);
    assert.equal(snap.spot.ratio.nodes.spotShare, 0.5);
    assert.ok(Math.abs(snap.spot.savings.savedUsdPerHour - od * 0.3) < 1e-12);
    assert.equal(snap.limits[0]?.maxRatio, 0.5);
    assert.equal(snap.waste.cluster.requested.cpu, 1000);
    assert.equal(snap.disruptions.total, 1);
    assert.equal(snap.timeline.length, 1);
    assert.equal(snap.thrashing[0]?.severity, "none");
    assert.deepEqual(snap.problems, []);
    assert.doesNotThrow(() => JSON.stringify(snap));
  });
});
