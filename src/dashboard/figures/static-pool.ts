// A static NodePool's desired and actual nodes (docs/figures.md): the one definition the NodePools
// page, its API and /metrics read.
import { staticReplicas } from "../../karpenter/static-pool.ts";
import type { NodePool } from "../../objects/karpenter.ts";
import type { PoolAggregate } from "../aggregates.ts";

export interface StaticNodes {
  /** spec.replicas. */
  desired: number;
  /**
   * The pool's machines not being deleted: what Karpenter counts against replicas (its running
   * NodeClaims; a deleting one is already replaced or on its way out).
   */
  actual: number;
}

/** Desired vs actual nodes of a static pool; null for a pool that scales with its pods. */
export function staticNodes(
  pool: NodePool | undefined,
  agg: Pick<PoolAggregate, "nodes" | "terminatingNodes"> | undefined,
): StaticNodes | null {
  const desired = staticReplicas(pool);
  if (desired === undefined) return null;
  return { desired, actual: (agg?.nodes ?? 0) - (agg?.terminatingNodes ?? 0) };
}
