// Concrete advice for a thrashing NodePool, chosen from the evidence and the pool's disruption
// spec. Each item carries a JSON merge patch for the NodePool when one applies.
import { KARPENTER_SETTING_SINCE, karpenterAccepts } from "../../karpenter/compat.ts";
import { parseDuration } from "../../karpenter/duration.ts";
import type { NodePool } from "../../objects/karpenter.ts";
import type { ThrashingOptions, ThrashingSignals } from "./types.ts";

export type AdviceId =
  | "raise-consolidate-after"
  | "balanced-policy"
  | "when-empty-policy"
  | "do-not-disrupt"
  | "underutilized-budget"
  | "spot-interruptions"
  | "fix-spec"
  | "warmup-churn";

export interface Advice {
  id: AdviceId;
  title: string;
  detail: string;
  /** JSON merge patch for the NodePool (kubectl patch --type merge), when the fix is a spec change. */
  patch?: Record<string, unknown>;
}

const MIN = 60_000;

/** The reason most of the churn cycles had (planned and involuntary removals are never cycles). */
function dominantReason(signals: ThrashingSignals): string | undefined {
  let best: [string, number] | undefined;
  for (const [r, n] of Object.entries(signals.cycleReasons)) {
    if (!best || n > best[1]) best = [r, n];
  }
  return best?.[0];
}

/** Go duration in whole minutes (Karpenter accepts "20m"). */
function goMinutes(ms: number): string {
  return `${String(Math.ceil(ms / MIN))}m`;
}

/**
 * consolidateAfter long enough to outlive the churn: twice the median short lifetime, at least
 * the short-lifetime threshold, rounded up to 5 minutes.
 */
export function suggestedConsolidateAfter(signals: ThrashingSignals, o: ThrashingOptions): number {
  const basis = Math.max(o.shortLifetimeMs, 2 * (signals.medianLifetimeMs ?? 0));
  return Math.ceil(basis / (5 * MIN)) * 5 * MIN;
}

export function adviseFor(
  signals: ThrashingSignals,
  pool: NodePool | undefined,
  o: ThrashingOptions,
): Advice[] {
  const out: Advice[] = [];
  const reason = dominantReason(signals);
  const interrupted = signals.reasons["Interrupted"] ?? 0;
  const disruption = pool?.spec.disruption;
  // Karpenter v1 defaults: WhenEmptyOrUnderutilized, consolidateAfter 0s.
  const policy = disruption?.consolidationPolicy ?? "WhenEmptyOrUnderutilized";
  let after: number | null = 0;
  if (disruption?.consolidateAfter !== undefined) {
    try {
      after = parseDuration(disruption.consolidateAfter);
    } catch {
      out.push({
        id: "fix-spec",
        title: "Fix spec.disruption.consolidateAfter",
        detail: `"${disruption.consolidateAfter}" is not a duration Karpenter accepts (e.g. 30s, 10m, 1h, Never).`,
      });
      after = 0;
    }
  }
  const consolidating = reason === "Underutilized" || reason === "Empty";

  if (signals.warmupCaused > 0) {
    out.push({
      id: "warmup-churn",
      title: "Wave's own warmup caused part of this churn",
      detail:
        `${String(signals.warmupCaused)} of the churned nodes were warm nodes Wave launched for this pool that ` +
        "expired unused; once Wave released them Karpenter consolidated them. Wave now backs this pool's warmup " +
        "off (its cooldown doubles with each unused warm node, reset by a hit). If demand here rarely arrives " +
        "within the TTL, lower maxWarmNodes, raise ttlSeconds, or disable warmup for the pool in Wave's warmup " +
        "policy — changing consolidateAfter will not help with these nodes.",
    });
  }

  // Interruptions are not thrashing, but as many of them as churn cycles make the pool's nodes
  // come and go twice as often: worth fixing alongside.
  if (interrupted > 0 && interrupted >= signals.cycles) {
    out.push({
      id: "spot-interruptions",
      title: "Spot interruptions add to the churn",
      detail:
        `${String(interrupted)} nodes were removed by spot interruptions in the window, not by Karpenter's choice. Widen the pool's instance types ` +
        "(more families and sizes) and zones so Karpenter can pick deeper spot pools, or allow on-demand " +
        "in karpenter.sh/capacity-type as a fallback.",
    });
  }

  if (consolidating) {
    const want = suggestedConsolidateAfter(signals, o);
    if (after !== null && after < want) {
      const lifeText =
        signals.medianLifetimeMs !== undefined
          ? `nodes live a median ${(signals.medianLifetimeMs / MIN).toFixed(1)} min`
          : "nodes are removed soon after launch";
      out.push({
        id: "raise-consolidate-after",
        title: `Raise consolidateAfter to ${goMinutes(want)}`,
        detail:
          `${lifeText}, and consolidateAfter is ${disruption?.consolidateAfter ?? "0s (default)"}: Karpenter ` +
          `consolidates a node as soon as it looks ${reason === "Empty" ? "empty" : "underutilized"}, then launches ` +
          `again when pods return. Waiting ${goMinutes(want)} lets short dips pass.`,
        patch: { spec: { disruption: { consolidateAfter: goMinutes(want) } } },
      });
    }
  }

  if (reason === "Underutilized" && policy === "WhenEmptyOrUnderutilized") {
    if (
      signals.sameTypeReplacements > 0 &&
      karpenterAccepts(o.karpenterVersion, "consolidationPolicy: Balanced")
    ) {
      out.push({
        id: "balanced-policy",
        title: "Use consolidationPolicy: Balanced",
        detail:
          `${String(signals.sameTypeReplacements)} nodes were replaced by the same instance type: the move saved ` +
          `little (often a spot price change) but cost a drain. Balanced (Karpenter ${KARPENTER_SETTING_SINCE["consolidationPolicy: Balanced"]} and later) ` +
          "only consolidates when the saving outweighs the disruption.",
        patch: { spec: { disruption: { consolidationPolicy: "Balanced" } } },
      });
    }
    out.push({
      id: "when-empty-policy",
      title: "Or consolidate only empty nodes (WhenEmpty)",
      detail:
        "If the workload cannot tolerate being moved, WhenEmpty stops Karpenter from draining nodes that still " +
        "run pods; nodes are removed only once empty (you give up bin-packing savings).",
      patch: { spec: { disruption: { consolidationPolicy: "WhenEmpty" } } },
    });
  }

  if (reason === "Underutilized" || reason === "Drifted" || reason === "Unknown") {
    out.push({
      id: "do-not-disrupt",
      title: 'Protect the churned workload with karpenter.sh/do-not-disrupt: "true"',
      detail:
        "Annotate the pod template of the workload running on the churned nodes (see the evidence list): " +
        "Karpenter will not voluntarily disrupt a node while such a pod runs on it (expiry and interruptions " +
        "still apply). Best for short jobs and pods that are expensive to restart.",
    });
  }

  const budgets = disruption?.budgets ?? [];
  const limitsUnderutilized = budgets.some(
    (b) => (b.reasons === undefined || b.reasons.includes("Underutilized")) && /^[0-2]$/.test(b.nodes),
  );
  if (consolidating && signals.voluntaryDisruptions >= 5 && !limitsUnderutilized) {
    const next = [...budgets, { nodes: "1", reasons: [reason === "Empty" ? "Empty" : "Underutilized"] }];
    out.push({
      id: "underutilized-budget",
      title: "Rate-limit consolidation with a disruption budget",
      detail:
        `${String(signals.voluntaryDisruptions)} voluntary disruptions in the window. A budget of one node at a ` +
        "time for this reason slows the cycle while you tune the settings above.",
      patch: { spec: { disruption: { budgets: next } } },
    });
  }
  return out;
}
