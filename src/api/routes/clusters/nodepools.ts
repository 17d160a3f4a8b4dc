// GET /api/v1/clusters/{id}/nodepools: per-pool nodes, cost, limits and thrashing, from the view model.
import type { FastifyInstance } from "fastify";
import { nodePoolSchema } from "../schemas.ts";
import { idParams, notFound, viewer, type ClusterRoutes, type IdParams } from "./common.ts";

export function nodePoolsRoutes(ctx: ClusterRoutes): (app: FastifyInstance) => void {
  return (app) => {
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
        const c = await ctx.clusterOr404(req.params.id, reply);
        if (!c) return reply;
        return ctx.views.of(c).nodePools(ctx.deps.now());
      },
    );
  };
}
