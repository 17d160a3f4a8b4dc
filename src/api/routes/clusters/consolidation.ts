// GET …/consolidation and …/pending (issue 34): why Karpenter does not consolidate nodes (each
// blocker with its object, fix and the $/h it costs) and why pods stay pending — the same views
// /metrics exports (src/dashboard/consolidation).
import type { FastifyInstance } from "fastify";
import { ConsolidationViewSchema, PendingViewSchema } from "../../../dashboard/dto.ts";
import { clusterConsolidation, clusterPending } from "../../../dashboard/consolidation/view.ts";
import { advisedView } from "../../../dashboard/consolidation/advised.ts";
import { holdsByPool } from "../../../dashboard/pool-advice.ts";
import { errorSchema } from "../schemas.ts";
import { idParams, viewer, type ConsoleRoutes } from "./console-context.ts";

export function consolidationRoutes(ctx: ConsoleRoutes): (app: FastifyInstance) => void {
  const { hub, deps } = ctx;
  return (app) => {
    app.get<{ Params: { id: string }; Querystring: { nodePool?: string; reason?: string } }>(
      "/api/v1/clusters/:id/consolidation",
      {
        config: viewer,
        schema: {
          summary:
            "Why Karpenter does not consolidate nodes: per node each blocker with its object and fix, what consolidation would save ($/h), summed per NodePool and reason",
          params: idParams,
          querystring: {
            type: "object",
            properties: {
              nodePool: {
                type: "string",
                minLength: 1,
                maxLength: 253,
                description: "only this NodePool's nodes",
              },
              reason: {
                type: "string",
                minLength: 1,
                maxLength: 64,
                description: "only nodes with a blocker of this reason",
              },
            },
          },
          response: { 200: ConsolidationViewSchema, 404: errorSchema },
        },
      },
      async (req, reply) => {
        const c = await ctx.clusterOr404(req.params.id, reply);
        if (!c) return reply;
        const now = deps.now();
        // Each NodePool fix from the one advisor: never a value the thrashing advice or an applied fix holds.
        const holds = holdsByPool(c.state.nodePools(), await ctx.thrashing.reports(c, now), now);
        const view = advisedView(clusterConsolidation(c, hub, deps.prices, now), c.state, holds);
        const { nodePool, reason } = req.query;
        // The filters narrow the node list; the sums stay the cluster's.
        if (nodePool === undefined && reason === undefined) return view;
        // A copy: the view is shared with /metrics and the next callers.
        return {
          ...view,
          items: view.items.filter(
            (n) =>
              (nodePool === undefined || n.nodePool === nodePool) &&
              (reason === undefined || n.blockers.some((b) => b.reason === reason)),
          ),
        };
      },
    );

    app.get<{ Params: { id: string } }>(
      "/api/v1/clusters/:id/pending",
      {
        config: viewer,
        schema: {
          summary:
            "Pending pods: why Karpenter launched no node for each (its FailedScheduling Events read per NodePool) and how long it has waited",
          params: idParams,
          response: { 200: PendingViewSchema, 404: errorSchema },
        },
      },
      async (req, reply) => {
        const c = await ctx.clusterOr404(req.params.id, reply);
        if (!c) return reply;
        return clusterPending(c, hub, deps.prices, deps.now());
      },
    );
  };
}
