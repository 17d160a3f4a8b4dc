// Small builders for warmup tests: nodes, pods and pools with only the fields that matter.
import type { Affinity, Node, Pod, Taint, Toleration } from "../../objects/kube.ts";
import {
  ARCH_LABEL,
  CAPACITY_TYPE_LABEL,
  INSTANCE_TYPE_LABEL,
  NODE_POOL_LABEL,
  type NodeClaim,
  type NodePool,
} from "../../objects/karpenter.ts";
import type { NodeSelectorRequirement } from "../../objects/kube.ts";

export const T0 = Date.UTC(2026, 0, 1);
export const iso = (ms: number): string => new Date(ms).toISOString();

export interface NodeOpts {
  cpu?: string;
  memory?: string;
  pods?: string;
  taints?: Taint[];
  labels?: Record<string, string>;
  ready?: boolean;
  unschedulable?: boolean;
  instanceType?: string;
  capacityType?: string;
  images?: string[];
}

export function node(name: string, pool: string, o: NodeOpts = {}): Node {
  const alloc = { cpu: o.cpu ?? "4", memory: o.memory ?? "16Gi", pods: o.pods ?? "110" };
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      labels: {
        [NODE_POOL_LABEL]: pool,
        [INSTANCE_TYPE_LABEL]: o.instanceType ?? "m-4x-amd64-linux",
        [CAPACITY_TYPE_LABEL]: o.capacityType ?? "on-demand",
        [ARCH_LABEL]: "amd64",
        ...o.labels,
      },
    },
    spec: { ...(o.taints ? { taints: o.taints } : {}), ...(o.unschedulable ? { unschedulable: true } : {}) },
    status: {
      capacity: alloc,
      allocatable: alloc,
      conditions: [{ type: "Ready", status: o.ready === false ? "False" : "True" }],
      ...(o.images ? { images: o.images.map((i) => ({ names: [i], sizeBytes: 1 })) } : {}),
    },
  };
}

export interface PodOpts {
  cpu?: string;
  memory?: string;
  node?: string;
  namespace?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: Toleration[];
  affinity?: Affinity;
  daemonSet?: boolean;
  image?: string;
  initImage?: string;
  created?: number;
  phase?: "Pending" | "Running" | "Succeeded" | "Failed";
  labels?: Record<string, string>;
  /** When the pod became Ready (epoch ms): its Ready condition. */
  ready?: number;
}

export function pod(name: string, o: PodOpts = {}): Pod {
  const requests: Record<string, string> = {};
  if (o.cpu !== undefined) requests.cpu = o.cpu;
  if (o.memory !== undefined) requests.memory = o.memory;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: o.namespace ?? "apps",
      creationTimestamp: iso(o.created ?? T0),
      ...(o.labels ? { labels: o.labels } : {}),
      ...(o.daemonSet
        ? {
            ownerReferences: [
              { apiVersion: "apps/v1", kind: "DaemonSet", name: "ds", uid: "ds-uid", controller: true },
            ],
          }
        : {}),
    },
    spec: {
      ...(o.node !== undefined ? { nodeName: o.node } : {}),
      ...(o.nodeSelector ? { nodeSelector: o.nodeSelector } : {}),
      ...(o.tolerations ? { tolerations: o.tolerations } : {}),
      ...(o.affinity ? { affinity: o.affinity } : {}),
      ...(o.initImage ? { initContainers: [{ name: "init", image: o.initImage }] } : {}),
      containers: [{ name: "app", image: o.image ?? "example.com/app:1", resources: { requests } }],
    },
    status: {
      phase: o.phase ?? (o.node !== undefined ? "Running" : "Pending"),
      ...(o.ready === undefined
        ? {}
        : { conditions: [{ type: "Ready", status: "True", lastTransitionTime: iso(o.ready) }] }),
    },
  };
}

export interface PoolOpts {
  taints?: Taint[];
  requirements?: NodeSelectorRequirement[];
  labels?: Record<string, string>;
  limits?: Record<string, string>;
  resources?: Record<string, string>;
  weight?: number;
}

export function nodePool(name: string, o: PoolOpts = {}): NodePool {
  return {
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name },
    spec: {
      template: {
        ...(o.labels ? { metadata: { labels: o.labels } } : {}),
        spec: {
          requirements: o.requirements ?? [
            { key: CAPACITY_TYPE_LABEL, operator: "In", values: ["on-demand"] },
          ],
          nodeClassRef: { group: "karpenter.kwok.sh", kind: "KWOKNodeClass", name: "default" },
          ...(o.taints ? { taints: o.taints } : {}),
        },
      },
      ...(o.limits ? { limits: o.limits } : {}),
      ...(o.weight !== undefined ? { weight: o.weight } : {}),
    },
    ...(o.resources ? { status: { resources: o.resources } } : {}),
  };
}

export function nodeClaim(name: string, pool: string, nodeName: string): NodeClaim {
  return {
    apiVersion: "karpenter.sh/v1",
    kind: "NodeClaim",
    metadata: { name, labels: { [NODE_POOL_LABEL]: pool } },
    spec: { nodeClassRef: { group: "karpenter.kwok.sh", kind: "KWOKNodeClass", name: "default" } },
    status: { nodeName },
  };
}
