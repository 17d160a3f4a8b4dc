// GET /api/v1/clusters/{id}/series: node count, spot nodes, vCPU and cost over time.
import type { FastifyInstance } from "fastify";
import { buildSeries } from "../../../dashboard/views.ts";
import { poolName, seriesSchema } from "../schemas.ts";
import { idParams, notFound, viewer, type ClusterRoutes, type IdParams } from "./common.ts";

/** Most buckets one /series answer may hold when the client picks the step. */
export const MAX_SERIES_POINTS = 20_000;

export function seriesRoutes(ctx: ClusterRoutes): (app: FastifyInstance) => void {
  const { store } = ctx;
  return (app) => {
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
        const c = await ctx.clusterOr404(req.params.id, reply);
        if (!c) return reply;
        const window = req.query.window ?? 21_600;
        if (req.query.step !== undefined && window / req.query.step > MAX_SERIES_POINTS) {
          return reply.code(400).send({
            error: "bad_request",
            message: `window/step gives ${Math.ceil(window / req.query.step)} points; at most ${MAX_SERIES_POINTS} (use a larger step)`,
          });
        }
        const to = ctx.deps.now();
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
  };
}
