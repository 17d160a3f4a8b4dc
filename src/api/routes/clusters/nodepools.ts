// GET /api/v1/clusters/{id}/nodepools: per-pool nodes, cost, limits and thrashing, from the view model.
import type { FastifyInstance } from "fastify";
import { nodePoolSchema } from "../schemas.ts";
import { clusterGet, type ClusterRoutes } from "./common.ts";

export function nodePoolsRoutes(ctx: ClusterRoutes): (app: FastifyInstance) => void {
  return (app) =>
    clusterGet(app, ctx, {
      path: "/api/v1/clusters/:id/nodepools",
      summary: "Per-NodePool nodes, cost, limits and thrashing",
      response: { type: "array", items: nodePoolSchema },
      read: (c, now) => ctx.views.of(c).nodePools(now),
    });
}
