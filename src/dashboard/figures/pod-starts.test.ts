import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ClusterState } from "../../state/cluster.ts";
import type { Node, Pod } from "../../objects/kube.ts";
import { podStarts } from "./pod-starts.ts";

const T0 = Date.UTC(2026, 11, 7, 8);
const iso = (ms: number): string => new Date(ms).toISOString();

const node = (name: string, created: number): Node => ({
  metadata: {
    name,
    creationTimestamp: iso(created),
    labels: { "karpenter.sh/nodepool": "general" },
  },
  spec: {},
  status: { conditions: [{ type: "Ready", status: "True" }] },
});

const pod = (name: string, created: number, ready?: number, on = "n1", uid = name): Pod => ({
  metadata: {
    name,
    uid,
    namespace: "shop",
    creationTimestamp: iso(created),
    ownerReferences: [
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-5c8d", uid: "rs", controller: true },
    ],
  },
  spec: { nodeName: on, containers: [{ name: "web" }] },
  status:
    ready === undefined
      ? { phase: "Pending" }
      : { phase: "Running", conditions: [{ type: "Ready", status: "True", lastTransitionTime: iso(ready) }] },
});

describe("pod starts core saw", () => {
  it("records each workload pod's creation → Ready once, its pool, and whether it waited for a new node", () => {
    const state = new ClusterState();
    state.apply("Node", "add", node("n1", T0));
    state.apply("Pod", "add", pod("before", T0 - 60_000, T0 + 5_000));
    const starts = podStarts(state);
    assert.equal(podStarts(state), starts, "one per state");
    state.apply("Node", "add", node("n2", T0 + 100_000));
    state.apply("Pod", "add", pod("warm", T0 + 200_000));
    state.apply("Pod", "update", pod("warm", T0 + 200_000, T0 + 201_000));
    // A later update is not another start.
    state.apply("Pod", "update", pod("warm", T0 + 200_000, T0 + 299_000));
    state.apply("Pod", "delete", pod("warm", T0 + 200_000, T0 + 201_000));
    assert.deepEqual(
      starts.between(T0 - 3_600_000, T0 + 3_600_000).map((s) => [s.ms, s.pool, s.cold]),
      [
        [65_000, "general", true],
        [1_000, "general", false],
      ],
    );
    assert.equal(starts.between(T0, T0 + 3_600_000).length, 1, "by creation");
  });
});
