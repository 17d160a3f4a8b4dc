// The console's per-cluster pages beyond the dashboard: warmup, spot placement and the node
// drawer. Thin handlers: read the hub's state, the store and the policies, then call the pure
// builders in src/console. Viewer role, like the dashboard.
import type { FastifyInstance, FastifyReply } from "fastify";
import type { ClusterEntry, ClusterHub } from "../../core/hub/hub.ts";
import { buildNodeDetail } from "../../console/node.ts";
import { buildSpotView } from "../../console/spot.ts";
import { buildWarmupView } from "../../console/warmup.ts";
import { ClusterThrashing } from "../../dashboard/thrashing/cluster.ts";
import { coldStartsOf } from "../../dashboard/cold-starts.ts";
import type { ThrashingOptions } from "../../dashboard/thrashing/detect.ts";
import { kubectlPatch, thrashingFix, thrashingFixDtos } from "../../dashboard/thrashing/fixes.ts";
import { buildNodeList } from "../../dashboard/views.ts";
import type { PriceProvider } from "../../pricing/types.ts";
import { DEFAULT_POLICY, parsePolicy, type WarmupPolicy } from "../../warmup/policy.ts";
import type { ApiPlugin } from "../app.ts";
import type { AuditSink } from "../audit.ts";
import { spotPolicySet } from "./policies.ts";
import { spotPoliciesSince, warmupPoliciesOf } from "../../console/policy-crs.ts";
import { epochMsParam, errorSchema } from "./schemas.ts";
import { NodeDetailSchema, SpotViewSchema, WarmupViewSchema } from "../../dashboard/dto.ts";

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

export { kubectlPatch };

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const viewer = { role: "viewer" as const };
const admin = { role: "admin" as const };
const idParams = {
  type: "object",
  required: ["id"],
  properties: { id: { type: "string", minLength: 1 } },
} as const;
const rangeProps = {
  from: epochMsParam("epoch ms, inclusive (default: 24 h ago)"),
  to: epochMsParam("epoch ms, exclusive (default: now)"),
} as const;

export function consoleRoutes(deps: ConsoleDeps): ApiPlugin {
  const { hub } = deps;
  const store = hub.store;

  const clusterOr404 = async (id: string, reply: FastifyReply): Promise<ClusterEntry | undefined> => {
    const c = hub.get(id);
    if (!c) await reply.code(404).send({ error: "not_found", message: `no cluster with id "${id}"` });
    return c;
  };

  const fromCrs = deps.policySource === "crs";
  const warmupPolicies = async (clusterId: string): Promise<Map<string, WarmupPolicy>> => {
    const out = new Map<string, WarmupPolicy>();
    if (fromCrs) {
      for (const p of warmupPoliciesOf(hub.state(clusterId).warmupPolicies()).policies)
        out.set(p.nodePool, p.policy);
      return out;
    }
    for (const r of await store.listPolicies(clusterId, "warmup")) {
      const parsed = parsePolicy(r.value);
      if (parsed.ok) out.set(r.key, parsed.policy);
    }
    return out;
  };

  // The same reports (and advice) as GET …/thrashing and /metrics.
  const thrashing = ClusterThrashing.of(hub, deps.thrashing);

  return (app: FastifyInstance) => {
    app.get(
      "/api/v1/whoami",
      {
        config: viewer,
        schema: {
          summary:
            "Who the caller is: subject, groups, role (in the default cluster) and, for namespace editors, their namespaces; the UI shows editing by role",
        },
      },
      (req) => ({
        role: req.identity?.role ?? "viewer",
        subject: req.identity?.subject ?? "",
        groups: req.identity?.groups ?? [],
        ...(req.identity?.namespaces ? { namespaces: req.identity.namespaces } : {}),
        source: req.identity?.source ?? "token",
      }),
    );

    app.get<{ Params: { id: string } }>(
      "/api/v1/clusters/:id/thrashing/fixes",
      {
        config: viewer,
        schema: {
          summary:
            "Per thrashing NodePool, each fix with its kubectl patch command (when the fix is a spec change)",
          params: idParams,
          response: { 404: errorSchema },
        },
      },
      async (req, reply) => {
        const c = await clusterOr404(req.params.id, reply);
        if (!c) return reply;
        return thrashingFixDtos(await thrashing.reports(c, deps.now()), deps.nodePools?.clusterId === c.id);
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
        const c = await clusterOr404(req.params.id, reply);
        if (!c) return reply;
        const { nodePool, title } = req.body;
        // The fix as the detector gives it now: never a patch sent by the client.
        const { report, fix } = thrashingFix(await thrashing.reports(c, deps.now()), nodePool, title);
        if (!report || !fix?.patch)
          return reply.code(409).send({
            error: "no_such_fix",
            message: report
              ? `NodePool ${nodePool} has no fix "${title}" with a patch now`
              : `NodePool ${nodePool} is not thrashing now`,
          });
        const kubectl = kubectlPatch(nodePool, fix.patch);
        if (deps.nodePools?.clusterId !== c.id)
          return reply.code(409).send({
            error: "not_applicable",
            message: `Wave changes NodePools only on its embedded simulated cluster; on this cluster run: ${kubectl}`,
          });
        const before = patchedFields(c.state.nodePool(nodePool), fix.patch);
        await deps.nodePools.patch(nodePool, fix.patch);
        await deps.audit?.(req, {
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

    app.get<{ Params: { id: string }; Querystring: { from?: number; to?: number } }>(
      "/api/v1/clusters/:id/warmup",
      {
        config: viewer,
        schema: {
          summary:
            "Warmup per NodePool: policy, state, warm nodes with pre-pull progress, why not warming, and over [from, to) hits, misses, measured time saved and warm cost",
          params: idParams,
          querystring: { type: "object", properties: rangeProps },
          response: { 200: WarmupViewSchema, 404: errorSchema, 400: errorSchema },
        },
      },
      async (req, reply) => {
        const c = await clusterOr404(req.params.id, reply);
        if (!c) return reply;
        const now = deps.now();
        const to = req.query.to ?? now + 1;
        const from = req.query.from ?? to - DAY;
        if (to < from)
          return reply.code(400).send({ error: "bad_request", message: "to must not be before from" });
        const [policies, events, lifecycle] = await Promise.all([
          warmupPolicies(c.id),
          store.warmupEvents({ clusterId: c.id, from, to }),
          // A warm node released in the range may have launched before it.
          store.lifecycle({ clusterId: c.id, from: from - DAY, to }),
        ]);
        return buildWarmupView({
          clusterId: c.id,
          state: c.state,
          coldStarts: await coldStartsOf(hub, c.id, now),
          policies,
          defaults: DEFAULT_POLICY,
          events,
          lifecycle,
          prices: deps.prices,
          now,
          from,
          to,
        });
      },
    );

    app.get<{ Params: { id: string }; Querystring: { workload?: string; from?: number; to?: number } }>(
      "/api/v1/clusters/:id/spot-placement",
      {
        config: viewer,
        schema: {
          summary:
            "Spot placement per workload: policy, target vs actual on-demand/spot, pods, savings against all-on-demand, warnings, the repair's self-heal actions and the webhook's late answers over [from, to)",
          params: idParams,
          querystring: {
            type: "object",
            properties: {
              workload: { type: "string", maxLength: 600, description: "namespace/Kind/name: list its pods" },
              ...rangeProps,
            },
          },
          response: { 200: SpotViewSchema, 404: errorSchema, 400: errorSchema },
        },
      },
      async (req, reply) => {
        const c = await clusterOr404(req.params.id, reply);
        if (!c) return reply;
        const now = deps.now();
        const to = req.query.to ?? now + 1;
        const from = req.query.from ?? to - DAY;
        if (to < from)
          return reply.code(400).send({ error: "bad_request", message: "to must not be before from" });
        const [stored, repairs, lateAnswers] = await Promise.all([
          fromCrs ? Promise.resolve([]) : store.listPolicies(c.id, "spot"),
          store.spotRepairs({ clusterId: c.id, from, to, limit: 100_000 }),
          store.spotLateAnswers({ clusterId: c.id, from, to }),
        ]);
        // From the CRs: each policy's "since" is its last change through Wave, else its creation.
        const policies = fromCrs
          ? spotPoliciesSince(c.state.spotPolicies())
          : stored.map((r) => ({ key: r.key, value: r.value, updatedAt: r.updatedAt }));
        const set = spotPolicySet(policies.map((r) => r.value));
        return buildSpotView({
          clusterId: c.id,
          state: c.state,
          policies: set.policies,
          prices: deps.prices,
          now,
          expand: req.query.workload,
          repairs,
          lateAnswers,
          from,
          to,
          policySince: new Map(policies.map((r) => [r.key, r.updatedAt])),
        });
      },
    );

    app.get<{ Params: { id: string; name: string } }>(
      "/api/v1/clusters/:id/nodes/:name",
      {
        config: viewer,
        schema: {
          summary:
            "One node (or NodeClaim): lifecycle timeline with durations, pods, price and source, labels, taints, who set do-not-disrupt",
          params: {
            type: "object",
            required: ["id", "name"],
            properties: { id: { type: "string", minLength: 1 }, name: { type: "string", minLength: 1 } },
          },
          response: { 200: NodeDetailSchema, 404: errorSchema },
        },
      },
      async (req, reply) => {
        const c = await clusterOr404(req.params.id, reply);
        if (!c) return reply;
        const name = req.params.name;
        const s = c.state;
        const node = s.node(name) ?? (s.nodeClaim(name) ? s.nodeForNodeClaim(name) : undefined);
        const nodeClaim =
          s.nodeClaim(name) ?? (node ? s.nodeClaimForNode(node.metadata.name ?? "") : undefined);
        const now = deps.now();
        const rows = buildNodeList(
          { clusterId: c.id, state: s, prices: deps.prices, now },
          { q: node?.metadata.name ?? name, limit: 50 },
        ).items;
        const row = rows.find((r) => r.name === (node?.metadata.name ?? name) || r.nodeClaim === name);
        if (!node && !nodeClaim && !row) {
          // A NodeClaim that is gone (the Disruptions page links them): its stored lifecycle.
          const past = await store.nodeClaimLifecycle(c.id, name);
          if (past.length === 0)
            return reply.code(404).send({
              error: "not_found",
              message: `no node or NodeClaim "${name}", now or in the stored history`,
            });
          return buildNodeDetail({
            row: undefined,
            node: undefined,
            nodeClaim: undefined,
            pods: [],
            lifecycle: past,
            prices: deps.prices,
          });
        }
        const claimName = nodeClaim?.metadata.name ?? row?.nodeClaim ?? undefined;
        const created = Date.parse(
          nodeClaim?.metadata.creationTimestamp ?? node?.metadata.creationTimestamp ?? "",
        );
        const lifecycle =
          claimName === undefined
            ? []
            : (
                await store.lifecycle({
                  clusterId: c.id,
                  from: Number.isNaN(created) ? 0 : created - HOUR,
                  to: now + 1,
                })
              ).filter((e) => e.nodeClaim === claimName);
        return buildNodeDetail({
          row,
          node,
          nodeClaim,
          pods: node ? s.podsOnNode(node.metadata.name ?? "", { includeTerminal: false }) : [],
          lifecycle,
          prices: deps.prices,
        });
      },
    );
  };
}
