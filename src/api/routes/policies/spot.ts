// A cluster's spot placement policies: the SpotPolicySet its webhook pulls (long-polled with
// ?watch=true), and one workload's policy put or deleted — as its SpotPolicy through the
// cluster's agent, or in the store without the CRs.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { workloadKey, type SpotPolicy } from "../../../webhook/policy.ts";
import { requireChange } from "../../identity.ts";
import { spotPolicyName, spotPolicyResource } from "../../../console/policy-crs.ts";
import { errorSchema, spotPolicySchema, spotPolicySetSchema } from "../schemas.ts";
import {
  both,
  crSpec,
  forceQuery,
  namespaceEditor,
  routeSchema,
  spotWorkloadParams,
  viewer,
  type ClusterParams,
  type PolicyContext,
  type SpotParams,
} from "./context.ts";
import { BadPolicy, spotPolicyFrom } from "./spot-set.ts";

const watchQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    watch: { type: "boolean" },
    revision: { type: "string", maxLength: 64 },
    timeoutSeconds: { type: "integer", minimum: 1, maximum: 60 },
  },
} as const;

const spotBody = {
  type: "object",
  required: ["threshold", "strategy"],
  properties: {
    threshold: { type: "integer", minimum: 0 },
    strategy: { type: "string", enum: ["Prefer", "Require"] },
    percentAboveBase: { type: "integer", minimum: 0, maximum: 100 },
    // true, false, or "dry-run": plan and report the repair's evictions, make none.
    repair: { anyOf: [{ type: "boolean" }, { type: "string", enum: ["dry-run"] }] },
  },
} as const;

type WatchRoute = {
  Params: ClusterParams;
  Querystring: { watch?: boolean; revision?: string; timeoutSeconds?: number };
};
type WatchRequest = FastifyRequest<WatchRoute>;

/** The set now; with ?watch=true and the current revision, held until it changes (or the timeout). */
async function getSpotSet(ctx: PolicyContext, req: WatchRequest, reply: FastifyReply): Promise<unknown> {
  const clusterId = ctx.clusterOf(req.params);
  const set = await ctx.spotSet(clusterId, req.log);
  const { watch, revision, timeoutSeconds = 30 } = req.query;
  if (watch !== true || revision === undefined || revision !== set.revision) return set;
  // Beyond the caps, 429: the webhook then polls plainly until a watch is admitted again.
  const release = await ctx.watches.admit(req, reply);
  if (!release) return reply;
  const waiters = ctx.spotWaiters.get(clusterId) ?? new Set<() => void>();
  ctx.spotWaiters.set(clusterId, waiters);
  await new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      waiters.delete(done);
      if (waiters.size === 0) ctx.spotWaiters.delete(clusterId);
      reply.raw.off("close", done);
      release();
      resolve();
    };
    const timer = setTimeout(done, timeoutSeconds * 1000);
    waiters.add(done);
    // The response's close: the caller went away (the request's own fires once read).
    reply.raw.once("close", done);
  });
  return ctx.spotSet(clusterId, req.log);
}

type PutRoute = { Params: SpotParams; Querystring: { force?: boolean } };
type PutRequest = FastifyRequest<PutRoute>;

async function putSpotPolicy(ctx: PolicyContext, req: PutRequest, reply: FastifyReply): Promise<unknown> {
  if (!(await requireChange(req, reply, req.params.namespace))) return reply;
  let policy: SpotPolicy;
  try {
    policy = spotPolicyFrom(req.params, req.body);
  } catch (err) {
    if (!(err instanceof BadPolicy)) throw err;
    return reply.code(400).send({ error: "bad_request", message: err.message });
  }
  const key = workloadKey(policy.workload);
  const cluster = ctx.clusterOf(req.params);
  let before: unknown;
  if (ctx.crs) {
    const name = spotPolicyName(policy.workload, ctx.crs.spot(cluster) ?? []);
    before = crSpec(ctx.crs.spot(cluster), name, policy.workload.namespace);
    const done = await ctx.sendEdit(reply, ctx.crs, cluster, {
      kind: "SpotPolicy",
      namespace: policy.workload.namespace,
      name,
      op: "apply",
      object: spotPolicyResource(policy, name, ctx.stampOf(req)),
      force: req.query.force === true,
    });
    if (!done) return reply;
  } else {
    before = (await ctx.store.getPolicy(cluster, "spot", key))?.value ?? null;
    await ctx.store.putPolicy(cluster, "spot", key, policy, ctx.now());
  }
  await ctx.changed(req, { kind: "spot", verb: "put", cluster, key, before, after: policy });
  return policy;
}

async function deleteSpotPolicy(
  ctx: PolicyContext,
  req: FastifyRequest<{ Params: SpotParams }>,
  reply: FastifyReply,
): Promise<unknown> {
  if (!(await requireChange(req, reply, req.params.namespace))) return reply;
  const key = workloadKey(req.params);
  const cluster = ctx.clusterOf(req.params);
  let before: unknown;
  if (ctx.crs) {
    const cr = (ctx.crs.spot(cluster) ?? []).find(
      (c) =>
        c.metadata.namespace === req.params.namespace &&
        c.spec.targetRef.kind === req.params.kind &&
        c.spec.targetRef.name === req.params.name,
    );
    if (!cr?.metadata.name)
      return reply
        .code(404)
        .send({ error: "not_found", message: `no SpotPolicy for ${key} in cluster ${cluster}` });
    const done = await ctx.sendEdit(reply, ctx.crs, cluster, {
      kind: "SpotPolicy",
      namespace: req.params.namespace,
      name: cr.metadata.name,
      op: "delete",
      force: false,
    });
    if (!done) return reply;
    before = cr.spec;
  } else {
    before = (await ctx.store.getPolicy(cluster, "spot", key))?.value ?? null;
    if (!(await ctx.store.deletePolicy(cluster, "spot", key)))
      return reply
        .code(404)
        .send({ error: "not_found", message: `no spot policy for ${key} in cluster ${cluster}` });
  }
  await ctx.changed(req, { kind: "spot", verb: "delete", cluster, key, before, after: null });
  return reply.code(204).send();
}

export function spotPolicyRoutes(ctx: PolicyContext, app: FastifyInstance): void {
  for (const path of both("/spot"))
    app.get<WatchRoute>(
      path,
      {
        config: viewer,
        schema: {
          summary:
            "A cluster's spot placement policies, as the SpotPolicySet its webhook pulls; with " +
            "watch=true and the revision the caller has, held until the set changes (at most timeoutSeconds)",
          ...routeSchema(path),
          querystring: watchQuery,
          response: { 200: spotPolicySetSchema, 429: errorSchema },
        },
      },
      (req, reply) => getSpotSet(ctx, req, reply),
    );

  for (const path of both("/spot/:kind/:namespace/:name"))
    app.put<PutRoute>(
      path,
      {
        config: namespaceEditor,
        schema: {
          summary:
            "Create or replace a workload's spot policy in a cluster (its SpotPolicy, server-side " +
            "applied by the cluster's agent; 409 when a field is managed elsewhere, unless force=true)",
          ...routeSchema(path, spotWorkloadParams),
          querystring: forceQuery,
          body: spotBody,
          response: { 200: spotPolicySchema, 400: errorSchema, 409: errorSchema },
        },
      },
      (req, reply) => putSpotPolicy(ctx, req, reply),
    );

  for (const path of both("/spot/:kind/:namespace/:name"))
    app.delete<{ Params: SpotParams }>(
      path,
      {
        config: namespaceEditor,
        schema: {
          summary: "Delete a workload's spot policy in a cluster",
          ...routeSchema(path, spotWorkloadParams),
          response: { 204: { type: "null" }, 404: errorSchema },
        },
      },
      (req, reply) => deleteSpotPolicy(ctx, req, reply),
    );
}
