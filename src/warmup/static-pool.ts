// Warmup refuses a static NodePool (spec.replicas, Karpenter v1.8+): Karpenter keeps exactly its
// replicas and launches no node for a pending pod there, so a warmup pod would only wait (issue 39).
// The controller and the Warmup page both ask here, before detection, so both give this reason.
import { staticPoolReason, staticReplicas } from "../karpenter/static-pool.ts";
import type { NodePool } from "../objects/karpenter.ts";

export interface StaticRefusal {
  reason: "static-pool";
  detail: string;
}

/** Why warmup does nothing for this pool, when it is static; undefined otherwise. */
export function staticRefusal(pool: NodePool | undefined): StaticRefusal | undefined {
  const replicas = staticReplicas(pool);
  if (replicas === undefined) return undefined;
  return {
    reason: "static-pool",
    detail: `${staticPoolReason(replicas)}; it launches no node for a pending pod, so Wave does not warm it`,
  };
}
