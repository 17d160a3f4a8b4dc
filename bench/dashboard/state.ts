// The synthetic cluster of the scale benchmarks (bench:dashboard, bench:metrics): 5,000 nodes in
// 20 NodePools (60 % spot, six instance types, three zones), 30 pods per node (150,000), and an
// hour of churn history. Seeded, so every run and every benchmark sees the same cluster.
import type { Disruption, LifecycleEvent } from "../../src/core/store/store.ts";
import type { NodeClaim, NodePool } from "../../src/objects/karpenter.ts";
import type { Node, Pod } from "../../src/objects/kube.ts";
import { seeded } from "../../src/shared/random.ts";
import type { ClusterState } from "../../src/state/cluster.ts";

export const NODES = 5000;
export const PODS_PER_NODE = 30; // 150,000 pods
export const POOLS = 20;

export const random = seeded(11);
export const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;

export const TYPES = [
  { name: "m6i.large", cpu: 2, gib: 8 },
  { name: "m6i.xlarge", cpu: 4, gib: 16 },
  { name: "c6i.2xlarge", cpu: 8, gib: 16 },
  { name: "r6i.2xlarge", cpu: 8, gib: 64 },
  { name: "m6i.4xlarge", cpu: 16, gib: 64 },
  { name: "c7g.4xlarge", cpu: 16, gib: 32 },
];
export const ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"];
export const T0 = Date.now() - 2 * 3_600_000;

export function pool(i: number): NodePool {
  return {
    metadata: { name: `pool-${i}`, resourceVersion: "1" },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: "default" },
          requirements: [
            { key: "karpenter.sh/capacity-type", operator: "In", values: ["spot", "on-demand"] },
          ],
        },
      },
      disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "1m" },
      limits: { cpu: "20000", memory: "80000Gi" },
    },
  };
}

export function machine(i: number): { node: Node; claim: NodeClaim; pool: string } {
  const t = pick(TYPES);
  const name = `ip-10-${Math.floor(i / 250)}-${i % 250}.ec2.internal`;
  const poolName = `pool-${i % POOLS}`;
  const labels = {
    "karpenter.sh/nodepool": poolName,
    "karpenter.sh/capacity-type": random() < 0.6 ? "spot" : "on-demand",
    "node.kubernetes.io/instance-type": t.name,
    "topology.kubernetes.io/zone": pick(ZONES),
    "topology.kubernetes.io/region": "us-east-1",
  };
  const created = new Date(T0 + i * 100).toISOString();
  const capacity = { cpu: String(t.cpu), memory: `${t.gib}Gi`, pods: "110" };
  const allocatable = { cpu: `${t.cpu * 1000 - 100}m`, memory: `${t.gib * 1024 - 800}Mi`, pods: "110" };
  const providerID = `aws:///${labels["topology.kubernetes.io/zone"]}/i-${i.toString(16).padStart(17, "0")}`;
  return {
    pool: poolName,
    node: {
      metadata: { name, labels, creationTimestamp: created, resourceVersion: "1" },
      spec: { providerID },
      status: { capacity, allocatable, conditions: [{ type: "Ready", status: "True" }] },
    },
    claim: {
      metadata: {
        name: `${poolName}-${i.toString(36)}`,
        labels,
        creationTimestamp: created,
        resourceVersion: "1",
      },
      spec: {},
      status: { nodeName: name, providerID, capacity, allocatable },
    },
  };
}

export function pod(i: number, node: string): Pod {
  return {
    metadata: { name: `app-${i}`, namespace: `ns-${i % 50}`, resourceVersion: "1" },
    spec: {
      nodeName: node,
      containers: [{ name: "app", resources: { requests: { cpu: "50m", memory: "128Mi" } } }],
    },
    status: { phase: "Running" },
  };
}

/**
 * A pod of Deployment `app-<n>` (500 Deployments, 10 in each namespace): its ReplicaSet owner and
 * pod-template-hash label, as a real Deployment's pods carry them.
 */
export function ownedPod(i: number, node: string): Pod {
  const p = pod(i, node);
  const app = `app-${i % 500}`;
  p.metadata.labels = { app, "pod-template-hash": "5d8f7c9b6" };
  p.metadata.ownerReferences = [
    {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      name: `${app}-5d8f7c9b6`,
      uid: `rs-${app}`,
      controller: true,
    },
  ];
  return p;
}

/**
 * Fills `state` with the pools, machines and pods; returns the machines (in order). `owned`: pods
 * belong to Deployments (ownedPod); bench:dashboard keeps bare pods.
 */
export function fillState(state: ClusterState, opts: { owned?: boolean } = {}): ReturnType<typeof machine>[] {
  const make = opts.owned ? ownedPod : pod;
  const machines = Array.from({ length: NODES }, (_, i) => machine(i));
  state.batch(() => {
    for (let i = 0; i < POOLS; i++) state.apply("NodePool", "add", pool(i));
    for (const m of machines) {
      state.apply("Node", "add", m.node);
      state.apply("NodeClaim", "add", m.claim);
    }
    let p = 0;
    for (const m of machines) {
      for (let k = 0; k < PODS_PER_NODE; k++)
        state.apply("Pod", "add", make(p++, m.node.metadata.name ?? ""));
    }
  });
  return machines;
}

/** An hour of churn: 600 NodeClaims launched, disrupted (Underutilized) and terminated. */
export function churnHistory(
  cluster: string,
  now: number,
): { lifecycle: LifecycleEvent[]; disruptions: Disruption[] } {
  const lifecycle: LifecycleEvent[] = [];
  const disruptions: Disruption[] = [];
  for (let i = 0; i < 600; i++) {
    const nodePool = `pool-${i % POOLS}`;
    const nodeClaim = `${nodePool}-old-${i}`;
    const at = now - 3_000_000 + i * 4000;
    const base = {
      clusterId: cluster,
      nodeClaim,
      nodeClaimUid: `uid-${i}`,
      nodePool,
      instanceType: "m6i.large",
    };
    lifecycle.push({ ...base, phase: "Launched", at });
    lifecycle.push({ ...base, phase: "Disrupted", reason: "Underutilized", at: at + 300_000 });
    lifecycle.push({ ...base, phase: "Terminated", at: at + 330_000 });
    disruptions.push({
      clusterId: cluster,
      nodeClaim,
      nodePool,
      reason: "Underutilized",
      at: at + 300_000,
      source: "event",
    });
  }
  return { lifecycle, disruptions };
}
