// Resource arithmetic the scheduler uses: a pod's effective request and a node's free room.
import type { Node, Pod } from "../objects/kube.ts";
import { parseResources, podRequests, type Resources } from "./resources.ts";

export { podRequests };

/** Kubelet's default max pods when a node reports no pods allocatable. */
export const DEFAULT_MAX_PODS = 110;

/** A pod that still holds node resources (not finished, not being deleted). */
export function isActivePod(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase !== "Succeeded" && phase !== "Failed" && pod.metadata.deletionTimestamp === undefined;
}

export function isDaemonSetPod(pod: Pod): boolean {
  return (pod.metadata.ownerReferences ?? []).some((o) => o.kind === "DaemonSet" && o.controller === true);
}

export function nodeAllocatable(node: Node): Resources {
  return parseResources(node.status?.allocatable ?? node.status?.capacity);
}

export function maxPodsOf(node: Node): number {
  const alloc = nodeAllocatable(node);
  return alloc.pods ?? DEFAULT_MAX_PODS;
}

export interface NodeRoom {
  /** Allocatable minus the requests of the counted pods, per resource. */
  free: Resources;
  /** Pod slots left under the node's max pods. */
  podSlots: number;
}

/**
 * Free room on a node given the pods bound to it. `ignore` drops pods that would give way to a
 * real pod (Wave's own negative-priority warmup pods): their room is effectively free.
 */
export function nodeRoom(
  node: Node,
  podsOnNode: readonly Pod[],
  ignore: (p: Pod) => boolean = () => false,
): NodeRoom {
  const free = nodeAllocatable(node);
  let count = 0;
  for (const p of podsOnNode) {
    if (!isActivePod(p) || ignore(p)) continue;
    count++;
    for (const [k, v] of Object.entries(podRequests(p))) free[k] = (free[k] ?? 0) - v;
  }
  return { free, podSlots: maxPodsOf(node) - count };
}

/** Resources (by name) for which `req` exceeds `free`; "pods" is checked via slots. */
export function shortfalls(req: Resources, room: NodeRoom): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(req)) {
    if (k === "pods" || v <= 0) continue;
    if ((room.free[k] ?? 0) < v) out.push(k);
  }
  if (room.podSlots < 1) out.push("pods");
  return out;
}
