// GET /api/v1/clusters/{id}/nodes: the node table's rows, sorted and paged by core; one serialized
// build per state version and query, shared by every open dashboard.
import type { FastifyInstance, FastifyReply } from "fastify";
import { buildNodeList, NODE_SORT_KEYS, type NodeSortKey, type ViewInput } from "../../../dashboard/views.ts";
import { nodeListSchema, poolName } from "../schemas.ts";
import { idParams, notFound, viewer, type ClusterRoutes, type IdParams } from "./common.ts";

/** How long a serialized node table is reused while the state is unchanged (prices may move). */
const NODES_CACHE_MS = 1000;
/** Distinct node-table queries kept per cluster and state version. */
const NODES_CACHE_QUERIES = 16;
/** Largest /nodes offset: far beyond any cluster's node count, and a number every store can take. */
export const MAX_NODE_OFFSET = 10_000_000;

export function nodesRoutes(ctx: ClusterRoutes): (app: FastifyInstance) => void {
  type Body = ReturnType<FastifyReply["serialize"]>;
  const nodesCache = new Map<string, { version: number; at: number; bodies: Map<string, Body> }>();
  return (app) => {
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
        const c = await ctx.clusterOr404(req.params.id, reply);
        if (!c) return reply;
        // Every open dashboard asks for the node table after each stream snapshot, at the same
        // state version: answer them all with one serialized build (prices at most 1 s old).
        const now = ctx.deps.now();
        let cached = nodesCache.get(c.id);
        if (cached?.version !== c.state.version || now - cached.at >= NODES_CACHE_MS) {
          cached = { version: c.state.version, at: now, bodies: new Map() };
          nodesCache.set(c.id, cached);
        }
        const key = JSON.stringify(req.query);
        let body = cached.bodies.get(key);
        if (body === undefined) {
          const input: ViewInput = { clusterId: c.id, state: c.state, prices: ctx.deps.prices, now };
          body = reply.serialize(buildNodeList(input, req.query));
          if (cached.bodies.size < NODES_CACHE_QUERIES) cached.bodies.set(key, body);
        }
        return reply.type("application/json; charset=utf-8").send(body);
      },
    );
  };
}
