// GET /api/v1/clusters/{id}/thrashing: each pool's report, computed once per history change.
import type { FastifyInstance } from "fastify";
import { thrashingDtos } from "../../../dashboard/views.ts";
import { thrashingSchema } from "../schemas.ts";
import { idParams, notFound, viewer, type ClusterRoutes, type IdParams } from "./common.ts";

export function thrashingRoutes(ctx: ClusterRoutes): (app: FastifyInstance) => void {
  return (app) => {
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
        const c = await ctx.clusterOr404(req.params.id, reply);
        if (!c) return reply;
        return thrashingDtos(await ctx.views.of(c).thrashing(ctx.deps.now()));
      },
    );
  };
}
