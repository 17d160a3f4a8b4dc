// Warmup's time saved — one definition for the Overview, the Warmup page, /metrics and its
// alerts. A hit is a pod that found a node Wave held warm instead of waiting for a new one, so it
// saves what a new node of its pool takes: the pool's own cold start, measured as the median time
// from launch to initialized of the pool's NodeClaims in the recent history (`COLD_START_WINDOW_MS`
// before now). A pool that launched nothing in that window takes the cluster's median; a cluster
// that launched nothing claims nothing (0 s per hit, never a guess).
import type { LifecycleEvent } from "../../core/store/store.ts";

/** How far back the cold starts are measured (within what core keeps in memory, hub/recent.ts). */
export const COLD_START_WINDOW_MS = 60 * 60_000;

export interface ColdStarts {
  /** Median launch → initialized, seconds, and how many NodeClaims it is the median of, by pool. */
  pools: ReadonlyMap<string, { seconds: number; samples: number }>;
  /** The same over every pool; null when no NodeClaim was measured. */
  cluster: { seconds: number; samples: number } | null;
}

/** The lifecycle rows the cold starts are measured from: [the minute of now − window, now]. */
export function coldStartRange(now: number): { from: number; to: number } {
  return { from: Math.floor(now / 60_000) * 60_000 - COLD_START_WINDOW_MS, to: now + 1 };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
};

/** Cold starts of the NodeClaims launched and initialized within `rows` (any order). */
export function coldStarts(rows: readonly LifecycleEvent[]): ColdStarts {
  const launched = new Map<string, LifecycleEvent>();
  const initialized = new Map<string, number>();
  for (const r of rows) {
    if (r.phase === "Launched" && !launched.has(r.nodeClaimUid)) launched.set(r.nodeClaimUid, r);
    else if (r.phase === "Initialized" && !initialized.has(r.nodeClaimUid))
      initialized.set(r.nodeClaimUid, r.at);
  }
  const byPool = new Map<string, number[]>();
  const all: number[] = [];
  for (const [uid, l] of launched) {
    const done = initialized.get(uid);
    if (done === undefined || done < l.at) continue;
    const s = (done - l.at) / 1000;
    all.push(s);
    byPool.set(l.nodePool, [...(byPool.get(l.nodePool) ?? []), s]);
  }
  const pools = new Map([...byPool].map(([p, xs]) => [p, { seconds: median(xs), samples: xs.length }]));
  return { pools, cluster: all.length === 0 ? null : { seconds: median(all), samples: all.length } };
}

/** Seconds one warmup hit in `pool` saves. */
export function savedPerHit(cs: ColdStarts, pool: string): number {
  return cs.pools.get(pool)?.seconds ?? cs.cluster?.seconds ?? 0;
}

/** Time saved by hits per pool: Σ hits × savedPerHit. */
export function timeSavedSeconds(
  hitsByPool: Readonly<Record<string, { hits: number }>>,
  cs: ColdStarts,
): number {
  let t = 0;
  for (const [pool, c] of Object.entries(hitsByPool)) t += c.hits * savedPerHit(cs, pool);
  return t;
}
