// Warmup's time saved — one definition for the Overview, the Warmup page, /metrics and its
// alerts (issue 38). A hit is a pod placed on a node Wave's warmup launched; what it saved is its
// own start (pending → running, measured by the controller) against the pool's cold start: the
// median start of the pool's pods that waited for a new node (core's `cold_starts`, not node
// launches) over the COLD_START_WINDOW_MS before the hit — never negative. Core computes it once,
// when it stores the hit (`saved`), so a sum over hits only grows as hits are added and every
// reader (page, Overview, API, /metrics) adds the same stored numbers.

/** A cold start as the figure reads it (core's `cold_starts` rows have this shape). */
export interface ColdStartSample {
  pool: string;
  /** When the pod became Ready, epoch ms. */
  at: number;
  seconds: number;
}

/** How far back before a hit the pool's cold start is measured. */
export const COLD_START_WINDOW_MS = 24 * 60 * 60_000;

export interface Median {
  seconds: number;
  samples: number;
}

/** The median, null for none. */
export function medianOf(xs: readonly number[]): Median | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const seconds = s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
  return { seconds, samples: s.length };
}

/**
 * The cold start a hit in `pool` at `at` is measured against: the median of the pool's cold
 * starts in [at − window, at); a pool with none there takes the cluster's; none at all → null.
 */
export function coldStartAt(rows: readonly ColdStartSample[], pool: string, at: number): Median | null {
  const inWindow = rows.filter((r) => r.at >= at - COLD_START_WINDOW_MS && r.at < at);
  return (
    medianOf(inWindow.filter((r) => r.pool === pool).map((r) => r.seconds)) ??
    medianOf(inWindow.map((r) => r.seconds))
  );
}

/** What one hit saved: the cold start minus its pod's start, never negative; 0 when either is unknown. */
export function savedByHit(podStartSeconds: number | undefined, cold: Median | null): number {
  if (podStartSeconds === undefined || cold === null) return 0;
  return Math.max(0, cold.seconds - podStartSeconds);
}

/** Time saved over hits (their stored `saved`): the one sum every reader shows. */
export function timeSavedOf(hits: Iterable<{ saved?: number | undefined }>): number {
  let t = 0;
  for (const h of hits) t += h.saved ?? 0;
  return t;
}
