// The warm cost of a cluster's pools over a window, read from core's store and state: what core's
// warmup window (src/core/warmup/stats-store.ts) calls, so the Overview and /metrics show the
// Warmup page's own figure (src/views/warm-cost.ts) over that window.
import type { Store } from "../core/store/store.ts";
import type { ClusterState } from "../state/cluster.ts";
import type { PriceProvider } from "../pricing/types.ts";
import { LAUNCH_LOOKBACK_MS, WARM_EVENTS_LIMIT, launches, warmCostByPool } from "../views/warm-cost.ts";
import { priceOfWith } from "../views/warmup.ts";
import { clusterPrices } from "../dashboard/figures/price.ts";

export function warmCostReader(o: {
  store: Pick<Store, "warmupEvents" | "lifecycle">;
  state: (clusterId: string) => Pick<ClusterState, "nodes" | "nodeOverlays">;
  prices: PriceProvider;
}): (clusterId: string, from: number, to: number) => Promise<Record<string, number>> {
  return async (clusterId, from, to) => {
    const [events, lifecycle] = await Promise.all([
      o.store.warmupEvents({ clusterId, from, to, limit: WARM_EVENTS_LIMIT }),
      o.store.lifecycle({ clusterId, from: from - LAUNCH_LOOKBACK_MS, to }),
    ]);
    const state = o.state(clusterId);
    const nodes = state.nodes();
    // Live warm nodes count up to the window's end: the page over [from, to) read later does too.
    const byPool = warmCostByPool({
      events,
      launchedAt: launches(lifecycle),
      nodes,
      priceOf: priceOfWith(clusterPrices(o.prices, state.nodeOverlays()), () => nodes),
      prices: o.prices,
      now: to,
      from,
      to,
    });
    return Object.fromEntries(byPool);
  };
}
