// GET /api/v1/clusters/{id}/overview: the cluster's totals, from its view model.
import type { FastifyInstance } from "fastify";
import { overviewSchema } from "../schemas.ts";
import { idParams, notFound, viewer, type ClusterRoutes, type IdParams } from "./common.ts";

export function overviewRoutes(ctx: ClusterRoutes): (app: FastifyInstance) => void {
  return (app) => {
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
        const c = await ctx.clusterOr404(req.params.id, reply);
        if (!c) return reply;
        return ctx.views.of(c).overview(ctx.deps.now());
      },
    );
  };
}
