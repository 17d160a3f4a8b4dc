// GET /api/v1/clusters/{id}/thrashing: each pool's report, computed once per history change.
import type { FastifyInstance } from "fastify";
import { thrashingDtos } from "../../../dashboard/views.ts";
import { thrashingSchema } from "../schemas.ts";
import { clusterGet, type ClusterRoutes } from "./common.ts";

export function thrashingRoutes(ctx: ClusterRoutes): (app: FastifyInstance) => void {
  return (app) =>
    clusterGet(app, ctx, {
      path: "/api/v1/clusters/:id/thrashing",
      summary: "Thrashing (churn) report per NodePool over the detector's window, worst first",
      response: { type: "array", items: thrashingSchema },
      read: async (c, now) => thrashingDtos(await ctx.views.of(c).thrashing(now)),
    });
}
