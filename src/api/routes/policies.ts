// Spot placement and warmup policies: viewers read them, admins write them, namespace editors
// write the spot policies of their namespaces (identity.ts). Bodies are checked
// by the same validators the webhook and the warmup controller use, so nothing the API accepts
// can be rejected later; stored spot policies are served as the SpotPolicySet the webhook pulls.
import { createHash } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { PolicyKind, Store } from "../../core/store/store.ts";
import { parsePolicy } from "../../policy/validate-warmup.ts";
import type { WarmupPolicy } from "../../policy/warmup.ts";
import {
  POLICY_SET_API_VERSION,
  WORKLOAD_KINDS,
  workloadKey,
  type SpotPolicy,
  type SpotPolicySet,
} from "../../policy/spot.ts";
import { parseSpotPolicy, PolicyValidationError } from "../../policy/validate-spot.ts";
import type { ApiPlugin } from "../app.ts";
import { clientOf, requireChange } from "../identity.ts";
import {
  editRefusal,
  spotPoliciesOf,
  spotPolicyName,
  spotPolicyResource,
  unavailable,
  warmupPoliciesOf,
  warmupPolicyName,
  warmupPolicyResource,
  type ChangeStamp,
  type EditAnswer,
  type PolicyCrAccess,
} from "../../console/policy-crs.ts";
import type { AuditSink } from "../audit.ts";
import { DEFAULT_WATCH_CAPS, StreamLimits, type StreamCaps } from "../streams.ts";
import type { SpotPolicySetDto, WarmupPolicyDto } from "../../dashboard/dto.ts";
import {
  errorSchema,
  poolName,
  spotPolicySchema,
  spotPolicySetSchema,
  warmupPolicyInputSchema,
  warmupPolicyRecordSchema,
} from "./schemas.ts";

export interface PolicyDeps {
  store: Store;
  /**
   * The cluster the routes without a cluster in their path (/api/v1/policies/…, from before
   * policies had a cluster) act on: core's own --cluster-id.
   */
  defaultClusterId: string;
  /** Called after a policy was stored or deleted (the composition root reloads its consumers). */
  onChange?: (kind: PolicyKind, key: string, clusterId: string) => void | Promise<void>;
  now?: () => number;
  /** Records each change with the caller's identity (the audit list). */
  audit?: AuditSink;
  /** `?watch=true` long polls held at once: per token, per address, in total (default DEFAULT_WATCH_CAPS). */
  watchCaps?: StreamCaps;
  /**
   * The policy custom resources (issue 31, ADR 0018): with it, policies are read from the CRs the
   * cluster's agent streams and every edit is server-side applied by that agent; the store's
   * policies are then only the migration's input. Without it (tests of the store path), the store.
   */
  crs?: PolicyCrAccess;
}

/** The cluster ids agents may use (core's hello check): a lowercase DNS label, at most 63. */
export const CLUSTER_ID_PATTERN = "^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$";

const admin = { role: "admin" as const };
const viewer = { role: "viewer" as const };
// Spot policies live in a workload's namespace: namespace editors change them there (requireChange).
const namespaceEditor = { role: "namespace-editor" as const };

const clusterParam = { id: { type: "string", pattern: CLUSTER_ID_PATTERN } } as const;

const spotWorkloadParams = {
  type: "object",
  required: ["kind", "namespace", "name"],
  properties: {
    kind: { type: "string", enum: WORKLOAD_KINDS },
    namespace: { type: "string", minLength: 1, maxLength: 63, pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" },
    name: { type: "string", minLength: 1, maxLength: 253, pattern: "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$" },
  },
} as const;

// force=true: the edit takes over fields another field manager owns (server-side apply's force).
const forceQuery = {
  type: "object",
  additionalProperties: false,
  properties: { force: { type: "boolean" } },
} as const;

const poolOnlyParams = { type: "object", required: ["pool"], properties: { pool: poolName } } as const;

type ParamsSchema = { type: "object"; required: readonly string[]; properties: object };

/**
 * The schema fields every policy route shares: its path's parameters — the cluster's `id` only
 * where the path has one (the pre-cluster /api/v1/policies routes have none, so their OpenAPI
 * operations must not declare it) — and `deprecated` on those old routes.
 */
function routeSchema(path: string, own: ParamsSchema = { type: "object", required: [], properties: {} }) {
  if (!path.includes(":id")) return { deprecated: true, ...(own.required.length > 0 ? { params: own } : {}) };
  return {
    params: { ...own, required: ["id", ...own.required], properties: { ...clusterParam, ...own.properties } },
  };
}

interface ClusterParams {
  /** Absent on the routes from before clusters: the default cluster. */
  id?: string;
}

interface SpotParams extends ClusterParams {
  kind: SpotPolicy["workload"]["kind"];
  namespace: string;
  name: string;
}

class BadPolicy extends Error {}

/** A CR's spec as core holds it before an edit (the audit's "before"), null when there is none. */
function crSpec(
  crs: readonly { metadata: { name?: string; namespace?: string }; spec: unknown }[] | undefined,
  name: string,
  namespace?: string,
): unknown {
  return (
    crs?.find(
      (c) => c.metadata.name === name && (namespace === undefined || c.metadata.namespace === namespace),
    )?.spec ?? null
  );
}

/** One workload's policy from a PUT body, checked by the webhook's own validator. */
export function spotPolicyFrom(params: SpotParams, body: unknown): SpotPolicy {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new BadPolicy("body must be a JSON object with threshold, strategy and optional percentAboveBase");
  }
  if ("workload" in body) throw new BadPolicy("workload: comes from the URL, leave it out of the body");
  try {
    return parseSpotPolicy({
      ...body,
      workload: { kind: params.kind, namespace: params.namespace, name: params.name },
    });
  } catch (err) {
    if (!(err instanceof PolicyValidationError)) throw err;
    throw new BadPolicy(
      `invalid spot policy: ${err.problems.map((p) => p.replace(/^policies\[0\]\./, "")).join("; ")}`,
    );
  }
}

/** The stored spot policies as one set; a stored row that no longer validates is skipped, not fatal. */
export function spotPolicySet(values: readonly unknown[], onBad?: (err: Error) => void): SpotPolicySetDto {
  const policies: SpotPolicy[] = [];
  for (const v of values) {
    try {
      policies.push(parseSpotPolicy(v));
    } catch (err) {
      onBad?.(err as Error);
    }
  }
  policies.sort((a, b) => workloadKey(a.workload).localeCompare(workloadKey(b.workload)));
  const revision = createHash("sha256").update(JSON.stringify(policies)).digest("hex").slice(0, 16);
  const set: SpotPolicySet & { revision: string } = {
    apiVersion: POLICY_SET_API_VERSION,
    kind: "SpotPolicySet",
    revision,
    policies,
  };
  return set;
}

export function policyRoutes(deps: PolicyDeps): ApiPlugin {
  const { store } = deps;
  const now = deps.now ?? (() => Date.now());
  const clusterOf = (params: ClusterParams): string => params.id ?? deps.defaultClusterId;
  // Webhook replicas long-poll their cluster's spot set (`?watch=true&revision=R`): held until
  // that cluster's set changes.
  const spotWaiters = new Map<string, Set<() => void>>();
  // A SpotPolicy resource that changed in core's state wakes the cluster's watches (the webhooks'
  // long-polls) — also when it was changed outside Wave, and after an edit's resource streamed back.
  deps.crs?.onSpotChange?.((clusterId) => {
    for (const wake of [...(spotWaiters.get(clusterId) ?? [])]) wake();
  });
  const watches = new StreamLimits("policy watches", deps.watchCaps ?? DEFAULT_WATCH_CAPS);
  const changed = async (kind: PolicyKind, key: string, clusterId: string): Promise<void> => {
    if (kind === "spot") for (const wake of [...(spotWaiters.get(clusterId) ?? [])]) wake();
    await deps.onChange?.(kind, key, clusterId);
  };
  const currentSpotSet = async (
    clusterId: string,
    log: { warn: (o: object, m: string) => void },
  ): Promise<SpotPolicySetDto> => {
    const crs = deps.crs?.spot(clusterId);
    if (crs) {
      const { policies, problems } = spotPoliciesOf(crs);
      for (const p of problems)
        log.warn({ policy: p.name, errors: p.errors }, "skipping an invalid SpotPolicy");
      return spotPolicySet(policies);
    }
    return spotPolicySet(
      (await store.listPolicies(clusterId, "spot")).map((r) => r.value),
      (err) => log.warn({ err }, "skipping an invalid stored spot policy"),
    );
  };
  const stampOf = (req: FastifyRequest): ChangeStamp => ({
    subject: req.identity?.subject ?? "unknown",
    via: clientOf(req),
    at: now(),
  });
  // One edit down the cluster's agent stream; false after answering the refusal.
  const sendEdit = async (
    reply: FastifyReply,
    crs: PolicyCrAccess,
    cluster: string,
    edit: Parameters<PolicyCrAccess["edit"]>[1],
  ): Promise<EditAnswer | undefined> => {
    let answer: EditAnswer;
    try {
      answer = await crs.edit(cluster, edit);
    } catch (err) {
      const u = unavailable(err);
      if (!u) throw err;
      await reply.code(u.status).send({ error: u.error, message: u.message });
      return undefined;
    }
    if (answer.outcome === "applied") return answer;
    const r = editRefusal(answer);
    await reply.code(r.status).send({ error: r.error, message: r.message, conflicts: answer.conflicts });
    return undefined;
  };

  return (app: FastifyInstance) => {
    // Every route twice: under /api/v1/clusters/{id}/policies (the cluster's own policies), and
    // at its pre-cluster path /api/v1/policies, which acts on the default cluster and says so.
    const both = (path: string): string[] => [
      `/api/v1/clusters/:id/policies${path}`,
      `/api/v1/policies${path}`,
    ];
    app.addHook("onSend", async (req, reply) => {
      const url = req.routeOptions.url;
      if (url?.startsWith("/api/v1/policies")) {
        const successor = url.replace(
          "/api/v1/policies",
          `/api/v1/clusters/${deps.defaultClusterId}/policies`,
        );
        reply.header("deprecation", "true");
        reply.header("link", `<${successor}>; rel="successor-version"`);
      }
    });

    for (const path of both("/spot"))
      app.get<{
        Params: ClusterParams;
        Querystring: { watch?: boolean; revision?: string; timeoutSeconds?: number };
      }>(
        path,
        {
          config: viewer,
          schema: {
            summary:
              "A cluster's spot placement policies, as the SpotPolicySet its webhook pulls; with " +
              "watch=true and the revision the caller has, held until the set changes (at most timeoutSeconds)",
            ...routeSchema(path),
            querystring: {
              type: "object",
              additionalProperties: false,
              properties: {
                watch: { type: "boolean" },
                revision: { type: "string", maxLength: 64 },
                timeoutSeconds: { type: "integer", minimum: 1, maximum: 60 },
              },
            },
            response: { 200: spotPolicySetSchema, 429: errorSchema },
          },
        },
        async (req, reply) => {
          const clusterId = clusterOf(req.params);
          const set = await currentSpotSet(clusterId, req.log);
          const { watch, revision, timeoutSeconds = 30 } = req.query;
          if (watch !== true || revision === undefined || revision !== set.revision) return set;
          // Beyond the caps, 429: the webhook then polls plainly until a watch is admitted again.
          const release = await watches.admit(req, reply);
          if (!release) return reply;
          const waiters = spotWaiters.get(clusterId) ?? new Set<() => void>();
          spotWaiters.set(clusterId, waiters);
          await new Promise<void>((resolve) => {
            const done = (): void => {
              clearTimeout(timer);
              waiters.delete(done);
              if (waiters.size === 0) spotWaiters.delete(clusterId);
              reply.raw.off("close", done);
              release();
              resolve();
            };
            const timer = setTimeout(done, timeoutSeconds * 1000);
            waiters.add(done);
            // The response's close: the caller went away (the request's own fires once read).
            reply.raw.once("close", done);
          });
          return currentSpotSet(clusterId, req.log);
        },
      );

    for (const path of both("/spot/:kind/:namespace/:name"))
      app.put<{ Params: SpotParams; Querystring: { force?: boolean } }>(
        path,
        {
          config: namespaceEditor,
          schema: {
            summary:
              "Create or replace a workload's spot policy in a cluster (its SpotPolicy, server-side " +
              "applied by the cluster's agent; 409 when a field is managed elsewhere, unless force=true)",
            ...routeSchema(path, spotWorkloadParams),
            querystring: forceQuery,
            body: {
              type: "object",
              required: ["threshold", "strategy"],
              properties: {
                threshold: { type: "integer", minimum: 0 },
                strategy: { type: "string", enum: ["Prefer", "Require"] },
                percentAboveBase: { type: "integer", minimum: 0, maximum: 100 },
                // true, false, or "dry-run": plan and report the repair's evictions, make none.
                repair: { anyOf: [{ type: "boolean" }, { type: "string", enum: ["dry-run"] }] },
              },
            },
            response: { 200: spotPolicySchema, 400: errorSchema, 409: errorSchema },
          },
        },
        async (req, reply) => {
          if (!(await requireChange(req, reply, req.params.namespace))) return reply;
          let policy: SpotPolicy;
          try {
            policy = spotPolicyFrom(req.params, req.body);
          } catch (err) {
            if (!(err instanceof BadPolicy)) throw err;
            return reply.code(400).send({ error: "bad_request", message: err.message });
          }
          const key = workloadKey(policy.workload);
          const cluster = clusterOf(req.params);
          if (deps.crs) {
            const name = spotPolicyName(policy.workload, deps.crs.spot(cluster) ?? []);
            const prior = crSpec(deps.crs.spot(cluster), name, policy.workload.namespace);
            const done = await sendEdit(reply, deps.crs, cluster, {
              kind: "SpotPolicy",
              namespace: policy.workload.namespace,
              name,
              op: "apply",
              object: spotPolicyResource(policy, name, stampOf(req)),
              force: req.query.force === true,
            });
            if (!done) return reply;
            await changed("spot", key, cluster);
            await deps.audit?.(req, {
              clusterId: cluster,
              action: "spot-policy.put",
              object: `SpotPolicy ${key}`,
              before: prior,
              after: policy,
            });
            return policy;
          }
          const before = await store.getPolicy(cluster, "spot", key);
          await store.putPolicy(cluster, "spot", key, policy, now());
          await changed("spot", key, cluster);
          await deps.audit?.(req, {
            clusterId: cluster,
            action: "spot-policy.put",
            object: `SpotPolicy ${key}`,
            before: before?.value ?? null,
            after: policy,
          });
          return policy;
        },
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
        async (req, reply) => {
          if (!(await requireChange(req, reply, req.params.namespace))) return reply;
          const key = workloadKey(req.params);
          const cluster = clusterOf(req.params);
          if (deps.crs) {
            const cr = (deps.crs.spot(cluster) ?? []).find(
              (c) =>
                c.metadata.namespace === req.params.namespace &&
                c.spec.targetRef.kind === req.params.kind &&
                c.spec.targetRef.name === req.params.name,
            );
            if (!cr?.metadata.name)
              return reply
                .code(404)
                .send({ error: "not_found", message: `no SpotPolicy for ${key} in cluster ${cluster}` });
            const done = await sendEdit(reply, deps.crs, cluster, {
              kind: "SpotPolicy",
              namespace: req.params.namespace,
              name: cr.metadata.name,
              op: "delete",
              force: false,
            });
            if (!done) return reply;
            await changed("spot", key, cluster);
            await deps.audit?.(req, {
              clusterId: cluster,
              action: "spot-policy.delete",
              object: `SpotPolicy ${key}`,
              before: cr.spec,
              after: null,
            });
            return reply.code(204).send();
          }
          const before = await store.getPolicy(cluster, "spot", key);
          if (!(await store.deletePolicy(cluster, "spot", key))) {
            return reply
              .code(404)
              .send({ error: "not_found", message: `no spot policy for ${key} in cluster ${cluster}` });
          }
          await changed("spot", key, cluster);
          await deps.audit?.(req, {
            clusterId: cluster,
            action: "spot-policy.delete",
            object: `SpotPolicy ${key}`,
            before: before?.value ?? null,
            after: null,
          });
          return reply.code(204).send();
        },
      );

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
          response: {
            400: errorSchema,
            200: {
              type: "array",
              items: {
                type: "object",
                properties: {
                  resourceVersion: { type: "string" },
                  at: { type: "number" },
                  deleted: { type: "boolean" },
                  manager: { type: "string" },
                  changedBy: { type: "string" },
                  spec: {},
                },
              },
            },
          },
        },
      },
      async (req, reply) => {
        const { kind, name } = req.query;
        if (kind === undefined || name === undefined)
          return reply.code(400).send({
            error: "bad_request",
            message:
              "kind (SpotPolicy or WarmupPolicy) and name (namespace/name of a SpotPolicy) are required",
          });
        return (await store.policyRevisions(req.params.id, kind, name, req.query.limit ?? 100)).map((r) => ({
          resourceVersion: r.resourceVersion,
          at: r.at,
          deleted: r.deleted,
          manager: r.manager,
          changedBy: r.changedBy,
          spec: r.spec,
        }));
      },
    );

    for (const path of both("/warmup"))
      app.get<{ Params: ClusterParams }>(
        path,
        {
          config: viewer,
          schema: {
            summary:
              "A cluster's warmup policies per NodePool (pools without one use the defaults: disabled)",
            ...routeSchema(path),
            response: { 200: { type: "array", items: warmupPolicyRecordSchema } },
          },
        },
        async (req) => {
          const out: WarmupPolicyDto[] = [];
          const crs = deps.crs?.warmup(clusterOf(req.params));
          if (crs) {
            const { policies, problems } = warmupPoliciesOf(crs);
            for (const p of problems)
              req.log.warn({ policy: p.name, errors: p.errors }, "skipping an invalid WarmupPolicy");
            return policies.map((p) => ({ nodePool: p.nodePool, policy: p.policy, updatedAt: p.updatedAt }));
          }
          for (const r of await store.listPolicies(clusterOf(req.params), "warmup")) {
            const parsed = parsePolicy(r.value);
            if (parsed.ok) out.push({ nodePool: r.key, policy: parsed.policy, updatedAt: r.updatedAt });
            else
              req.log.warn(
                { pool: r.key, errors: parsed.errors },
                "skipping an invalid stored warmup policy",
              );
          }
          return out;
        },
      );

    for (const path of both("/warmup/:pool"))
      app.put<{ Params: ClusterParams & { pool: string }; Querystring: { force?: boolean } }>(
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
        async (req, reply) => {
          const parsed = parsePolicy(req.body);
          if (!parsed.ok) {
            return reply
              .code(400)
              .send({ error: "bad_request", message: `invalid warmup policy: ${parsed.errors.join("; ")}` });
          }
          const policy: WarmupPolicy = parsed.policy;
          const cluster = clusterOf(req.params);
          if (deps.crs) {
            const pool = req.params.pool;
            const name = warmupPolicyName(pool, deps.crs.warmup(cluster) ?? []);
            const prior = crSpec(deps.crs.warmup(cluster), name);
            const stamp = stampOf(req);
            const done = await sendEdit(reply, deps.crs, cluster, {
              kind: "WarmupPolicy",
              namespace: "",
              name,
              op: "apply",
              object: warmupPolicyResource(pool, policy, name, stamp),
              force: req.query.force === true,
            });
            if (!done) return reply;
            await changed("warmup", pool, cluster);
            await deps.audit?.(req, {
              clusterId: cluster,
              action: "warmup-policy.put",
              object: `WarmupPolicy ${pool}`,
              before: prior,
              after: policy,
            });
            return { nodePool: pool, policy, updatedAt: stamp.at } satisfies WarmupPolicyDto;
          }
          const before = await store.getPolicy(cluster, "warmup", req.params.pool);
          const rec = await store.putPolicy(cluster, "warmup", req.params.pool, policy, now());
          await changed("warmup", req.params.pool, cluster);
          await deps.audit?.(req, {
            clusterId: cluster,
            action: "warmup-policy.put",
            object: `WarmupPolicy ${req.params.pool}`,
            before: before?.value ?? null,
            after: policy,
          });
          return { nodePool: rec.key, policy, updatedAt: rec.updatedAt } satisfies WarmupPolicyDto;
        },
      );

    for (const path of both("/warmup/:pool"))
      app.delete<{ Params: ClusterParams & { pool: string } }>(
        path,
        {
          config: admin,
          schema: {
            summary:
              "Delete a NodePool's warmup policy in a cluster (it falls back to the defaults: disabled)",
            ...routeSchema(path, poolOnlyParams),
            response: { 204: { type: "null" }, 404: errorSchema },
          },
        },
        async (req, reply) => {
          const pool = req.params.pool;
          const cluster = clusterOf(req.params);
          if (deps.crs) {
            const cr = (deps.crs.warmup(cluster) ?? []).find((c) => c.spec.nodePool === pool);
            if (!cr?.metadata.name)
              return reply.code(404).send({
                error: "not_found",
                message: `no WarmupPolicy for pool ${pool} in cluster ${cluster}`,
              });
            const done = await sendEdit(reply, deps.crs, cluster, {
              kind: "WarmupPolicy",
              namespace: "",
              name: cr.metadata.name,
              op: "delete",
              force: false,
            });
            if (!done) return reply;
            await changed("warmup", pool, cluster);
            await deps.audit?.(req, {
              clusterId: cluster,
              action: "warmup-policy.delete",
              object: `WarmupPolicy ${pool}`,
              before: cr.spec,
              after: null,
            });
            return reply.code(204).send();
          }
          const before = await store.getPolicy(cluster, "warmup", pool);
          if (!(await store.deletePolicy(cluster, "warmup", pool))) {
            return reply.code(404).send({
              error: "not_found",
              message: `no warmup policy for pool ${pool} in cluster ${cluster}`,
            });
          }
          await changed("warmup", pool, cluster);
          await deps.audit?.(req, {
            clusterId: cluster,
            action: "warmup-policy.delete",
            object: `WarmupPolicy ${pool}`,
            before: before?.value ?? null,
            after: null,
          });
          return reply.code(204).send();
        },
      );
  };
}
