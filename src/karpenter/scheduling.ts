// The kube-scheduler's node filters Wave needs, as pure predicates: taints/tolerations,
// nodeSelector, required node affinity. Same semantics as the upstream plugins
// (TaintToleration, NodeAffinity); preferred terms are ignored because they never block.
import type { NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration } from "../objects/kube.ts";
import { numericHolds } from "./requirements.ts";

/** Whether one toleration tolerates one taint (k8s.io/api/core/v1 ToleratesTaint). */
export function toleratesTaint(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key === undefined || t.key === "") {
    // An empty key with Exists tolerates everything.
    return t.operator === "Exists";
  }
  if (t.key !== taint.key) return false;
  if (t.operator === "Exists") return true;
  return (t.value ?? "") === (taint.value ?? "");
}

/** Taints that block scheduling (NoSchedule, NoExecute) and that no toleration covers. */
export function untoleratedTaints(
  taints: readonly Taint[] | undefined,
  tolerations: readonly Toleration[] | undefined,
): Taint[] {
  return (taints ?? []).filter(
    (taint) =>
      taint.effect !== "PreferNoSchedule" && !(tolerations ?? []).some((t) => toleratesTaint(t, taint)),
  );
}

/** A node selector requirement against a label set (Gt/Lt compare integers). */
export function matchesRequirement(
  req: NodeSelectorRequirement,
  labels: Readonly<Record<string, string>>,
): boolean {
  const has = Object.hasOwn(labels, req.key);
  const value = labels[req.key];
  const values = req.values ?? [];
  switch (req.operator) {
    case "In":
      return has && values.includes(value ?? "");
    case "NotIn":
      return !has || !values.includes(value ?? "");
    case "Exists":
      return has;
    case "DoesNotExist":
      return !has;
    case "Gt":
    case "Lt":
    case "Gte":
    case "Lte":
      if (!has || values.length !== 1) return false;
      return numericHolds(req.operator, Number.parseInt(value ?? "", 10), values[0]);
    default:
      return false;
  }
}

/** One term: every matchExpression and matchField (only metadata.name is defined) holds. */
export function matchesTerm(
  term: NodeSelectorTerm,
  labels: Readonly<Record<string, string>>,
  nodeName: string,
): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  // An empty term matches nothing (upstream semantics).
  if (exprs.length === 0 && fields.length === 0) return false;
  return (
    exprs.every((r) => matchesRequirement(r, labels)) &&
    fields.every((r) => r.key === "metadata.name" && matchesRequirement({ ...r, key: "n" }, { n: nodeName }))
  );
}

/** nodeSelector AND required node affinity (terms ORed) of a pod against a node's labels. */
export function podMatchesNodeLabels(
  pod: Pod,
  labels: Readonly<Record<string, string>>,
  nodeName: string,
): boolean {
  for (const [k, v] of Object.entries(pod.spec.nodeSelector ?? {})) {
    if (labels[k] !== v) return false;
  }
  const required = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required === undefined) return true;
  return required.nodeSelectorTerms.some((term) => matchesTerm(term, labels, nodeName));
}
