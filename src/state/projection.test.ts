import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Pod } from "../objects/kube.ts";
import { Interner, projectPod } from "./projection.ts";

/** A pod of a Deployment bound to a node, as the agent's trim leaves it. */
const bound = (i: number): Pod => ({
  metadata: {
    name: `app-${i}`,
    namespace: `ns-${i}`,
    uid: `uid-${i}`,
    resourceVersion: "1",
    creationTimestamp: "2026-01-01T00:00:00Z",
    labels: { app: "web" },
    ownerReferences: [
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-1", uid: "rs", controller: true },
    ],
  },
  spec: {
    nodeName: `node-${i}`,
    containers: [
      {
        name: "app",
        image: "registry.example/app:1.0",
        resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { memory: "256Mi" } },
      },
    ],
    tolerations: [{ key: "spot", operator: "Exists" }],
    priorityClassName: "high",
  },
  status: { phase: "Running", startTime: "2026-01-01T00:00:01Z" },
});

describe("projectPod (the agent's warmup projection)", () => {
  it("keeps a pending pod whole", () => {
    const p = bound(1);
    const { nodeName: _n, ...spec } = p.spec;
    const pending: Pod = { ...p, spec };
    assert.equal(projectPod(pending), pending);
  });

  it("keeps of a bound pod what warmup reads: DaemonSet owner, mirror mark, Wave's labels, images, requests, constraints", () => {
    const p = bound(1);
    const ds: Pod = {
      ...p,
      metadata: {
        ...p.metadata,
        labels: { app: "agent", "wave.sh/prepull": "true" },
        annotations: { "kubernetes.io/config.mirror": "x" },
        ownerReferences: [
          { apiVersion: "apps/v1", kind: "DaemonSet", name: "d", uid: "u", controller: true },
        ],
      },
      spec: { ...p.spec, nodeSelector: { zone: "a" } },
    };
    const got = projectPod(ds, new Interner());
    assert.deepEqual(got.metadata, {
      name: "app-1",
      namespace: "ns-1",
      resourceVersion: "1",
      creationTimestamp: p.metadata.creationTimestamp,
      labels: { "wave.sh/prepull": "true" },
      annotations: { "kubernetes.io/config.mirror": "x" },
      ownerReferences: [{ apiVersion: "apps/v1", kind: "DaemonSet", name: "d", uid: "u", controller: true }],
    });
    assert.deepEqual(got.spec, {
      nodeName: "node-1",
      containers: [
        {
          name: "app",
          image: "registry.example/app:1.0",
          resources: { requests: { cpu: "100m", memory: "128Mi" } },
        },
      ],
      nodeSelector: { zone: "a" },
      tolerations: p.spec.tolerations,
    });
    assert.ok(p.spec.tolerations, "the fixture has tolerations");
    assert.deepEqual(got.status, { phase: "Running" });
  });

  it("shares equal requests and phases between pods, and starts over past its bound", () => {
    const intern = new Interner(8);
    const a = projectPod(bound(1), intern);
    const b = projectPod(bound(2), intern);
    assert.equal(a.spec.containers, b.spec.containers);
    assert.equal(a.spec.tolerations, b.spec.tolerations);
    assert.equal(a.status, b.status);
    assert.ok(Object.isFrozen(a.spec.containers));
    for (let i = 3; i < 10; i++) projectPod(bound(i), intern);
    assert.ok(intern.size <= 8);
  });
});
