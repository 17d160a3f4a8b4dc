// GET /api/v1/clusters/{id}/events, /disruptions and /disruptions/counts: the stored lifecycle
// and disruption rows of a range, newest first, and the exact counts of a range.
import type { FastifyInstance } from "fastify";
import type { Disruption, LifecycleEvent } from "../../../core/store/store.ts";
import { DisruptionCountsSchema, type DisruptionCountsDto } from "../../../dashboard/dto.ts";
import { disruptionDtos, lifecycleDtos } from "../../../dashboard/views.ts";
import { disruptionSchema, lifecycleEventSchema, poolName } from "../schemas.ts";
import {
  idParams,
  notFound,
  rangeQuery,
  viewer,
  type ClusterRoutes,
  type IdParams,
  type RangeQuery,
} from "./common.ts";

/** Rows read per store query when walking a range. */
const PAGE = 5000;

/**
 * The newest `limit` rows of [from, to): the store answers oldest first, so walk the range in
 * pages and keep the tail. Rows sharing the page boundary's timestamp are de-duplicated by key.
 */
export async function newestRows<T extends { at: number }>(
  fetch: (from: number, limit: number) => Promise<T[]>,
  from: number,
  limit: number,
  key: (row: T) => string,
): Promise<T[]> {
  let out: T[] = [];
  let cursor = from;
  let boundary = new Set<string>();
  for (;;) {
    const rows = await fetch(cursor, PAGE);
    for (const r of rows) if (!(r.at === cursor && boundary.has(key(r)))) out.push(r);
    if (out.length > limit) out = out.slice(out.length - limit);
    const last = rows.at(-1);
    if (rows.length < PAGE || !last) return out;
    // A page full of one instant cannot move the cursor: step past it rather than loop.
    const next = last.at === cursor ? cursor + 1 : last.at;
    boundary = new Set(rows.filter((r) => r.at === next).map(key));
    cursor = next;
  }
}

const lifecycleKey = (e: { nodeClaim: string; phase: string; at: number }): string =>
  `${e.nodeClaim}\u0000${e.phase}`;
const disruptionKey = (d: { nodeClaim: string; reason: string }): string => `${d.nodeClaim}\u0000${d.reason}`;

/** Lifecycle events and disruptions: the same newest-first page over a range of store rows. */
function rowsRoute<T extends { at: number }>(
  app: FastifyInstance,
  ctx: ClusterRoutes,
  o: {
    path: string;
    summary: string;
    schema: object;
    fetch: (q: {
      clusterId: string;
      from: number;
      to: number;
      nodePool?: string;
      limit: number;
    }) => Promise<T[]>;
    key: (row: T) => string;
    dtos: (rows: T[]) => unknown;
  },
): void {
  app.get<{ Params: IdParams; Querystring: RangeQuery }>(
    o.path,
    {
      config: viewer,
      schema: {
        summary: o.summary,
        params: idParams,
        querystring: rangeQuery,
        response: { 200: { type: "array", items: o.schema }, ...notFound },
      },
    },
    async (req, reply) => {
      const r = await ctx.clusterRange(req.params.id, req.query, reply);
      if (!r) return reply;
      const { c, from, to } = r;
      const rows = await newestRows<T>(
        (f, limit) => o.fetch({ clusterId: c.id, from: f, to, nodePool: req.query.pool, limit }),
        from,
        req.query.limit ?? 100,
        o.key,
      );
      return o.dtos(rows);
    },
  );
}

/** The counts of a range come from a count query, exact however many rows the list pages. */
function countsRoute(app: FastifyInstance, ctx: ClusterRoutes): void {
  app.get<{ Params: IdParams; Querystring: Omit<RangeQuery, "limit"> }>(
    "/api/v1/clusters/:id/disruptions/counts",
    {
      config: viewer,
      schema: {
        summary: "Karpenter disruptions in a range counted per pool and reason (exact; the list pages)",
        params: idParams,
        querystring: {
          ...rangeQuery,
          properties: { from: rangeQuery.properties.from, to: rangeQuery.properties.to, pool: poolName },
        },
        response: { 200: DisruptionCountsSchema, ...notFound },
      },
    },
    async (req, reply) => {
      const r = await ctx.clusterRange(req.params.id, req.query, reply);
      if (!r) return reply;
      const { c, from, to } = r;
      const counts = await ctx.store.disruptionCounts({
        clusterId: c.id,
        from,
        to,
        nodePool: req.query.pool,
      });
      return {
        from,
        to,
        total: counts.reduce((n, r) => n + r.count, 0),
        counts,
      } satisfies DisruptionCountsDto;
    },
  );
}

export function historyRoutes(ctx: ClusterRoutes): (app: FastifyInstance) => void {
  const { store } = ctx;
  return (app) => {
    rowsRoute<LifecycleEvent>(app, ctx, {
      path: "/api/v1/clusters/:id/events",
      summary: "NodeClaim lifecycle events, newest first",
      schema: lifecycleEventSchema,
      fetch: (q) => store.lifecycle(q),
      key: lifecycleKey,
      dtos: lifecycleDtos,
    });
    rowsRoute<Disruption>(app, ctx, {
      path: "/api/v1/clusters/:id/disruptions",
      summary: "Karpenter disruptions, newest first",
      schema: disruptionSchema,
      fetch: (q) => store.disruptions(q),
      key: disruptionKey,
      dtos: disruptionDtos,
    });

    countsRoute(app, ctx);
  };
}
