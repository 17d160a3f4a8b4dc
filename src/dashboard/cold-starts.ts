// A cluster's measured cold starts (figures/time-saved.ts), read from the hub's recent history:
// what the Overview, the Warmup page and the /metrics counters all price a warmup hit at.
import { coldStartRange, coldStarts, type ColdStarts } from "./figures/time-saved.ts";
import type { LifecycleEvent } from "../core/store/store.ts";

/** What is read: the hub's recent history of a cluster (core/hub/recent.ts). */
export interface RecentLifecycle {
  recentHistory(clusterId: string): {
    rows(from: number, to: number): Promise<{ lifecycle: LifecycleEvent[] }>;
    /** Moves whenever the rows in memory change. */
    readonly revision?: number;
  };
}

const MINUTE = 60_000;
type Memo = Map<string, { key: string; cs: ColdStarts }>;
const memo = new WeakMap<RecentLifecycle, Memo>();

/**
 * The cluster's cold starts at `now`, from the lifecycle rows of `coldStartRange(now)`. Computed
 * once per change of the recent history and minute (every stream snapshot asks for them).
 */
export async function coldStartsOf(
  hub: RecentLifecycle,
  clusterId: string,
  now: number,
): Promise<ColdStarts> {
  const { from, to } = coldStartRange(now);
  const recent = hub.recentHistory(clusterId);
  const { lifecycle } = await recent.rows(from, to);
  const key =
    recent.revision === undefined ? undefined : `${recent.revision}\u0000${Math.floor(now / MINUTE)}`;
  let byCluster = memo.get(hub);
  if (!byCluster) {
    byCluster = new Map() as Memo;
    memo.set(hub, byCluster);
  }
  const hit = byCluster.get(clusterId);
  if (key !== undefined && hit?.key === key) return hit.cs;
  // The window starts on a minute (coldStartRange) and new rows move the revision: a hit is exact.
  const cs = coldStarts(lifecycle);
  if (key !== undefined) byCluster.set(clusterId, { key, cs });
  return cs;
}
