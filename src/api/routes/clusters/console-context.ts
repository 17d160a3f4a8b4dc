// What the console's per-cluster route plugins share (warmup, spot placement, node drawer, thrashing
// fixes): the cluster (404 when this core does not hold it), a range (400 when to < from), the
// stored warmup policies and the thrashing reports every advice path reads.
import type { FastifyInstance, FastifyReply } from "fastify";
import type { ClusterEntry, ClusterHub } from "../../../core/hub/hub.ts";
import type { Store } from "../../../core/store/store.ts";
import { ClusterThrashing } from "../../../dashboard/thrashing/cluster.ts";
import type { ThrashingOptions } from "../../../dashboard/thrashing/detect.ts";
import type { PriceProvider } from "../../../pricing/types.ts";
import { spotPoliciesSince, warmupPoliciesOf } from "../../../console/policy-crs.ts";
import type { PolicyConflict } from "../../../policy/in-force.ts";
import { parsePolicy } from "../../../policy/validate-warmup.ts";
import type { WarmupPolicy } from "../../../policy/warmup.ts";
import type { AuditSink } from "../../audit.ts";
import { epochMsParam, errorSchema } from "../schemas.ts";

/**
 * Patches NodePools of the one cluster core runs itself: the embedded simulated cluster. On a
 * real cluster there is none — Wave shows the kubectl patch and never changes a NodePool itself.
 */
export interface NodePoolPatcher {
  clusterId: string;
  patch(pool: string, patch: Record<string, unknown>): Promise<void>;
}

export interface ConsoleDeps {
  hub: ClusterHub;
  prices: PriceProvider;
  now: () => number;
  thrashing?: Partial<ThrashingOptions>;
  nodePools?: NodePoolPatcher;
  /** Records each change with the caller's identity (the audit list). */
  audit?: AuditSink;
  /**
   * Where the warmup and spot pages take the cluster's policies from: "crs", the SpotPolicy and
   * WarmupPolicy CRs its agent streams (core, issue 31, ADR 0018); "store" (default), core's store.
   */
  policySource?: "store" | "crs";
}

/** The fields a merge patch touches, as they are in `current` (the audit's "before"). */
export function patchedFields(current: unknown, patch: unknown): unknown {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return current ?? null;
  const cur = typeof current === "object" && current !== null ? (current as Record<string, unknown>) : {};
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(patch)) out[k] = patchedFields(cur[k], v);
  return out;
}

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
export const viewer = { role: "viewer" as const };
export const admin = { role: "admin" as const };
export const idParams = {
  type: "object",
  required: ["id"],
  properties: { id: { type: "string", minLength: 1 } },
} as const;
export const rangeProps = {
  from: epochMsParam("epoch ms, inclusive (default: 24 h ago)"),
  to: epochMsParam("epoch ms, exclusive (default: now)"),
} as const;

export interface ConsoleRoutes {
  deps: ConsoleDeps;
  hub: ClusterHub;
  store: Store;
  /** The same reports (and advice) as GET …/thrashing and /metrics. */
  thrashing: ClusterThrashing;
  clusterOr404(id: string, reply: FastifyReply): Promise<ClusterEntry | undefined>;
  /** [from, to) of a page's query (default: the day before now), or undefined once its 400 is sent. */
  rangeOr400(
    q: { from?: number | undefined; to?: number | undefined },
    now: number,
    reply: FastifyReply,
  ): Promise<{ from: number; to: number } | undefined>;
  warmupPolicies(clusterId: string): Promise<Map<string, WarmupPolicy>>;
}

export function consoleContext(deps: ConsoleDeps): ConsoleRoutes {
  const { hub } = deps;
  const store = hub.store;
  return {
    deps,
    hub,
    store,
    thrashing: ClusterThrashing.of(hub, deps.thrashing),
    clusterOr404: async (id, reply) => {
      const c = hub.get(id);
      if (!c) await reply.code(404).send({ error: "not_found", message: `no cluster with id "${id}"` });
      return c;
    },
    rangeOr400: async (q, now, reply) => {
      const to = q.to ?? now + 1;
      const from = q.from ?? to - DAY;
      if (to >= from) return { from, to };
      await reply.code(400).send({ error: "bad_request", message: "to must not be before from" });
      return undefined;
    },
    warmupPolicies: async (clusterId) => (await policiesInForce(deps.policySource, hub, clusterId)).warmup,
  };
}

/** A spot policy as the pages read it: by workload key, with since when it holds (validated by spotPolicySet). */
export interface SpotPolicyRow {
  key: string;
  value: unknown;
  updatedAt: number;
}

/**
 * The cluster's policies in force — one reading for the warmup and spot pages and the what-if:
 * its SpotPolicy and WarmupPolicy resources (source "crs", issue 31) or, before the migration,
 * core's store. Invalid warmup policies are left out here, invalid spot ones by spotPolicySet;
 * two resources on one workload or pool: the one created first (src/policy/in-force.ts), the
 * others in `spotConflicts` (the Spot page's warning).
 */
export async function policiesInForce(
  source: "store" | "crs" | undefined,
  hub: Pick<ClusterHub, "state" | "store">,
  clusterId: string,
): Promise<{ spot: SpotPolicyRow[]; warmup: Map<string, WarmupPolicy>; spotConflicts: PolicyConflict[] }> {
  const warmup = new Map<string, WarmupPolicy>();
  if (source === "crs") {
    const state = hub.state(clusterId);
    for (const p of warmupPoliciesOf(state.warmupPolicies()).policies) warmup.set(p.nodePool, p.policy);
    const spot = spotPoliciesSince(state.spotPolicies());
    return { spot: spot.rows, warmup, spotConflicts: spot.conflicts };
  }
  const [spotRows, warmupRows] = await Promise.all([
    hub.store.listPolicies(clusterId, "spot"),
    hub.store.listPolicies(clusterId, "warmup"),
  ]);
  for (const r of warmupRows) {
    const parsed = parsePolicy(r.value);
    if (parsed.ok) warmup.set(r.key, parsed.policy);
  }
  // As stored: the readers validate them (spotPolicySet leaves an invalid one out).
  return {
    spot: spotRows.map((r) => ({ key: r.key, value: r.value, updatedAt: r.updatedAt })),
    warmup,
    // Stored policies are keyed by workload: two on one cannot be.
    spotConflicts: [],
  };
}

/**
 * A console page of one cluster over [from, to) (default: the day before now): 404 for a cluster
 * this core does not hold, 400 when to < from, else what `read` answers, serialized with `response`.
 */
/** A console page's query: its range, and (the Spot page) the workload to expand. */
export interface PageQuery {
  from?: number;
  to?: number;
  workload?: string;
}

export function rangedPage(
  app: FastifyInstance,
  ctx: ConsoleRoutes,
  o: {
    path: string;
    summary: string;
    /** Query parameters besides from and to. */
    query?: Record<string, object>;
    response: object;
    read: (c: ClusterEntry, r: { from: number; to: number; now: number }, query: PageQuery) => unknown;
  },
): void {
  app.get<{ Params: { id: string }; Querystring: PageQuery }>(
    o.path,
    {
      config: viewer,
      schema: {
        summary: o.summary,
        params: idParams,
        querystring: { type: "object", properties: { ...o.query, ...rangeProps } },
        response: { 200: o.response, 404: errorSchema, 400: errorSchema },
      },
    },
    async (req, reply) => {
      const c = await ctx.clusterOr404(req.params.id, reply);
      if (!c) return reply;
      const now = ctx.deps.now();
      const r = await ctx.rangeOr400(req.query, now, reply);
      if (!r) return reply;
      return o.read(c, { ...r, now }, req.query);
    },
  );
}
