import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Pod } from "../../objects/kube.ts";
import { ClusterState } from "../../state/cluster.ts";
import { workloadPodCounts, workloadPodsRows, workloadTemplates } from "./workload-pods.ts";

/** Pod `i` of Deployment `app`'s ReplicaSet for `hash` (created `min` minutes past 10:00, if given). */
const pod = (app: string, i: number, o: { hash?: string; namespace?: string; min?: number } = {}): Pod => {
  const hash = o.hash ?? "5c8d";
  return {
    metadata: {
      name: `${app}-${hash}-${i}`,
      namespace: o.namespace ?? "batch",
      ...(o.min === undefined
        ? {}
        : { creationTimestamp: new Date(Date.UTC(2026, 11, 5, 10, o.min)).toISOString() }),
      labels: { app, "pod-template-hash": hash },
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          kind: "ReplicaSet",
          name: `${app}-${hash}`,
          uid: `rs-${app}`,
          controller: true,
        },
      ],
    },
    spec: { containers: [{ name: app, resources: { requests: { cpu: "1" } } }] },
    status: { phase: "Running" },
  };
};

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

const revPod = (app: string, hash: string, i: number, min: number): Pod =>
  pod(app, i, { hash, namespace: "shop", min });

describe("pods per workload", () => {
  it("count a rollout's pods and tell its newest revision's apart (the surge is not demand)", () => {
    const pods = [
      revPod("api", "old1", 0, 0),
      revPod("api", "old1", 1, 1),
      revPod("api", "new2", 0, 30),
      revPod("api", "new2", 1, 30),
      revPod("api", "new2", 2, 31),
      // An old revision's pod re-created mid-rollout (its node drained) is not the newest revision.
      revPod("api", "old1", 2, 32),
      { ...revPod("web", "w1", 0, 0), metadata: { ...revPod("web", "w1", 0, 0).metadata, labels: {} } },
    ];
    const counts = workloadPodCounts(pods);
    assert.deepEqual(Object.fromEntries(counts), {
      "shop/Deployment/api": { pods: 6, revision: "new2", revisionPods: 3 },
      "shop/ReplicaSet/web-w1": { pods: 1 },
    });
    assert.deepEqual(workloadPodsRows(counts, { clusterId: "c", ts: 5, stepMs: 60_000 }), [
      {
        clusterId: "c",
        workload: "shop/Deployment/api",
        ts: 5,
        stepMs: 60_000,
        pods: 6,
        revision: "new2",
        revisionPods: 3,
      },
      { clusterId: "c", workload: "shop/ReplicaSet/web-w1", ts: 5, stepMs: 60_000, pods: 1 },
    ]);
  });

  it("read a StatefulSet's revision from controller-revision-hash", () => {
    const sts = (i: number, rev: string, min: number): Pod => ({
      metadata: {
        name: `db-${i}`,
        namespace: "shop",
        creationTimestamp: new Date(Date.UTC(2026, 11, 5, 10, min)).toISOString(),
        labels: { "controller-revision-hash": rev },
        ownerReferences: [
          { apiVersion: "apps/v1", kind: "StatefulSet", name: "db", uid: "sts", controller: true },
        ],
      },
      spec: { containers: [{ name: "db" }] },
      status: { phase: "Running" },
    });
    assert.deepEqual(
      workloadPodCounts([sts(0, "db-6f", 0), sts(1, "db-7a", 5), sts(2, "db-7a", 6)]).get(
        "shop/StatefulSet/db",
      ),
      {
        pods: 3,
        revision: "db-7a",
        revisionPods: 2,
      },
    );
  });
});
