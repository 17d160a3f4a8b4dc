// GET /api/v1/clusters/{id}/warmup: the Warmup page (src/views/warmup.ts over the state, the
// stored policies, events and cold starts).
import type { FastifyInstance } from "fastify";
import { buildWarmupView } from "../../../views/warmup.ts";
import { WarmupViewSchema } from "../../../dashboard/dto.ts";
import { DEFAULT_POLICY } from "../../../policy/warmup.ts";
import { LAUNCH_LOOKBACK_MS, WARM_EVENTS_LIMIT } from "../../../views/warm-cost.ts";
import { rangedPage, type ConsoleRoutes } from "./console-context.ts";

export function warmupRoutes(ctx: ConsoleRoutes): (app: FastifyInstance) => void {
  return (app) =>
    rangedPage(app, ctx, {
      path: "/api/v1/clusters/:id/warmup",
      summary:
        "Warmup per NodePool: policy, state, warm nodes with pre-pull progress, why not warming, and over [from, to) hits, misses, measured time saved and warm cost",
      response: WarmupViewSchema,
      read: async (c, { from, to, now }) => {
        const [policies, events, coldStarts, lifecycle] = await Promise.all([
          ctx.warmupPolicies(c.id),
          // The same reads as core's warmup window (metrics/warm-cost-reader.ts): one warm cost.
          ctx.store.warmupEvents({ clusterId: c.id, from, to, limit: WARM_EVENTS_LIMIT }),
          ctx.store.coldStarts({ clusterId: c.id, from, to, limit: WARM_EVENTS_LIMIT }),
          ctx.store.lifecycle({ clusterId: c.id, from: from - LAUNCH_LOOKBACK_MS, to }),
        ]);
        return buildWarmupView({
          clusterId: c.id,
          state: c.state,
          coldStarts,
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
    });
}
