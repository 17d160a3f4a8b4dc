// Realized savings over a range: per NodePool and per workload, $ as run against the same
// capacity all on-demand, summed from the recorded history (src/dashboard/figures/savings.ts).
import type { FastifyInstance } from "fastify";
import type { ClusterHub } from "../../../core/hub/hub.ts";
import { SavingsSchema } from "../../../dashboard/dto.ts";
import { savingsReport } from "../../../dashboard/figures/savings.ts";
import type { ApiPlugin } from "../../app.ts";
import { epochMsParam, errorSchema } from "../schemas.ts";

const DAY = 86_400_000;

/** The response's schema: SavingsDto, declared once in dto.ts. */
export const savingsSchema = SavingsSchema;

export function savingsRoutes(deps: { hub: ClusterHub; now: () => number }): ApiPlugin {
  return (app: FastifyInstance) => {
    app.get<{ Params: { id: string }; Querystring: { from?: number; to?: number; pool?: string } }>(
      "/api/v1/clusters/:id/savings",
      {
        config: { role: "viewer" },
        schema: {
          summary:
            "Realized savings over [from, to): per NodePool and per workload, $ as run vs the same capacity all on-demand, from recorded history",
          params: {
            type: "object",
            required: ["id"],
            properties: { id: { type: "string", minLength: 1 } },
          },
          querystring: {
            type: "object",
            properties: {
              from: epochMsParam("epoch ms, inclusive (default: 24 h before to)"),
              to: epochMsParam("epoch ms, exclusive (default: now)"),
              pool: { type: "string", minLength: 1 },
            },
          },
          response: { 200: savingsSchema, 400: errorSchema, 404: errorSchema },
        },
      },
      async (req, reply) => {
        const c = deps.hub.get(req.params.id);
        if (!c)
          return reply
            .code(404)
            .send({ error: "not_found", message: `no cluster with id "${req.params.id}"` });
        const to = req.query.to ?? deps.now() + 1;
        const from = req.query.from ?? to - DAY;
        if (to < from)
          return reply.code(400).send({ error: "bad_request", message: "to must not be before from" });
        const totals = await deps.hub.store.savings({ clusterId: c.id, from, to, nodePool: req.query.pool });
        return savingsReport(totals, from, to);
      },
    );
  };
}
