// GET /api/v1/clusters/{id}/nodes/{name}: the node drawer (a NodeClaim that is gone: from its
// stored lifecycle).
import type { FastifyInstance } from "fastify";
import { buildNodeDetail } from "../../../views/node.ts";
import { NodeDetailSchema, type NodeDetailDto } from "../../../dashboard/dto.ts";
import { clusterExplainInput, nodeDisruption } from "../../../dashboard/consolidation/view.ts";
import { advisedNode } from "../../../dashboard/consolidation/advised.ts";
import { holdsByPool } from "../../../dashboard/pool-advice.ts";
import { buildNodeList } from "../../../dashboard/views.ts";
import { clusterPrices } from "../../../dashboard/figures/price.ts";
import { errorSchema } from "../schemas.ts";
import { HOUR, viewer, type ConsoleRoutes } from "./console-context.ts";

const schema = {
  summary:
    "One node (or NodeClaim): lifecycle timeline with durations, pods, price and source, labels, taints, who set do-not-disrupt",
  params: {
    type: "object",
    required: ["id", "name"],
    properties: { id: { type: "string", minLength: 1 }, name: { type: "string", minLength: 1 } },
  },
  response: { 200: NodeDetailSchema, 404: errorSchema },
} as const;

/** The drawer's "Can Karpenter disrupt it?", its NodePool fixes from the one advisor (as on the Consolidation page). */
async function advisedDisruption(
  ctx: ConsoleRoutes,
  c: Parameters<ConsoleRoutes["thrashing"]["reports"]>[0] & Parameters<typeof clusterExplainInput>[0],
  name: string,
  now: number,
): Promise<NodeDetailDto["disruption"]> {
  const input = clusterExplainInput(c, ctx.hub, ctx.deps.prices, now);
  const d = nodeDisruption(input, name);
  if (!d) return null;
  const holds = holdsByPool(c.state.nodePools(), await ctx.thrashing.reports(c, now), now);
  return advisedNode(d, c.state, input.karpenterVersion, holds);
}

/** A NodeClaim that is gone (the Disruptions page links them): from its stored lifecycle; undefined if none. */
async function goneNodeClaim(
  ctx: ConsoleRoutes,
  clusterId: string,
  name: string,
): Promise<NodeDetailDto | undefined> {
  const past = await ctx.store.nodeClaimLifecycle(clusterId, name);
  if (past.length === 0) return undefined;
  return buildNodeDetail({
    row: undefined,
    node: undefined,
    nodeClaim: undefined,
    pods: [],
    lifecycle: past,
    prices: ctx.deps.prices,
    disruption: null,
  });
}

export function nodeRoutes(ctx: ConsoleRoutes): (app: FastifyInstance) => void {
  return (app) => {
    app.get<{ Params: { id: string; name: string } }>(
      "/api/v1/clusters/:id/nodes/:name",
      { config: viewer, schema },
      async (req, reply) => {
        const c = await ctx.clusterOr404(req.params.id, reply);
        if (!c) return reply;
        const name = req.params.name;
        const s = c.state;
        const node = s.node(name) ?? (s.nodeClaim(name) ? s.nodeForNodeClaim(name) : undefined);
        const nodeClaim =
          s.nodeClaim(name) ?? (node ? s.nodeClaimForNode(node.metadata.name ?? "") : undefined);
        const now = ctx.deps.now();
        const rows = buildNodeList(
          { clusterId: c.id, state: s, prices: ctx.deps.prices, now },
          { q: node?.metadata.name ?? name, limit: 50 },
        ).items;
        const row = rows.find((r) => r.name === (node?.metadata.name ?? name) || r.nodeClaim === name);
        if (!node && !nodeClaim && !row) {
          const gone = await goneNodeClaim(ctx, c.id, name);
          return (
            gone ??
            reply.code(404).send({
              error: "not_found",
              message: `no node or NodeClaim "${name}", now or in the stored history`,
            })
          );
        }
        const claimName = nodeClaim?.metadata.name ?? row?.nodeClaim ?? undefined;
        const created = Date.parse(
          nodeClaim?.metadata.creationTimestamp ?? node?.metadata.creationTimestamp ?? "",
        );
        const lifecycle =
          claimName === undefined
            ? []
            : (
                await ctx.store.lifecycle({
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
          prices: clusterPrices(ctx.deps.prices, s.nodeOverlays()),
          disruption: node ? await advisedDisruption(ctx, c, node.metadata.name ?? "", now) : null,
        });
      },
    );
  };
}
