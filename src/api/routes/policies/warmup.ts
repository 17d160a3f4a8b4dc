// A cluster's warmup policies per NodePool: listed, and one pool's put or deleted — as its
// WarmupPolicy through the cluster's agent, or in the store without the CRs.
import type { FastifyReply, FastifyRequest } from "fastify";
import { parsePolicy } from "../../../policy/validate-warmup.ts";
import {
  warmupPoliciesOf,
  warmupPolicyCrOf,
  warmupPolicyName,
  warmupPolicyResource,
} from "../../../console/policy-crs.ts";
import {
  WarmupPolicyInputSchema,
  WarmupPolicyRecordSchema,
  type WarmupPolicyDto,
} from "../../../dashboard/dto.ts";
import {
  admin,
  crSpec,
  deleteSchema,
  handle,
  poolOnlyParams,
  putSchema,
  viewer,
  type ClusterParams,
  type PolicyContext,
  type PolicyRoute,
} from "./context.ts";

type PoolParams = ClusterParams & { pool: string };

async function listWarmupPolicies(ctx: PolicyContext, req: FastifyRequest<{ Params: ClusterParams }>) {
  const crs = ctx.crs?.warmup(ctx.clusterOf(req.params));
  if (crs) {
    const { policies, problems } = warmupPoliciesOf(crs);
    for (const p of problems)
      req.log.warn({ policy: p.name, errors: p.errors }, "skipping an invalid WarmupPolicy");
    return policies.map((p) => ({ nodePool: p.nodePool, policy: p.policy, updatedAt: p.updatedAt }));
  }
  const out: WarmupPolicyDto[] = [];
  for (const r of await ctx.store.listPolicies(ctx.clusterOf(req.params), "warmup")) {
    const parsed = parsePolicy(r.value);
    if (parsed.ok) out.push({ nodePool: r.key, policy: parsed.policy, updatedAt: r.updatedAt });
    else req.log.warn({ pool: r.key, errors: parsed.errors }, "skipping an invalid stored warmup policy");
  }
  return out;
}

type PutRoute = { Params: PoolParams; Querystring: { force?: boolean } };

async function putWarmupPolicy(ctx: PolicyContext, req: FastifyRequest<PutRoute>, reply: FastifyReply) {
  const parsed = parsePolicy(req.body);
  if (!parsed.ok) {
    return reply
      .code(400)
      .send({ error: "bad_request", message: `invalid warmup policy: ${parsed.errors.join("; ")}` });
  }
  const policy = parsed.policy;
  const cluster = ctx.clusterOf(req.params);
  const pool = req.params.pool;
  const at = await ctx.put(req, reply, {
    kind: "warmup",
    cluster,
    key: pool,
    value: policy,
    cr: (stamp) => {
      const held = ctx.crs?.warmup(cluster) ?? [];
      const name = warmupPolicyName(pool, held);
      return {
        name,
        namespace: "",
        object: warmupPolicyResource(pool, policy, name, stamp),
        before: crSpec(held, name),
      };
    },
  });
  return at === undefined ? reply : ({ nodePool: pool, policy, updatedAt: at } satisfies WarmupPolicyDto);
}

async function deleteWarmupPolicy(
  ctx: PolicyContext,
  req: FastifyRequest<{ Params: PoolParams }>,
  reply: FastifyReply,
) {
  const pool = req.params.pool;
  const cluster = ctx.clusterOf(req.params);
  const held = ctx.crs?.warmup(cluster);
  const cr = held ? warmupPolicyCrOf(pool, held) : undefined;
  return ctx.remove(req, reply, { kind: "warmup", cluster, key: pool, what: `pool ${pool}`, cr });
}

export function warmupPolicyRoutes(ctx: PolicyContext): PolicyRoute[] {
  const pool = { path: "/warmup/:pool", config: admin, params: poolOnlyParams };
  return [
    {
      method: "GET",
      path: "/warmup",
      config: viewer,
      schema: {
        summary: "A cluster's warmup policies per NodePool (pools without one use the defaults: disabled)",
        response: { 200: { type: "array", items: WarmupPolicyRecordSchema } },
      },
      handler: handle<{ Params: ClusterParams }>((req) => listWarmupPolicies(ctx, req)),
    },
    {
      method: "PUT",
      ...pool,
      schema: putSchema(
        "Create or replace a NodePool's warmup policy in a cluster (fields left out take the defaults; its " +
          "WarmupPolicy, server-side applied by the cluster's agent; 409 when a field is managed elsewhere, " +
          "unless force=true)",
        WarmupPolicyInputSchema,
        WarmupPolicyRecordSchema,
      ),
      handler: handle<PutRoute>((req, reply) => putWarmupPolicy(ctx, req, reply)),
    },
    {
      method: "DELETE",
      ...pool,
      schema: deleteSchema(
        "Delete a NodePool's warmup policy in a cluster (it falls back to the defaults: disabled)",
      ),
      handler: handle<{ Params: PoolParams }>((req, reply) => deleteWarmupPolicy(ctx, req, reply)),
    },
  ];
}
