import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { machinesOf } from "../machines.ts";
import { cluster, nodePool } from "../testkit.ts";
import { poolUsageVsLimits } from "./limits.ts";

describe("poolUsageVsLimits", () => {
  const { nodes, nodeClaims } = cluster([
    { name: "a", pool: "web", cpu: "4", memory: "16Gi" },
    { name: "b", pool: "web", cpu: "4", memory: "16Gi", unregistered: true },
    { name: "c", pool: "batch", cpu: "8", memory: "32Gi" },
  ]);
  const machines = machinesOf(nodes, nodeClaims);

  it("uses Karpenter's status.resources when present, else sums machine capacity", () => {
    const pools = [
      nodePool("web", { limits: { cpu: "10", memory: "64Gi" } }),
      nodePool("batch", { limits: { cpu: "8" } }, { resources: { cpu: "9", memory: "36Gi" } }),
      nodePool("free"),
    ];
    const got = poolUsageVsLimits(pools, machines);
    assert.deepEqual(
      got.map((p) => [p.nodePool, p.usageSource, p.exceeded]),
      [
        ["batch", "status", true],
        ["free", "computed", false],
        ["web", "computed", false],
      ],
    );
    const web = got[2]!;
    assert.deepEqual(
      web.limits.map((l) => [l.resource, l.usage, l.limit]),
      [
        ["cpu", 8000, 10000],
        ["memory", 32 * 2 ** 30, 64 * 2 ** 30],
      ],
    );
    assert.equal(web.maxRatio, 0.8);
    assert.equal(got[1]!.limits.length, 0);
    assert.equal(got[1]!.maxRatio, 0);
    assert.equal(got[0]!.maxRatio, 9 / 8);
  });

  it("reports a malformed limit instead of throwing", () => {
    const [p] = poolUsageVsLimits([nodePool("web", { limits: { cpu: "lots" } })], machines);
    assert.equal(p!.limits.length, 0);
    assert.match(p!.problems.join(), /spec.limits/);
  });
});
