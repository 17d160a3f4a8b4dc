// What a NodePool allows (requirements + template labels, as Karpenter layers them) and how its
// usage compares with spec.limits.
import type { NodeSelectorRequirement, ResourceList } from "../objects/kube.ts";
import { parseResources, type Resources } from "./resources.ts";
import {
  CAPACITY_TYPE_LABEL,
  INSTANCE_TYPE_LABEL,
  TOPOLOGY_ZONE_LABEL,
  type CapacityType,
  type NodePool,
} from "../objects/karpenter.ts";

/**
 * The pool's effective requirements: spec.template.spec.requirements plus each template label as
 * `key In [value]` (Karpenter's NodeClaimTemplate does the same).
 */
export function nodePoolRequirements(pool: NodePool): NodeSelectorRequirement[] {
  const reqs: NodeSelectorRequirement[] = (pool.spec.template.spec.requirements ?? []).map((r) => ({
    key: r.key,
    operator: r.operator,
    ...(r.values ? { values: r.values } : {}),
  }));
  for (const [key, value] of Object.entries(pool.spec.template.metadata?.labels ?? {})) {
    reqs.push({ key, operator: "In", values: [value] });
  }
  return reqs;
}

function satisfies(r: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case "In":
      return value !== undefined && values.includes(value);
    case "NotIn":
      return value === undefined || !values.includes(value);
    case "Exists":
      return value !== undefined;
    case "DoesNotExist":
      return value === undefined;
    case "Gt":
    case "Lt":
    case "Gte":
    case "Lte":
      // Integer comparison, as for node affinity; a non-integer value never matches.
      if (value === undefined || !/^-?\d+$/.test(value)) return false;
      return numericHolds(r.operator, Number.parseInt(value, 10), values[0]);
    default:
      // An operator a newer Karpenter added and Wave does not know: it cannot rule a value out.
      return true;
  }
}

/** `value <op> bound` for the numeric operators (Gte/Lte: Karpenter v1.15+); a bad bound never holds. */
export function numericHolds(
  op: "Gt" | "Lt" | "Gte" | "Lte",
  value: number,
  boundText: string | undefined,
): boolean {
  const bound = Number.parseInt(boundText ?? "", 10);
  if (Number.isNaN(value) || Number.isNaN(bound)) return false;
  switch (op) {
    case "Gt":
      return value > bound;
    case "Lt":
      return value < bound;
    case "Gte":
      return value >= bound;
    case "Lte":
      return value <= bound;
  }
}

/**
 * Whether a node labelled `key=value` (value undefined = label absent) may come from these
 * requirements. Every requirement on `key` must hold; a key without requirements is unconstrained.
 */
export function requirementsAllow(
  reqs: readonly NodeSelectorRequirement[],
  key: string,
  value: string | undefined,
): boolean {
  return reqs.every((r) => r.key !== key || satisfies(r, value));
}

/** Whether every given label would be allowed (labels not mentioned are unconstrained). */
export function requirementsAllowLabels(
  reqs: readonly NodeSelectorRequirement[],
  labels: Record<string, string | undefined>,
): boolean {
  return Object.entries(labels).every(([k, v]) => requirementsAllow(reqs, k, v));
}

export function allowsCapacityType(pool: NodePool, ct: CapacityType): boolean {
  return requirementsAllow(nodePoolRequirements(pool), CAPACITY_TYPE_LABEL, ct);
}

export function allowsInstanceType(pool: NodePool, instanceType: string): boolean {
  return requirementsAllow(nodePoolRequirements(pool), INSTANCE_TYPE_LABEL, instanceType);
}

export function allowsZone(pool: NodePool, zone: string): boolean {
  return requirementsAllow(nodePoolRequirements(pool), TOPOLOGY_ZONE_LABEL, zone);
}

/** Which of the given capacity types the pool allows (default: all three). */
export function allowedCapacityTypes(
  pool: NodePool,
  candidates: readonly CapacityType[] = ["spot", "on-demand", "reserved"],
): CapacityType[] {
  const reqs = nodePoolRequirements(pool);
  return candidates.filter((ct) => requirementsAllow(reqs, CAPACITY_TYPE_LABEL, ct));
}

export interface LimitStatus {
  resource: string;
  limit: number;
  usage: number;
  /** limit − usage; negative when over the limit. */
  remaining: number;
  /** usage / limit (Infinity when the limit is 0 and something is used). */
  ratio: number;
  exceeded: boolean;
}

/**
 * Each limited resource against usage (canonical units: cpu millicores, memory bytes). Karpenter
 * stops launching when usage exceeds a limit (Limits.ExceededBy: usage > limit).
 */
export function limitStatus(limits: ResourceList | undefined, usage: Resources): LimitStatus[] {
  const parsed = parseResources(limits);
  return Object.entries(parsed)
    .map(([resource, limit]) => {
      const used = usage[resource] ?? 0;
      const ratio = limit === 0 ? (used === 0 ? 0 : Infinity) : used / limit;
      return { resource, limit, usage: used, remaining: limit - used, ratio, exceeded: used > limit };
    })
    .sort((a, b) => a.resource.localeCompare(b.resource));
}

/** Whether adding `extra` to `usage` would go over any of the pool's limits. */
export function wouldExceedLimits(
  limits: ResourceList | undefined,
  usage: Resources,
  extra: Resources,
): boolean {
  const parsed = parseResources(limits);
  for (const [resource, limit] of Object.entries(parsed)) {
    if ((usage[resource] ?? 0) + (extra[resource] ?? 0) > limit) return true;
  }
  return false;
}
