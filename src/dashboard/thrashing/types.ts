// The option and signal shapes of thrashing detection, in their own module so that detect.ts
// (which calls the advice) and advice.ts (which reads them) import them one way, without a circle.

export interface ThrashingOptions {
  /** Look-back window ending at `now`. */
  windowMs: number;
  /** A node removed younger than this is short-lived. */
  shortLifetimeMs: number;
  /**
   * A launch in the same pool this long after a removal (or `relaunchEarlyMs` before it) is its
   * relaunch: the capacity Karpenter removed was needed again.
   */
  replacementWithinMs: number;
  /** How early before a removal's recorded time a launch still counts as its relaunch. */
  relaunchEarlyMs: number;
  /** Node count is "flat" when |net change| ≤ max(1, flatTolerance × average nodes). */
  flatTolerance: number;
  /** Launches + removals in the window needed before a flat count means anything. */
  minChurnForFlat: number;
  /** Planned replacements (rolling updates, expiry): reported, never scored as churn. */
  plannedReasons: readonly string[];
  /**
   * Removals Karpenter did not choose to save money (spot interruptions, repairs, deletions):
   * reported, never scored — replacing them is provisioning doing its job.
   */
  involuntaryReasons: readonly string[];
  /**
   * The cluster's Karpenter, when detected: advice names only settings that release accepts
   * (src/karpenter/compat.ts `karpenterAccepts`).
   */
  karpenterVersion?: string;
}

export interface ThrashingSignals {
  launched: number;
  removed: number;
  /** Removals Karpenter chose (consolidation) of nodes younger than the short lifetime. */
  shortLived: number;
  /** Removals followed by a launch in the pool within the relaunch window (any reason). */
  replacements: number;
  sameTypeReplacements: number;
  /**
   * Churn cycles: short-lived nodes Karpenter removed by its own choice whose capacity the pool
   * launched again within the relaunch window — consolidation undone by provisioning.
   */
  cycles: number;
  /** Cycles per node of the pool's average size over the window. */
  turnover: number;
  /** Cycles / launches in the window: how much of the pool's provisioning only undid a removal. */
  relaunchShare: number;
  /** Disruptions in the window (all reasons) and those Karpenter chose (not planned or involuntary). */
  disruptions: number;
  voluntaryDisruptions: number;
  /** Removals in the window by reason (all of them, planned and involuntary included). */
  reasons: Record<string, number>;
  /** The cycles by reason: what drives the churn (the advice reads these). */
  cycleReasons: Record<string, number>;
  /** Node count change over the window. */
  netChange: number;
  /** The pool's average node count over the window (at least 1). */
  averageNodes: number;
  flat: boolean;
  /** Longest chain of cycles: a relaunched node churned again … (aws#7146 saw 2–3 generations). */
  maxGeneration: number;
  /** Median lifetime of the cycles' nodes. */
  medianLifetimeMs?: number;
  /** Churned nodes (evidence) that were Wave's own warm nodes, released unused. */
  warmupCaused: number;
}
