import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Event, PodDisruptionBudget } from "../objects/kube.ts";
import { node, nodeClaim, pod } from "./fixtures.ts";
import { podRequests } from "../karpenter/resources.ts";
import { trim, trimEvent, trimNode, trimNodeClaim, trimPod } from "./trim.ts";
import type { Node, Pod } from "../objects/kube.ts";
import type { NodeClaim } from "../objects/karpenter.ts";

describe("trim", () => {
  it("keeps what Wave reads of a Pod and drops the rest", () => {
    const p = pod(1, 3).object as Pod;
    p.metadata.annotations = { "karpenter.sh/do-not-disrupt": "true", "big/annotation": "x".repeat(1000) };
    p.spec.affinity = {
      nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] } },
      podAntiAffinity: { big: true },
    };
    const t = trimPod(p);
    assert.deepEqual(t.metadata.annotations, { "karpenter.sh/do-not-disrupt": "true" });
    // Wave's own marks (warm-node owner, spot note, pre-pull image) are what its views read.
    p.metadata.annotations["wave.sh/do-not-disrupt-owner"] = "warmup";
    assert.equal(trimPod(p).metadata.annotations?.["wave.sh/do-not-disrupt-owner"], "warmup");
    assert.deepEqual(t.metadata.labels, p.metadata.labels);
    assert.equal(t.metadata.ownerReferences?.[0]?.kind, "ReplicaSet");
    assert.equal(t.spec.nodeName, "node-1");
    assert.deepEqual(t.spec.containers, [
      {
        name: "app",
        image: "registry.example/app:1.0",
        resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { memory: "256Mi" } },
      },
    ]);
    assert.deepEqual(t.spec.affinity, { nodeAffinity: p.spec.affinity.nodeAffinity });
    assert.equal(t.spec.tolerations?.length, 1);
    assert.equal(t.status?.phase, "Running");
    assert.deepEqual(
      t.status.conditions?.map((c) => c.type),
      ["PodScheduled", "Ready"],
    );
    assert.equal(t.status.containerStatuses, undefined);
    // The input is not modified.
    assert.equal((p.spec.containers[0]?.command ?? []).length, 2);
  });

  it("keeps the marks warmup keeps its state in, so warmup and warm nodes read right from the state", () => {
    const n = node(3).object as Node;
    n.metadata.annotations = {
      "karpenter.sh/do-not-disrupt": "true",
      "wave.sh/do-not-disrupt-owner": "warmup",
      "wave.sh/do-not-disrupt-namespace": "wave",
      "wave.sh/created-at": "2026-03-02T12:00:00Z",
      "wave.sh/deadline": "2026-03-02T12:10:00Z",
      "wave.sh/prepulled": "abc,def",
      "kubectl.kubernetes.io/last-applied-configuration": "{}",
    };
    const kept = { ...n.metadata.annotations };
    delete kept["kubectl.kubernetes.io/last-applied-configuration"];
    assert.deepEqual(trimNode(n).metadata.annotations, kept);
    const p = pod(4, 1).object as Pod;
    p.metadata.annotations = { "kubernetes.io/config.mirror": "x", "wave.sh/sim-rollout": "3" };
    // Wave's own marks are kept by prefix (few and short), so a new one cannot be lost again.
    assert.deepEqual(trimPod(p).metadata.annotations, {
      "kubernetes.io/config.mirror": "x",
      "wave.sh/sim-rollout": "3",
    });
  });

  it("keeps what a pod's requests are computed from: sidecars and pod-level resources", () => {
    const p = pod(1, 3).object as Pod;
    p.spec.initContainers = [
      { name: "mesh", image: "envoy:1", restartPolicy: "Always", resources: { requests: { cpu: "500m" } } },
      { name: "migrate", image: "tool:1", resources: { requests: { cpu: "2" } } },
    ];
    p.spec.resources = { requests: { cpu: "3", memory: "2Gi" } };
    const before = podRequests(p);
    const t = trimPod(p);
    assert.equal(t.spec.initContainers?.[0]?.restartPolicy, "Always");
    assert.deepEqual(t.spec.resources, { requests: { cpu: "3", memory: "2Gi" } });
    assert.deepEqual(podRequests(t), before, "core computes the same requests as from the full pod");
    delete p.spec.resources;
    assert.deepEqual(podRequests(trimPod(p)), podRequests(p), "sidecar counted without pod-level resources");
  });

  it("drops node images and non-Ready conditions but keeps capacity, taints and labels", () => {
    const n = node(2).object as Node;
    n.spec = { ...n.spec, taints: [{ key: "karpenter.sh/disrupted", effect: "NoSchedule" }] };
    const t = trimNode(n);
    assert.equal(t.status?.images, undefined);
    assert.deepEqual(
      t.status?.conditions?.map((c) => c.type),
      ["Ready"],
    );
    assert.equal(t.status.conditions[0]?.message, undefined);
    assert.deepEqual(t.status.allocatable, n.status?.allocatable);
    assert.deepEqual(t.spec?.taints, [{ key: "karpenter.sh/disrupted", effect: "NoSchedule" }]);
    assert.equal(t.metadata.labels?.["karpenter.sh/capacity-type"], "spot");
    assert.equal(t.metadata.annotations, undefined);
    assert.ok(JSON.stringify(t).length < JSON.stringify(n).length);
  });

  it("keeps every NodeClaim condition with its message (lifecycle reads them)", () => {
    const nc = nodeClaim(4).object as NodeClaim;
    nc.status?.conditions?.push({ type: "DisruptionReason", status: "True", message: "Drifted" });
    const t = trimNodeClaim(nc);
    assert.deepEqual(
      t.status?.conditions?.map((c) => c.type),
      ["Launched", "Registered", "Initialized", "DisruptionReason"],
    );
    assert.equal(t.status.conditions[3]?.message, "Drifted");
    assert.equal(t.status.nodeName, "node-4");
    assert.deepEqual(t.metadata.finalizers, ["karpenter.sh/termination"]);
    assert.equal(t.metadata.annotations, undefined);
  });

  it("forwards PodDisruptionBudgets with what consolidation reads, and a NodeClaim's lastPodEventTime", () => {
    const pdb: PodDisruptionBudget = {
      metadata: {
        name: "db",
        namespace: "shop",
        annotations: { "kubectl.kubernetes.io/last-applied-configuration": "x".repeat(500) },
        resourceVersion: "7",
      },
      spec: {
        selector: { matchLabels: { app: "db" } },
        minAvailable: 2,
        unhealthyPodEvictionPolicy: "AlwaysAllow",
      },
      status: { disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 2 },
    };
    const t = trim({ kind: "PodDisruptionBudget", object: pdb });
    assert.deepEqual(t, {
      kind: "PodDisruptionBudget",
      object: {
        metadata: { name: "db", namespace: "shop", resourceVersion: "7" },
        spec: { selector: { matchLabels: { app: "db" } }, minAvailable: 2 },
        status: { disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 2 },
      },
    });
    const nc = nodeClaim(1).object as NodeClaim;
    nc.status = { ...nc.status, lastPodEventTime: "2026-06-01T10:00:00Z" };
    assert.equal(trimNodeClaim(nc).status?.lastPodEventTime, "2026-06-01T10:00:00Z");
  });

  it("forwards only Karpenter-related events", () => {
    const ev = (over: Partial<Event>): Event => ({
      metadata: { name: "e", namespace: "default" },
      involvedObject: {
        kind: "Pod",
        name: "p",
        namespace: "default",
        fieldPath: "spec",
      } as Event["involvedObject"],
      reason: "Pulled",
      message: "pulled image",
      source: { component: "kubelet", host: "node-1" },
      ...over,
    });
    assert.equal(trimEvent(ev({})), undefined);
    assert.ok(trimEvent(ev({ reason: "DisruptionTerminating" })));
    assert.ok(trimEvent(ev({ source: { component: "karpenter" } })));
    assert.ok(trimEvent(ev({ involvedObject: { kind: "NodeClaim", name: "c" } })));
    // Wave's own spot repairs reach core beside Karpenter's events.
    assert.ok(trimEvent(ev({ reason: "WaveSpotRepair", involvedObject: { kind: "Pod", name: "p" } })));
    assert.ok(trimEvent(ev({ reportingComponent: "wave-spot-repair", involvedObject: { kind: "Pod" } })));
    assert.equal(trimEvent(ev({ reportingComponent: "wave-spot-repairs-not" })), undefined);
    const t = trimEvent(ev({ reason: "Nominated", lastTimestamp: "2026-01-01T00:00:00Z" }));
    assert.deepEqual(t?.involvedObject, { kind: "Pod", name: "p", namespace: "default" });
    assert.deepEqual(t.source, { component: "kubelet" });
    assert.equal(trim({ kind: "Event", object: ev({}) }), undefined);
  });
});
