// What the what-if calibrates from the cluster's own recorded history: its nodes' boot time, its
// control loop's period, when its pools' templates changed, and its spot interruption rate.
import type { ClusterHub } from "../../core/hub/hub.ts";

const HOUR = 3_600_000;

/** Drifted disruptions of a pool closer than this are one template change being rolled out (a pool of 20 nodes takes ~20 min at one a minute). */
const DRIFT_BURST_GAP_MS = 30 * 60_000;

/**
 * When each NodePool's template changed, from its recorded drift: Karpenter replaces a drifted
 * pool's nodes one after another (its budgets pace them), so a run of `Drifted` disruptions with
 * gaps under 30 minutes is one change, made just before the run's first replacement.
 */
export function observedTemplateChanges(
  disruptions: readonly { nodePool: string; reason: string; at: number }[],
): { nodePool: string; at: number }[] {
  const last = new Map<string, number>();
  const out: { nodePool: string; at: number }[] = [];
  for (const d of [...disruptions].sort((a, b) => a.at - b.at)) {
    if (d.reason !== "Drifted") continue;
    const prev = last.get(d.nodePool);
    if (prev === undefined || d.at - prev > DRIFT_BURST_GAP_MS)
      out.push({ nodePool: d.nodePool, at: Math.max(0, d.at - 1000) });
    last.set(d.nodePool, d.at);
  }
  return out;
}

/** Spans the control-loop period is estimated over. */
const CADENCE_SPAN_MS = HOUR;
/** Fewer distinct moments than this in a span say nothing about a period: continuous. */
const CADENCE_MIN_GAPS = 8;
/** A period shorter than this is continuous (Karpenter's own batching and polls are ~1–10 s). */
const CADENCE_MIN_MS = 10_000;

/**
 * How often the cluster's controllers acted, span by span (an hour each from `from`), read from
 * the recorded lifecycle: a cluster whose launches, boots and removals all fall on a grid of P
 * seconds (a simulated cluster fast-forwarded in steps, a controller that polls) acted every P,
 * and a replay that acts every second launches and consolidates sooner than it did — fewer nodes
 * than recorded. Per span: the distinct moments (steps within 1 s are one), the gaps between
 * them; P is the 10th-percentile gap, taken when it is ≥ 10 s and at least 90 % of the gaps are whole
 * multiples (within 3 %, 1 s at least) of the step there (the shortest of a gap and its
 * neighbours: a fast-forward's step changes slowly). Otherwise 1 s: a real cluster's events fall anywhere.
 */
export function observedCadence(
  events: readonly { at: number }[],
  from: number,
  to: number,
): { from: number; stepMs: number }[] {
  const times = events
    .map((e) => e.at)
    .filter((t) => t >= from && t < to)
    .sort((a, b) => a - b);
  const spans: { from: number; stepMs: number }[] = [];
  let i = 0;
  for (let start = from; start < to; start += CADENCE_SPAN_MS) {
    const moments: number[] = [];
    for (; i < times.length && (times[i] ?? 0) < start + CADENCE_SPAN_MS; i++) {
      const t = times[i] ?? 0;
      const last = moments.at(-1);
      if (last === undefined || t - last >= 1000) moments.push(t);
    }
    spans.push({ from: start, stepMs: periodOf(moments) });
  }
  return spans;
}

function periodOf(moments: readonly number[]): number {
  if (moments.length <= CADENCE_MIN_GAPS) return 1000;
  const gaps = moments.slice(1).map((t, k) => t - (moments[k] ?? t));
  const sorted = [...gaps].sort((a, b) => a - b);
  const p = sorted[Math.floor(sorted.length / 10)] ?? 0;
  if (p < CADENCE_MIN_MS) return 1000;
  // On the grid: a whole multiple of the step there, the shortest of the gap and its neighbours
  // (a fast-forward's step changes slowly; a real cluster's gaps are anything).
  const onGrid = gaps.filter((g, k) => {
    const step = Math.min(g, gaps[k - 1] ?? g, gaps[k + 1] ?? g);
    const tolerance = Math.max(1000, 0.03 * step);
    return Math.abs(g - Math.max(1, Math.round(g / step)) * step) <= tolerance;
  }).length;
  return onGrid >= 0.9 * gaps.length ? Math.round(p / 1000) * 1000 : 1000;
}

/**
 * The cluster's median NodeClaim boot (Launched → Initialized, else Registered) over the recorded
 * lifecycle, whole seconds, at least 1 s; undefined without a claim that has both steps.
 */
export function observedBootMs(
  events: readonly { nodeClaimUid: string; phase: string; at: number }[],
): number | undefined {
  const steps = new Map<string, { launched?: number; up?: number; registered?: number }>();
  for (const e of events) {
    const s = steps.get(e.nodeClaimUid) ?? {};
    if (e.phase === "Launched") s.launched = e.at;
    else if (e.phase === "Initialized") s.up = e.at;
    else if (e.phase === "Registered") s.registered = e.at;
    steps.set(e.nodeClaimUid, s);
  }
  const boots: number[] = [];
  for (const s of steps.values()) {
    const up = s.up ?? s.registered;
    if (s.launched !== undefined && up !== undefined && up >= s.launched) boots.push(up - s.launched);
  }
  if (boots.length === 0) return undefined;
  boots.sort((a, b) => a - b);
  const median = boots[Math.floor((boots.length - 1) / 2)] ?? 0;
  return Math.min(3_600_000, Math.max(1000, Math.round(median / 1000) * 1000));
}

/** Spot interruptions per spot node-hour over the range, from the store (0 without spot hours). */
export async function observedInterruptionRate(
  hub: ClusterHub,
  range: { clusterId: string; from: number; to: number },
  disruptions: readonly { reason: string }[],
): Promise<number> {
  const series = await hub.store.series({ ...range, capacityType: "spot" });
  const interrupted = disruptions.filter((d) => d.reason === "Interrupted").length;
  let spotHours = 0;
  for (const r of series) if (r.kind === "point") spotHours += (r.nodes * r.resolutionMs) / HOUR;
  return spotHours > 0 ? Math.min(60, interrupted / spotHours) : 0;
}
