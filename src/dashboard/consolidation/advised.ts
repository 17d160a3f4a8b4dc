// The consolidation view with each NodePool blocker's fix given by the one advisor
// (../pool-advice.ts): a field the pool's thrashing advice or a fix Wave applied holds is never
// proposed back. The blocked nodes and cost do not depend on it (/metrics reads the view as it is).
import type { BlockerFixDto, ConsolidationViewDto, NodeDisruptionDto } from "../dto.ts";
import type { ClusterState } from "../../state/cluster.ts";
import type { Hold } from "../pool-advice.ts";
import { blockerFix, noGainFix } from "./fixes.ts";

/** One node's blockers with the advised fixes (the node drawer; each item of the view). */
export function advisedNode(
  n: NodeDisruptionDto,
  state: ClusterState,
  version: string | undefined,
  holds: ReadonlyMap<string, readonly Hold[]>,
): NodeDisruptionDto {
  const h = n.nodePool ? holds.get(n.nodePool) : undefined;
  // A static pool's node has no fix to advise (Karpenter never consolidates it).
  if (!h || n.static || !n.blockers.some((b) => b.object.kind === "NodePool")) return n;
  const pool = state.nodePool(n.nodePool ?? "");
  const gain = n.savingsPerHour > 0 ? (f: BlockerFixDto | null) => f : noGainFix;
  const node = state.node(n.node);
  return {
    ...n,
    blockers: n.blockers.map((b) =>
      b.object.kind === "NodePool"
        ? { ...b, fix: gain(blockerFix(b, { pool, node, version, holds: h })) }
        : b,
    ),
  };
}

const advised = new WeakMap<ConsolidationViewDto, { key: string; view: ConsolidationViewDto }>();

/** The view with the advised fixes (a copy; the shared view stays as /metrics reads it). */
export function advisedView(
  view: ConsolidationViewDto,
  state: ClusterState,
  holds: ReadonlyMap<string, readonly Hold[]>,
): ConsolidationViewDto {
  if (holds.size === 0) return view;
  const key = JSON.stringify([...holds]);
  const hit = advised.get(view);
  if (hit?.key === key) return hit.view;
  const version = view.karpenterVersion ?? undefined;
  const out = { ...view, items: view.items.map((n) => advisedNode(n, state, version, holds)) };
  advised.set(view, { key, view: out });
  return out;
}
