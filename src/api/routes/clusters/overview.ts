// GET /api/v1/clusters/{id}/overview: the cluster's totals, from its view model.
import type { FastifyInstance } from "fastify";
import { overviewSchema } from "../schemas.ts";
import { clusterGet, type ClusterRoutes } from "./common.ts";

export function overviewRoutes(ctx: ClusterRoutes): (app: FastifyInstance) => void {
  return (app) =>
    clusterGet(app, ctx, {
      path: "/api/v1/clusters/:id/overview",
      summary: "Cluster totals",
      response: overviewSchema,
      read: (c, now) => ctx.views.of(c).overview(now),
    });
}
