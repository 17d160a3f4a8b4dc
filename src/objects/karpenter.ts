// Karpenter's objects (karpenter.sh/v1 and the KWOK provider's karpenter.kwok.sh/v1alpha1),
// typed to the fields Wave reads and writes.
import type {
  Condition,
  KubeObject,
  NodeSelectorRequirement,
  ObjectMeta,
  ResourceList,
  Taint,
} from "./kube.ts";

export interface NodeClassRef {
  group: string;
  kind: string;
  name: string;
}

export interface NodeClaimTemplateSpec {
  requirements?: (NodeSelectorRequirement & { minValues?: number })[];
  nodeClassRef?: NodeClassRef;
  taints?: Taint[];
  startupTaints?: Taint[];
  expireAfter?: string;
  terminationGracePeriod?: string;
}

export interface DisruptionBudget {
  nodes: string;
  schedule?: string;
  duration?: string;
  reasons?: ("Underutilized" | "Empty" | "Drifted")[];
}

export interface NodePool extends KubeObject {
  spec: {
    template: { metadata?: Pick<ObjectMeta, "labels" | "annotations">; spec: NodeClaimTemplateSpec };
    disruption?: {
      consolidationPolicy?: "WhenEmpty" | "WhenEmptyOrUnderutilized" | "Balanced";
      consolidateAfter?: string;
      budgets?: DisruptionBudget[];
    };
    limits?: ResourceList;
    weight?: number;
    /** Static NodePool (v1.8+, StaticCapacity gate): Karpenter keeps exactly this many nodes. */
    replicas?: number;
  };
  status?: { resources?: ResourceList; conditions?: Condition[]; nodes?: number };
}

export interface NodeClaim extends KubeObject {
  spec: NodeClaimTemplateSpec & { resources?: { requests?: ResourceList } };
  status?: {
    providerID?: string;
    nodeName?: string;
    imageID?: string;
    capacity?: ResourceList;
    allocatable?: ResourceList;
    conditions?: Condition[];
    lastPodEventTime?: string;
  };
}

export interface KWOKNodeClass extends KubeObject {
  spec?: { nodeRegistrationDelay?: string };
  status?: { conditions?: Condition[] };
}

export interface EC2NodeClass extends KubeObject {
  spec: Record<string, unknown>;
  status?: { conditions?: Condition[] };
}

/**
 * A NodeOverlay (karpenter.sh/v1alpha1, Karpenter v1.8+, gate NodeOverlay): a price and extended
 * capacity per instance-type offering its requirements select. Trimmed to what Wave prices with:
 * `capacity` keeps only the resource names (two overlays of one weight naming one resource
 * conflict), the status only its conditions (Karpenter's verdict, `ValidationSucceeded`).
 */
export interface NodeOverlay extends KubeObject {
  spec: {
    requirements?: NodeSelectorRequirement[];
    /** "-20%", "+10%" (percent of the list price) or "+0.1", "-0.05" (dollars per hour). */
    priceAdjustment?: string;
    /** The full price in dollars per hour, e.g. "0.42" (never together with priceAdjustment). */
    price?: string;
    capacity?: ResourceList;
    /** 1–10000; unset counts as 0. */
    weight?: number;
  };
  status?: { conditions?: Condition[] };
}

// Well-known Karpenter labels, annotations, taints and finalizers, named after Karpenter's Go
// constants (CapacityTypeLabelKey → CAPACITY_TYPE_LABEL) and the Kubernetes ones it uses.
export const NODE_POOL_LABEL = "karpenter.sh/nodepool";
export const CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type";
export const NODE_INITIALIZED_LABEL = "karpenter.sh/initialized";
export const NODE_REGISTERED_LABEL = "karpenter.sh/registered";
export const INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type";
export const TOPOLOGY_ZONE_LABEL = "topology.kubernetes.io/zone";
export const TOPOLOGY_REGION_LABEL = "topology.kubernetes.io/region";
export const ARCH_LABEL = "kubernetes.io/arch";
export const OS_LABEL = "kubernetes.io/os";
export const HOSTNAME_LABEL = "kubernetes.io/hostname";
export const DO_NOT_DISRUPT_ANNOTATION = "karpenter.sh/do-not-disrupt";
export const DISRUPTED_TAINT = "karpenter.sh/disrupted";
export const UNREGISTERED_TAINT = "karpenter.sh/unregistered";
export const TERMINATION_FINALIZER = "karpenter.sh/termination";

export type CapacityType = "spot" | "on-demand" | "reserved";
