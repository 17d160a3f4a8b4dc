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

/** Well-known Karpenter labels, annotations and taints. */
export const K = {
  nodePoolLabel: "karpenter.sh/nodepool",
  capacityTypeLabel: "karpenter.sh/capacity-type",
  initializedLabel: "karpenter.sh/initialized",
  registeredLabel: "karpenter.sh/registered",
  instanceTypeLabel: "node.kubernetes.io/instance-type",
  zoneLabel: "topology.kubernetes.io/zone",
  regionLabel: "topology.kubernetes.io/region",
  archLabel: "kubernetes.io/arch",
  doNotDisrupt: "karpenter.sh/do-not-disrupt",
  disruptedTaint: "karpenter.sh/disrupted",
  unregisteredTaint: "karpenter.sh/unregistered",
  terminationFinalizer: "karpenter.sh/termination",
} as const;

export type CapacityType = "spot" | "on-demand" | "reserved";
