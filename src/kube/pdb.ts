// A PodDisruptionBudget's status as the disruption controller (kube-controller-manager) keeps it:
// expected pods (the pods themselves for an integer minAvailable, else their controllers' scale),
// desired and current healthy, disruptions allowed. Pure; the in-memory apiserver's Eviction API
// and the simulator's disruption controller share it.
import type { Pod, PodDisruptionBudget } from "../objects/kube.ts";

export interface PdbStatus {
  expectedPods: number;
  desiredHealthy: number;
  currentHealthy: number;
  disruptionsAllowed: number;
}

export const podHealthy = (p: Pod): boolean =>
  (p.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");

/**
 * `pods`: the live pods the budget's selector matches in its namespace; `scaleOf`: the replicas of
 * a pod's controller (by its uid), undefined for a bare pod.
 */
export function pdbStatus(
  pdb: PodDisruptionBudget,
  pods: readonly Pod[],
  scaleOf: (owner: { kind: string; name: string; uid: string }) => number | undefined,
): PdbStatus {
  let expected = pods.length;
  if (typeof pdb.spec.minAvailable !== "number") {
    const scales = new Map<string, number>();
    let bare = 0;
    for (const p of pods) {
      const o = (p.metadata.ownerReferences ?? []).find((r) => r.controller === true);
      const scale = o && (o.kind === "ReplicaSet" || o.kind === "StatefulSet") ? scaleOf(o) : undefined;
      if (o && scale !== undefined) scales.set(o.uid, scale);
      else bare++;
    }
    expected = bare + [...scales.values()].reduce((a, b) => a + b, 0);
  }
  const scaled = (v: number | string): number =>
    typeof v === "number" ? v : Math.ceil((Number.parseInt(v, 10) / 100) * expected);
  const desiredHealthy =
    pdb.spec.minAvailable !== undefined
      ? scaled(pdb.spec.minAvailable)
      : pdb.spec.maxUnavailable !== undefined
        ? Math.max(0, expected - scaled(pdb.spec.maxUnavailable))
        : 0;
  const currentHealthy = pods.filter(podHealthy).length;
  return {
    expectedPods: expected,
    desiredHealthy,
    currentHealthy,
    disruptionsAllowed: Math.max(0, currentHealthy - desiredHealthy),
  };
}
