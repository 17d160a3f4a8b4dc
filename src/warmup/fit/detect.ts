// Warmup detection for one NodePool (pure): find the pool's "largest pod" and decide whether any
// Ready node of the pool could take one more of it right now. If none can, the next such pod
// would wait for a cold node launch — that is when warm capacity pays off.
import type { Node, Pod } from "../../objects/kube.ts";
import { NODE_POOL_LABEL, type NodePool } from "../../objects/karpenter.ts";
import { parseResources, type Resources } from "../../karpenter/resources.ts";
import { isActivePod, nodeAllocatable, nodeRoom, podRequests, shortfalls } from "../../karpenter/room.ts";
import { podMatchesNodeLabels, untoleratedTaints } from "../../karpenter/scheduling.ts";

const GiB = 2 ** 30;

/** Used to weigh cpu against memory when the pool has no nodes and no limits: 1 vCPU : 4 GiB. */
export const FALLBACK_REFERENCE: Resources = { cpu: 1000, memory: 4 * GiB };

export function isNodeReady(node: Node): boolean {
  return (
    node.metadata.deletionTimestamp === undefined &&
    node.spec?.unschedulable !== true &&
    (node.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True")
  );
}

function median(values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
}

/**
 * The yardstick for "largest": a typical node of the pool (per-resource median allocatable of
 * its nodes); with no nodes, the pool's spec.limits (only the cpu:memory ratio matters); else
 * FALLBACK_REFERENCE.
 */
export function referenceNode(pool: NodePool, nodes: readonly Node[]): Resources {
  const ref: Resources = {};
  for (const r of ["cpu", "memory"]) {
    const m = median(nodes.map((n) => nodeAllocatable(n)[r] ?? 0).filter((v) => v > 0));
    if (m !== undefined) ref[r] = m;
  }
  if (ref.cpu !== undefined && ref.memory !== undefined) return ref;
  const limits = parseResources(pool.spec.limits);
  if ((limits.cpu ?? 0) > 0 && (limits.memory ?? 0) > 0)
    return { cpu: limits.cpu ?? 0, memory: limits.memory ?? 0 };
  return FALLBACK_REFERENCE;
}

/** Dominant resource share of a request against the reference node (DRF's measure). */
export function dominantShare(req: Resources, ref: Resources): number {
  let share = 0;
  for (const r of ["cpu", "memory"]) {
    const denom = ref[r] ?? 0;
    if (denom > 0) share = Math.max(share, (req[r] ?? 0) / denom);
  }
  return share;
}

export interface LargestPod {
  pod: Pod;
  requests: Resources;
  share: number;
}

/**
 * The pod with the highest dominant share; ties go to the larger cpu+memory share sum, then
 * namespace/name so the choice is stable between reconciles.
 */
export function largestPod(pods: readonly Pod[], ref: Resources): LargestPod | undefined {
  let best: (LargestPod & { sum: number; key: string }) | undefined;
  for (const pod of pods) {
    const requests = podRequests(pod);
    const share = dominantShare(requests, ref);
    const sum = (requests.cpu ?? 0) / (ref.cpu ?? 1) + (requests.memory ?? 0) / (ref.memory ?? 1);
    const key = `${pod.metadata.namespace ?? ""}/${pod.metadata.name ?? ""}`;
    if (
      best === undefined ||
      share > best.share ||
      (share === best.share && (sum > best.sum || (sum === best.sum && key < best.key)))
    ) {
      best = { pod, requests, share, sum, key };
    }
  }
  return best && { pod: best.pod, requests: best.requests, share: best.share };
}

/** Why a pod cannot go on a node; empty when it fits. */
export function whyNotFit(pod: Pod, requests: Resources, node: Node, podsOnNode: readonly Pod[]): string[] {
  const reasons: string[] = [];
  if (!isNodeReady(node)) reasons.push("not-ready");
  const taints = untoleratedTaints(node.spec?.taints, pod.spec.tolerations);
  if (taints.length > 0) reasons.push(`taint:${taints.map((t) => t.key).join(",")}`);
  if (!podMatchesNodeLabels(pod, node.metadata.labels ?? {}, node.metadata.name ?? ""))
    reasons.push("selector");
  // Room held by a warmup pod is counted as taken here: each warmup pod is a warm slot of its
  // own (see detect), and counting it twice would hide a missing one.
  const room = nodeRoom(node, podsOnNode);
  for (const r of shortfalls(requests, room)) reasons.push(r === "pods" ? "max-pods" : `insufficient:${r}`);
  return reasons;
}

export interface PoolInputs {
  pool: NodePool;
  /** Nodes labelled with the pool. */
  nodes: readonly Node[];
  /** Every pod bound to one of those nodes, by node name (DaemonSet and Wave pods included). */
  podsByNode: ReadonlyMap<string, readonly Pod[]>;
  /** Pods tied to the pool (see pool.ts), running or pending; Wave's own pods excluded. */
  workload: readonly Pod[];
}

export type Detection =
  | { warmup: false; reason: "no-workload" }
  | { warmup: false; reason: "fits"; nodes: string[]; largest: LargestPod }
  | { warmup: true; largest: LargestPod; nodes: string[]; reasons: Record<string, string[]> };

/**
 * Decides whether the pool needs (more) warm capacity for its largest pod. The pool has
 * `fitting nodes + warmup pods` slots for one more such pod (a warmup pod yields its room to any
 * real pod); it needs a warmup while that is below `target` (the policy's maxWarmNodes, 1 by
 * default: "somewhere for the next big pod to go at once") and no node has room for one: the
 * scheduler would bind a warmup pod to that room before Karpenter launches anything, and a warmup
 * pod on a node older than its warmup is removed at once — made and removed again every pass,
 * keeping that node busy so Karpenter never consolidates it.
 */
export function detect(input: PoolInputs, warmups = 0, target = 1): Detection {
  const active = input.workload.filter(isActivePod);
  const largest = largestPod(active, referenceNode(input.pool, input.nodes));
  if (largest === undefined) return { warmup: false, reason: "no-workload" };
  const reasons: Record<string, string[]> = {};
  const nodes: string[] = [];
  const sorted = [...input.nodes].sort((a, b) =>
    (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
  );
  for (const node of sorted) {
    const name = node.metadata.name ?? "";
    const why = whyNotFit(largest.pod, largest.requests, node, input.podsByNode.get(name) ?? []);
    if (why.length === 0) nodes.push(name);
    else reasons[name] = why;
  }
  if (nodes.length > 0 || warmups >= target) return { warmup: false, reason: "fits", nodes, largest };
  return { warmup: true, largest, nodes, reasons };
}

/** Groups pods by the node they are bound to. */
export function podsByNodeName(pods: readonly Pod[]): Map<string, Pod[]> {
  const out = new Map<string, Pod[]>();
  for (const p of pods) {
    const n = p.spec.nodeName;
    if (n === undefined || n === "") continue;
    const list = out.get(n) ?? [];
    list.push(p);
    out.set(n, list);
  }
  return out;
}

export const poolNameOfNode = (n: Node): string | undefined => n.metadata.labels?.[NODE_POOL_LABEL];
