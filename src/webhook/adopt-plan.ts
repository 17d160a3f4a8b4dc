// Adoption (issue 28, ADR 0006 "Adoption"), pure. Pods that ran before their workload's policy
// carry none of Wave's labels, so neither the ledger nor the repair saw them. Given those pods and
// the capacity type of the node each runs on: which to adopt — label them with the capacity they
// already run on (no eviction) — and which to leave alone. Once adopted they are ordinary placed
// pods, and `plannedMoves` over all of them is what the repair will evict, one at a time.
import type { Pod } from "../objects/kube.ts";
import { ASSIGNMENT_LABEL, LEDGER_LABEL, SLOT_LABEL } from "../objects/wave.ts";
import { DELETION_COST_ANNOTATION, ON_DEMAND, SPOT, revisionOf, type Capacity } from "./constants.ts";
import { isLivePod } from "./ledger.ts";
import { capacityConstraintOf } from "./patch.ts";
import { onDemandTarget } from "../policy/on-demand-target.ts";
import { workloadKey, type SpotPolicy, type WorkloadRef } from "../policy/spot.ts";
import { victimOrder } from "./repair-plan.ts";
import { resolveWorkload } from "./workload.ts";

/** The node's `karpenter.sh/capacity-type` ("none": not scheduled; "unknown": node without it). */
export type NodeCapacityOf = (nodeName: string | undefined) => string;

export interface AdoptionPlan {
  /** Running on a spot or on-demand node: labelled with that capacity type, never evicted for it. */
  adopt: { pod: Pod; capacity: Capacity }[];
  /** The pod's own spec pins a capacity type: never moved and not counted (as at admission). */
  pinned: Pod[];
  /** Not on a node yet: looked at again once scheduled (where it lands decides its label). */
  waiting: Pod[];
  /**
   * On a node without a capacity-type label (not Karpenter's): Wave cannot tell spot from
   * on-demand there, so it neither counts nor moves them.
   */
  outside: Pod[];
}

/**
 * Whether `pod` is governed by the policy of `workload`: it is the first of the pod's owners with
 * a policy (a Deployment's policy wins over its ReplicaSet's, exactly as at admission).
 */
export function governedBy(
  pod: Pod,
  workload: WorkloadRef,
  hasPolicy: (ref: WorkloadRef) => boolean,
): boolean {
  const r = resolveWorkload(pod, pod.metadata.namespace ?? workload.namespace);
  if (!r.managed) return false;
  const first = r.candidates.find(hasPolicy);
  return first !== undefined && workloadKey(first) === workloadKey(workload);
}

/** Sorts the workload's live pods without Wave's labels into what adoption does with each. */
export function planAdoption(unplaced: readonly Pod[], nodeCapacity: NodeCapacityOf): AdoptionPlan {
  const plan: AdoptionPlan = { adopt: [], pinned: [], waiting: [], outside: [] };
  for (const pod of unplaced) {
    if (!isLivePod(pod)) continue;
    if (capacityConstraintOf(pod) !== undefined) plan.pinned.push(pod);
    else if ((pod.spec.nodeName ?? "") === "") plan.waiting.push(pod);
    else {
      const c = nodeCapacity(pod.spec.nodeName);
      if (c === ON_DEMAND || c === SPOT) plan.adopt.push({ pod, capacity: c });
      else plan.outside.push(pod);
    }
  }
  return plan;
}

/** The labels (and, on-demand, the deletion cost) that make a running pod a placed one. */
export function adoptionPatch(
  pod: Pod,
  capacity: Capacity,
  ledger: string,
  token: string,
): { metadata: { labels: Record<string, string>; annotations?: Record<string, string> } } {
  const labels = { [ASSIGNMENT_LABEL]: capacity, [SLOT_LABEL]: token, [LEDGER_LABEL]: ledger };
  // As at admission: on scale-down the ReplicaSet controller keeps the on-demand pods.
  const keepCost =
    capacity === ON_DEMAND && pod.metadata.annotations?.[DELETION_COST_ANNOTATION] === undefined;
  return {
    metadata: { labels, ...(keepCost ? { annotations: { [DELETION_COST_ANNOTATION]: "10000" } } : {}) },
  };
}

/** A copy of `pod` as adoption would label it (dry-run plans over these; nothing is written). */
export function asAdopted(pod: Pod, capacity: Capacity, ledger: string): Pod {
  const patch = adoptionPatch(pod, capacity, ledger, `planned-${pod.metadata.name ?? ""}`);
  return {
    ...pod,
    metadata: { ...pod.metadata, labels: { ...pod.metadata.labels, ...patch.metadata.labels } },
  };
}

export interface Moves {
  /** shortfall: spot pods move to on-demand; excess: on-demand pods move to spot. */
  direction: "shortfall" | "excess" | "none";
  onDemand: number;
  target: number;
  live: number;
  /** Every pod the repair would evict to reach the target, in the order it would (first = next). */
  pods: Pod[];
  /** Why nothing moves, when `pods` is empty. */
  reason?: string;
}

/**
 * The evictions that bring the placed pods (adopted ones included) to the target: |onDemand −
 * target| pods of the side in excess, cheapest first — what `planRepair` picks one at a time.
 * Each eviction steps the on-demand count by one toward the target, never past it, so it never
 * goes below min(N, live) while moving.
 */
export function plannedMoves(policy: SpotPolicy, pods: readonly Pod[]): Moves {
  const live = pods.filter((p) => {
    const a = p.metadata.labels?.[ASSIGNMENT_LABEL];
    return isLivePod(p) && (a === ON_DEMAND || a === SPOT);
  });
  const onDemandPods = live.filter((p) => p.metadata.labels?.[ASSIGNMENT_LABEL] === ON_DEMAND);
  const target = onDemandTarget(policy, live.length);
  const base = { onDemand: onDemandPods.length, target, live: live.length };
  if (new Set(live.map(revisionOf)).size > 1)
    return { ...base, direction: "none", pods: [], reason: "rollout in progress" };
  if (onDemandPods.length > target)
    return {
      ...base,
      direction: "excess",
      pods: victimOrder(onDemandPods).slice(0, onDemandPods.length - target),
    };
  if (onDemandPods.length < target)
    return {
      ...base,
      direction: "shortfall",
      pods: victimOrder(live.filter((p) => p.metadata.labels?.[ASSIGNMENT_LABEL] === SPOT)).slice(
        0,
        target - onDemandPods.length,
      ),
    };
  return { ...base, direction: "none", pods: [], reason: "at its target" };
}
