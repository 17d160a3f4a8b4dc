// The dashboard's read API: per-cluster views over the hub's live state and the history store,
// and a server-sent-events stream of LiveDto snapshots. Every route needs the viewer role.
import type { FastifyInstance, FastifyReply } from "fastify";
import type { ClusterEntry, ClusterHub } from "../../core/hub/hub.ts";
import type { Disruption, LifecycleEvent } from "../../core/store/store.ts";
import {
  buildNodeList,
  buildSeries,
  disruptionDtos,
  lifecycleDtos,
  NODE_SORT_KEYS,
  thrashingDtos,
  type NodeSortKey,
  type ViewInput,
} from "../../dashboard/views.ts";
import {
  clusterKarpenterVersion,
  karpenterSupport,
  type KarpenterSupport,
} from "../../dashboard/karpenter-version.ts";
import type { Logger } from "../../shared/log.ts";
import { Views } from "../../views/cluster-views.ts";
import type { ThrashingOptions } from "../../dashboard/thrashing/detect.ts";
import type { PriceProvider } from "../../pricing/types.ts";
import { realClock, type Clock } from "../../shared/clock.ts";
import type { ApiPlugin } from "../app.ts";
import {
  DisruptionCountsSchema,
  type ClusterDto,
  type DisruptionCountsDto,
  type WarmupStatsDto,
} from "../../dashboard/dto.ts";
import type { ColdStarts } from "../../dashboard/figures/time-saved.ts";
import { openSse } from "../sse.ts";
import { DEFAULT_SSE_CAPS, StreamLimits, type StreamCaps } from "../streams.ts";
import { Throttle } from "./live.ts";
import { askOwner, type ReadThroughOptions } from "./read-through.ts";
import {
  clusterIdParam,
  clusterSchema,
  disruptionSchema,
  epochMsParam,
  errorSchema,
  lifecycleEventSchema,
  nodeListSchema,
  nodePoolSchema,
  overviewSchema,
  poolName,
  seriesSchema,
  thrashingSchema,
} from "./schemas.ts";

export interface DashboardDeps {
  hub: ClusterHub;
  prices: PriceProvider;
  now: () => number;
  /**
   * Hit/miss counters from the warmup controller, time saved priced at the cluster's measured
   * cold starts (dashboard/figures/time-saved.ts); warm nodes themselves are read off the state.
   */
  warmupStats?: (clusterId: string, coldStarts: ColdStarts) => Partial<WarmupStatsDto> | undefined;
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

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** How long a serialized node table is reused while the state is unchanged (prices may move). */
const NODES_CACHE_MS = 1000;
/** Distinct node-table queries kept per cluster and state version. */
const NODES_CACHE_QUERIES = 16;
/** Rows read per store query when walking a range. */
const PAGE = 5000;

const viewer = { role: "viewer" as const };
const idParams = {
  type: "object",
  required: ["id"],
  properties: { id: clusterIdParam },
} as const;
const notFound = { 404: errorSchema };

interface IdParams {
  id: string;
}

interface RangeQuery {
  limit?: number;
  from?: number;
  to?: number;
  pool?: string;
}

export { MAX_EPOCH_MS } from "./schemas.ts";
/** Largest /nodes offset: far beyond any cluster's node count, and a number every store can take. */
export const MAX_NODE_OFFSET = 10_000_000;
/** Most buckets one /series answer may hold when the client picks the step. */
export const MAX_SERIES_POINTS = 20_000;

const rangeQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    limit: { type: "integer", minimum: 1, maximum: 1000, default: 100 },
    from: epochMsParam("epoch ms, inclusive (default: 24 h ago)"),
    to: epochMsParam("epoch ms, exclusive (default: now)"),
    pool: poolName,
  },
} as const;

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

export function dashboardRoutes(deps: DashboardDeps): ApiPlugin {
  const { hub } = deps;
  // Each cluster's figures come from its one view model (views/cluster-views.ts), shared with
  // /metrics when core's composition passes the same `views`.
  const views =
    deps.views ??
    new Views({
      hub,
      prices: deps.prices,
      thrashing: deps.thrashing,
      warmupStats: deps.warmupStats,
      reuseMs: deps.liveThrottleMs,
    });
  const store = hub.store;
  const clock = deps.clock ?? realClock;
  const streams = new StreamLimits("event streams", deps.streamCaps ?? DEFAULT_SSE_CAPS);

  const warned = new Map<string, string>();
  const supportOf = (c: ClusterEntry, version: string | null): KarpenterSupport => {
    const support = karpenterSupport(version);
    // Outside the tested range is worth one log line per cluster and version, not one per poll;
    // "not detected" is the normal state of clusters whose Karpenter runs outside pods.
    if (support.status !== "tested" && support.status !== "unknown" && warned.get(c.id) !== version) {
      warned.set(c.id, version ?? "");
      deps.log?.warn("Karpenter release outside the tested range", {
        cluster: c.id,
        karpenterVersion: version,
        oldestTested: support.oldestTested,
        newestTested: support.newestTested,
      });
    }
    return support;
  };

  const clusterDto = (c: ClusterEntry): ClusterDto => {
    // Agents do not know Karpenter's version: core reads it off the controller pods.
    const karpenterVersion = c.info?.karpenterVersion || clusterKarpenterVersion(c.state) || null;
    return {
      id: c.id,
      simulated: c.simulated,
      // The hub's flag follows the agent's stream (hello → end), so a quiet but open stream is
      // connected and a dropped one is not, however recent its last message.
      connected: c.connected,
      lastSeen: c.lastSeen,
      catchingUp: c.catchingUp && { ...c.catchingUp },
      kubernetesVersion: c.info?.kubernetesVersion || null,
      karpenterVersion,
      karpenterSupport: supportOf(c, karpenterVersion),
      agentVersion: c.info?.agentVersion || null,
      rejected: c.rejected && { ...c.rejected },
    };
  };

  type Body = ReturnType<FastifyReply["serialize"]>;
  const nodesCache = new Map<string, { version: number; at: number; bodies: Map<string, Body> }>();

  const clusterOr404 = async (id: string, reply: FastifyReply): Promise<ClusterEntry | undefined> => {
    // Also a cluster only the store knows (its agent streams to another replica, or not yet).
    const c = await hub.known(id);
    if (!c) await reply.code(404).send({ error: "not_found", message: `no cluster with id "${id}"` });
    return c;
  };

  const range = (q: RangeQuery, now: number): { from: number; to: number } => {
    const to = q.to ?? now + 1;
    return { from: q.from ?? to - DAY, to };
  };

  /** The cluster and the range of a ranged request, or undefined once its 404 or 400 is sent. */
  const clusterRange = async (
    id: string,
    q: Omit<RangeQuery, "limit">,
    reply: FastifyReply,
  ): Promise<{ c: ClusterEntry; from: number; to: number } | undefined> => {
    const c = await clusterOr404(id, reply);
    if (!c) return undefined;
    const { from, to } = range(q, deps.now());
    if (to < from) {
      await reply.code(400).send({ error: "bad_request", message: "to must not be before from" });
      return undefined;
    }
    return { c, from, to };
  };

  return (app: FastifyInstance) => {
    app.get(
      "/api/v1/clusters",
      {
        config: viewer,
        schema: {
          summary: "Clusters core knows, with their agent's connection state",
          response: { 200: { type: "array", items: clusterSchema } },
        },
      },
      async (req) => {
        // Every cluster the store knows, not only those whose agent streams to this replica.
        for (const r of await store.listClusters()) await hub.known(r.id);
        return Promise.all(
          hub.clusters().map(async (c) => {
            const rt = deps.readThrough;
            const owner = rt && (await rt.ownership.otherOwner(c.id).catch(() => undefined));
            if (!rt || !owner) return clusterDto(c);
            try {
              const url = `/api/v1/clusters/${encodeURIComponent(c.id)}`;
              const res = await askOwner(rt, owner, { method: "GET", url, headers: req.headers });
              if (res.ok) return (await res.json()) as ClusterDto;
            } catch {
              rt.ownership.unreachable(c.id, owner);
            }
            return clusterDto(c);
          }),
        );
      },
    );

    app.get<{ Params: IdParams }>(
      "/api/v1/clusters/:id",
      {
        config: viewer,
        schema: {
          summary: "One cluster, with its agent's connection state",
          params: idParams,
          response: { 200: clusterSchema, ...notFound },
        },
      },
      async (req, reply) => {
        const c = await clusterOr404(req.params.id, reply);
        if (!c) return reply;
        return clusterDto(c);
      },
    );

    app.get<{ Params: IdParams }>(
      "/api/v1/clusters/:id/overview",
      {
        config: viewer,
        schema: {
          summary: "Cluster totals",
          params: idParams,
          response: { 200: overviewSchema, ...notFound },
        },
      },
      async (req, reply) => {
        const c = await clusterOr404(req.params.id, reply);
        if (!c) return reply;
        return views.of(c).overview(deps.now());
      },
    );

    app.get<{ Params: IdParams }>(
      "/api/v1/clusters/:id/nodepools",
      {
        config: viewer,
        schema: {
          summary: "Per-NodePool nodes, cost, limits and thrashing",
          params: idParams,
          response: { 200: { type: "array", items: nodePoolSchema }, ...notFound },
        },
      },
      async (req, reply) => {
        const c = await clusterOr404(req.params.id, reply);
        if (!c) return reply;
        return views.of(c).nodePools(deps.now());
      },
    );

    app.get<{
      Params: IdParams;
      Querystring: {
        pool?: string;
        capacityType?: string;
        q?: string;
        sort?: NodeSortKey;
        desc?: boolean;
        limit?: number;
        offset?: number;
      };
    }>(
      "/api/v1/clusters/:id/nodes",
      {
        config: viewer,
        schema: {
          summary: "Nodes (and launched NodeClaims) with requests, price and warmup marks",
          params: idParams,
          querystring: {
            type: "object",
            additionalProperties: false,
            properties: {
              pool: poolName,
              capacityType: { type: "string", minLength: 1, maxLength: 63 },
              q: { type: "string", maxLength: 253 },
              sort: { type: "string", enum: NODE_SORT_KEYS },
              desc: { type: "boolean", default: false },
              limit: { type: "integer", minimum: 1, maximum: 5000, default: 500 },
              offset: { type: "integer", minimum: 0, maximum: MAX_NODE_OFFSET, default: 0 },
            },
          },
          response: { 200: nodeListSchema, ...notFound },
        },
      },
      async (req, reply) => {
        const c = await clusterOr404(req.params.id, reply);
        if (!c) return reply;
        // Every open dashboard asks for the node table after each stream snapshot, at the same
        // state version: answer them all with one serialized build (prices at most 1 s old).
        const now = deps.now();
        let cached = nodesCache.get(c.id);
        if (cached?.version !== c.state.version || now - cached.at >= NODES_CACHE_MS) {
          cached = { version: c.state.version, at: now, bodies: new Map() };
          nodesCache.set(c.id, cached);
        }
        const key = JSON.stringify(req.query);
        let body = cached.bodies.get(key);
        if (body === undefined) {
          const input: ViewInput = { clusterId: c.id, state: c.state, prices: deps.prices, now };
          body = reply.serialize(buildNodeList(input, req.query));
          if (cached.bodies.size < NODES_CACHE_QUERIES) cached.bodies.set(key, body);
        }
        return reply.type("application/json; charset=utf-8").send(body);
      },
    );

    // Lifecycle events and disruptions: the same newest-first page over a range of store rows.
    const rowsRoute = <T extends { at: number }>(o: {
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
    }): void => {
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
          const r = await clusterRange(req.params.id, req.query, reply);
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
    };
    rowsRoute<LifecycleEvent>({
      path: "/api/v1/clusters/:id/events",
      summary: "NodeClaim lifecycle events, newest first",
      schema: lifecycleEventSchema,
      fetch: (q) => store.lifecycle(q),
      key: lifecycleKey,
      dtos: lifecycleDtos,
    });
    rowsRoute<Disruption>({
      path: "/api/v1/clusters/:id/disruptions",
      summary: "Karpenter disruptions, newest first",
      schema: disruptionSchema,
      fetch: (q) => store.disruptions(q),
      key: disruptionKey,
      dtos: disruptionDtos,
    });

    // The counts of a range come from a count query, exact however many rows the list pages.
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
        const r = await clusterRange(req.params.id, req.query, reply);
        if (!r) return reply;
        const { c, from, to } = r;
        const counts = await store.disruptionCounts({ clusterId: c.id, from, to, nodePool: req.query.pool });
        return {
          from,
          to,
          total: counts.reduce((n, r) => n + r.count, 0),
          counts,
        } satisfies DisruptionCountsDto;
      },
    );

    app.get<{ Params: IdParams }>(
      "/api/v1/clusters/:id/thrashing",
      {
        config: viewer,
        schema: {
          summary: "Thrashing (churn) report per NodePool over the detector's window, worst first",
          params: idParams,
          response: { 200: { type: "array", items: thrashingSchema }, ...notFound },
        },
      },
      async (req, reply) => {
        const c = await clusterOr404(req.params.id, reply);
        if (!c) return reply;
        return thrashingDtos(await views.of(c).thrashing(deps.now()));
      },
    );

    app.get<{ Params: IdParams; Querystring: { window?: number; pool?: string; step?: number } }>(
      "/api/v1/clusters/:id/series",
      {
        config: viewer,
        schema: {
          summary: "Node count, spot nodes, vCPU and cost over time (step in ms in the answer)",
          params: idParams,
          querystring: {
            type: "object",
            additionalProperties: false,
            properties: {
              window: {
                type: "integer",
                minimum: 60,
                maximum: 90 * 86_400,
                default: 21_600,
                description: "seconds",
              },
              pool: poolName,
              step: { type: "integer", minimum: 1, maximum: 86_400, description: "bucket width, seconds" },
            },
          },
          response: { 200: seriesSchema, ...notFound },
        },
      },
      async (req, reply) => {
        const c = await clusterOr404(req.params.id, reply);
        if (!c) return reply;
        const window = req.query.window ?? 21_600;
        if (req.query.step !== undefined && window / req.query.step > MAX_SERIES_POINTS) {
          return reply.code(400).send({
            error: "bad_request",
            message: `window/step gives ${Math.ceil(window / req.query.step)} points; at most ${MAX_SERIES_POINTS} (use a larger step)`,
          });
        }
        const to = deps.now();
        const from = to - window * 1000;
        const stepMs = req.query.step === undefined ? undefined : req.query.step * 1000;
        const rows = await store.series({ clusterId: c.id, from, to, nodePool: req.query.pool, stepMs });
        const step =
          stepMs ??
          rows.find((r) => r.kind === "point")?.resolutionMs ??
          store.retention.tiers[0]?.stepMs ??
          60_000;
        return buildSeries(rows, { from, to, step, nodePool: req.query.pool });
      },
    );

    app.get<{ Params: IdParams }>(
      "/api/v1/clusters/:id/stream",
      {
        config: viewer,
        schema: {
          summary:
            "Server-sent events: `snapshot` (a LiveDto) now and after every change, at most every 250 ms",
          params: idParams,
          response: { 404: errorSchema, 429: errorSchema },
        },
      },
      async (req, reply) => {
        const c = await clusterOr404(req.params.id, reply);
        if (!c) return reply;
        // HEAD gets the stream's headers and ends (an open stream would never answer it).
        if (req.method === "HEAD") return reply.type("text/event-stream; charset=utf-8").send();
        const release = await streams.admit(req, reply);
        if (!release) return reply;
        openSse(req, reply, (stream) => {
          // Snapshots are built asynchronously; a slower older build must not overwrite a newer one.
          let started = 0;
          let sent = 0;
          const push = (): void => {
            const seq = ++started;
            views
              .of(c)
              .liveJson(deps.now())
              .then(
                (json) => {
                  if (seq < sent || stream.closed) return;
                  sent = seq;
                  stream.sendJson("snapshot", json);
                },
                (err: unknown) => req.log.error({ err }, "live snapshot failed"),
              );
          };
          const throttle = new Throttle(clock, deps.liveThrottleMs ?? 250, push);
          const off = hub.onChange((id) => {
            if (id === c.id) throttle.poke();
          });
          throttle.poke();
          return () => {
            off();
            throttle.stop();
            release();
          };
        });
        return reply;
      },
    );
  };
}
