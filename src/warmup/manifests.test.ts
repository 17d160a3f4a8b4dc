import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { K } from "../objects/karpenter.ts";
import { W } from "../objects/wave.ts";
import { PAUSE_IMAGE, prepullPod, warmupPod, warmupPodName } from "./manifests.ts";
import { nodePool, pod, T0 } from "./testing/fixtures.ts";

describe("manifests", () => {
  it("builds a warmup pod pinned to the pool, tolerating its taints, with the largest pod's shape", () => {
    const pool = nodePool("gpu", {
      taints: [
        { key: "nvidia.com/gpu", effect: "NoSchedule" },
        { key: "team", value: "ml", effect: "NoExecute" },
      ],
    });
    const largest = pod("train", {
      nodeSelector: { [K.archLabel]: "arm64", "kubernetes.io/hostname": "n1", [K.nodePoolLabel]: "other" },
    });
    const p = warmupPod({
      pool,
      namespace: "wave",
      largest,
      requests: { cpu: 2500, memory: 2 ** 30, pods: 1 },
      now: T0,
      ttlSeconds: 60,
      slot: 0,
    });
    assert.deepEqual(p.spec.nodeSelector, { [K.archLabel]: "arm64", [K.nodePoolLabel]: "gpu" });
    assert.deepEqual(p.spec.tolerations, [
      { key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" },
      { key: "team", operator: "Equal", value: "ml", effect: "NoExecute" },
    ]);
    assert.deepEqual(p.spec.containers, [
      {
        name: "pause",
        image: PAUSE_IMAGE,
        imagePullPolicy: "IfNotPresent",
        resources: { requests: { cpu: "2500m", memory: "1Gi" } },
      },
    ]);
    assert.deepEqual(p.metadata.labels, {
      [W.warmupLabel]: "true",
      [W.poolLabel]: "gpu",
      [W.managedByLabel]: "wave",
    });
    assert.equal(p.metadata.annotations?.[W.deadline], new Date(T0 + 60_000).toISOString());
  });

  it("names pods within DNS limits and uniquely per slot", () => {
    const long = "p".repeat(80);
    assert.ok(warmupPodName(long, T0).length <= 63);
    assert.notEqual(warmupPodName("a", T0, 0), warmupPodName("a", T0, 1));
  });

  it("builds a pull pod bound to the node that never runs the entrypoint", () => {
    const p = prepullPod({
      pool: "g",
      node: "w1",
      image: "example.com/app:1",
      namespace: "wave",
      now: T0,
      deadlineSeconds: 120,
    });
    assert.equal(p.spec.nodeName, "w1");
    assert.equal(p.spec.restartPolicy, "Never");
    assert.deepEqual(p.spec.tolerations, [{ operator: "Exists" }]);
    assert.deepEqual(p.spec.containers[0]?.command, ["/bin/sh", "-c", "true"]);
    assert.equal((p.spec as { activeDeadlineSeconds?: number }).activeDeadlineSeconds, 120);
    assert.equal(p.metadata.annotations?.[W.image], "example.com/app:1");
  });
});
