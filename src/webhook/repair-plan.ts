// What the repair controller should do for one workload, as a pure function of its pods, its
// policy, the ledger's next answer and the controller's memory (ADR 0006). At most one action per
// workload at a time: evict one pod so that its replacement takes the right slot, or open
// Prefer's fallback window when spot pods cannot get spot capacity.
import type { Pod } from "../objects/kube.ts";
import { ON_DEMAND, SPOT, requiresSpot, revisionOf, type Capacity } from "./constants.ts";
import { isLivePod } from "./ledger.ts";
import { onDemandTarget } from "../policy/on-demand-target.ts";
import type { SpotPolicy } from "../policy/spot.ts";
import { ASSIGNMENT_LABEL } from "../objects/wave.ts";

export interface RepairTiming {
  /** An imbalance must last this long before anything is evicted (admissions in flight settle). */
  graceMs: number;
  /** Minimum time between two actions on one workload. */
  cooldownMs: number;
  /**
   * Longest wait after evictions a PodDisruptionBudget keeps refusing: each refusal in a row
   * doubles the cooldown up to this (a budget that allows nothing for hours is not retried, and
   * warned about, every few seconds).
   */
  maxBackoffMs: number;
  /** Prefer: a spot pod unschedulable this long means spot is unavailable: open the fallback. */
  preferFallbackMs: number;
  /**
   * A pod younger than this that is not Ready yet is starting (often the last eviction's
   * replacement, waiting for its node): the next eviction waits for it, so a PodDisruptionBudget
   * is not asked while it would refuse (each refusal doubles the wait). Older unready pods do not
   * hold the repair back.
   */
  startingMs: number;
}

export const DEFAULT_REPAIR_TIMING: RepairTiming = {
  graceMs: 5_000,
  cooldownMs: 5_000,
  maxBackoffMs: 300_000,
  preferFallbackMs: 90_000,
  startingMs: 120_000,
};

/** What the controller remembers per workload between passes. */
export interface RepairMemory {
  imbalanceSince?: number;
  lastActionAt?: number;
  /** Evictions refused in a row (by a PodDisruptionBudget); 0 after one that went through. */
  refused?: number;
  /** Prefer's fallback window as the ledger last said (the pre-check reads no ledger). */
  fallbackUntil?: number;
}

export type Direction = "shortfall" | "excess";

export type RepairAction =
  | { kind: "none"; reason: string }
  | {
      kind: "evict";
      direction: Direction;
      pod: Pod;
      onDemand: number;
      target: number;
      live: number;
    }
  /** Open Prefer's fallback window (`opening`), or, with it open, replace a pod admitted before it. */
  | { kind: "fallback"; pod: Pod; pendingMs: number; opening: boolean };

export interface PlanInput {
  policy: SpotPolicy;
  /** The workload's pods (those with its ledger label), terminating ones included. */
  pods: readonly Pod[];
  memory: RepairMemory;
  now: number;
  /** The capacity the ledger would give the next pod of `revision` (after reconciling). */
  nextCapacity: (revision: string) => Capacity;
  /** Prefer's fallback window is open until then (0 = closed). */
  fallbackUntil: number;
  timing?: RepairTiming;
}

const assignment = (p: Pod): string | undefined => p.metadata.labels?.[ASSIGNMENT_LABEL];
const created = (p: Pod): number => Date.parse(p.metadata.creationTimestamp ?? "") || 0;
const scheduled = (p: Pod): boolean => (p.spec.nodeName ?? "") !== "";
const ready = (p: Pod): boolean =>
  (p.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
const unschedulable = (p: Pod): boolean =>
  !scheduled(p) &&
  (p.status?.conditions ?? []).some(
    (c) => c.type === "PodScheduled" && c.status === "False" && c.reason === "Unschedulable",
  );

/**
 * The cheapest pod to evict: one that is not running anyway (unscheduled), then one not Ready,
 * then the youngest (least warmed-up); ties by name for determinism.
 */
export function pickVictim(pods: readonly Pod[]): Pod | undefined {
  return victimOrder(pods)[0];
}

/** `pods` in the order the repair would evict them (pickVictim's order). */
export function victimOrder(pods: readonly Pod[]): Pod[] {
  const rank = (p: Pod): number => (!scheduled(p) ? 0 : !ready(p) ? 1 : 2);
  return [...pods].sort(
    (a, b) =>
      rank(a) - rank(b) ||
      created(b) - created(a) ||
      (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
  );
}

/** The wait after the last action: the cooldown, doubled per eviction refused in a row (capped). */
export function cooldownOf(memory: RepairMemory, timing: RepairTiming): number {
  const refused = memory.refused ?? 0;
  if (refused === 0) return timing.cooldownMs;
  return Math.min(timing.maxBackoffMs, timing.cooldownMs * 2 ** Math.min(refused, 30));
}

export function planRepair(input: PlanInput): RepairAction {
  const { policy, pods, memory, now, fallbackUntil } = input;
  const timing = input.timing ?? DEFAULT_REPAIR_TIMING;
  if (policy.repair === false) return { kind: "none", reason: "repair is off for this policy" };
  if (policy.repair === "dry-run")
    return { kind: "none", reason: "dry-run: evictions are reported, not made" };
  const live = pods.filter((p) => isLivePod(p) && (assignment(p) === ON_DEMAND || assignment(p) === SPOT));
  const cooling = memory.lastActionAt !== undefined && now - memory.lastActionAt < cooldownOf(memory, timing);

  // Prefer: spot pods that cannot get spot capacity open the fallback window (ADR 0007). While it
  // is open, the spot pods admitted before it (still requiring spot) are replaced one at a time:
  // their replacements get the preference and may run on on-demand.
  if (policy.strategy === "Prefer" && !cooling) {
    const open = fallbackUntil > now;
    const stuck = live
      .filter(
        (p) =>
          assignment(p) === SPOT &&
          unschedulable(p) &&
          requiresSpot(p) &&
          (open || now - created(p) >= timing.preferFallbackMs),
      )
      .sort((a, b) => created(a) - created(b))[0];
    if (stuck) return { kind: "fallback", pod: stuck, pendingMs: now - created(stuck), opening: !open };
  }

  const revisions = new Set(live.map(revisionOf));
  if (revisions.size > 1) {
    memory.imbalanceSince = undefined;
    return { kind: "none", reason: "rollout in progress: each revision counts its own slots" };
  }
  const onDemand = live.filter((p) => assignment(p) === ON_DEMAND).length;
  const target = onDemandTarget(policy, live.length);
  if (onDemand === target) {
    memory.imbalanceSince = undefined;
    memory.refused = undefined;
    return { kind: "none", reason: "balanced" };
  }
  memory.imbalanceSince ??= now;
  if (now - memory.imbalanceSince < timing.graceMs)
    return { kind: "none", reason: "within the grace period" };
  if (cooling) return { kind: "none", reason: "cooling down after the last action" };
  if (pods.some((p) => p.metadata.deletionTimestamp !== undefined))
    return { kind: "none", reason: "a pod is terminating: its replacement is coming" };
  if (live.some((p) => !ready(p) && now - created(p) < timing.startingMs))
    return { kind: "none", reason: "a pod is starting: the next eviction waits until it is Ready" };
  const revision = [...revisions][0] ?? "";
  if (onDemand < target) {
    // Evicting only helps if the replacement will get on-demand.
    if (input.nextCapacity(revision) !== ON_DEMAND)
      return { kind: "none", reason: "the ledger still holds the slots (admissions in flight)" };
    const pod = pickVictim(live.filter((p) => assignment(p) === SPOT));
    if (!pod) return { kind: "none", reason: "no spot pod to evict" };
    return { kind: "evict", direction: "shortfall", pod, onDemand, target, live: live.length };
  }
  const pod = pickVictim(live.filter((p) => assignment(p) === ON_DEMAND));
  if (!pod) return { kind: "none", reason: "no on-demand pod to evict" };
  return { kind: "evict", direction: "excess", pod, onDemand, target, live: live.length };
}
