// Labels and annotations the spot-placement webhook reads and writes on pods.
import { CAPACITY_TYPE_LABEL } from "../objects/karpenter.ts";
import type { Pod } from "../objects/kube.ts";

export const CAPACITY_TYPE_KEY = CAPACITY_TYPE_LABEL;

/** Which capacity type Wave assigned the pod: "on-demand" | "spot". */
export const ASSIGNMENT_LABEL = "wave.sh/capacity-assignment";
/** Unique token of the pod's slot in its workload's ledger. */
export const SLOT_LABEL = "wave.sh/spot-slot";
/** The ledger (one per workload) the slot belongs to; lets reconciliation list the workload's pods. */
export const LEDGER_LABEL = "wave.sh/spot-ledger";
/** Opt-out: pods labelled `wave.sh/spot-placement=disabled` are never sent to the webhook. */
export const OPT_OUT_LABEL = "wave.sh/spot-placement";
export const OPT_OUT_VALUE = "disabled";
/** Why Wave left a pod of a managed workload unchanged. */
export const NOTE_ANNOTATION = "wave.sh/spot-placement-note";
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
        e.key === CAPACITY_TYPE_KEY &&
        e.operator === "In" &&
        (e.values ?? []).length > 0 &&
        (e.values ?? []).every((v) => v === SPOT),
    ),
  );
