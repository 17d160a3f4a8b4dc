// The consolidation view's entry for a static NodePool's node (issue 39): Karpenter never
// consolidates it (disruption/consolidation.go ShouldDisrupt skips OwnedByStaticNodePool), so its
// one "blocker" is that sentence — not blocking, no fix, no saving.
import { staticPoolReason } from "../../karpenter/static-pool.ts";
import type { BlockerDto } from "../dto.ts";
import type { Saving } from "./plan.ts";

/** What a static pool's node saves in the view: nothing (no "would save"). */
export const NO_SAVING: Saving = { savingsPerHour: 0, action: null, replacement: null };

export function staticBlocker(pool: string, replicas: number): BlockerDto {
  return {
    reason: "static",
    blocking: false,
    waiting: false,
    message: staticPoolReason(replicas),
    object: { kind: "NodePool", namespace: null, name: pool },
    pods: [],
    until: null,
    source: "state",
    fix: null,
  };
}
