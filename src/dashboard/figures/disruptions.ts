// Disruptions by reason and NodePool over a window, and the lifecycle timeline.
import {
  canonicalReason,
  inWindow,
  livesOf,
  type DisruptionRecord,
  type LifecycleRecord,
  type NodeClaimLife,
  type Window,
} from "../history.ts";

export interface DisruptionCounts {
  window: Window;
  total: number;
  byReason: Record<string, number>;
  /** pool → reason → count */
  byPool: Record<string, Record<string, number>>;
}

export function disruptionsByReason(records: readonly DisruptionRecord[], window: Window): DisruptionCounts {
  const out: DisruptionCounts = { window, total: 0, byReason: {}, byPool: {} };
  const seen = new Set<string>();
  for (const r of records) {
    if (!inWindow(r.at, window)) continue;
    const reason = canonicalReason(r.reason);
    // The same disruption may arrive through an Event and a condition.
    const key = `${r.nodePool}/${r.nodeClaim}/${reason}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.total++;
    out.byReason[reason] = (out.byReason[reason] ?? 0) + 1;
    const pool = (out.byPool[r.nodePool] ??= {});
    pool[reason] = (pool[reason] ?? 0) + 1;
  }
  return out;
}

export interface TimelineOptions {
  nodePool?: string;
  /** Keep at most this many lanes, the most recent ones (default 500). */
  limit?: number;
}

/**
 * One lane per NodeClaim whose life overlaps the window, oldest first. A NodeClaim with no
 * Terminated record is alive (its lane runs to the window's end); one seen only terminating
 * started before history did.
 */
export function lifecycleTimeline(
  events: readonly LifecycleRecord[],
  window: Window,
  opts: TimelineOptions = {},
): NodeClaimLife[] {
  const lanes = livesOf(
    opts.nodePool === undefined ? events : events.filter((e) => e.nodePool === opts.nodePool),
  )
    .filter((l) => {
      const start = l.launchedAt ?? l.phases[0]?.at ?? -Infinity;
      const end = l.terminatedAt ?? Infinity;
      return start < window.to && end >= window.from;
    })
    .sort(
      (a, b) => (a.phases[0]?.at ?? 0) - (b.phases[0]?.at ?? 0) || a.nodeClaim.localeCompare(b.nodeClaim),
    );
  const limit = opts.limit ?? 500;
  return lanes.length > limit ? lanes.slice(lanes.length - limit) : lanes;
}
