// What every per-cluster route plugin shares (api/routes/clusters/<resource>.ts): the cluster's
// view model, the 404 for an unknown cluster, the range of a ranged request, the parameter schemas.
import type { FastifyInstance, FastifyReply } from "fastify";
import type { ClusterEntry, ClusterHub } from "../../../core/hub/hub.ts";
import type { Store } from "../../../core/store/store.ts";
import type { Views } from "../../../views/cluster-views.ts";
import type { WarmupStatsDto } from "../../../dashboard/dto.ts";
import type { ThrashingOptions } from "../../../dashboard/thrashing/detect.ts";
import type { PriceProvider } from "../../../pricing/types.ts";
import type { Clock } from "../../../shared/clock.ts";
import type { Logger } from "../../../shared/log.ts";
import type { StreamCaps } from "../../streams.ts";
import type { ReadThroughOptions } from "../read-through.ts";
import { clusterIdParam, epochMsParam, errorSchema, poolName } from "../schemas.ts";

export interface DashboardDeps {
  hub: ClusterHub;
  prices: PriceProvider;
  now: () => number;
  /**
   * Hit/miss counters and time saved (the hits' stored `saved`, warmup/time-saved.ts) from the
   * warmup controller's events; warm nodes themselves are read off the state.
   */
  warmupStats?: (clusterId: string) => Partial<WarmupStatsDto> | undefined;
  /** Least time between two stream snapshots (default 250 ms); changes in between coalesce. */
  liveThrottleMs?: number;
  /** Timers of the stream throttle (default: real time). */
  clock?: Clock;
  thrashing?: Partial<ThrashingOptions>;
  /**
   * With several core replicas (ADR 0012): the cluster list asks each cluster's owner for its
   * entry. The cluster's own routes are read through the owner before they get here (app.ts
   * `forward`).
   */
  readThrough?: ReadThroughOptions;
  /** Where a Karpenter release outside the tested range is reported (once per cluster and version). */
  log?: Logger;
  /** Event streams open at once: per token, per address, in total (default DEFAULT_SSE_CAPS). */
  streamCaps?: StreamCaps;
  /** The clusters' view models (shared with /metrics); built from these deps when absent. */
  views?: Views;
}

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

export const viewer = { role: "viewer" as const };
export const idParams = {
  type: "object",
  required: ["id"],
  properties: { id: clusterIdParam },
} as const;
export const notFound = { 404: errorSchema };

export interface IdParams {
  id: string;
}

export interface RangeQuery {
  limit?: number;
  from?: number;
  to?: number;
  pool?: string;
}

export const rangeQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    limit: { type: "integer", minimum: 1, maximum: 1000, default: 100 },
    from: epochMsParam("epoch ms, inclusive (default: 24 h ago)"),
    to: epochMsParam("epoch ms, exclusive (default: now)"),
    pool: poolName,
  },
} as const;

/** The context every cluster route plugin gets from dashboardRoutes. */
export interface ClusterRoutes {
  deps: DashboardDeps;
  hub: ClusterHub;
  store: Store;
  /** Each cluster's figures come from its one view model (views/cluster-views.ts). */
  views: Views;
  /** The cluster, or undefined once its 404 is sent. */
  clusterOr404(id: string, reply: FastifyReply): Promise<ClusterEntry | undefined>;
  /** The cluster and the range of a ranged request, or undefined once its 404 or 400 is sent. */
  clusterRange(
    id: string,
    q: Omit<RangeQuery, "limit">,
    reply: FastifyReply,
  ): Promise<{ c: ClusterEntry; from: number; to: number } | undefined>;
}

export function clusterRoutes(deps: DashboardDeps, views: Views): ClusterRoutes {
  const { hub } = deps;
  const clusterOr404 = async (id: string, reply: FastifyReply): Promise<ClusterEntry | undefined> => {
    // Also a cluster only the store knows (its agent streams to another replica, or not yet).
    const c = await hub.known(id);
    if (!c) await reply.code(404).send({ error: "not_found", message: `no cluster with id "${id}"` });
    return c;
  };
  return {
    deps,
    hub,
    store: hub.store,
    views,
    clusterOr404,
    clusterRange: async (id, q, reply) => {
      const c = await clusterOr404(id, reply);
      if (!c) return undefined;
      const to = q.to ?? deps.now() + 1;
      const from = q.from ?? to - DAY;
      if (to < from) {
        await reply.code(400).send({ error: "bad_request", message: "to must not be before from" });
        return undefined;
      }
      return { c, from, to };
    },
  };
}

/**
 * GET `path` of one cluster: 404 for a cluster core does not know, else what `read` answers for it
 * now, serialized with `response`.
 */
export function clusterGet(
  app: FastifyInstance,
  ctx: ClusterRoutes,
  o: { path: string; summary: string; response: object; read: (c: ClusterEntry, now: number) => unknown },
): void {
  app.get<{ Params: IdParams }>(
    o.path,
    {
      config: viewer,
      schema: { summary: o.summary, params: idParams, response: { 200: o.response, ...notFound } },
    },
    async (req, reply) => {
      const c = await ctx.clusterOr404(req.params.id, reply);
      if (!c) return reply;
      return o.read(c, ctx.deps.now());
    },
  );
}
