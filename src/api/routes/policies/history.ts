// GET /api/v1/clusters/{id}/policies/history: a policy CR's versions as core saw them streamed.
import type { FastifyInstance } from "fastify";
import { bool, errorSchema, num, str } from "../schemas.ts";
import { clusterParam, viewer, type PolicyContext } from "./context.ts";

const revisionSchema = {
  type: "object",
  properties: { resourceVersion: str, at: num, deleted: bool, manager: str, changedBy: str, spec: {} },
} as const;

export function policyHistoryRoutes(ctx: PolicyContext, app: FastifyInstance): void {
  app.get<{
    Params: { id: string };
    Querystring: { kind?: "SpotPolicy" | "WarmupPolicy"; name?: string; limit?: number };
  }>(
    "/api/v1/clusters/:id/policies/history",
    {
      config: viewer,
      schema: {
        summary:
          "A policy CR's versions as core saw them streamed, newest first: spec, the field manager " +
          "of the change and who made it through Wave",
        params: { type: "object", required: ["id"], properties: clusterParam },
        querystring: {
          type: "object",
          additionalProperties: false,
          properties: {
            kind: { type: "string", enum: ["SpotPolicy", "WarmupPolicy"] },
            // namespace/name for a SpotPolicy, name for a WarmupPolicy
            name: { type: "string", minLength: 1, maxLength: 317 },
            limit: { type: "integer", minimum: 1, maximum: 1000 },
          },
        },
        response: { 400: errorSchema, 200: { type: "array", items: revisionSchema } },
      },
    },
    async (req, reply) => {
      const { kind, name } = req.query;
      if (kind === undefined || name === undefined)
        return reply.code(400).send({
          error: "bad_request",
          message: "kind (SpotPolicy or WarmupPolicy) and name (namespace/name of a SpotPolicy) are required",
        });
      return (await ctx.store.policyRevisions(req.params.id, kind, name, req.query.limit ?? 100)).map(
        (r) => ({
          resourceVersion: r.resourceVersion,
          at: r.at,
          deleted: r.deleted,
          manager: r.manager,
          changedBy: r.changedBy,
          spec: r.spec,
        }),
      );
    },
  );
}
