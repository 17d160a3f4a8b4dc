// The labels and annotations through which the warmup controller keeps ALL of its state in
// Kubernetes, so a restarted (or newly elected) controller resumes exactly where the last stopped.
export const W = {
  /** On warmup (pause) pods. */
  warmupLabel: "wave.sh/warmup",
  /** On pre-pull pods. */
  prepullLabel: "wave.sh/prepull",
  /** Pool a warmup / pre-pull pod works for. */
  poolLabel: "wave.sh/nodepool",
  /** Short hash of the pre-pulled image (label values cannot hold image references). */
  imageHashLabel: "wave.sh/image-hash",
  managedByLabel: "app.kubernetes.io/managed-by",
  managedByValue: "wave",
  /** RFC 3339 creation time, on warmup pods. */
  createdAt: "wave.sh/created-at",
  /** RFC 3339 time after which the warmup (or pre-pull) counts as a miss and is removed. */
  deadline: "wave.sh/deadline",
  /** Full image reference, on pre-pull pods. */
  image: "wave.sh/image",
  /**
   * Set beside karpenter.sh/do-not-disrupt on Nodes/NodeClaims when Wave put it there; Wave only
   * ever removes a do-not-disrupt it owns, never a user's.
   */
  doNotDisruptOwner: "wave.sh/do-not-disrupt-owner",
  doNotDisruptOwnerValue: "warmup",
  /**
   * Beside the owner mark: the namespace of the Wave instance that set it. Two installs on one
   * cluster (or one install and a test) each release only their own marks.
   */
  doNotDisruptNamespace: "wave.sh/do-not-disrupt-namespace",
  /** On the NodePool: when Wave last started a warmup for it (drives the cooldown across restarts). */
  lastWarmupAt: "wave.sh/last-warmup-at",
  /** Beside it: the namespace of the Wave instance that wrote it (`wave cleanup` removes only its own). */
  lastWarmupNamespace: "wave.sh/last-warmup-namespace",
  /**
   * On the NodePool: warm nodes in a row that expired unused (reset by a hit). Grows the pool's
   * cooldown so Wave does not keep launching nodes Karpenter consolidates again (src/warmup/backoff.ts).
   */
  warmupUnusedStreak: "wave.sh/warmup-unused-streak",
  priorityClassName: "wave-warmup",
  /** On a warm Node: hashes of the images whose pre-pull finished (pulled or given up). */
  prepulled: "wave.sh/prepulled",
  /**
   * Events of the spot repair (ADR 0006): this reporting component and reason; the message starts
   * with the workload key ("namespace/Kind/name: ..."), the involved object is the pod acted on.
   */
  repairComponent: "wave-spot-repair",
  repairReason: "WaveSpotRepair",
} as const;

/** The kubelet's mark on a static pod's mirror in the apiserver. */
export const MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror";

export const isWarmupPod = (p: { metadata: { labels?: Record<string, string> } }): boolean =>
  p.metadata.labels?.[W.warmupLabel] === "true";
export const isPrepullPod = (p: { metadata: { labels?: Record<string, string> } }): boolean =>
  p.metadata.labels?.[W.prepullLabel] === "true";
/** Pods Wave created itself; they never count as workload. */
export const isWavePod = (p: { metadata: { labels?: Record<string, string> } }): boolean =>
  isWarmupPod(p) || isPrepullPod(p);

/** Parses an RFC 3339 annotation into epoch ms, or undefined when absent/garbled. */
export function parseTime(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : t;
}
