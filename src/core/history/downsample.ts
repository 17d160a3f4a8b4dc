// Downsampling and retention for the per-NodePool series.
//
// Semantics (the SQL rollups in src/core/store mirror this function exactly):
// - gauges (nodes, vcpu, memoryBytes, costPerHour) are averaged, weighted by the samples each
//   row stands for, so a 1 h bucket built from 5 min buckets equals one built from raw minutes;
// - nodesMax keeps the highest node count, so short peaks survive downsampling;
// - samples add up (how much of the bucket had data: a half-covered bucket says so);
// - gaps are never filled: they are carried over unchanged (overlapping ones merged), and a bucket
//   without samples produces no point at all.
import { compareRows, seriesKey } from "./series.ts";
import type { SeriesGap, SeriesPoint, SeriesRow } from "./series.ts";

export interface RetentionTier {
  /** Bucket width of this tier. */
  stepMs: number;
  /** How long rows of this tier are kept. */
  retainMs: number;
}

export interface RetentionPolicy {
  /** Finest first. The first tier's step is the recorder's step (raw samples). */
  tiers: RetentionTier[];
  /** How long lifecycle events and disruptions are kept. */
  eventRetainMs: number;
  /**
   * A bucket is rolled up only once it ended this long ago, so rows written a little late still
   * make it into the coarser tiers. Default: two raw steps.
   */
  rollupDelayMs?: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Raw 1 min kept 24 h, 5 min kept 7 d, 1 h kept 90 d; events kept 90 d. */
export const defaultRetention: RetentionPolicy = {
  tiers: [
    { stepMs: MINUTE, retainMs: DAY },
    { stepMs: 5 * MINUTE, retainMs: 7 * DAY },
    { stepMs: HOUR, retainMs: 90 * DAY },
  ],
  eventRetainMs: 90 * DAY,
};

/** Throws a clear error for a policy that would lose or double-count data. */
export function validateRetention(p: RetentionPolicy): void {
  if (p.tiers.length === 0) throw new Error("retention: at least one tier is required");
  p.tiers.forEach((t, i) => {
    if (!Number.isSafeInteger(t.stepMs) || t.stepMs <= 0) {
      throw new Error(`retention tier ${i}: stepMs must be a positive integer, got ${t.stepMs}`);
    }
    if (!Number.isSafeInteger(t.retainMs) || t.retainMs < t.stepMs) {
      throw new Error(`retention tier ${i}: retainMs must be an integer >= stepMs, got ${t.retainMs}`);
    }
    const prev = p.tiers[i - 1];
    if (prev) {
      if (t.stepMs <= prev.stepMs || t.stepMs % prev.stepMs !== 0) {
        throw new Error(
          `retention tier ${i}: stepMs ${t.stepMs} must be a larger multiple of tier ${i - 1}'s ${prev.stepMs}`,
        );
      }
      if (t.retainMs <= prev.retainMs) {
        throw new Error(`retention tier ${i}: retainMs must be longer than tier ${i - 1}'s`);
      }
      // Rows of the finer tier are deleted only after they are rolled up; the window must hold
      // at least one whole coarse bucket or nothing would ever be rolled up in time.
      if (prev.retainMs < t.stepMs) {
        throw new Error(`retention tier ${i - 1}: retainMs must be >= the next tier's stepMs ${t.stepMs}`);
      }
    }
  });
  if (p.rollupDelayMs !== undefined && (!Number.isSafeInteger(p.rollupDelayMs) || p.rollupDelayMs < 0)) {
    throw new Error(`retention: rollupDelayMs must be an integer >= 0, got ${p.rollupDelayMs}`);
  }
  if (!Number.isSafeInteger(p.eventRetainMs) || p.eventRetainMs <= 0) {
    throw new Error(`retention: eventRetainMs must be a positive integer, got ${p.eventRetainMs}`);
  }
}

export function alignDown(t: number, stepMs: number): number {
  return Math.floor(t / stepMs) * stepMs;
}

/** Sleeps until the next multiple of `stepMs` on `clock`; false once `signal` aborts. */
export async function sleepToNextStep(
  clock: { now(): number; sleep(ms: number, signal?: AbortSignal): Promise<void> },
  stepMs: number,
  signal: AbortSignal,
): Promise<boolean> {
  const now = clock.now();
  try {
    await clock.sleep(alignDown(now, stepMs) + stepMs - now, signal);
    return true;
  } catch {
    return false; // aborted
  }
}

/**
 * Re-buckets rows to `stepMs` (rows coarser than that keep their own width). Returns points and
 * merged gaps, ordered by time.
 */
export function downsample(rows: readonly SeriesRow[], stepMs: number): SeriesRow[] {
  if (!Number.isSafeInteger(stepMs) || stepMs <= 0) throw new Error(`downsample: bad step ${stepMs}`);
  const buckets = new Map<string, SeriesPoint>();
  const gaps: SeriesGap[] = [];
  for (const r of rows) {
    if (r.kind === "gap") {
      gaps.push({ ...r, resolutionMs: Math.max(stepMs, r.resolutionMs) });
      continue;
    }
    const ts = alignDown(r.ts, stepMs);
    const key = `${r.clusterId}\u0000${seriesKey(r)}\u0000${ts}`;
    const b = buckets.get(key);
    if (!b) {
      buckets.set(key, { ...r, ts, resolutionMs: Math.max(stepMs, r.resolutionMs) });
      continue;
    }
    const n = b.samples + r.samples;
    const avg = (a: number, x: number): number => (a * b.samples + x * r.samples) / n;
    b.nodes = avg(b.nodes, r.nodes);
    b.vcpu = avg(b.vcpu, r.vcpu);
    b.memoryBytes = avg(b.memoryBytes, r.memoryBytes);
    b.costPerHour = avg(b.costPerHour, r.costPerHour);
    b.nodesMax = Math.max(b.nodesMax, r.nodesMax);
    b.samples = n;
    b.resolutionMs = Math.max(b.resolutionMs, r.resolutionMs);
  }
  return [...mergeGaps(gaps), ...buckets.values()].sort(compareRows);
}

/** Merges overlapping or touching gaps of the same cluster into one. */
export function mergeGaps(gaps: readonly SeriesGap[]): SeriesGap[] {
  const sorted = [...gaps].sort((a, b) =>
    a.clusterId !== b.clusterId ? (a.clusterId < b.clusterId ? -1 : 1) : a.ts - b.ts,
  );
  const out: SeriesGap[] = [];
  for (const g of sorted) {
    const last = out.at(-1);
    if (last?.clusterId === g.clusterId && g.ts <= last.until) {
      last.until = Math.max(last.until, g.until);
      last.resolutionMs = Math.max(last.resolutionMs, g.resolutionMs);
    } else {
      out.push({ ...g });
    }
  }
  return out;
}

/** What a tier holds now: [retainedFrom, rolledUpTo) — the finest tier has no upper bound. */
export interface TierState {
  /** Rows before this were deleted by retention (-Infinity: nothing deleted yet). */
  retainedFrom: number;
  /** Coarse tiers hold complete buckets only before this (Infinity for the raw tier). */
  rolledUpTo: number;
}

export interface Segment {
  tier: number;
  from: number;
  to: number;
}

/**
 * Splits [from, to) into pieces, each read from one tier, so that no instant is counted twice:
 * the tier matching `stepMs` where it has data, finer tiers for the recent part it has not rolled
 * up yet, coarser tiers for the old part it no longer keeps.
 */
export function planSegments(
  tiers: readonly RetentionTier[],
  states: readonly TierState[],
  from: number,
  to: number,
  stepMs: number,
): Segment[] {
  if (to <= from) return [];
  let base = 0;
  tiers.forEach((t, i) => {
    if (t.stepMs <= stepMs) base = i;
  });
  const range = (i: number): { lo: number; hi: number } => {
    const s = states[i] ?? { retainedFrom: -Infinity, rolledUpTo: i === 0 ? Infinity : -Infinity };
    return { lo: s.retainedFrom, hi: i === 0 ? Infinity : s.rolledUpTo };
  };
  const out: Segment[] = [];
  const push = (tier: number, a: number, b: number): void => {
    const lo = Math.max(a, from);
    const hi = Math.min(b, to);
    if (hi > lo) out.push({ tier, from: lo, to: hi });
  };
  // The base tier, then finer tiers for the not-yet-rolled-up recent part.
  let cursor = range(base).lo;
  for (let i = base; i >= 0; i--) {
    const r = range(i);
    const lo = Math.max(cursor, r.lo);
    if (r.hi > lo) push(i, lo, r.hi);
    cursor = Math.max(cursor, r.hi);
    if (cursor >= to) break;
  }
  // Coarser tiers for what the base tier no longer keeps.
  let older = range(base).lo;
  for (let i = base + 1; i < tiers.length && older > from; i++) {
    const r = range(i);
    const hi = Math.min(older, r.hi);
    if (hi > r.lo) push(i, r.lo, hi);
    older = Math.min(older, r.lo);
  }
  return out.sort((a, b) => a.from - b.from);
}
