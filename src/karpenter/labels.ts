// Reading Karpenter's well-known labels off Nodes and NodeClaims (both carry the same labels:
// Karpenter copies the NodeClaim's labels onto its Node at registration).
import type { KubeObject } from "../objects/kube.ts";
import {
  ARCH_LABEL,
  CAPACITY_TYPE_LABEL,
  DO_NOT_DISRUPT_ANNOTATION,
  INSTANCE_TYPE_LABEL,
  NODE_POOL_LABEL,
  TOPOLOGY_REGION_LABEL,
  TOPOLOGY_ZONE_LABEL,
  type CapacityType,
} from "../objects/karpenter.ts";

/** Labels the KWOK provider (karpenter.kwok.sh) and KWOK itself put on fake nodes. */
export const KWOK = {
  instanceSizeLabel: "karpenter.kwok.sh/instance-size",
  instanceFamilyLabel: "karpenter.kwok.sh/instance-family",
  instanceCpuLabel: "karpenter.kwok.sh/instance-cpu",
  instanceMemoryLabel: "karpenter.kwok.sh/instance-memory",
  /** Set by the KWOK provider on every node it creates (label and annotation), value "fake". */
  nodeLabel: "kwok.x-k8s.io/node",
  providerIDPrefix: "kwok://",
} as const;

/** eks-node-viewer's price label; the KWOK provider sets it to the offering's hourly price. */
export const NODE_VIEWER_PRICE_LABEL = "eks-node-viewer/instance-price";

const CAPACITY_TYPES: ReadonlySet<string> = new Set<CapacityType>(["spot", "on-demand", "reserved"]);

export function labelOf(obj: KubeObject, key: string): string | undefined {
  return obj.metadata.labels?.[key];
}

export function isCapacityType(v: string | undefined): v is CapacityType {
  return v !== undefined && CAPACITY_TYPES.has(v);
}

/** spot | on-demand | reserved, or undefined when absent or unrecognised. */
export function capacityTypeOf(obj: KubeObject): CapacityType | undefined {
  const v = labelOf(obj, CAPACITY_TYPE_LABEL);
  return isCapacityType(v) ? v : undefined;
}

/**
 * Where a pod runs, as the spot placement figures count it (the Spot page and
 * `wave_spot_placement_pods`): "pending" while it is bound to no node; else its node's
 * capacity-type label — a node without one (not Karpenter's, or not yet known) counts as on-demand.
 */
export function podPlacement(nodeName: string | undefined, node: KubeObject | undefined): string {
  if (nodeName === undefined || nodeName === "") return "pending";
  return (node && labelOf(node, CAPACITY_TYPE_LABEL)) || "on-demand";
}

export function nodePoolOf(obj: KubeObject): string | undefined {
  return labelOf(obj, NODE_POOL_LABEL) || undefined;
}

export function instanceTypeOf(obj: KubeObject): string | undefined {
  // The deprecated beta label is still set by some kubelets; Karpenter normalises it the same way.
  return labelOf(obj, INSTANCE_TYPE_LABEL) ?? labelOf(obj, "beta.kubernetes.io/instance-type");
}

export function zoneOf(obj: KubeObject): string | undefined {
  return labelOf(obj, TOPOLOGY_ZONE_LABEL) ?? labelOf(obj, "failure-domain.beta.kubernetes.io/zone");
}

export function regionOf(obj: KubeObject): string | undefined {
  return labelOf(obj, TOPOLOGY_REGION_LABEL) ?? labelOf(obj, "failure-domain.beta.kubernetes.io/region");
}

export function archOf(obj: KubeObject): string | undefined {
  return labelOf(obj, ARCH_LABEL);
}

/** A Node or NodeClaim Karpenter owns: it carries the karpenter.sh/nodepool label. */
export function isKarpenterManaged(obj: KubeObject): boolean {
  return nodePoolOf(obj) !== undefined;
}

export function isDoNotDisrupt(obj: KubeObject): boolean {
  return obj.metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION] === "true";
}

/** The labels a consumer needs to attribute a node to a pool, price and placement. */
export interface NodeLabels {
  nodePool?: string;
  capacityType?: CapacityType;
  instanceType?: string;
  zone?: string;
  arch?: string;
}

export function nodeLabelsOf(obj: KubeObject): NodeLabels {
  const out: NodeLabels = {};
  const pool = nodePoolOf(obj);
  if (pool !== undefined) out.nodePool = pool;
  const ct = capacityTypeOf(obj);
  if (ct !== undefined) out.capacityType = ct;
  const it = instanceTypeOf(obj);
  if (it !== undefined) out.instanceType = it;
  const zone = zoneOf(obj);
  if (zone !== undefined) out.zone = zone;
  const arch = archOf(obj);
  if (arch !== undefined) out.arch = arch;
  return out;
}
