// The what-if's pod-start model check and its note on warm capacity that comes out cheaper (pure).
import type { WarmupPolicy } from "../policy/warmup.ts";
import { percentile, type PodStartStats, type ReplayResult } from "./replay.ts";

/** One recorded pod start (core's src/dashboard/figures/pod-starts.ts PodStartSample). */
export interface RecordedPodStart {
  created: number;
  ms: number;
  pool: string;
  cold: boolean;
}

/** The recorded starts of pods created in [from, to) as the replay reports its own. */
export function recordedPodStart(
  starts: readonly RecordedPodStart[],
  from: number,
  to: number,
): PodStartStats | undefined {
  const ms = starts
    .filter((s) => s.created >= from && s.created < to)
    .map((s) => s.ms)
    .sort((a, b) => a - b);
  if (ms.length === 0) return undefined;
  return { count: ms.length, p50Ms: percentile(ms, 50), p95Ms: percentile(ms, 95), maxMs: ms.at(-1) ?? 0 };
}

/**
 * How far the replayed percentiles are from the recorded ones (relative, 0.2 = 20 %). Starts are
 * whole seconds apart at best: a difference under a second is none.
 */
export function podStartError(
  replayed: PodStartStats,
  recorded: PodStartStats,
): { p50: number; p95: number } {
  const rel = (a: number, b: number): number => (Math.abs(a - b) < 1000 ? 0 : b === 0 ? 1 : (a - b) / b);
  return { p50: rel(replayed.p50Ms, recorded.p50Ms), p95: rel(replayed.p95Ms, recorded.p95Ms) };
}

/** Warm nodes a policy set may hold, over all pools. */
function warmNodes(warmup: Readonly<Record<string, WarmupPolicy>>): number {
  let n = 0;
  for (const p of Object.values(warmup)) if (p.enabled) n += p.maxWarmNodes;
  return n;
}

type Side = Pick<ReplayResult, "costPerHour" | "pools" | "spotInterruptions" | "end">;

/**
 * More warm capacity that comes out cheaper says why, from what the replay shows: the pools whose
 * cost fell and rose, the workloads whose on-demand pods changed at the end, the spot
 * interruptions each side drew. A warm node costs; a cheaper candidate got there some other way.
 */
export function cheaperWarmNote(
  current: { warmup: Readonly<Record<string, WarmupPolicy>> },
  candidate: { warmup: Readonly<Record<string, WarmupPolicy>> },
  now: Side,
  cand: Side,
): string[] {
  const before = warmNodes(current.warmup);
  const after = warmNodes(candidate.warmup);
  if (after <= before || cand.costPerHour >= now.costPerHour) return [];
  const usd = (x: number): string => `${x >= 0 ? "+" : "−"}$${Math.abs(x).toFixed(2)}/h`;
  const pools = Object.keys({ ...now.pools, ...cand.pools })
    .map((p) => ({ p, d: (cand.pools[p]?.costPerHour ?? 0) - (now.pools[p]?.costPerHour ?? 0) }))
    .filter((x) => Math.abs(x.d) >= 0.005)
    .sort((a, b) => a.d - b.d)
    .map((x) => `${x.p} ${usd(x.d)}`);
  const moved = Object.keys({ ...now.end.byDeployment, ...cand.end.byDeployment })
    .map((w) => ({
      w,
      a: now.end.byDeployment[w]?.onDemand ?? 0,
      b: cand.end.byDeployment[w]?.onDemand ?? 0,
    }))
    .filter((x) => x.a !== x.b)
    .sort((x, y) => Math.abs(y.b - y.a) - Math.abs(x.b - x.a))
    .slice(0, 3)
    .map((x) => `${x.w} ${x.a} → ${x.b}`);
  return [
    `more warm nodes (${before} → ${after}) yet cheaper (${usd(cand.costPerHour - now.costPerHour)}): ` +
      `the warm nodes' cost is in it, the rest is the cluster placing pods otherwise — pools ${pools.join(", ") || "none"}; ` +
      `on-demand pods at the end ${moved.join(", ") || "unchanged"}; spot interruptions ` +
      `${now.spotInterruptions} → ${cand.spotInterruptions}. Judge the candidate by its pod starts and ` +
      "its warm pools' cost, not by this saving.",
  ];
}
