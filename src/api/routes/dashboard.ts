// The dashboard's read API: per-cluster views over the hub's live state and the history store,
// and a server-sent-events stream of LiveDto snapshots. Every route needs the viewer role. One
// thin plugin per resource in ./clusters/; each reads its cluster's figures from the cluster's
// view model (views/cluster-views.ts).
import type { FastifyInstance } from "fastify";
import { Views } from "../../views/cluster-views.ts";
import type { ApiPlugin } from "../app.ts";
import { clusterRoutes, type DashboardDeps } from "./clusters/common.ts";
import { clustersRoutes } from "./clusters/clusters.ts";
import { historyRoutes } from "./clusters/history.ts";
import { nodePoolsRoutes } from "./clusters/nodepools.ts";
import { nodesRoutes } from "./clusters/nodes.ts";
import { overviewRoutes } from "./clusters/overview.ts";
import { seriesRoutes } from "./clusters/series.ts";
import { streamRoutes } from "./clusters/stream.ts";
import { thrashingRoutes } from "./clusters/thrashing.ts";

export type { DashboardDeps } from "./clusters/common.ts";

export { MAX_EPOCH_MS } from "./schemas.ts";
export { MAX_NODE_OFFSET } from "./clusters/nodes.ts";
export { MAX_SERIES_POINTS } from "./clusters/series.ts";
export { newestRows } from "./clusters/history.ts";

export function dashboardRoutes(deps: DashboardDeps): ApiPlugin {
  const views =
    deps.views ??
    new Views({
      hub: deps.hub,
      prices: deps.prices,
      thrashing: deps.thrashing,
      warmupStats: deps.warmupStats,
      reuseMs: deps.liveThrottleMs,
    });
  const ctx = clusterRoutes(deps, views);
  const plugins = [
    clustersRoutes,
    overviewRoutes,
    nodePoolsRoutes,
    nodesRoutes,
    historyRoutes,
    thrashingRoutes,
    seriesRoutes,
    streamRoutes,
  ].map((p) => p(ctx));
  return (app: FastifyInstance) => {
    for (const p of plugins) p(app);
  };
}
