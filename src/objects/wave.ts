// The labels and annotations through which the warmup controller keeps ALL of its state in
// Kubernetes, so a restarted (or newly elected) controller resumes exactly where the last stopped.
/** On warmup (pause) pods. */
export const WARMUP_LABEL = "wave.sh/warmup";
/** On pre-pull pods. */
export const PREPULL_LABEL = "wave.sh/prepull";
/** Pool a warmup / pre-pull pod works for. */
export const WARMUP_POOL_LABEL = "wave.sh/nodepool";
/** Short hash of the pre-pulled image (label values cannot hold image references). */
export const PREPULL_IMAGE_HASH_LABEL = "wave.sh/image-hash";
/** Kubernetes' recommended label, on the objects the warmup controller creates. */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
/** Value of MANAGED_BY_LABEL on Wave's objects. */
export const MANAGED_BY_VALUE = "wave";
/** RFC 3339 creation time, on warmup pods. */
export const CREATED_AT_ANNOTATION = "wave.sh/created-at";
/** RFC 3339 time after which the warmup (or pre-pull) counts as a miss and is removed. */
export const DEADLINE_ANNOTATION = "wave.sh/deadline";
/** Full image reference, on pre-pull pods. */
export const PREPULL_IMAGE_ANNOTATION = "wave.sh/image";
/**
 * Set beside karpenter.sh/do-not-disrupt on Nodes/NodeClaims when Wave put it there; Wave only
 * ever removes a do-not-disrupt it owns, never a user's.
 */
export const DO_NOT_DISRUPT_OWNER_ANNOTATION = "wave.sh/do-not-disrupt-owner";
/** Value of DO_NOT_DISRUPT_OWNER_ANNOTATION: the warmup controller set the mark. */
export const DO_NOT_DISRUPT_OWNER_VALUE = "warmup";
/**
 * Beside the owner mark: the namespace of the Wave instance that set it. Two installs on one
 * cluster (or one install and a test) each release only their own marks.
 */
export const DO_NOT_DISRUPT_NAMESPACE_ANNOTATION = "wave.sh/do-not-disrupt-namespace";
/** On the NodePool: when Wave last started a warmup for it (drives the cooldown across restarts). */
export const LAST_WARMUP_AT_ANNOTATION = "wave.sh/last-warmup-at";
/** Beside it: the namespace of the Wave instance that wrote it (`wave cleanup` removes only its own). */
export const LAST_WARMUP_NAMESPACE_ANNOTATION = "wave.sh/last-warmup-namespace";
/**
 * On the NodePool: warm nodes in a row that expired unused (reset by a hit). Grows the pool's
 * cooldown so Wave does not keep launching nodes Karpenter consolidates again (src/warmup/backoff.ts).
 */
export const WARMUP_UNUSED_STREAK_ANNOTATION = "wave.sh/warmup-unused-streak";
/** Name of the PriorityClass of warmup pods. */
export const WARMUP_PRIORITY_CLASS_NAME = "wave-warmup";
/** On a warm Node: hashes of the images whose pre-pull finished (pulled or given up). */
export const PREPULLED_ANNOTATION = "wave.sh/prepulled";
/** Spot placement: which capacity type Wave assigned the pod, "on-demand" | "spot". */
export const ASSIGNMENT_LABEL = "wave.sh/capacity-assignment";
/** Spot placement: unique token of the pod's slot in its workload's ledger. */
export const SLOT_LABEL = "wave.sh/spot-slot";
/** The ledger (one per workload) a slot belongs to; lets reconciliation list the workload's pods. */
export const LEDGER_LABEL = "wave.sh/spot-ledger";
/** Opt-out: pods labelled `wave.sh/spot-placement=disabled` are never sent to the webhook. */
export const OPT_OUT_LABEL = "wave.sh/spot-placement";
export const OPT_OUT_VALUE = "disabled";
/** Why Wave left a pod of a managed workload unchanged. */
export const NOTE_ANNOTATION = "wave.sh/spot-placement-note";
/**
 * Events of the spot repair (ADR 0006): this reporting component and reason; the message starts
 * with the workload key ("namespace/Kind/name: ..."), the involved object is the pod acted on.
 */
export const SPOT_REPAIR_EVENT_COMPONENT = "wave-spot-repair";
/** Reason of the spot repair's Events, beside SPOT_REPAIR_EVENT_COMPONENT. */
export const SPOT_REPAIR_EVENT_REASON = "WaveSpotRepair";
/**
 * Reason of the webhook's late-answer Events (same component): the involved object is the
 * workload, `count` how many of its admissions were answered after the fallback went out.
 */
export const SPOT_LATE_ANSWER_EVENT_REASON = "WaveSpotLateAnswer";

/** The kubelet's mark on a static pod's mirror in the apiserver. */
export const MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror";

export const isWarmupPod = (p: { metadata: { labels?: Record<string, string> } }): boolean =>
  p.metadata.labels?.[WARMUP_LABEL] === "true";
export const isPrepullPod = (p: { metadata: { labels?: Record<string, string> } }): boolean =>
  p.metadata.labels?.[PREPULL_LABEL] === "true";
/** Pods Wave created itself; they never count as workload. */
export const isWavePod = (p: { metadata: { labels?: Record<string, string> } }): boolean =>
  isWarmupPod(p) || isPrepullPod(p);

/** Parses an RFC 3339 annotation into epoch ms, or undefined when absent/garbled. */
export function parseTime(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : t;
}

/**
 * On a NodePool: the fix Wave applied to it (JSON `{at, source, title, patch}`), so every advice
 * path keeps the fields it set instead of proposing them back (docs/consolidation.md, "One advisor").
 */
export const APPLIED_FIX_ANNOTATION = "wave.sh/applied-fix";
