import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { machinesOf } from "../machines.ts";
import { cluster } from "../testkit.ts";
import { nodeCountByPool } from "./nodes.ts";

describe("nodeCountByPool", () => {
  it("counts nodes per pool by capacity type and state", () => {
    const { nodes, nodeClaims } = cluster([
      { name: "a", pool: "web", capacityType: "spot" },
      { name: "b", pool: "web", capacityType: "spot", ready: false },
      { name: "c", pool: "web", capacityType: "on-demand", deleting: "2026-01-01T01:00:00Z" },
      { name: "d", pool: "web", capacityType: "reserved", unregistered: true },
      { name: "e", pool: "batch", capacityType: "on-demand" },
      { name: "f" },
    ]);
    assert.deepEqual(nodeCountByPool(machinesOf(nodes, nodeClaims)), [
      {
        nodePool: "(none)",
        nodes: 1,
        spot: 0,
        onDemand: 0,
        reserved: 0,
        unknownCapacity: 1,
        ready: 1,
        launching: 0,
        terminating: 0,
      },
      {
        nodePool: "batch",
        nodes: 1,
        spot: 0,
        onDemand: 1,
        reserved: 0,
        unknownCapacity: 0,
        ready: 1,
        launching: 0,
        terminating: 0,
      },
      {
        nodePool: "web",
        nodes: 4,
        spot: 2,
        onDemand: 1,
        reserved: 1,
        unknownCapacity: 0,
        ready: 2,
        launching: 1,
        terminating: 1,
      },
    ]);
  });

  it("is empty for an empty cluster", () => {
    assert.deepEqual(nodeCountByPool([]), []);
  });
});
