import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { machinesOf } from "../machines.ts";
import { cluster, pod } from "../testkit.ts";
import type { NodeCost } from "./cost.ts";
import { sumWaste, wasteByNode, wasteByPool } from "./waste.ts";

const GI = 2 ** 30;

describe("requested vs allocatable", () => {
  const { nodes, nodeClaims } = cluster([
    { name: "a", pool: "web", cpu: "4", memory: "16Gi" },
    { name: "b", pool: "web", cpu: "4", memory: "16Gi" },
    { name: "c", pool: "batch", cpu: "2", memory: "8Gi", unregistered: true },
  ]);
  const machines = machinesOf(nodes, nodeClaims);
  const pods = [
    pod("p1", "a", "1", "4Gi"),
    pod("p2", "a", "1", "12Gi"), // memory-full
    pod("p3", "b", "500m", "1Gi"),
    pod("done", "b", "2", "8Gi", "Succeeded"), // holds nothing
    pod("pending", undefined, "1", "1Gi", "Pending"),
  ];
  const costs: NodeCost[] = [
    {
      machine: "a",
      nodePool: "web",
      capacityType: "on-demand",
      usdPerHour: 0.2,
      usdPerMonth: 146,
      source: "static",
    },
    {
      machine: "b",
      nodePool: "web",
      capacityType: "on-demand",
      usdPerHour: 0.2,
      usdPerMonth: 146,
      source: "static",
    },
    {
      machine: "c-nc",
      nodePool: "batch",
      capacityType: "on-demand",
      usdPerHour: null,
      usdPerMonth: null,
      source: "unknown",
    },
  ];
  const byNode = wasteByNode(machines, pods, costs);

  it("sums requests of non-terminal pods per node", () => {
    const a = byNode.find((n) => n.machine === "a")!;
    assert.deepEqual(a.requested, { cpu: 2000, memory: 16 * GI });
    assert.equal(a.pods, 2);
    assert.equal(a.cpuShare, 0.5);
    assert.equal(a.memoryShare, 1);
    assert.equal(a.idleShare, 0, "full on memory wastes nothing");
    assert.equal(a.idleUsdPerHour, 0);
    assert.equal(a.priceSource, "static");
    const b = byNode.find((n) => n.machine === "b")!;
    assert.equal(b.pods, 1);
    assert.equal(b.cpuShare, 0.125);
    assert.ok(Math.abs(b.idleShare - 0.875) < 1e-12);
    assert.ok(Math.abs((b.idleUsdPerHour ?? 0) - 0.175) < 1e-12);
    const c = byNode.find((n) => n.machine === "c-nc")!;
    assert.equal(c.pods, 0);
    assert.equal(c.idleShare, 1);
    assert.equal(c.idleUsdPerHour, null);
  });

  it("groups by pool and cluster", () => {
    const pools = wasteByPool(byNode);
    assert.deepEqual(
      pools.map((p) => [p.nodePool, p.nodes, p.unpriced]),
      [
        ["batch", 1, 1],
        ["web", 2, 0],
      ],
    );
    assert.equal(pools[0]!.idleUsdPerHour, null);
    assert.equal(pools[0]!.priceSource, "unknown");
    assert.equal(pools[1]!.priceSource, "static");
    assert.equal(sumWaste(byNode).priceSource, "mixed");
    const web = pools[1]!;
    assert.deepEqual(web.requested, { cpu: 2500, memory: 17 * GI });
    assert.equal(web.cpuShare, 2500 / 8000);
    assert.ok(Math.abs((web.idleUsdPerHour ?? 0) - 0.175) < 1e-12);
    const all = sumWaste(byNode);
    assert.equal(all.nodes, 3);
    assert.equal(all.allocatable.cpu, 10000);
  });
});
