// GET …/thrashing/fixes and POST …/thrashing/apply: each thrashing pool's fixes with their kubectl
// patch, applied by Wave only on its embedded simulated cluster.
import { Type } from "@sinclair/typebox";
import type { FastifyInstance } from "fastify";
import type { ClusterEntry } from "../../../core/hub/hub.ts";
import { ThrashingFixesSchema } from "../../../dashboard/dto.ts";
import { kubectlPatch, thrashingFix, thrashingFixDtos } from "../../../dashboard/thrashing/fixes.ts";
import { withAppliedFix } from "../../../dashboard/pool-advice.ts";
import { appliedFix } from "../../../dashboard/thrashing/applied.ts";
import { DEFAULT_THRASHING_OPTIONS } from "../../../dashboard/thrashing/detect.ts";
import { errorSchema } from "../schemas.ts";

/** The audit's newest changes read for fixes applied within the window (every change counts). */
const AUDIT_LOOKBACK = 200;
import { admin, idParams, patchedFields, viewer, type ConsoleRoutes } from "./console-context.ts";

/** Each flagged pool's fixes, and the fix applied within the window that is still in effect. */
async function fixesOf(ctx: ConsoleRoutes, c: ClusterEntry) {
  const now = ctx.deps.now();
  const windowMs = { ...DEFAULT_THRASHING_OPTIONS, ...ctx.deps.thrashing }.windowMs;
  const audit = await ctx.store.listAudit({ clusterId: c.id, limit: AUDIT_LOOKBACK });
  return thrashingFixDtos(
    await ctx.thrashing.reports(c, now),
    ctx.deps.nodePools?.clusterId === c.id,
    (pool) => appliedFix(pool, c.state.nodePool(pool), audit, now, windowMs),
  );
}

export function thrashingFixesRoutes(ctx: ConsoleRoutes): (app: FastifyInstance) => void {
  return (app) => {
    app.get<{ Params: { id: string } }>(
      "/api/v1/clusters/:id/thrashing/fixes",
      {
        config: viewer,
        schema: {
          summary:
            "Per thrashing NodePool, each fix with its kubectl patch command (when the fix is a spec change)",
          params: idParams,
          response: { 200: Type.Array(ThrashingFixesSchema), 404: errorSchema },
        },
      },
      async (req, reply) => {
        const c = await ctx.clusterOr404(req.params.id, reply);
        if (!c) return reply;
        return fixesOf(ctx, c);
      },
    );

    app.post<{ Params: { id: string }; Body: { nodePool: string; title: string } }>(
      "/api/v1/clusters/:id/thrashing/apply",
      {
        config: admin,
        schema: {
          summary:
            "Applies one of a thrashing NodePool's fixes (its merge patch) — on Wave's embedded simulated cluster only; a real cluster answers 409 with the kubectl patch to run",
          params: idParams,
          body: {
            type: "object",
            required: ["nodePool", "title"],
            additionalProperties: false,
            properties: {
              nodePool: { type: "string", minLength: 1, maxLength: 253 },
              title: { type: "string", minLength: 1, maxLength: 500 },
            },
          },
          response: { 404: errorSchema, 409: errorSchema },
        },
      },
      async (req, reply) => {
        const c = await ctx.clusterOr404(req.params.id, reply);
        if (!c) return reply;
        const { nodePool, title } = req.body;
        // The fix as the detector gives it now: never a patch sent by the client.
        const { report, fix } = thrashingFix(await ctx.thrashing.reports(c, ctx.deps.now()), nodePool, title);
        if (!report || !fix?.patch)
          return reply.code(409).send({
            error: "no_such_fix",
            message: report
              ? `NodePool ${nodePool} has no fix "${title}" with a patch now`
              : `NodePool ${nodePool} is not thrashing now`,
          });
        const kubectl = kubectlPatch(nodePool, fix.patch);
        if (ctx.deps.nodePools?.clusterId !== c.id)
          return reply.code(409).send({
            error: "not_applicable",
            message: `Wave changes NodePools only on its embedded simulated cluster; on this cluster run: ${kubectl}`,
          });
        const before = patchedFields(c.state.nodePool(nodePool), fix.patch);
        // The pool remembers the fix (every advice path keeps its fields: dashboard/pool-advice.ts).
        await ctx.deps.nodePools.patch(nodePool, withAppliedFix(fix.patch, title, ctx.deps.now()));
        await ctx.deps.audit?.(req, {
          clusterId: c.id,
          action: "thrashing.apply",
          object: `NodePool ${nodePool}: ${title}`,
          before,
          after: fix.patch,
        });
        req.log.info({ cluster: c.id, nodePool, fix: title }, "thrashing fix applied");
        return { nodePool, title, patch: fix.patch, kubectl };
      },
    );
  };
}
