// Editor-side checks and previews for policies (pure; the API validates again on save). The ranges
// and the on-demand arithmetic are src/policy's, the ones the API and the webhook use.
import type {
  SpotPolicyDto,
  SpotWorkloadDto,
  WarmupPolicyDto,
  WarmupPoolDto,
} from "../../../src/dashboard/dto.ts";
import { onDemandTarget } from "../../../src/policy/on-demand-target.ts";
import { PERCENT_ABOVE_BASE_RANGE } from "../../../src/policy/spot.ts";
import { WARMUP_INTEGER_RANGES } from "../../../src/policy/warmup.ts";
import { num, usd, usdDelta } from "../format.ts";

export type WarmupPolicy = WarmupPolicyDto["policy"];

/** Problems with a warmup policy draft, by field (the API's ranges). */
export function warmupProblems(p: WarmupPolicy): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, [lo, hi]] of Object.entries(WARMUP_INTEGER_RANGES)) {
    const v = p[k as keyof typeof WARMUP_INTEGER_RANGES];
    if (!Number.isInteger(v) || v < lo || v > hi) out[k] = `a whole number from ${num(lo)} to ${num(hi)}`;
  }
  if (p.maxCostPerHour !== null && !(p.maxCostPerHour >= 0))
    out["maxCostPerHour"] = "a price ≥ 0, or empty for no cap";
  return out;
}

/** "1 warm node, +$0.19/h" — what saving the draft would hold warm at most, and what it costs. */
export function warmupPreview(pool: WarmupPoolDto, p: WarmupPolicy): string {
  if (!p.enabled) {
    const now = pool.warmCostPerHourNow;
    return pool.warmNodes.length
      ? `warmup off: ${num(pool.warmNodes.length)} warm node(s) released, ${usdDelta(-now)}`
      : "warmup off: no warm capacity, +$0.000/h";
  }
  const price = pool.newNodeCostPerHour;
  // Never a negative count or cost: an invalid draft gets no preview (the editor says why).
  let n = Math.max(0, Number.isFinite(p.maxWarmNodes) ? p.maxWarmNodes : 0);
  const type = pool.newNodeInstanceType ? ` (${pool.newNodeInstanceType})` : "";
  if (price !== null && price > 0 && p.maxCostPerHour !== null) {
    const cap = Math.max(0, p.maxCostPerHour);
    if (cap < price && n > 0)
      return `no warm node: the cost cap ${usd(cap)}/h is below one node's price ${usd(price)}/h${type}`;
    n = Math.min(n, Math.floor(cap / price));
  }
  if (n === 0) return "no warm node (max warm nodes 0), +$0.000/h";
  if (price === null) return `up to ${num(n)} warm node(s)${type}, price unknown`;
  return `up to ${num(n)} warm node${n === 1 ? "" : "s"}${type}, at most ${usdDelta(n * price)}`;
}

export function spotProblems(p: {
  threshold: number;
  percentAboveBase?: number | undefined;
}): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Number.isInteger(p.threshold) || p.threshold < 0) out["threshold"] = "a whole number ≥ 0";
  const pct = p.percentAboveBase;
  const [lo, hi] = PERCENT_ABOVE_BASE_RANGE;
  if (pct !== undefined && (!Number.isInteger(pct) || pct < lo || pct > hi))
    out["percentAboveBase"] = `a whole number from ${num(lo)} to ${num(hi)}`;
  return out;
}

/** "3 of 12 pods on-demand, −$0.42/h" against what the workload's pods cost now. */
export function spotPreview(w: SpotWorkloadDto | undefined, p: Omit<SpotPolicyDto, "workload">): string {
  const total = w?.pods ?? 0;
  if (!w || total === 0)
    return `no live pods yet: the first ${num(p.threshold)} will run on-demand, the rest on spot`;
  const od = onDemandTarget(p, total);
  const { onDemand, spot } = w.podCostPerHour;
  const head = `${num(od)} of ${num(total)} pods on-demand, ${num(total - od)} on spot`;
  if (onDemand === null || (spot === null && od < total))
    return `${head} (no priced pod of each capacity type yet)`;
  const after = od * onDemand + (total - od) * (spot ?? 0);
  return `${head}, ${usdDelta(after - w.costPerHour)} → ${usd(after)}/h`;
}
