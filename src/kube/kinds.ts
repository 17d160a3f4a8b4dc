// The API resources Wave uses, with where they live on the apiserver.
import type {
  ConfigMap,
  DaemonSet,
  Deployment,
  Event,
  Lease,
  MutatingWebhookConfiguration,
  Namespace,
  Node,
  Pod,
  PodDisruptionBudget,
  PriorityClass,
  ReplicaSet,
  StatefulSet,
} from "../objects/kube.ts";
import type { EC2NodeClass, KWOKNodeClass, NodeClaim, NodeOverlay, NodePool } from "../objects/karpenter.ts";
import {
  POLICY_GROUP,
  POLICY_VERSION,
  SPOT_POLICY_KIND,
  SPOT_POLICY_PLURAL,
  WARMUP_POLICY_KIND,
  WARMUP_POLICY_PLURAL,
  type SpotPolicyResource,
  type WarmupPolicyResource,
} from "../objects/policy-crds.ts";

export interface ResourceKind {
  group: string; // "" for the core group
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

export const KINDS = {
  Node: { group: "", version: "v1", kind: "Node", plural: "nodes", namespaced: false },
  Pod: { group: "", version: "v1", kind: "Pod", plural: "pods", namespaced: true },
  Event: { group: "", version: "v1", kind: "Event", plural: "events", namespaced: true },
  Namespace: { group: "", version: "v1", kind: "Namespace", plural: "namespaces", namespaced: false },
  ConfigMap: { group: "", version: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true },
  Deployment: { group: "apps", version: "v1", kind: "Deployment", plural: "deployments", namespaced: true },
  ReplicaSet: { group: "apps", version: "v1", kind: "ReplicaSet", plural: "replicasets", namespaced: true },
  StatefulSet: {
    group: "apps",
    version: "v1",
    kind: "StatefulSet",
    plural: "statefulsets",
    namespaced: true,
  },
  DaemonSet: { group: "apps", version: "v1", kind: "DaemonSet", plural: "daemonsets", namespaced: true },
  PodDisruptionBudget: {
    group: "policy",
    version: "v1",
    kind: "PodDisruptionBudget",
    plural: "poddisruptionbudgets",
    namespaced: true,
  },
  NodePool: {
    group: "karpenter.sh",
    version: "v1",
    kind: "NodePool",
    plural: "nodepools",
    namespaced: false,
  },
  NodeClaim: {
    group: "karpenter.sh",
    version: "v1",
    kind: "NodeClaim",
    plural: "nodeclaims",
    namespaced: false,
  },
  // Karpenter v1.8+ (gate NodeOverlay): absent on older releases, so read without waiting for it.
  NodeOverlay: {
    group: "karpenter.sh",
    version: "v1alpha1",
    kind: "NodeOverlay",
    plural: "nodeoverlays",
    namespaced: false,
  },
  KWOKNodeClass: {
    group: "karpenter.kwok.sh",
    version: "v1alpha1",
    kind: "KWOKNodeClass",
    plural: "kwoknodeclasses",
    namespaced: false,
  },
  EC2NodeClass: {
    group: "karpenter.k8s.aws",
    version: "v1",
    kind: "EC2NodeClass",
    plural: "ec2nodeclasses",
    namespaced: false,
  },
  PriorityClass: {
    group: "scheduling.k8s.io",
    version: "v1",
    kind: "PriorityClass",
    plural: "priorityclasses",
    namespaced: false,
  },
  MutatingWebhookConfiguration: {
    group: "admissionregistration.k8s.io",
    version: "v1",
    kind: "MutatingWebhookConfiguration",
    plural: "mutatingwebhookconfigurations",
    namespaced: false,
  },
  Lease: { group: "coordination.k8s.io", version: "v1", kind: "Lease", plural: "leases", namespaced: true },
  // Wave's own policy resources (issue 31; the CRDs in deploy/helm/wave-crds).
  SpotPolicy: {
    group: POLICY_GROUP,
    version: POLICY_VERSION,
    kind: SPOT_POLICY_KIND,
    plural: SPOT_POLICY_PLURAL,
    namespaced: true,
  },
  WarmupPolicy: {
    group: POLICY_GROUP,
    version: POLICY_VERSION,
    kind: WARMUP_POLICY_KIND,
    plural: WARMUP_POLICY_PLURAL,
    namespaced: false,
  },
} as const satisfies Record<string, ResourceKind>;

export type KindName = keyof typeof KINDS;

/** The TypeScript type of each kind's objects. */
export interface KindTypes {
  Node: Node;
  Pod: Pod;
  Event: Event;
  Namespace: Namespace;
  Deployment: Deployment;
  ReplicaSet: ReplicaSet;
  StatefulSet: StatefulSet;
  DaemonSet: DaemonSet;
  PodDisruptionBudget: PodDisruptionBudget;
  NodePool: NodePool;
  NodeClaim: NodeClaim;
  NodeOverlay: NodeOverlay;
  KWOKNodeClass: KWOKNodeClass;
  EC2NodeClass: EC2NodeClass;
  PriorityClass: PriorityClass;
  MutatingWebhookConfiguration: MutatingWebhookConfiguration;
  Lease: Lease;
  ConfigMap: ConfigMap;
  SpotPolicy: SpotPolicyResource;
  WarmupPolicy: WarmupPolicyResource;
}

export function apiVersionOf(kind: ResourceKind): string {
  return kind.group === "" ? kind.version : `${kind.group}/${kind.version}`;
}
