// A static pool's desired vs actual nodes: one figure on the NodePools API and /metrics.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { addMachine, nodePool } from "../testkit.ts";
import { KwokPriceProvider } from "../../pricing/kwok.ts";
import { ClusterState } from "../../state/cluster.ts";
import { buildNodePools } from "../views.ts";
import { clusterFigures } from "../../metrics/figures.ts";
import { trimNodePool } from "../../agent/trim.ts";

const NOW = Date.UTC(2026, 11, 7, 22);

function cluster(): ClusterState {
  const state = new ClusterState();
  state.apply("NodePool", "add", nodePool("fixed", { replicas: 3 }));
  state.apply("NodePool", "add", nodePool("zero", { replicas: 0 }));
  state.apply("NodePool", "add", nodePool("elastic"));
  addMachine(state, { name: "f1", pool: "fixed" });
  addMachine(state, { name: "f2", pool: "fixed" });
  addMachine(state, { name: "f3", pool: "fixed", deleting: "2026-12-07T21:59:00Z" });
  addMachine(state, { name: "e1", pool: "elastic" });
  return state;
}

describe("static NodePools: desired vs actual nodes", () => {
  it("the agent streams spec.replicas and status.nodes (it keeps a NodePool's spec whole)", () => {
    const t = trimNodePool(nodePool("fixed", { replicas: 3 }, { nodes: 3 }));
    assert.equal(t.spec.replicas, 3);
    assert.equal(t.status?.nodes, 3);
  });

  it("the pools API shows replicas against the nodes not being deleted; an elastic pool has none", () => {
    const pools = buildNodePools({
      clusterId: "c",
      state: cluster(),
      prices: new KwokPriceProvider(),
      now: NOW,
    });
    const by = new Map(pools.map((p) => [p.name, p]));
    assert.deepEqual(by.get("fixed")?.static, { desiredNodes: 3, actualNodes: 2 });
    assert.equal(by.get("fixed")?.nodes, 3, "the node count still shows the one being deleted");
    assert.deepEqual(
      by.get("zero")?.static,
      { desiredNodes: 0, actualNodes: 0 },
      "replicas: 0 is static too",
    );
    assert.equal(by.get("elastic")?.static, null);
  });

  it("/metrics exports the same figure for static pools only", () => {
    const figures = clusterFigures({
      clusterId: "c",
      state: cluster(),
      prices: new KwokPriceProvider(),
      now: NOW,
      connected: true,
      lastSeen: NOW,
      thrashing: [],
      spotPolicies: [],
    });
    const of = (n: "wave_nodepool_desired_nodes" | "wave_nodepool_actual_nodes") =>
      Object.fromEntries((figures.get(n) ?? []).map((s) => [String(s.labels["nodepool"]), s.value]));
    assert.deepEqual(of("wave_nodepool_desired_nodes"), { fixed: 3, zero: 0 });
    assert.deepEqual(of("wave_nodepool_actual_nodes"), { fixed: 2, zero: 0 });
  });
});
