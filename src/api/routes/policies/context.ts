// What the policy routes share: their dependencies, parameter schemas, and one context per
// policyRoutes() — the cluster a route acts on, the spot set's long-poll waiters, an edit sent
// down the cluster's agent stream, and the record every change leaves (consumers woken, audit).
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RouteGenericInterface,
  RouteHandlerMethod,
} from "fastify";
import type { PolicyKind, Store } from "../../../core/store/store.ts";
import { sameJson } from "./same-json.ts";
import { WORKLOAD_KINDS, workloadNameOfKey, type SpotPolicy } from "../../../policy/spot.ts";
import { clientOf } from "../../identity.ts";
import {
  editRefusal,
  spotPoliciesOf,
  unavailable,
  type ChangeStamp,
  type EditAnswer,
  type PolicyCrAccess,
} from "../../../console/policy-crs.ts";
import type { AuditSink } from "../../audit.ts";
import { DEFAULT_WATCH_CAPS, StreamLimits, type StreamCaps } from "../../streams.ts";
import type { SpotPolicySetDto } from "../../../dashboard/dto.ts";
import { errorSchema, poolName } from "../schemas.ts";
import type { Role } from "../../identity.ts";
import { spotPolicySet } from "./spot-set.ts";
import { heldAs, resourceVersionOf } from "./read-your-write.ts";
import { reservedNamespace } from "./reserved-namespaces.ts";

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
  /**
   * Namespaces no spot policy may target, besides Kubernetes' own (kube-system, kube-public,
   * kube-node-lease): Wave's (core's --namespace, warmup's and the ledger's). Issue 42.
   */
  waveNamespaces?: readonly string[];
}

/** The cluster ids agents may use (core's hello check): a lowercase DNS label, at most 63. */
export const CLUSTER_ID_PATTERN = "^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$";

export const admin = { role: "admin" as const };
export const viewer = { role: "viewer" as const };
// Spot policies live in a workload's namespace: namespace editors change them there (requireChange).
export const namespaceEditor = { role: "namespace-editor" as const };

export const clusterParam = { id: { type: "string", pattern: CLUSTER_ID_PATTERN } } as const;

export const spotWorkloadParams = {
  type: "object",
  required: ["kind", "namespace", "name"],
  properties: {
    kind: { type: "string", enum: WORKLOAD_KINDS },
    namespace: { type: "string", minLength: 1, maxLength: 63, pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" },
    name: { type: "string", minLength: 1, maxLength: 253, pattern: "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$" },
  },
} as const;

// force=true: the edit takes over fields another field manager owns (server-side apply's force).
export const forceQuery = {
  type: "object",
  additionalProperties: false,
  properties: { force: { type: "boolean" } },
} as const;

export const poolOnlyParams = { type: "object", required: ["pool"], properties: { pool: poolName } } as const;

type ParamsSchema = { type: "object"; required: readonly string[]; properties: object };

/**
 * The schema fields every policy route shares: its path's parameters — the cluster's `id` only
 * where the path has one (the pre-cluster /api/v1/policies routes have none, so their OpenAPI
 * operations must not declare it) — and `deprecated` on those old routes.
 */
export function routeSchema(
  path: string,
  own: ParamsSchema = { type: "object", required: [], properties: {} },
) {
  if (!path.includes(":id")) return { deprecated: true, ...(own.required.length > 0 ? { params: own } : {}) };
  return {
    params: { ...own, required: ["id", ...own.required], properties: { ...clusterParam, ...own.properties } },
  };
}

/**
 * Every route twice: under /api/v1/clusters/{id}/policies (the cluster's own policies), and at its
 * pre-cluster path /api/v1/policies, which acts on the default cluster and says so.
 */
export const both = (path: string): string[] => [
  `/api/v1/clusters/:id/policies${path}`,
  `/api/v1/policies${path}`,
];

/** One policy route: registered at both of its paths (`both`), with the parameters each path has. */
export interface PolicyRoute {
  method: "GET" | "PUT" | "DELETE";
  path: string;
  config: { role: Role };
  /** The path's own parameters (the cluster's `id` is added where the path has one). */
  params?: ParamsSchema;
  schema: { summary: string } & Record<string, unknown>;
  handler: RouteHandlerMethod;
}

/** A handler that reads its request as `RG` declares (what Fastify's route generics assert). */
export const handle = <RG extends RouteGenericInterface>(
  fn: (req: FastifyRequest<RG>, reply: FastifyReply) => Promise<unknown>,
): RouteHandlerMethod => fn as unknown as RouteHandlerMethod;

export function register(app: FastifyInstance, routes: readonly PolicyRoute[]): void {
  for (const r of routes) {
    const { summary, ...rest } = r.schema;
    for (const url of both(r.path))
      app.route({
        method: r.method,
        url,
        config: r.config,
        schema: { summary, ...routeSchema(url, r.params), ...rest },
        handler: r.handler,
      });
  }
}

/** A policy PUT: ?force, the body checked, and 409 when a field is managed elsewhere. */
export const putSchema = (summary: string, body: object, record: object) => ({
  summary,
  querystring: forceQuery,
  body,
  response: { 200: record, 400: errorSchema, 409: errorSchema },
});

export const deleteSchema = (summary: string) => ({
  summary,
  response: { 204: { type: "null" }, 404: errorSchema },
});

export interface ClusterParams {
  /** Absent on the routes from before clusters: the default cluster. */
  id?: string;
}

export interface SpotParams extends ClusterParams {
  kind: SpotPolicy["workload"]["kind"];
  namespace: string;
  name: string;
}

/** A CR's spec as core holds it before an edit (the audit's "before"), null when there is none. */
export function crSpec(
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

/** The custom resource of each policy kind. */
const RESOURCE = { spot: "SpotPolicy", warmup: "WarmupPolicy" } as const satisfies Record<PolicyKind, string>;

/** The CR a put applies: its name and namespace ("" cluster-scoped), the object, and its spec before. */
export interface CrTarget {
  name: string;
  namespace: string;
  object: unknown;
  before: unknown;
}

/** A CR as core holds it. */
export interface HeldCr {
  metadata: { name?: string; namespace?: string };
  spec: unknown;
}

type Log = { warn: (o: object, m: string) => void };

/** One change made through a policy route, as it is recorded. */
export interface PolicyChange {
  kind: PolicyKind;
  verb: "put" | "delete";
  cluster: string;
  /** The workload key (spot) or the NodePool (warmup). */
  key: string;
  before: unknown;
  after: unknown;
}

export class PolicyContext {
  readonly store: Store;
  readonly crs: PolicyCrAccess | undefined;
  readonly now: () => number;
  /** The set's long-poll waiters per cluster (`?watch=true&revision=R`), woken when its set changes. */
  readonly spotWaiters = new Map<string, Set<() => void>>();
  readonly watches: StreamLimits;
  private readonly deps: PolicyDeps;

  constructor(deps: PolicyDeps) {
    this.deps = deps;
    this.store = deps.store;
    this.crs = deps.crs;
    this.now = deps.now ?? (() => Date.now());
    this.watches = new StreamLimits("policy watches", deps.watchCaps ?? DEFAULT_WATCH_CAPS);
    // A SpotPolicy resource that changed in core's state wakes the cluster's watches (the webhooks'
    // long-polls) — also when it was changed outside Wave, and after an edit's resource streamed back.
    deps.crs?.onSpotChange?.((clusterId) => this.wake(clusterId));
  }

  /** Why no spot policy may target `namespace`, or undefined when one may. */
  reservedNamespace(namespace: string): string | undefined {
    return reservedNamespace(namespace, this.deps.waveNamespaces ?? []);
  }

  clusterOf(params: ClusterParams): string {
    return params.id ?? this.deps.defaultClusterId;
  }

  private wake(clusterId: string): void {
    for (const wake of [...(this.spotWaiters.get(clusterId) ?? [])]) wake();
  }

  /** The cluster's spot set: from its SpotPolicy resources, or the store without them. */
  async spotSet(clusterId: string, log: Log): Promise<SpotPolicySetDto> {
    const crs = this.crs?.spot(clusterId);
    if (crs) {
      // The policies in force (src/policy/in-force.ts): one per workload, so a webhook pulling the
      // set never refuses it for two SpotPolicies on one workload.
      const { policies, problems, conflicts } = spotPoliciesOf(crs);
      for (const p of problems)
        log.warn({ policy: p.name, errors: p.errors }, "skipping an invalid SpotPolicy");
      for (const c of conflicts) log.warn({ policy: c.key, why: c.message }, "SpotPolicy not in force");
      const set = spotPolicySet(policies);
      if (conflicts.length === 0) return set;
      return {
        ...set,
        conflicts: conflicts.map((c) => ({
          policy: c.key,
          decidedBy: c.winner,
          workload: c.target,
          message: c.message,
        })),
      };
    }
    return spotPolicySet(
      (await this.store.listPolicies(clusterId, "spot")).map((r) => r.value),
      (err) => log.warn({ err }, "skipping an invalid stored spot policy"),
    );
  }

  stampOf(req: FastifyRequest): ChangeStamp {
    return { subject: req.identity?.subject ?? "unknown", via: clientOf(req), at: this.now() };
  }

  /** One edit down the cluster's agent stream; undefined after answering the refusal. */
  async sendEdit(
    reply: FastifyReply,
    crs: PolicyCrAccess,
    cluster: string,
    edit: Parameters<PolicyCrAccess["edit"]>[1],
  ): Promise<EditAnswer | undefined> {
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
  }

  /**
   * Puts one policy: its CR (`cr` names it and builds it, stamped with the caller) server-side
   * applied by the cluster's agent, or without the CRs the stored row. The time it took effect;
   * undefined once a refusal was answered.
   */
  async put(
    req: FastifyRequest<{ Querystring: { force?: boolean } }>,
    reply: FastifyReply,
    p: {
      kind: PolicyKind;
      cluster: string;
      key: string;
      value: unknown;
      cr: (stamp: ChangeStamp) => CrTarget;
    },
  ): Promise<number | undefined> {
    let before: unknown;
    let at: number;
    // A put that changes nothing is not audited (issue 42: repeated PUTs grew the audit).
    let same: boolean;
    if (this.crs) {
      const stamp = this.stampOf(req);
      const cr = p.cr(stamp);
      before = cr.before;
      same = sameJson(before, (cr.object as { spec?: unknown }).spec);
      const edit = { kind: RESOURCE[p.kind], namespace: cr.namespace, name: cr.name, op: "apply" as const };
      const answer = await this.sendEdit(reply, this.crs, p.cluster, {
        ...edit,
        object: cr.object,
        force: req.query.force === true,
      });
      if (!answer) return undefined;
      const rv = resourceVersionOf(answer.object);
      if (rv !== undefined) await heldAs(this.crs, p.kind, p.cluster, edit, rv);
      at = stamp.at;
    } else {
      before = (await this.store.getPolicy(p.cluster, p.kind, p.key))?.value ?? null;
      same = sameJson(before, p.value);
      at = (await this.store.putPolicy(p.cluster, p.kind, p.key, p.value, this.now())).updatedAt;
    }
    await this.changed(
      req,
      { kind: p.kind, verb: "put", cluster: p.cluster, key: p.key, before, after: p.value },
      !same,
    );
    return at;
  }

  /**
   * Deletes one policy: `cr`, the CR core holds (undefined: none), through the cluster's agent, or
   * without the CRs the stored row; 404 when there is none. `what` names it in that answer.
   */
  async remove(
    req: FastifyRequest,
    reply: FastifyReply,
    p: { kind: PolicyKind; cluster: string; key: string; what: string; cr: HeldCr | undefined },
  ): Promise<unknown> {
    const missing = (name: string) =>
      reply
        .code(404)
        .send({ error: "not_found", message: `no ${name} for ${p.what} in cluster ${p.cluster}` });
    let before: unknown;
    if (this.crs) {
      const name = p.cr?.metadata.name;
      if (p.cr === undefined || !name) return missing(RESOURCE[p.kind]);
      const edit = { kind: RESOURCE[p.kind], namespace: p.cr.metadata.namespace ?? "", name };
      if (!(await this.sendEdit(reply, this.crs, p.cluster, { ...edit, op: "delete", force: false })))
        return reply;
      await heldAs(this.crs, p.kind, p.cluster, edit, undefined);
      before = p.cr.spec;
    } else {
      before = (await this.store.getPolicy(p.cluster, p.kind, p.key))?.value ?? null;
      if (!(await this.store.deletePolicy(p.cluster, p.kind, p.key))) return missing(`${p.kind} policy`);
    }
    await this.changed(req, {
      kind: p.kind,
      verb: "delete",
      cluster: p.cluster,
      key: p.key,
      before,
      after: null,
    });
    return reply.code(204).send();
  }

  /** After a change: the spot set's watches and the consumers woken, then the change audited. */
  async changed(req: FastifyRequest, c: PolicyChange, audited = true): Promise<void> {
    if (c.kind === "spot") this.wake(c.cluster);
    await this.deps.onChange?.(c.kind, c.key, c.cluster);
    if (!audited) return;
    await this.deps.audit?.(req, {
      clusterId: c.cluster,
      action: `${c.kind}-policy.${c.verb}`,
      object: `${RESOURCE[c.kind]} ${c.kind === "spot" ? workloadNameOfKey(c.key) : c.key}`,
      before: c.before,
      after: c.after,
    });
  }
}
