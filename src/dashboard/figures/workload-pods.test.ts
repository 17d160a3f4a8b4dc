import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Pod } from "../../objects/kube.ts";
import { ClusterState } from "../../state/cluster.ts";
import { workloadTemplates } from "./workload-pods.ts";

const pod = (app: string, i: number): Pod => ({
  metadata: {
    name: `${app}-5c8d-${i}`,
    namespace: "batch",
    labels: { app, "pod-template-hash": "5c8d" },
    ownerReferences: [
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: `${app}-5c8d`, uid: `rs-${app}`, controller: true },
    ],
  },
  spec: { containers: [{ name: app, resources: { requests: { cpu: "1" } } }] },
  status: { phase: "Running" },
});

describe("workload templates", () => {
  it("remember each workload's newest live pod after its pods are gone, one per state", () => {
    const state = new ClusterState();
    state.apply("Pod", "add", pod("etl", 0));
    const t = workloadTemplates(state);
    assert.equal(workloadTemplates(state), t, "made once per state");
    state.apply("Pod", "add", pod("etl", 1));
    state.apply("Pod", "add", pod("web", 0));
    state.apply("Pod", "delete", pod("etl", 0));
    state.apply("Pod", "delete", pod("etl", 1));
    assert.equal(state.pods().length, 1);
    assert.deepEqual(
      t
        .pods()
        .map((p) => p.metadata.name)
        .sort(),
      ["etl-5c8d-1", "web-5c8d-0"],
    );
  });
});
