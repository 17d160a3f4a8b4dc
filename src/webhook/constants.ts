// Kubernetes names and capacity values the spot-placement webhook reads and writes on pods (its
// own wave.sh labels are in src/objects/wave.ts).
import { CAPACITY_TYPE_LABEL } from "../objects/karpenter.ts";
import type { Pod } from "../objects/kube.ts";

/** ReplicaSet controller ranks pods by this on scale-down: lower cost goes first. */
export const DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost";
/** Deployment controller's label: the ReplicaSet name is `<deployment>-<hash>`. */
export const POD_TEMPLATE_HASH_LABEL = "pod-template-hash";

export const ON_DEMAND = "on-demand";
export const SPOT = "spot";
export type Capacity = typeof ON_DEMAND | typeof SPOT;
/**
 * The revision a pod's slot counts under ("" = one count for every revision). A Deployment's
 * rollout surges: the new ReplicaSet's pods are admitted while the old pods still hold the slots,
 * so each `pod-template-hash` gets its own N. A StatefulSet replaces its pods in place — each is
 * deleted before it is recreated with the same name — so its `controller-revision-hash` is not
 * counted apart: the recreated pod takes the slot its predecessor freed and keeps its capacity
 * type, the on-demand pods stay on the lowest ordinals (which scale-down keeps), and a partitioned
 * rollout holds exactly N (docs/spot-placement.md, "Through a workload's life").
 */
export function revisionOf(pod: Pod): string {
  const owner = (pod.metadata.ownerReferences ?? []).find((r) => r.controller === true);
  if (owner?.kind === "StatefulSet") return "";
  return pod.metadata.labels?.[POD_TEMPLATE_HASH_LABEL] ?? "";
}

/** Whether the pod must run on spot: a required node-affinity term with capacity-type In [spot]. */
export const requiresSpot = (p: Pod): boolean =>
  (
    p.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []
  ).some((t) =>
    (t.matchExpressions ?? []).some(
      (e) =>
        e.key === CAPACITY_TYPE_LABEL &&
        e.operator === "In" &&
        (e.values ?? []).length > 0 &&
        (e.values ?? []).every((v) => v === SPOT),
    ),
  );
