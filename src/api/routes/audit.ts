// GET /api/v1/clusters/{id}/audit: the changes made through Wave in a cluster, newest first — who
// (subject, groups, how they signed in), what (action, object, before/after), when, from where —
// and the policy CR versions other field managers wrote (changes made outside Wave).
import type { FastifyInstance } from "fastify";
import type { Store } from "../../core/store/store.ts";
import type { ApiPlugin } from "../app.ts";
import { summary } from "../audit.ts";
import { AuditListSchema, type AuditListDto } from "../../dashboard/dto.ts";

export interface AuditDeps {
  store: Store;
  /**
   * Wave's own field managers on the policy CRs (console edits, status): a CR version any other
   * manager wrote is a change made outside Wave, listed with its manager.
   */
  waveManagers: readonly [string, string];
}

export function auditRoutes(deps: AuditDeps): ApiPlugin {
  return (app: FastifyInstance) => {
    app.get<{ Params: { id: string }; Querystring: { limit?: number; before?: number } }>(
      "/api/v1/clusters/:id/audit",
      {
        config: { role: "viewer" },
        schema: {
          summary:
            "Changes made through Wave in a cluster, newest first: who (subject, groups, sign-in), what (action, object, before/after), when, from where (address; ui, api or cli)",
          params: {
            type: "object",
            required: ["id"],
            properties: { id: { type: "string", minLength: 1, maxLength: 63 } },
          },
          querystring: {
            type: "object",
            additionalProperties: false,
            properties: {
              limit: { type: "integer", minimum: 1, maximum: 500 },
              before: {
                type: "integer",
                minimum: 1,
                maximum: Number.MAX_SAFE_INTEGER,
                description: "entries older than this id",
              },
            },
          },
          response: { 200: AuditListSchema },
        },
      },
      async (req): Promise<AuditListDto> => {
        const rows = await deps.store.listAudit({
          clusterId: req.params.id,
          limit: req.query.limit ?? 100,
          ...(req.query.before !== undefined ? { before: req.query.before } : {}),
        });
        const foreign = await deps.store.foreignPolicyRevisions(
          req.params.id,
          deps.waveManagers,
          req.query.limit ?? 100,
        );
        return {
          entries: rows.map(({ clusterId: _c, ...r }) => r),
          elsewhere: foreign.map((r) => ({
            at: r.at,
            kind: r.kind,
            name: r.name,
            manager: r.manager,
            deleted: r.deleted,
            spec: r.deleted ? null : summary(r.spec),
          })),
        };
      },
    );
  };
}
