// The asserts narrow as they go; optional chains keep each line readable alone.
/* eslint-disable @typescript-eslint/no-unnecessary-condition */
// A static NodePool's nodes in the consolidation view: Karpenter never consolidates them, so Wave
// says so instead of naming blockers, patches or savings (issue 39).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ClusterState } from "../../state/cluster.ts";
import { machineObjects, nodePool, pod } from "../testkit.ts";
import type { PodDisruptionBudget } from "../../objects/kube.ts";
import type { PriceProvider } from "../../pricing/types.ts";
import { consolidationView, nodeDisruption } from "./view.ts";
import { advisedView } from "./advised.ts";

const NOW = Date.parse("2026-06-01T10:00:00Z");
const prices: PriceProvider = {
  price: () => ({ usdPerHour: 0.4, source: "static", asOf: "2026-01-01" }),
};

/** Two pools alike but for replicas: each with an empty node and a node a PDB holds. */
function world(): ClusterState {
  const s = new ClusterState();
  const disruption = { consolidationPolicy: "WhenEmpty" as const, consolidateAfter: "Never" };
  s.apply("NodePool", "add", nodePool("fixed", { replicas: 2, disruption }));
  s.apply("NodePool", "add", nodePool("elastic", { disruption }));
  for (const [name, pool] of [
    ["f-empty", "fixed"],
    ["f-held", "fixed"],
    ["e-empty", "elastic"],
    ["e-held", "elastic"],
  ] as const) {
    const { node, nodeClaim } = machineObjects({
      name,
      pool,
      instanceType: "big",
      capacityType: "on-demand",
    });
    if (!node || !nodeClaim) throw new Error("machine");
    node.metadata.labels = { ...node.metadata.labels, "karpenter.sh/initialized": "true" };
    s.apply("NodeClaim", "add", nodeClaim);
    s.apply("Node", "add", node);
  }
  for (const n of ["f-held", "e-held"]) {
    const p = pod(`app-${n}`, n, "100m", "128Mi");
    p.metadata.labels = { app: "ledger" };
    p.metadata.ownerReferences = [
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: "r", uid: "u", controller: true },
    ];
    s.apply("Pod", "add", p);
  }
  const pdb: PodDisruptionBudget = {
    metadata: { name: "ledger", namespace: "default" },
    spec: { selector: { matchLabels: { app: "ledger" } }, maxUnavailable: 0 },
    status: { disruptionsAllowed: 0 },
  };
  s.apply("PodDisruptionBudget", "add", pdb);
  return s;
}

const input = (s: ClusterState) => ({ state: s, prices, events: [], karpenterVersion: "v1.15.0", now: NOW });

describe("consolidation view: static NodePools", () => {
  it("a static pool's node is 'static', not blocked, no fix, no saving; the elastic twin is blocked", () => {
    const s = world();
    const v = consolidationView("c", input(s));
    const by = new Map(v.items.map((n) => [n.node, n]));
    for (const name of ["f-empty", "f-held"]) {
      const n = by.get(name);
      assert.equal(n?.static, true, name);
      assert.deepEqual(
        n?.blockers.map((b) => [b.reason, b.blocking, b.fix, b.message]),
        [["static", false, null, "static: Karpenter keeps 2 nodes and never consolidates them"]],
      );
      assert.equal(n?.blocked, false);
      assert.equal(n?.disruptable, false, "Karpenter will not consolidate it either");
      assert.equal(n?.savingsPerHour, 0, "no 'would save'");
      assert.equal(n?.action, null);
    }
    assert.equal(by.get("e-held")?.blocked, true, "the same node in an elastic pool is blocked");
    assert.ok(by.get("e-empty")?.blockers.some((b) => b.reason === "consolidation-disabled"));
  });

  it("the sums leave the static pool out of blocked nodes and cost, and list it with its sentence", () => {
    const v = consolidationView("c", input(world()));
    assert.ok(!v.byPoolReason.some((r) => r.nodePool === "fixed"), "no blocked reason for the static pool");
    assert.equal(v.byPool.find((p) => p.nodePool === "fixed")?.blockedCostPerHour, 0);
    assert.equal(v.blockedNodes, 2, "only the elastic pool's two nodes");
    assert.equal(v.staticNodes, 2);
    assert.deepEqual(v.staticPools, [
      {
        nodePool: "fixed",
        nodes: 2,
        replicas: 2,
        message: "static: Karpenter keeps 2 nodes and never consolidates them",
      },
    ]);
  });

  it("the advisor gives a static pool's node no NodePool patch, whatever the pool's holds", () => {
    const s = world();
    const view = consolidationView("c", input(s));
    const holds = new Map([
      ["fixed", [{ field: "consolidateAfter" as const, value: "20m", why: "the thrashing advice" }]],
    ]);
    const advised = advisedView(view, s, holds);
    const n = advised.items.find((x) => x.node === "f-empty");
    assert.deepEqual(
      n?.blockers.map((b) => b.fix),
      [null],
    );
    assert.equal(nodeDisruption(input(s), "f-held")?.static, true, "the node drawer says the same");
  });
});
