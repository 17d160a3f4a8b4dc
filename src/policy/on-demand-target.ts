// The on-demand target arithmetic (AWS Auto Scaling's OnDemandBaseCapacity +
// OnDemandPercentageAboveBaseCapacity): the webhook's ledger, its repair, the spot page, /metrics
// and the UI's policy preview all count with this one function.
import type { SpotPolicy } from "./spot.ts";

/**
 * How many of `total` live pods run on-demand: all of the first `threshold`, then
 * ceil(percentAboveBase% of the rest) — rounding up favours availability
 * (base 2, 50 %, 10 pods → 6 on-demand).
 */
export function onDemandTarget(
  policy: Pick<SpotPolicy, "threshold" | "percentAboveBase">,
  total: number,
): number {
  if (total <= policy.threshold) return Math.max(0, total);
  const pct = policy.percentAboveBase ?? 0;
  return policy.threshold + Math.ceil(((total - policy.threshold) * pct) / 100);
}
