// A cluster's spot placement policies: the SpotPolicySet its webhook pulls (long-polled with
// ?watch=true), and one workload's policy put or deleted — as its SpotPolicy through the
// cluster's agent, or in the store without the CRs.
import type { FastifyReply, FastifyRequest } from "fastify";
import { workloadKey, type SpotPolicy } from "../../../policy/spot.ts";
import { requireChange } from "../../identity.ts";
import { spotPolicyCrOf, spotPolicyName, spotPolicyResource } from "../../../console/policy-crs.ts";
import { SpotPolicySchema, SpotPolicySetSchema } from "../../../dashboard/dto.ts";
import { errorSchema } from "../schemas.ts";
import {
  crSpec,
  deleteSchema,
  handle,
  namespaceEditor,
  putSchema,
  spotWorkloadParams,
  viewer,
  type ClusterParams,
  type PolicyContext,
  type PolicyRoute,
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

/** The set now; with ?watch=true and the current revision, held until it changes (or the timeout). */
async function getSpotSet(ctx: PolicyContext, req: FastifyRequest<WatchRoute>, reply: FastifyReply) {
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

async function putSpotPolicy(ctx: PolicyContext, req: FastifyRequest<PutRoute>, reply: FastifyReply) {
  if (!(await requireChange(req, reply, req.params.namespace))) return reply;
  const reserved = ctx.reservedNamespace(req.params.namespace);
  if (reserved !== undefined) return reply.code(400).send({ error: "bad_request", message: reserved });
  let policy: SpotPolicy;
  try {
    policy = spotPolicyFrom(req.params, req.body);
  } catch (err) {
    if (!(err instanceof BadPolicy)) throw err;
    return reply.code(400).send({ error: "bad_request", message: err.message });
  }
  const cluster = ctx.clusterOf(req.params);
  const at = await ctx.put(req, reply, {
    kind: "spot",
    cluster,
    key: workloadKey(policy.workload),
    value: policy,
    cr: (stamp) => {
      const held = ctx.crs?.spot(cluster) ?? [];
      const name = spotPolicyName(policy.workload, held);
      const namespace = policy.workload.namespace;
      return {
        name,
        namespace,
        object: spotPolicyResource(policy, name, stamp),
        before: crSpec(held, name, namespace),
      };
    },
  });
  return at === undefined ? reply : policy;
}

async function deleteSpotPolicy(
  ctx: PolicyContext,
  req: FastifyRequest<{ Params: SpotParams }>,
  reply: FastifyReply,
) {
  if (!(await requireChange(req, reply, req.params.namespace))) return reply;
  const { namespace, kind, name } = req.params;
  const cluster = ctx.clusterOf(req.params);
  // The one in force, when two SpotPolicies target the workload (src/policy/in-force.ts).
  const held = ctx.crs?.spot(cluster);
  const cr = held ? spotPolicyCrOf({ namespace, kind, name }, held) : undefined;
  const key = workloadKey(req.params);
  return ctx.remove(req, reply, { kind: "spot", cluster, key, what: key, cr });
}

const ITEM = "/spot/:kind/:namespace/:name";

export function spotPolicyRoutes(ctx: PolicyContext): PolicyRoute[] {
  const writer = { path: ITEM, config: namespaceEditor, params: spotWorkloadParams };
  const summary =
    "A cluster's spot placement policies, as the SpotPolicySet its webhook pulls; with watch=true and " +
    "the revision the caller has, held until the set changes (at most timeoutSeconds)";
  const put = putSchema(
    "Create or replace a workload's spot policy in a cluster (its SpotPolicy, server-side applied by " +
      "the cluster's agent; 409 when a field is managed elsewhere, unless force=true)",
    spotBody,
    SpotPolicySchema,
  );
  return [
    {
      method: "GET",
      path: "/spot",
      config: viewer,
      schema: { summary, querystring: watchQuery, response: { 200: SpotPolicySetSchema, 429: errorSchema } },
      handler: handle<WatchRoute>((req, reply) => getSpotSet(ctx, req, reply)),
    },
    {
      method: "PUT",
      ...writer,
      schema: put,
      handler: handle<PutRoute>((req, reply) => putSpotPolicy(ctx, req, reply)),
    },
    {
      method: "DELETE",
      ...writer,
      schema: deleteSchema("Delete a workload's spot policy in a cluster"),
      handler: handle<{ Params: SpotParams }>((req, reply) => deleteSpotPolicy(ctx, req, reply)),
    },
  ];
}
