// The Consolidation view and the pending pods view (GET …/consolidation, …/pending; /metrics reads
// the same sums): per node from explain.ts, summed per pool and per reason.
import type { BlockerReason, ConsolidationViewDto, NodeDisruptionDto, PendingViewDto } from "../dto.ts";
import type { Event } from "../../objects/kube.ts";
import { explainNodes, type ExplainInput } from "./explain.ts";
import { pendingView } from "./pending.ts";
import { catalogOf, poolCapacity } from "./plan.ts";
import { clusterKarpenterVersion } from "../karpenter-version.ts";
import { staticReplicas } from "../../karpenter/static-pool.ts";
import type { PriceProvider } from "../../pricing/types.ts";
import type { ClusterState } from "../../state/cluster.ts";
import { clusterPrices } from "../figures/price.ts";

/**
 * A node is blocked when a blocker stops Karpenter from a saving; what it costs is what the plan of
 * every blocked node says consolidation would save. A wait (consolidateAfter) and a node that would
 * save $0 are not blocked.
 */
export const isBlocked = (n: NodeDisruptionDto): boolean => n.blocked;

export function consolidationView(clusterId: string, input: ExplainInput): ConsolidationViewDto {
  const items = explainNodes(input);
  const byPool = new Map<string, { nodes: number; blockedNodes: number; blockedCostPerHour: number }>();
  const byReason = new Map<BlockerReason, { blockedNodes: number; blockedCostPerHour: number }>();
  const byPoolReason = new Map<
    string,
    { nodePool: string; reason: BlockerReason; blockedNodes: number; blockedCostPerHour: number }
  >();
  let blockedNodes = 0;
  let blockedCost = 0;
  let waitingNodes = 0;
  const staticPools = new Map<string, ConsolidationViewDto["staticPools"][number]>();
  for (const n of items) {
    const pool = n.nodePool ?? "";
    const p = byPool.get(pool) ?? { nodes: 0, blockedNodes: 0, blockedCostPerHour: 0 };
    p.nodes++;
    byPool.set(pool, p);
    if (n.waiting) waitingNodes++;
    if (n.static) countStatic(staticPools, n, input);
    if (!isBlocked(n)) continue;
    blockedNodes++;
    blockedCost += n.savingsPerHour;
    p.blockedNodes++;
    p.blockedCostPerHour += n.savingsPerHour;
    for (const reason of new Set(n.blockers.filter((b) => b.blocking).map((b) => b.reason))) {
      const r = byReason.get(reason) ?? { blockedNodes: 0, blockedCostPerHour: 0 };
      r.blockedNodes++;
      r.blockedCostPerHour += n.savingsPerHour;
      byReason.set(reason, r);
      const k = `${pool}\u0000${reason}`;
      const pr = byPoolReason.get(k) ?? { nodePool: pool, reason, blockedNodes: 0, blockedCostPerHour: 0 };
      pr.blockedNodes++;
      pr.blockedCostPerHour += n.savingsPerHour;
      byPoolReason.set(k, pr);
    }
  }
  items.sort(
    (a, b) =>
      Number(isBlocked(b)) - Number(isBlocked(a)) ||
      b.savingsPerHour - a.savingsPerHour ||
      (a.node < b.node ? -1 : a.node > b.node ? 1 : 0),
  );
  return {
    clusterId,
    at: input.now,
    karpenterVersion: input.karpenterVersion ?? null,
    nodes: items.length,
    blockedNodes,
    blockedCostPerHour: blockedCost,
    waitingNodes,
    staticNodes: [...staticPools.values()].reduce((a, p) => a + p.nodes, 0),
    staticPools: [...staticPools.values()].sort((a, b) => a.nodePool.localeCompare(b.nodePool)),
    byPool: [...byPool]
      .map(([nodePool, v]) => ({ nodePool, ...v }))
      .sort((a, b) => b.blockedCostPerHour - a.blockedCostPerHour || a.nodePool.localeCompare(b.nodePool)),
    byReason: [...byReason]
      .map(([reason, v]) => ({ reason, ...v }))
      .sort((a, b) => b.blockedCostPerHour - a.blockedCostPerHour || a.reason.localeCompare(b.reason)),
    byPoolReason: [...byPoolReason.values()].sort(
      (a, b) => a.nodePool.localeCompare(b.nodePool) || a.reason.localeCompare(b.reason),
    ),
    items,
  };
}

/** A static pool's node counted under its pool, with the pool's one sentence (its "static" blocker). */
function countStatic(
  out: Map<string, ConsolidationViewDto["staticPools"][number]>,
  n: NodeDisruptionDto,
  input: ExplainInput,
): void {
  const pool = n.nodePool ?? "";
  const hit = out.get(pool);
  if (hit) {
    hit.nodes++;
    return;
  }
  const message = n.blockers.find((b) => b.reason === "static")?.message ?? "";
  const replicas = staticReplicas(input.state.nodePool(pool)) ?? 0;
  out.set(pool, { nodePool: pool, nodes: 1, replicas, message });
}

/** One node's section of the node drawer (null when it is no Karpenter node or is being deleted). */
export function nodeDisruption(input: ExplainInput, nodeName: string): NodeDisruptionDto | null {
  return explainNodes(input).find((n) => n.node === nodeName) ?? null;
}

/** The explainer's input for a cluster as core holds it (the API and /metrics both build it here). */
export function explainInputOf(
  cluster: { state: ExplainInput["state"]; info?: { karpenterVersion: string } | undefined },
  events: readonly Event[],
  prices: ExplainInput["prices"],
  now: number,
): ExplainInput {
  const v = cluster.info?.karpenterVersion || clusterKarpenterVersion(cluster.state);
  // Karpenter's prices: its NodeOverlays applied (what consolidation would save, as it decides).
  const overlaid = clusterPrices(prices, cluster.state.nodeOverlays());
  return { state: cluster.state, prices: overlaid, events, karpenterVersion: v || undefined, now };
}

/** The cluster a view explains: its id, state and (from its agent) the Karpenter version it runs. */
export interface ExplainedCluster {
  id: string;
  state: ClusterState;
  info?: { karpenterVersion: string } | undefined;
}

/** Karpenter's Events per cluster (core's hub keeps them beyond their hour). */
export interface KarpenterEventsSource {
  karpenterEvents(clusterId: string): {
    events(now: number): readonly Event[];
    /** Moves with every Event kept (the view is reused while it stands still); absent: always recomputed after its reuse. */
    readonly revision?: number;
  };
}

/** The explainer's input for a cluster at `now`: GET …/consolidation, the node drawer and /metrics. */
export function clusterExplainInput(
  c: ExplainedCluster,
  source: KarpenterEventsSource,
  prices: PriceProvider,
  now: number,
): ExplainInput {
  return explainInputOf(c, source.karpenterEvents(c.id).events(now), prices, now);
}

/**
 * How long one cluster's consolidation view is served again. It walks every node and pod (hundreds
 * of ms at 5,000 nodes), so it is computed at most once per `CHANGED_REUSE_MS` while the cluster
 * changes, and reused up to `SAME_REUSE_MS` while neither its state nor its Karpenter Events moved
 * (its "time left" and budget windows are that old at most). The API, the page and /metrics all
 * read this one result, so they agree whoever asked first; Karpenter itself decides on a 10 s poll.
 */
export const CONSOLIDATION_REUSE = { SAME_REUSE_MS: 10_000, CHANGED_REUSE_MS: 5_000 } as const;
const explained = new WeakMap<ClusterState, { key: string; at: number; view: ConsolidationViewDto }>();

/** A cluster's consolidation view at `now` (GET …/consolidation; /metrics through clusterExplanations). */
export function clusterConsolidation(
  c: ExplainedCluster,
  source: KarpenterEventsSource,
  prices: PriceProvider,
  now: number,
): ConsolidationViewDto {
  const log = source.karpenterEvents(c.id);
  const key = `${c.id}/${c.state.version}/${log.revision ?? "-"}/${c.info?.karpenterVersion ?? ""}`;
  const hit = explained.get(c.state);
  if (hit && now >= hit.at) {
    const age = now - hit.at;
    if (age < (hit.key === key ? CONSOLIDATION_REUSE.SAME_REUSE_MS : CONSOLIDATION_REUSE.CHANGED_REUSE_MS))
      return hit.view;
  }
  const view = consolidationView(c.id, explainInputOf(c, log.events(now), prices, now));
  explained.set(c.state, { key, at: now, view });
  return view;
}

/** A cluster's pending pods view at `now` (GET …/pending; /metrics through clusterExplanations). */
export function clusterPending(
  c: ExplainedCluster,
  source: KarpenterEventsSource,
  prices: PriceProvider,
  now: number,
): PendingViewDto {
  const events = source.karpenterEvents(c.id).events(now);
  return pendingView(c.id, {
    pods: c.state.pendingPods(),
    events,
    now,
    pools: c.state.nodePools(),
    catalog: catalogOf(c.state, prices),
    poolUsage: poolCapacity(c.state),
  });
}

/**
 * Both views of a cluster at `now`: the one assembly GET …/consolidation, GET …/pending and
 * /metrics read, so their figures cannot drift apart.
 */
export function clusterExplanations(
  c: ExplainedCluster,
  source: KarpenterEventsSource,
  prices: PriceProvider,
  now: number,
): { consolidation: ConsolidationViewDto; pending: PendingViewDto } {
  return {
    consolidation: clusterConsolidation(c, source, prices, now),
    pending: clusterPending(c, source, prices, now),
  };
}
