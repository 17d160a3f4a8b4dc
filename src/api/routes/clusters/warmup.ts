// GET /api/v1/clusters/{id}/warmup: the Warmup page (src/console/warmup.ts over the state, the
// stored policies and events, and the measured cold starts).
import type { FastifyInstance } from "fastify";
import { buildWarmupView } from "../../../console/warmup.ts";
import { coldStartsOf } from "../../../dashboard/cold-starts.ts";
import { WarmupViewSchema } from "../../../dashboard/dto.ts";
import { DEFAULT_POLICY } from "../../../warmup/policy.ts";
import { errorSchema } from "../schemas.ts";
import { DAY, idParams, rangeProps, viewer, type ConsoleRoutes } from "./console-context.ts";

export function warmupRoutes(ctx: ConsoleRoutes): (app: FastifyInstance) => void {
  return (app) => {
    app.get<{ Params: { id: string }; Querystring: { from?: number; to?: number } }>(
      "/api/v1/clusters/:id/warmup",
      {
        config: viewer,
        schema: {
          summary:
            "Warmup per NodePool: policy, state, warm nodes with pre-pull progress, why not warming, and over [from, to) hits, misses, measured time saved and warm cost",
          params: idParams,
          querystring: { type: "object", properties: rangeProps },
          response: { 200: WarmupViewSchema, 404: errorSchema, 400: errorSchema },
        },
      },
      async (req, reply) => {
        const c = await ctx.clusterOr404(req.params.id, reply);
        if (!c) return reply;
        const now = ctx.deps.now();
        const r = await ctx.rangeOr400(req.query, now, reply);
        if (!r) return reply;
        const { from, to } = r;
        const [policies, events, lifecycle] = await Promise.all([
          ctx.warmupPolicies(c.id),
          ctx.store.warmupEvents({ clusterId: c.id, from, to }),
          // A warm node released in the range may have launched before it.
          ctx.store.lifecycle({ clusterId: c.id, from: from - DAY, to }),
        ]);
        return buildWarmupView({
          clusterId: c.id,
          state: c.state,
          coldStarts: await coldStartsOf(ctx.hub, c.id, now),
          policies,
          defaults: DEFAULT_POLICY,
          events,
          lifecycle,
          prices: ctx.deps.prices,
          now,
          from,
          to,
        });
      },
    );
  };
}
