// Node facts Wave derives: readiness, KWOK, taints Karpenter uses to mark a node's stage.
import type { Condition, Node, Taint } from "../objects/kube.ts";
import type { NodeClaim } from "../objects/karpenter.ts";
import {
  DISRUPTED_TAINT,
  NODE_INITIALIZED_LABEL,
  NODE_REGISTERED_LABEL,
  UNREGISTERED_TAINT,
} from "../objects/karpenter.ts";
import { KWOK } from "./labels.ts";

export function conditionOf(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return conditionOf(conditions, type)?.status === "True";
}

/** The kubelet's Ready condition is True. */
export function isReady(node: Node): boolean {
  return isConditionTrue(node.status?.conditions, "Ready");
}

export function providerIDOf(obj: Node | NodeClaim): string | undefined {
  // Nodes carry it in spec, NodeClaims in status; neither has the other's field.
  const fromSpec = obj.spec && "providerID" in obj.spec ? obj.spec.providerID : undefined;
  const fromStatus = obj.status && "providerID" in obj.status ? obj.status.providerID : undefined;
  return fromSpec || fromStatus || undefined;
}

/** A node simulated by KWOK (the Karpenter KWOK provider or a hand-made KWOK node). */
export function isKwok(obj: Node | NodeClaim): boolean {
  if (providerIDOf(obj)?.startsWith(KWOK.providerIDPrefix)) return true;
  return (
    obj.metadata.labels?.[KWOK.nodeLabel] === "fake" || obj.metadata.annotations?.[KWOK.nodeLabel] === "fake"
  );
}

export function hasTaint(node: Node, key: string, effect?: Taint["effect"]): boolean {
  return (node.spec?.taints ?? []).some(
    (t) => t.key === key && (effect === undefined || t.effect === effect),
  );
}

/** Karpenter tainted the node karpenter.sh/disrupted:NoSchedule: it is being disrupted. */
export function isDisruptionTainted(node: Node): boolean {
  return hasTaint(node, DISRUPTED_TAINT, "NoSchedule");
}

/** Registered with Karpenter (label set and the unregistered taint gone). */
export function isRegistered(node: Node): boolean {
  return node.metadata.labels?.[NODE_REGISTERED_LABEL] === "true" && !hasTaint(node, UNREGISTERED_TAINT);
}

export function isInitialized(node: Node): boolean {
  return node.metadata.labels?.[NODE_INITIALIZED_LABEL] === "true";
}

export function isTerminating(obj: { metadata: { deletionTimestamp?: string } }): boolean {
  return obj.metadata.deletionTimestamp !== undefined;
}

export function isCordoned(node: Node): boolean {
  return node.spec?.unschedulable === true;
}
