// GET /api/v1/clusters/{id}/audit: the changes made through Wave in a cluster, newest first — who
// (subject, groups, how they signed in), what (action, object, before/after), when, from where —
// and the policy CR versions other field managers wrote (changes made outside Wave).
import type { FastifyInstance } from "fastify";
import type { Store } from "../../core/store/store.ts";
import type { ApiPlugin } from "../app.ts";
import { summary } from "../audit.ts";

export interface AuditDeps {
  store: Store;
  /**
   * Wave's own field managers on the policy CRs (console edits, status): a CR version any other
   * manager wrote is a change made outside Wave, listed with its manager.
   */
  waveManagers: readonly [string, string];
}

const elsewhereSchema = {
  type: "object",
  required: ["at", "kind", "name", "manager", "deleted", "spec"],
  properties: {
    at: { type: "integer", description: "epoch ms core received this version" },
    kind: { type: "string" },
    name: { type: "string" },
    manager: {
      type: "string",
      description: "the field manager of the change (kubectl, argocd-controller, …)",
    },
    deleted: { type: "boolean" },
    spec: { type: ["string", "null"] },
  },
} as const;

const entrySchema = {
  type: "object",
  required: [
    "id",
    "at",
    "subject",
    "groups",
    "source",
    "via",
    "address",
    "action",
    "object",
    "before",
    "after",
  ],
  properties: {
    id: { type: "integer" },
    at: { type: "integer", description: "epoch ms" },
    subject: { type: "string" },
    groups: { type: "array", items: { type: "string" } },
    source: { type: "string", description: "how the caller signed in: token, oidc or proxy" },
    via: { type: "string", description: "ui, api or cli" },
    address: { type: "string" },
    action: { type: "string" },
    object: { type: "string" },
    before: { type: ["string", "null"] },
    after: { type: ["string", "null"] },
  },
} as const;

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
          response: {
            200: {
              type: "object",
              required: ["entries", "elsewhere"],
              properties: {
                entries: { type: "array", items: entrySchema },
                elsewhere: { type: "array", items: elsewhereSchema },
              },
            },
          },
        },
      },
      async (req) => {
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
