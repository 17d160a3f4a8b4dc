// Static NodePools (Karpenter v1.8+, feature gate StaticCapacity): a NodePool with spec.replicas
// set keeps exactly that many nodes whatever the pods want. Karpenter ignores its
// consolidationPolicy and consolidateAfter (pkg/apis/v1/nodepool.go), never consolidates its nodes
// (disruption/consolidation.go ShouldDisrupt, nodeclaim/disruption marks none Consolidatable) and
// launches no node for a pending pod there: static.provisioning and static.deprovisioning create or
// delete NodeClaims when replicas change (the deletions carry no disruption reason).
import type { NodePool } from "../objects/karpenter.ts";

/** The pool's replicas when it is static (Karpenter's IsStatic: replicas set, 0 included), else undefined. */
export function staticReplicas(pool: NodePool | undefined): number | undefined {
  const r = pool?.spec.replicas;
  return typeof r === "number" && Number.isInteger(r) && r >= 0 ? r : undefined;
}

/** Why Wave neither explains consolidation of, advises on, nor warms a static pool: one sentence everywhere. */
export function staticPoolReason(replicas: number): string {
  return `static: Karpenter keeps ${String(replicas)} node${replicas === 1 ? "" : "s"} and never consolidates them`;
}

/** The removal reason Wave records for a static pool's scale-down (Karpenter writes none). */
export const STATIC_SCALE_REASON = "ReplicasChanged";
