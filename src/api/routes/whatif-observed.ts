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
/**
 * A period shorter than this is continuous (Karpenter's own batching is ~1–10 s; a grid this fine
 * is only believed with the tight tolerance below). 5 s: the embedded cluster's start-up steps.
 */
const CADENCE_MIN_MS = 5000;

/**
 * How often the cluster's controllers acted, span by span (an hour each from `from`), read from
 * the recorded lifecycle: a cluster whose launches, boots and removals all fall on a grid of P
 * seconds (a simulated cluster fast-forwarded in steps, a controller that polls) acted every P,
 * and a replay that acts every second launches and consolidates sooner than it did — fewer nodes
 * than recorded. Per span: the distinct moments (steps within 1 s are one), the gaps between
 * them; P is the 10th-percentile gap, taken when it is ≥ 5 s and at least 95 % of the gaps are whole
 * multiples (within 1.5 s or 3 %, a tenth of the step at most) of the step there (a neighbouring
 * gap no longer than it: a fast-forward's step changes slowly). Otherwise 1 s: a real cluster's
 * events fall anywhere. A span finer than 10 s is read again in halves (`readSpan`).
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
    readSpan(spans, moments, start, CADENCE_SPAN_MS);
  }
  return spans;
}

/** The shortest span a period is read over (halving a fine-looking span stops here). */
const CADENCE_MIN_SPAN_MS = 2 * 60_000;
/** A period this long stands for its whole span; a finer one is read again in halves. */
const CADENCE_SETTLED_MS = 10_000;

/**
 * One span's period; a span that reads continuous or finer than 10 s is read again in halves,
 * each half's own reading replacing it (a half with too few moments keeps it): a fast-forward
 * that nears real time steps ever finer (`fastForwardStepMs`: a sixtieth of the lag, 60 s an hour
 * before, 10 s ten minutes before), whose gaps over a whole hour fit no grid or only the finest,
 * though each part of it fits its own; the embedded start-up's two minutes at 5 s then 150 s
 * likewise. A real cluster's halves read as continuous too.
 */
function readSpan(
  out: { from: number; stepMs: number }[],
  moments: readonly number[],
  start: number,
  length: number,
  inherited = 1000,
): void {
  const stepMs = periodOf(moments) ?? inherited;
  if (stepMs >= CADENCE_SETTLED_MS || length < 2 * CADENCE_MIN_SPAN_MS) {
    out.push({ from: start, stepMs });
    return;
  }
  const half = Math.floor(length / 2);
  const cut = moments.findIndex((t) => t >= start + half);
  const k = cut < 0 ? moments.length : cut;
  const parts: { from: number; stepMs: number }[] = [];
  readSpan(parts, moments.slice(0, k), start, half, stepMs);
  readSpan(parts, moments.slice(k), start + half, length - half, stepMs);
  // The same throughout: one span, as read whole.
  if (parts.every((p) => p.stepMs === stepMs)) out.push({ from: start, stepMs });
  else out.push(...parts);
}

/** The period the moments fall on (1 s: off any grid), undefined for too few to tell. */
function periodOf(moments: readonly number[]): number | undefined {
  if (moments.length <= CADENCE_MIN_GAPS) return undefined;
  const gaps = moments.slice(1).map((t, k) => t - (moments[k] ?? t));
  const sorted = [...gaps].sort((a, b) => a - b);
  const p = sorted[Math.floor(sorted.length / 10)] ?? 0;
  if (p < CADENCE_MIN_MS) return 1000;
  // On the grid: a whole multiple of the step there, a neighbour no longer than the gap, else the
  // gap itself (a fast-forward's step changes slowly or jumps, 5 s → 150 s at its start; a real
  // cluster's gaps are anything).
  const fits = (g: number, step: number): boolean => {
    // 1.5 s (the fast-forward's whole-second steps shrink by ~1 s from one to the next, plus ms
    // of jitter) or 3 %, but a tenth of a fine step at most: a 5 s grid with ±1.5 s fits anything.
    const tolerance = Math.min(step / 10, Math.max(1500, 0.03 * step));
    return Math.abs(g - Math.max(1, Math.round(g / step)) * step) <= tolerance;
  };
  const onGrid = gaps.filter((g, k) => {
    const near = [gaps[k - 1], gaps[k + 1]].filter((s): s is number => s !== undefined && s <= g);
    return near.length === 0 || near.some((s) => fits(g, s));
  }).length;
  return onGrid >= 0.95 * gaps.length ? Math.round(p / 1000) * 1000 : 1000;
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

/** Claims per pool a boot median is believed from (fewer: the cluster's). */
const MIN_BOOTS = 3;

/** A median (upper middle), whole seconds, at least 1 s. */
function medianSeconds(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s[Math.floor((s.length - 1) / 2)] ?? 0;
  return Math.min(3_600_000, Math.max(1000, Math.round(m / 1000) * 1000));
}

/**
 * Each NodePool's boot (Launched → Initialized, else Registered), the median of its recorded
 * claims. A claim launched where the cluster acted in steps of P (`cadence`) reads as a whole
 * number of steps, never its boot: only the claims launched where it acted continuously (1 s)
 * count, and a pool with fewer than 3 of them takes the median of all pools' continuous ones,
 * else its own median over every claim. Pools without claims are left out.
 */
export function observedPoolBootMs(
  events: readonly { nodeClaimUid: string; nodePool: string; phase: string; at: number }[],
  cadence: readonly { from: number; stepMs: number }[],
): Record<string, number> {
  const claims = new Map<string, { pool: string; launched?: number; up?: number; registered?: number }>();
  for (const e of events) {
    const c = claims.get(e.nodeClaimUid) ?? { pool: e.nodePool };
    if (e.phase === "Launched") c.launched = e.at;
    else if (e.phase === "Initialized") c.up = e.at;
    else if (e.phase === "Registered") c.registered = e.at;
    claims.set(e.nodeClaimUid, c);
  }
  const stepAt = (t: number): number => {
    let step = cadence[0]?.stepMs ?? 1000;
    for (const s of cadence) if (s.from <= t) step = s.stepMs;
    return step;
  };
  const all = new Map<string, number[]>();
  const fine = new Map<string, number[]>();
  for (const c of claims.values()) {
    const up = c.up ?? c.registered;
    if (c.launched === undefined || up === undefined || up < c.launched) continue;
    const boots = all.get(c.pool) ?? [];
    boots.push(up - c.launched);
    all.set(c.pool, boots);
    if (stepAt(c.launched) <= 1000) fine.set(c.pool, [...(fine.get(c.pool) ?? []), up - c.launched]);
  }
  const anyFine = [...fine.values()].flat();
  const out: Record<string, number> = {};
  for (const [pool, boots] of [...all].sort(([a], [b]) => a.localeCompare(b))) {
    const own = fine.get(pool) ?? [];
    out[pool] = medianSeconds(own.length >= MIN_BOOTS ? own : anyFine.length >= MIN_BOOTS ? anyFine : boots);
  }
  return out;
}

/** Karpenter's batch window and the kubelet's start, which a cold start holds besides boot and pull. */
const COLD_OVERHEAD_MS = 2000;

/**
 * Each NodePool's image pull: its recorded cold starts (pods that waited for a new node: batch,
 * boot, pull, start — and, for some, a wait for room: a pool at its limit, a node another pod took)
 * less its boot and the batch window and the kubelet's start. The fastest tenth of them waited for
 * nothing else: their 10th percentile, whole seconds, never negative. A pool with fewer than 3
 * cold starts is left out (no pull: 0).
 */
export function observedPoolPullMs(
  starts: readonly { ms: number; pool: string; cold: boolean }[],
  bootMs: Readonly<Record<string, number>>,
  fallbackBootMs: number,
): Record<string, number> {
  const cold = new Map<string, number[]>();
  for (const s of starts) if (s.cold && s.pool !== "") cold.set(s.pool, [...(cold.get(s.pool) ?? []), s.ms]);
  const out: Record<string, number> = {};
  for (const [pool, ms] of [...cold].sort(([a], [b]) => a.localeCompare(b))) {
    if (ms.length < MIN_BOOTS) continue;
    const sorted = [...ms].sort((a, b) => a - b);
    const fastest = sorted[Math.floor((sorted.length - 1) / 10)] ?? 0;
    const pull = fastest - (bootMs[pool] ?? fallbackBootMs) - COLD_OVERHEAD_MS;
    out[pool] = Math.max(0, Math.round(pull / 1000) * 1000);
  }
  return out;
}
