// A cluster's measured cold starts (figures/time-saved.ts), read from the hub's recent history:
// what the Overview, the Warmup page and the /metrics counters all price a warmup hit at.
import { coldStartRange, coldStarts, type ColdStarts } from "./figures/time-saved.ts";
import type { LifecycleEvent } from "../core/store/store.ts";

/** What is read: the hub's recent history of a cluster (core/hub/recent.ts). */
export interface RecentLifecycle {
  recentHistory(clusterId: string): {
    rows(from: number, to: number): Promise<{ lifecycle: LifecycleEvent[] }>;
  };
}

/** The cluster's cold starts at `now`, from the lifecycle rows of `coldStartRange(now)`. */
export async function coldStartsOf(
  hub: RecentLifecycle,
  clusterId: string,
  now: number,
): Promise<ColdStarts> {
  const { from, to } = coldStartRange(now);
  return coldStarts((await hub.recentHistory(clusterId).rows(from, to)).lifecycle);
}
