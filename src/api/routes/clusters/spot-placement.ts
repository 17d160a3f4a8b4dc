// GET /api/v1/clusters/{id}/spot-placement: the Spot page (src/views/spot.ts over the state,
// the stored spot policies, the repair's actions and the webhook's late answers).
import type { FastifyInstance } from "fastify";
import { buildSpotView } from "../../../views/spot.ts";
import { SpotViewSchema } from "../../../dashboard/dto.ts";
import { spotPolicySet } from "../policies.ts";
import { policiesInForce, rangedPage, type ConsoleRoutes } from "./console-context.ts";

export function spotPlacementRoutes(ctx: ConsoleRoutes): (app: FastifyInstance) => void {
  return (app) =>
    rangedPage(app, ctx, {
      path: "/api/v1/clusters/:id/spot-placement",
      summary:
        "Spot placement per workload: policy, target vs actual on-demand/spot, pods, savings against all-on-demand, warnings, the repair's self-heal actions and the webhook's late answers over [from, to)",
      query: {
        workload: { type: "string", maxLength: 600, description: "namespace/Kind/name: list its pods" },
      },
      response: SpotViewSchema,
      read: async (c, { from, to, now }, query) => {
        const [{ spot: policies, spotConflicts }, repairs, lateAnswers] = await Promise.all([
          policiesInForce(ctx.deps.policySource, ctx.hub, c.id),
          ctx.store.spotRepairs({ clusterId: c.id, from, to, limit: 100_000 }),
          ctx.store.spotLateAnswers({ clusterId: c.id, from, to }),
        ]);
        const set = spotPolicySet(policies.map((r) => r.value));
        return buildSpotView({
          clusterId: c.id,
          state: c.state,
          policies: set.policies,
          prices: ctx.deps.prices,
          now,
          expand: query.workload,
          repairs,
          lateAnswers,
          from,
          to,
          policySince: new Map(policies.map((r) => [r.key, r.updatedAt])),
          conflicts: spotConflicts,
        });
      },
    });
}
