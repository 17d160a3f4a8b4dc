// Node counts per NodePool, split by capacity type and state.
import type { Machine } from "../machines.ts";

export interface PoolNodeCount {
  nodePool: string;
  nodes: number;
  spot: number;
  onDemand: number;
  reserved: number;
  /** No capacity-type label (priced as on-demand). */
  unknownCapacity: number;
  ready: number;
  /** Launched but no Node registered yet. */
  launching: number;
  terminating: number;
}

export function nodeCountByPool(machines: readonly Machine[]): PoolNodeCount[] {
  const by = new Map<string, PoolNodeCount>();
  for (const m of machines) {
    let c = by.get(m.nodePool);
    if (!c) {
      c = {
        nodePool: m.nodePool,
        nodes: 0,
        spot: 0,
        onDemand: 0,
        reserved: 0,
        unknownCapacity: 0,
        ready: 0,
        launching: 0,
        terminating: 0,
      };
      by.set(m.nodePool, c);
    }
    c.nodes++;
    if (m.capacityType === "spot") c.spot++;
    else if (m.capacityType === "on-demand") c.onDemand++;
    else if (m.capacityType === "reserved") c.reserved++;
    else c.unknownCapacity++;
    if (m.ready) c.ready++;
    if (m.node === undefined) c.launching++;
    if (m.terminating) c.terminating++;
  }
  return [...by.values()].sort((a, b) => a.nodePool.localeCompare(b.nodePool));
}
