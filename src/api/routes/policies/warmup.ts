// A cluster's warmup policies per NodePool: listed, and one pool's put or deleted — as its
// WarmupPolicy through the cluster's agent, or in the store without the CRs.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { parsePolicy } from "../../../warmup/policy.ts";
import { warmupPoliciesOf, warmupPolicyName, warmupPolicyResource } from "../../../console/policy-crs.ts";
import type { WarmupPolicyDto } from "../../../dashboard/dto.ts";
import { errorSchema, warmupPolicyInputSchema, warmupPolicyRecordSchema } from "../schemas.ts";
import {
  admin,
  both,
  crSpec,
  forceQuery,
  poolOnlyParams,
  routeSchema,
  viewer,
  type ClusterParams,
  type PolicyContext,
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
  let before: unknown;
  let record: WarmupPolicyDto;
  if (ctx.crs) {
    const name = warmupPolicyName(pool, ctx.crs.warmup(cluster) ?? []);
    before = crSpec(ctx.crs.warmup(cluster), name);
    const stamp = ctx.stampOf(req);
    const done = await ctx.sendEdit(reply, ctx.crs, cluster, {
      kind: "WarmupPolicy",
      namespace: "",
      name,
      op: "apply",
      object: warmupPolicyResource(pool, policy, name, stamp),
      force: req.query.force === true,
    });
    if (!done) return reply;
    record = { nodePool: pool, policy, updatedAt: stamp.at };
  } else {
    before = (await ctx.store.getPolicy(cluster, "warmup", pool))?.value ?? null;
    const rec = await ctx.store.putPolicy(cluster, "warmup", pool, policy, ctx.now());
    record = { nodePool: rec.key, policy, updatedAt: rec.updatedAt };
  }
  await ctx.changed(req, { kind: "warmup", verb: "put", cluster, key: pool, before, after: policy });
  return record;
}

async function deleteWarmupPolicy(
  ctx: PolicyContext,
  req: FastifyRequest<{ Params: PoolParams }>,
  reply: FastifyReply,
) {
  const pool = req.params.pool;
  const cluster = ctx.clusterOf(req.params);
  let before: unknown;
  if (ctx.crs) {
    const cr = (ctx.crs.warmup(cluster) ?? []).find((c) => c.spec.nodePool === pool);
    if (!cr?.metadata.name)
      return reply.code(404).send({
        error: "not_found",
        message: `no WarmupPolicy for pool ${pool} in cluster ${cluster}`,
      });
    const done = await ctx.sendEdit(reply, ctx.crs, cluster, {
      kind: "WarmupPolicy",
      namespace: "",
      name: cr.metadata.name,
      op: "delete",
      force: false,
    });
    if (!done) return reply;
    before = cr.spec;
  } else {
    before = (await ctx.store.getPolicy(cluster, "warmup", pool))?.value ?? null;
    if (!(await ctx.store.deletePolicy(cluster, "warmup", pool)))
      return reply.code(404).send({
        error: "not_found",
        message: `no warmup policy for pool ${pool} in cluster ${cluster}`,
      });
  }
  await ctx.changed(req, { kind: "warmup", verb: "delete", cluster, key: pool, before, after: null });
  return reply.code(204).send();
}

export function warmupPolicyRoutes(ctx: PolicyContext, app: FastifyInstance): void {
  for (const path of both("/warmup"))
    app.get<{ Params: ClusterParams }>(
      path,
      {
        config: viewer,
        schema: {
          summary: "A cluster's warmup policies per NodePool (pools without one use the defaults: disabled)",
          ...routeSchema(path),
          response: { 200: { type: "array", items: warmupPolicyRecordSchema } },
        },
      },
      (req) => listWarmupPolicies(ctx, req),
    );

  for (const path of both("/warmup/:pool"))
    app.put<PutRoute>(
      path,
      {
        config: admin,
        schema: {
          summary:
            "Create or replace a NodePool's warmup policy in a cluster (fields left out take the " +
            "defaults; its WarmupPolicy, server-side applied by the cluster's agent; 409 when a " +
            "field is managed elsewhere, unless force=true)",
          ...routeSchema(path, poolOnlyParams),
          querystring: forceQuery,
          body: warmupPolicyInputSchema,
          response: { 200: warmupPolicyRecordSchema, 400: errorSchema, 409: errorSchema },
        },
      },
      (req, reply) => putWarmupPolicy(ctx, req, reply),
    );

  for (const path of both("/warmup/:pool"))
    app.delete<{ Params: PoolParams }>(
      path,
      {
        config: admin,
        schema: {
          summary: "Delete a NodePool's warmup policy in a cluster (it falls back to the defaults: disabled)",
          ...routeSchema(path, poolOnlyParams),
          response: { 204: { type: "null" }, 404: errorSchema },
        },
      },
      (req, reply) => deleteWarmupPolicy(ctx, req, reply),
    );
}
