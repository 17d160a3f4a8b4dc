// Which NodePool a pod belongs to, for sizing that pool's warm capacity. In order:
//   1. the pool label of the node it is bound to (karpenter.sh/nodepool);
//   2. its nodeSelector or required node affinity on karpenter.sh/nodepool;
//   3. the pools whose template (labels + requirements) its constraints can be satisfied by and
//      whose taints it tolerates — what Karpenter itself would consider.
// Several candidates resolve like Karpenter: highest spec.weight, then name.
import type { Node, NodeSelectorRequirement, Pod } from "../objects/kube.ts";
import {
  ARCH_LABEL,
  HOSTNAME_LABEL,
  OS_LABEL,
  CAPACITY_TYPE_LABEL,
  INSTANCE_TYPE_LABEL,
  NODE_POOL_LABEL,
  TOPOLOGY_REGION_LABEL,
  TOPOLOGY_ZONE_LABEL,
  type NodePool,
} from "../objects/karpenter.ts";
import { untoleratedTaints } from "./scheduling.ts";
import { numericHolds } from "./requirements.ts";

/**
 * Labels that come from the instance type or the cloud rather than from the NodePool, so a
 * pool without a requirement on them can still satisfy any value.
 */
const WELL_KNOWN = new Set<string>([
  INSTANCE_TYPE_LABEL,
  TOPOLOGY_ZONE_LABEL,
  TOPOLOGY_REGION_LABEL,
  ARCH_LABEL,
  CAPACITY_TYPE_LABEL,
  OS_LABEL,
  HOSTNAME_LABEL,
  "node.kubernetes.io/windows-build",
  "karpenter.k8s.aws/instance-family",
  "karpenter.k8s.aws/instance-size",
  "karpenter.k8s.aws/instance-category",
  "karpenter.k8s.aws/instance-generation",
  "karpenter.k8s.aws/instance-cpu",
  "karpenter.k8s.aws/instance-memory",
  "karpenter.kwok.sh/instance-family",
  "karpenter.kwok.sh/instance-size",
  "karpenter.kwok.sh/instance-cpu",
  "karpenter.kwok.sh/instance-memory",
]);

/** The pool's constraints per label key (template labels become `In [value]`). */
function poolRequirements(pool: NodePool): Map<string, NodeSelectorRequirement[]> {
  const out = new Map<string, NodeSelectorRequirement[]>();
  const add = (r: NodeSelectorRequirement): void => {
    const list = out.get(r.key) ?? [];
    list.push(r);
    out.set(r.key, list);
  };
  const name = pool.metadata.name ?? "";
  add({ key: NODE_POOL_LABEL, operator: "In", values: [name] });
  for (const [k, v] of Object.entries(pool.spec.template.metadata?.labels ?? {})) {
    add({ key: k, operator: "In", values: [v] });
  }
  for (const r of pool.spec.template.spec.requirements ?? []) add(r);
  return out;
}

/** Whether a pod requirement and a pool requirement on the same key can both hold. */
function compatible(pod: NodeSelectorRequirement, pool: NodeSelectorRequirement): boolean {
  const pv = pod.values ?? [];
  const qv = pool.values ?? [];
  const numeric = (vals: string[], r: NodeSelectorRequirement): boolean =>
    r.operator === "Gt" || r.operator === "Lt" || r.operator === "Gte" || r.operator === "Lte"
      ? vals.some((v) => numericHolds(r.operator as "Gt", Number.parseInt(v, 10), r.values?.[0]))
      : false;
  switch (pool.operator) {
    case "In":
      switch (pod.operator) {
        case "In":
          return pv.some((v) => qv.includes(v));
        case "NotIn":
          return qv.some((v) => !pv.includes(v));
        case "Exists":
          return true;
        case "DoesNotExist":
          return false;
        case "Gt":
        case "Lt":
        case "Gte":
        case "Lte":
          return numeric(qv, pod);
      }
      break;
    case "DoesNotExist":
      return pod.operator === "NotIn" || pod.operator === "DoesNotExist";
    case "NotIn":
      if (pod.operator === "In") return pv.some((v) => !qv.includes(v));
      return true;
    case "Exists":
      return pod.operator !== "DoesNotExist";
    case "Gt":
    case "Lt":
    case "Gte":
    case "Lte":
      if (pod.operator === "In") return numeric(pv, pool);
      return pod.operator !== "DoesNotExist";
  }
  return true;
}

function requirementFits(
  req: NodeSelectorRequirement,
  reqs: Map<string, NodeSelectorRequirement[]>,
): boolean {
  const onKey = reqs.get(req.key);
  if (onKey === undefined) {
    // Unconstrained well-known labels can take any value; custom labels the pool never sets
    // do not exist on its nodes.
    if (WELL_KNOWN.has(req.key)) return true;
    return req.operator === "NotIn" || req.operator === "DoesNotExist";
  }
  return onKey.every((q) => compatible(req, q));
}

/** Whether the pool could launch a node this pod schedules on (labels, requirements, taints). */
export function poolCanHost(pod: Pod, pool: NodePool): boolean {
  const reqs = poolRequirements(pool);
  for (const [k, v] of Object.entries(pod.spec.nodeSelector ?? {})) {
    if (!requirementFits({ key: k, operator: "In", values: [v] }, reqs)) return false;
  }
  const terms =
    pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms !== undefined && terms.length > 0) {
    const ok = terms.some((t) => (t.matchExpressions ?? []).every((r) => requirementFits(r, reqs)));
    if (!ok) return false;
  }
  return untoleratedTaints(pool.spec.template.spec.taints, pod.spec.tolerations).length === 0;
}

/** Pool names the pod pins through nodeSelector / required affinity on karpenter.sh/nodepool. */
export function pinnedPools(pod: Pod): string[] | undefined {
  const sel = pod.spec.nodeSelector?.[NODE_POOL_LABEL];
  if (sel !== undefined) return [sel];
  const terms =
    pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms === undefined) return undefined;
  const names = new Set<string>();
  for (const t of terms) {
    const r = (t.matchExpressions ?? []).find((e) => e.key === NODE_POOL_LABEL && e.operator === "In");
    // A term that does not pin a pool leaves the pod free to go elsewhere.
    if (r === undefined) return undefined;
    for (const v of r.values ?? []) names.add(v);
  }
  return names.size > 0 ? [...names] : undefined;
}

function byWeight(a: NodePool, b: NodePool): number {
  return (
    (b.spec.weight ?? 0) - (a.spec.weight ?? 0) ||
    (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "")
  );
}

/** The pool a pod is tied to, or undefined when none could host it. */
export function poolOfPod(
  pod: Pod,
  pools: readonly NodePool[],
  nodesByName: ReadonlyMap<string, Node>,
): string | undefined {
  const nodeName = pod.spec.nodeName;
  if (nodeName !== undefined && nodeName !== "") {
    // A bound pod belongs to its node's pool, or to none (a node Karpenter does not manage).
    return nodesByName.get(nodeName)?.metadata.labels?.[NODE_POOL_LABEL];
  }
  const pinned = pinnedPools(pod);
  const candidates = pools
    .filter((p) => pinned === undefined || pinned.includes(p.metadata.name ?? ""))
    .filter((p) => poolCanHost(pod, p))
    .sort(byWeight);
  return candidates[0]?.metadata.name;
}

/** The pod's own node requirements: its nodeSelector, and the first term of its required node affinity. */
export function podNodeRequirements(pod: Pod): NodeSelectorRequirement[] {
  const out: NodeSelectorRequirement[] = Object.entries(pod.spec.nodeSelector ?? {}).map(([key, v]) => ({
    key,
    operator: "In",
    values: [v],
  }));
  const terms =
    pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  for (const r of terms?.[0]?.matchExpressions ?? []) out.push(r);
  return out;
}

/** Whether the pod's constraint on `key` is what keeps the pool from hosting it. */
export function poolRejectsKey(pod: Pod, pool: NodePool, key: string): boolean {
  const reqs = poolRequirements(pool);
  const mine = [
    ...Object.entries(pod.spec.nodeSelector ?? {})
      .filter(([k]) => k === key)
      .map(([k, v]): NodeSelectorRequirement => ({ key: k, operator: "In", values: [v] })),
  ];
  const terms =
    pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (mine.some((r) => !requirementFits(r, reqs))) return true;
  // With affinity terms, the key fails the pool when it fails every term that constrains it.
  const onKey = (terms ?? []).filter((t) => (t.matchExpressions ?? []).some((r) => r.key === key));
  return (
    onKey.length > 0 &&
    onKey.length === (terms ?? []).length &&
    onKey.every((t) =>
      (t.matchExpressions ?? []).filter((r) => r.key === key).some((r) => !requirementFits(r, reqs)),
    )
  );
}
