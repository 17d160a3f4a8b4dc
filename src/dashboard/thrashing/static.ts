// A static NodePool's removals in thrashing detection (issue 39): Karpenter's static.deprovisioning
// deletes NodeClaims with no disruption reason when replicas drop, and static.provisioning refills
// what goes, so a removal without a reason is a scale operation — recorded as such, never churn.
import { STATIC_SCALE_REASON } from "../../karpenter/static-pool.ts";
import { goneAt, type NodeClaimLife } from "../history.ts";

export function staticScaled(lives: NodeClaimLife[], isStatic: boolean): NodeClaimLife[] {
  if (!isStatic) return lives;
  return lives.map((l) =>
    goneAt(l) !== undefined && (l.reason === undefined || l.reason === "Unknown")
      ? { ...l, reason: STATIC_SCALE_REASON }
      : l,
  );
}
