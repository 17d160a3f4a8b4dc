// Synthetic cluster objects in wire shape, for the agent/ingest tests and the ingest benchmark.
import type { Event, Node, Pod } from "../objects/kube.ts";
import type { NodeClaim, NodePool } from "../objects/karpenter.ts";
import type { WireObject } from "../wire/wire.ts";

const T0 = Date.UTC(2026, 0, 1);
const iso = (ms: number): string => new Date(ms).toISOString();

export function nodePool(name: string): WireObject {
  const np: NodePool = {
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name, uid: `np-${name}`, resourceVersion: "1", creationTimestamp: iso(T0) },
    spec: {
      template: {
        spec: {
          requirements: [
            { key: "karpenter.sh/capacity-type", operator: "In", values: ["spot", "on-demand"] },
          ],
          nodeClassRef: { group: "karpenter.kwok.sh", kind: "KWOKNodeClass", name: "default" },
        },
      },
      disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "30s" },
      limits: { cpu: "100000" },
    },
  };
  return { kind: "NodePool", object: np };
}

export function nodeClaim(
  i: number,
  opts: { pool?: string; rv?: number; initialized?: boolean } = {},
): WireObject {
  const name = `claim-${i}`;
  const created = T0 + i * 1000;
  const conditions = [
    { type: "Launched", status: "True" as const, lastTransitionTime: iso(created + 5_000) },
    { type: "Registered", status: "True" as const, lastTransitionTime: iso(created + 30_000) },
  ];
  if (opts.initialized ?? true) {
    conditions.push({ type: "Initialized", status: "True", lastTransitionTime: iso(created + 40_000) });
  }
  const nc: NodeClaim = {
    apiVersion: "karpenter.sh/v1",
    kind: "NodeClaim",
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion: String(opts.rv ?? 1),
      creationTimestamp: iso(created),
      labels: {
        "karpenter.sh/nodepool": opts.pool ?? "default",
        "karpenter.sh/capacity-type": i % 3 === 0 ? "on-demand" : "spot",
        "node.kubernetes.io/instance-type": "c-4x-amd64-linux",
        "topology.kubernetes.io/zone": `test-zone-${"abcd"[i % 4] ?? "a"}`,
      },
      finalizers: ["karpenter.sh/termination"],
      annotations: { "kubectl.kubernetes.io/last-applied-configuration": "x".repeat(200) },
    },
    spec: { nodeClassRef: { group: "karpenter.kwok.sh", kind: "KWOKNodeClass", name: "default" } },
    status: {
      providerID: `kwok://node-${i}`,
      nodeName: `node-${i}`,
      capacity: { cpu: "4", memory: "8Gi", pods: "110" },
      allocatable: { cpu: "3900m", memory: "7Gi", pods: "110" },
      conditions,
    },
  };
  return { kind: "NodeClaim", object: nc };
}

export function node(i: number, rv = 1): WireObject {
  const n: Node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: `node-${i}`,
      uid: `uid-node-${i}`,
      resourceVersion: String(rv),
      creationTimestamp: iso(T0 + i * 1000 + 20_000),
      labels: {
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/capacity-type": i % 3 === 0 ? "on-demand" : "spot",
        "node.kubernetes.io/instance-type": "c-4x-amd64-linux",
        "topology.kubernetes.io/zone": `test-zone-${"abcd"[i % 4] ?? "a"}`,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": `node-${i}`,
      },
      annotations: { "node.alpha.kubernetes.io/ttl": "0" },
    },
    spec: { providerID: `kwok://node-${i}` },
    status: {
      capacity: { cpu: "4", memory: "8Gi", pods: "110" },
      allocatable: { cpu: "3900m", memory: "7Gi", pods: "110" },
      conditions: [
        {
          type: "Ready",
          status: "True",
          lastTransitionTime: iso(T0 + i * 1000 + 35_000),
          message: "kubelet is ready",
        },
        { type: "MemoryPressure", status: "False", message: "ok" },
      ],
      nodeInfo: { kubeletVersion: "v1.33.0" },
      images: [{ names: ["registry.example/app:1.0"], sizeBytes: 123_456_789 }],
    },
  };
  return { kind: "Node", object: n };
}

export function pod(i: number, nodeCount: number, rv = 1): WireObject {
  const p: Pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `app-${i}`,
      namespace: `ns-${i % 50}`,
      uid: `uid-pod-${i}`,
      resourceVersion: String(rv),
      creationTimestamp: iso(T0 + i),
      labels: { app: `app-${i % 500}`, "pod-template-hash": "5d8f7b9c6" },
      annotations: { "kubectl.kubernetes.io/restartedAt": iso(T0) },
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          kind: "ReplicaSet",
          name: `app-${i % 500}-5d8f7b9c6`,
          uid: `rs-${i % 500}`,
          controller: true,
        },
      ],
    },
    spec: {
      nodeName: `node-${i % nodeCount}`,
      containers: [
        {
          name: "app",
          image: "registry.example/app:1.0",
          command: ["/bin/app", "--serve"],
          resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { memory: "256Mi" } },
        },
      ],
      tolerations: [
        {
          key: "node.kubernetes.io/not-ready",
          operator: "Exists",
          effect: "NoExecute",
          tolerationSeconds: 300,
        },
      ],
      schedulerName: "default-scheduler",
      priority: 0,
    },
    status: {
      phase: "Running",
      startTime: iso(T0 + i + 1000),
      conditions: [
        { type: "PodScheduled", status: "True" },
        { type: "Ready", status: "True" },
        { type: "ContainersReady", status: "True" },
      ],
      containerStatuses: [{ name: "app", ready: true, state: { running: { startedAt: iso(T0) } } }],
    },
  };
  return { kind: "Pod", object: p };
}

export function disruptionEvent(nodeName: string, reason: string, at: number): WireObject {
  const ev: Event = {
    metadata: { name: `${nodeName}.disrupting`, namespace: "default", uid: `ev-${nodeName}` },
    involvedObject: { kind: "Node", name: nodeName },
    reason: "DisruptionTerminating",
    message: `Disrupting Node: ${reason}`,
    type: "Normal",
    lastTimestamp: iso(at),
    source: { component: "karpenter" },
  };
  return { kind: "Event", object: ev };
}

/** A whole synthetic cluster. */
export function syntheticCluster(sizes: { nodes: number; pods: number; nodeClaims: number }): WireObject[] {
  return [...syntheticObjects(sizes)];
}

/** The objects of syntheticCluster one at a time, none kept (the benchmark's stand-in for a LIST). */
export function* syntheticObjects(sizes: {
  nodes: number;
  pods: number;
  nodeClaims: number;
}): Generator<WireObject> {
  yield nodePool("default");
  for (let i = 0; i < sizes.nodeClaims; i++) yield nodeClaim(i);
  for (let i = 0; i < sizes.nodes; i++) yield node(i);
  for (let i = 0; i < sizes.pods; i++) yield pod(i, Math.max(1, sizes.nodes));
}
