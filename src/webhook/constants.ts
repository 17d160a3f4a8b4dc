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
/** StatefulSet controller's label: the revision of the pod's template. */
export const CONTROLLER_REVISION_LABEL = "controller-revision-hash";

/** The pod's template revision ("" when it has none): what a rollout changes. */
export function revisionOf(pod: Pod): string {
  const labels = pod.metadata.labels ?? {};
  return labels[CONTROLLER_REVISION_LABEL] ?? labels[POD_TEMPLATE_HASH_LABEL] ?? "";
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
