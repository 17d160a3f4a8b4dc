// Requested vs allocatable: how much of what the cluster pays for pods actually reserve.
import type { Pod } from "../../objects/kube.ts";
import { CPU, MEMORY, isTerminalPod, podRequests } from "../../karpenter/resources.ts";
import type { Machine } from "../machines.ts";
import type { CostSource, NodeCost } from "./cost.ts";

export interface Utilization {
  /** cpu millicores, memory bytes. */
  allocatable: { cpu: number; memory: number };
  requested: { cpu: number; memory: number };
  cpuShare: number;
  memoryShare: number;
  /**
   * Share of the node no pod reserves on its most-requested resource: 1 − max(cpuShare,
   * memoryShare), floored at 0. A node full on memory but idle on CPU wastes nothing — it could
   * not take another pod of the same shape.
   */
  idleShare: number;
  /** idleShare × the node's hourly price (sum for groups); null when unpriced. */
  idleUsdPerHour: number | null;
  /** Where the price behind idleUsdPerHour came from ("mixed" for groups of several sources). */
  priceSource: CostSource | "mixed";
}

export interface NodeWaste extends Utilization {
  machine: string;
  nodePool: string;
  pods: number;
}

function shares(alloc: { cpu: number; memory: number }, req: { cpu: number; memory: number }) {
  const cpuShare = alloc.cpu > 0 ? req.cpu / alloc.cpu : 0;
  const memoryShare = alloc.memory > 0 ? req.memory / alloc.memory : 0;
  return { cpuShare, memoryShare, idleShare: Math.max(0, 1 - Math.max(cpuShare, memoryShare)) };
}

/** Pods count on the node in spec.nodeName unless they finished (Succeeded/Failed). */
export function wasteByNode(
  machines: readonly Machine[],
  pods: readonly Pod[],
  costs: readonly NodeCost[] = [],
): NodeWaste[] {
  const req = new Map<string, { cpu: number; memory: number; pods: number }>();
  for (const p of pods) {
    const node = p.spec.nodeName;
    if (!node || isTerminalPod(p)) continue;
    let r: Record<string, number>;
    try {
      r = podRequests(p);
    } catch {
      continue; // an unparsable request cannot be counted; the pod is still shown elsewhere
    }
    const acc = req.get(node) ?? { cpu: 0, memory: 0, pods: 0 };
    acc.cpu += r[CPU] ?? 0;
    acc.memory += r[MEMORY] ?? 0;
    acc.pods++;
    req.set(node, acc);
  }
  const price = new Map(costs.map((c) => [c.machine, c]));
  return machines.map((m) => {
    const allocatable = { cpu: m.allocatable[CPU] ?? 0, memory: m.allocatable[MEMORY] ?? 0 };
    const r = (m.node ? req.get(m.node) : undefined) ?? { cpu: 0, memory: 0, pods: 0 };
    const s = shares(allocatable, r);
    const cost = price.get(m.name);
    const usd = cost?.usdPerHour;
    return {
      machine: m.name,
      nodePool: m.nodePool,
      pods: r.pods,
      allocatable,
      requested: { cpu: r.cpu, memory: r.memory },
      ...s,
      idleUsdPerHour: usd === undefined || usd === null ? null : usd * s.idleShare,
      priceSource: cost?.source ?? "unknown",
    };
  });
}

/** Sums nodes into one figure (shares over the sums; idle cost over priced nodes). */
export function sumWaste(nodes: readonly NodeWaste[]): Utilization & { nodes: number; unpriced: number } {
  const allocatable = { cpu: 0, memory: 0 };
  const requested = { cpu: 0, memory: 0 };
  let idleUsd = 0;
  let unpriced = 0;
  const sources = new Set<CostSource | "mixed">();
  for (const n of nodes) {
    sources.add(n.priceSource);
    allocatable.cpu += n.allocatable.cpu;
    allocatable.memory += n.allocatable.memory;
    requested.cpu += n.requested.cpu;
    requested.memory += n.requested.memory;
    if (n.idleUsdPerHour === null) unpriced++;
    else idleUsd += n.idleUsdPerHour;
  }
  const s = shares(allocatable, requested);
  const [only] = sources;
  return {
    nodes: nodes.length,
    unpriced,
    allocatable,
    requested,
    ...s,
    idleUsdPerHour: nodes.length > unpriced ? idleUsd : null,
    priceSource: sources.size === 1 && only !== undefined ? only : sources.size === 0 ? "unknown" : "mixed",
  };
}

export function wasteByPool(
  nodes: readonly NodeWaste[],
): (ReturnType<typeof sumWaste> & { nodePool: string })[] {
  const by = new Map<string, NodeWaste[]>();
  for (const n of nodes) {
    const l = by.get(n.nodePool);
    if (l) l.push(n);
    else by.set(n.nodePool, [n]);
  }
  return [...by.entries()]
    .map(([nodePool, ns]) => ({ nodePool, ...sumWaste(ns) }))
    .sort((a, b) => a.nodePool.localeCompare(b.nodePool));
}
