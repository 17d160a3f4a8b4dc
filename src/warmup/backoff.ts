// Warmup back-off: a warm node that expires unused is capacity nobody needed, and once Wave
// releases it Karpenter consolidates it (Empty/Underutilized). Warming again right away would
// launch a node Karpenter removes again — Wave and Karpenter fighting, which the thrashing
// detector then reports. So each unused expiry in a row doubles the pool's cooldown (at least one
// TTL after the first, so the next warm node never follows at once), up to a cap; a hit resets it.
// The streak lives on the NodePool (WARMUP_UNUSED_STREAK_ANNOTATION), so restarts and replicas agree. Pure.
import type { NodePool } from "../objects/karpenter.ts";
import { WARMUP_UNUSED_STREAK_ANNOTATION } from "../objects/wave.ts";
import type { WarmupPolicy } from "../policy/warmup.ts";
import type { MissReason } from "./miss-reason.ts";

/** The longest cooldown back-off reaches. */
export const MAX_BACKOFF_MS = 4 * 3_600_000;
/** The streak stops growing here (2^6 × a 10-minute TTL is past the cap anyway). */
const MAX_STREAK = 6;

export type WarmupEnd = { kind: "hit" } | { kind: "miss"; reason: MissReason };

/** The pool's current streak of unused expiries (0 when unset or unreadable). */
export function unusedStreak(pool: Pick<NodePool, "metadata"> | undefined): number {
  const n = Number(pool?.metadata.annotations?.[WARMUP_UNUSED_STREAK_ANNOTATION] ?? 0);
  return Number.isInteger(n) && n > 0 ? Math.min(n, MAX_STREAK) : 0;
}

/**
 * The streak after a warmup ended: a hit resets it, an unused expiry (TTL) adds one; other ends
 * (node gone, policy off, pool deleted) say nothing about demand and leave it as it was.
 */
export function nextStreak(streak: number, end: WarmupEnd): number {
  if (end.kind === "hit") return 0;
  if (end.reason === "ttl") return Math.min(MAX_STREAK, streak + 1);
  return streak;
}

/**
 * The cooldown in force after `streak` unused expiries in a row, counted like the policy's from
 * the start of the last warmup: that warmup's TTL, then max(cooldown, TTL) doubled per unused
 * node — so after a miss the next warm node comes at least a TTL after the last one was released.
 */
export function backoffCooldownMs(
  policy: Pick<WarmupPolicy, "cooldownSeconds" | "ttlSeconds">,
  streak: number,
): number {
  const base = policy.cooldownSeconds * 1000;
  if (streak <= 0) return base;
  const ttl = policy.ttlSeconds * 1000;
  const wait = Math.max(base, ttl) * 2 ** (streak - 1);
  return Math.max(base, Math.min(MAX_BACKOFF_MS, ttl + wait));
}
