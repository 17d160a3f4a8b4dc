// The cluster's consolidation view is computed once and shared (API, page, /metrics): reused while
// nothing moved, recomputed after a change once its short reuse has passed.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { KarpenterEventLog } from "../../core/hub/karpenter-events.ts";
import type { Event } from "../../objects/kube.ts";
import type { PriceProvider } from "../../pricing/types.ts";
import { ClusterState } from "../../state/cluster.ts";
import { machineObjects, nodePool } from "../testkit.ts";
import { clusterConsolidation, CONSOLIDATION_REUSE } from "./view.ts";

const NOW = Date.parse("2026-06-01T10:00:00Z");
const prices: PriceProvider = {
  price: () => ({ usdPerHour: 0.4, source: "static", asOf: "2026-01-01" }),
};

function world(): {
  state: ClusterState;
  log: KarpenterEventLog;
  source: { karpenterEvents: () => KarpenterEventLog };
} {
  const state = new ClusterState();
  state.apply("NodePool", "add", nodePool("default", { disruption: { consolidationPolicy: "WhenEmpty" } }));
  const log = new KarpenterEventLog();
  return { state, log, source: { karpenterEvents: () => log } };
}

function addMachine(state: ClusterState, name: string): void {
  const { node, nodeClaim } = machineObjects({
    name,
    pool: "default",
    instanceType: "big",
    capacityType: "on-demand",
    cpu: "4",
    memory: "8Gi",
  });
  if (!node || !nodeClaim) throw new Error("machine");
  state.apply("NodeClaim", "add", nodeClaim);
  state.apply("Node", "add", node);
}

const event = (name: string, node: string): Event => ({
  metadata: { name, namespace: "default", creationTimestamp: new Date(NOW).toISOString() },
  involvedObject: { kind: "Node", name: node },
  reason: "DisruptionBlocked",
  message: "Cannot disrupt Node: state node is nominated for a pending pod",
  lastTimestamp: new Date(NOW).toISOString(),
});

describe("clusterConsolidation: one computation shared by its readers", () => {
  it("reuses the view while neither the state nor the Events moved, up to its reuse", () => {
    const { state, source } = world();
    addMachine(state, "a");
    const c = { id: "c1", state };
    const first = clusterConsolidation(c, source, prices, NOW);
    assert.equal(first.items.length, 1);
    assert.equal(clusterConsolidation(c, source, prices, NOW + 1_000), first);
    const later = NOW + CONSOLIDATION_REUSE.SAME_REUSE_MS;
    assert.notEqual(
      clusterConsolidation(c, source, prices, later),
      first,
      "recomputed once its reuse passed",
    );
  });

  it("after a change, serves the last view at most CHANGED_REUSE_MS, then shows the change", () => {
    const { state, source } = world();
    addMachine(state, "a");
    const c = { id: "c1", state };
    const first = clusterConsolidation(c, source, prices, NOW);
    addMachine(state, "b");
    assert.equal(clusterConsolidation(c, source, prices, NOW + 1_000).items.length, 1, "throttled");
    const after = clusterConsolidation(c, source, prices, NOW + CONSOLIDATION_REUSE.CHANGED_REUSE_MS);
    assert.notEqual(after, first);
    assert.equal(after.items.length, 2);
  });

  it("a new Karpenter Event counts as a change; a time before the last computation recomputes", () => {
    const { state, log, source } = world();
    addMachine(state, "a");
    const c = { id: "c1", state };
    const first = clusterConsolidation(c, source, prices, NOW);
    log.add(event("e1", "a"), NOW);
    assert.equal(clusterConsolidation(c, source, prices, NOW + 1_000), first, "within the change reuse");
    const changed = clusterConsolidation(c, source, prices, NOW + CONSOLIDATION_REUSE.CHANGED_REUSE_MS);
    assert.notEqual(changed, first);
    assert.notEqual(
      clusterConsolidation(c, source, prices, NOW),
      changed,
      "an earlier now is never served a later view",
    );
  });
});
