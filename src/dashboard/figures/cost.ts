// Cost per hour and per month (730 h) per node, NodePool and cluster; spot share; realized spot
// savings. Every figure says where its prices came from.
import type { PriceProvider, PriceSource } from "../../pricing/types.ts";
import { HOURS_PER_MONTH } from "../../pricing/types.ts";
import { vcpuOf, type Machine } from "../machines.ts";
import { machinePrice } from "./price.ts";

export type CostSource = PriceSource | "unknown";

export interface NodeCost {
  machine: string;
  nodePool: string;
  instanceType?: string;
  capacityType: "spot" | "on-demand" | "reserved";
  zone?: string;
  /** null when no provider knows the price. */
  usdPerHour: number | null;
  usdPerMonth: number | null;
  source: CostSource;
  asOf?: string;
}

export interface CostTotal {
  nodes: number;
  /** Sum over priced nodes only; `unpriced` says how many are missing from it. */
  usdPerHour: number;
  usdPerMonth: number;
  unpriced: number;
  /** How many nodes were priced from each source. */
  sources: Partial<Record<CostSource, number>>;
  /** The single source when all agree, else "mixed". */
  source: CostSource | "mixed";
  /** Oldest price date used: how stale the total may be. */
  oldestAsOf?: string;
}

export function nodeCosts(machines: readonly Machine[], prices: PriceProvider): NodeCost[] {
  return machines.map((m) => {
    const capacityType = m.capacityType ?? "on-demand";
    const q = machinePrice(prices, m);
    const line: NodeCost = {
      machine: m.name,
      nodePool: m.nodePool,
      capacityType,
      usdPerHour: q ? q.usdPerHour : null,
      usdPerMonth: q ? q.usdPerHour * HOURS_PER_MONTH : null,
      source: q ? q.source : "unknown",
    };
    if (m.instanceType) line.instanceType = m.instanceType;
    if (m.zone) line.zone = m.zone;
    if (q) line.asOf = q.asOf;
    return line;
  });
}

export function totalCost(lines: readonly NodeCost[]): CostTotal {
  const t: CostTotal = {
    nodes: 0,
    usdPerHour: 0,
    usdPerMonth: 0,
    unpriced: 0,
    sources: {},
    source: "unknown",
  };
  for (const l of lines) {
    t.nodes++;
    t.sources[l.source] = (t.sources[l.source] ?? 0) + 1;
    if (l.usdPerHour === null) {
      t.unpriced++;
      continue;
    }
    t.usdPerHour += l.usdPerHour;
    if (l.asOf && (t.oldestAsOf === undefined || l.asOf < t.oldestAsOf)) t.oldestAsOf = l.asOf;
  }
  t.usdPerMonth = t.usdPerHour * HOURS_PER_MONTH;
  const kinds = Object.keys(t.sources) as CostSource[];
  t.source = kinds.length === 1 ? (kinds[0] ?? "unknown") : kinds.length === 0 ? "unknown" : "mixed";
  return t;
}

export function costByPool(lines: readonly NodeCost[]): (CostTotal & { nodePool: string })[] {
  const by = new Map<string, NodeCost[]>();
  for (const l of lines) {
    const list = by.get(l.nodePool);
    if (list) list.push(l);
    else by.set(l.nodePool, [l]);
  }
  return [...by.entries()]
    .map(([nodePool, ls]) => ({ nodePool, ...totalCost(ls) }))
    .sort((a, b) => a.nodePool.localeCompare(b.nodePool));
}

export interface Share {
  spot: number;
  onDemand: number;
  reserved: number;
  total: number;
  /** spot / total, 0 when total is 0. */
  spotShare: number;
}

function share(spot: number, onDemand: number, reserved: number): Share {
  const total = spot + onDemand + reserved;
  return { spot, onDemand, reserved, total, spotShare: total > 0 ? spot / total : 0 };
}

export interface SpotRatio {
  nodes: Share;
  vcpu: Share;
  /** USD per hour over priced nodes. */
  cost: Share & { unpriced: number; source: CostSource | "mixed" };
}

/** Spot share by node count, by vCPU and by cost (nodes without a label count as on-demand). */
export function spotRatio(machines: readonly Machine[], lines: readonly NodeCost[]): SpotRatio {
  const acc = { spot: [0, 0, 0], "on-demand": [0, 0, 0], reserved: [0, 0, 0] };
  const costByMachine = new Map(lines.map((l) => [l.machine, l]));
  for (const m of machines) {
    const a = acc[m.capacityType ?? "on-demand"];
    a[0] = (a[0] ?? 0) + 1;
    a[1] = (a[1] ?? 0) + vcpuOf(m);
    a[2] = (a[2] ?? 0) + (costByMachine.get(m.name)?.usdPerHour ?? 0);
  }
  const pick = (i: number): Share => share(acc.spot[i] ?? 0, acc["on-demand"][i] ?? 0, acc.reserved[i] ?? 0);
  const names = new Set(machines.map((m) => m.name));
  const priced = totalCost(lines.filter((l) => names.has(l.machine)));
  return {
    nodes: pick(0),
    vcpu: pick(1),
    cost: { ...pick(2), unpriced: priced.unpriced, source: priced.source },
  };
}

export interface SpotSavings {
  /** What the cluster pays per hour for the priced nodes. */
  actualUsdPerHour: number;
  /** What the same nodes would cost all on-demand. */
  allOnDemandUsdPerHour: number;
  savedUsdPerHour: number;
  savedUsdPerMonth: number;
  /** saved / allOnDemand. */
  savedShare: number;
  spotNodes: number;
  /** Spot nodes left out because their spot or on-demand price is unknown. */
  unpricedSpotNodes: number;
  sources: Partial<Record<CostSource, number>>;
  source: CostSource | "mixed";
}

/**
 * Realized savings: each spot node's price against the on-demand price of the same type in the
 * same place; non-spot nodes count the same on both sides. Nodes with unknown prices are left out
 * of both sides so the comparison stays like for like.
 */
export function spotSavings(machines: readonly Machine[], prices: PriceProvider): SpotSavings {
  let actual = 0;
  let allOd = 0;
  let spotNodes = 0;
  let unpriced = 0;
  const sources: Partial<Record<CostSource, number>> = {};
  const note = (s: CostSource): void => {
    sources[s] = (sources[s] ?? 0) + 1;
  };
  for (const m of machines) {
    if (!m.instanceType) continue;
    const ct = m.capacityType ?? "on-demand";
    const od = machinePrice(prices, m, "on-demand");
    if (ct !== "spot") {
      const own = ct === "on-demand" ? od : machinePrice(prices, m);
      if (!own || !od) continue;
      actual += own.usdPerHour;
      allOd += od.usdPerHour;
      note(own.source);
      continue;
    }
    spotNodes++;
    const spot = machinePrice(prices, m);
    if (!spot || !od) {
      unpriced++;
      continue;
    }
    actual += spot.usdPerHour;
    allOd += od.usdPerHour;
    note(spot.source);
  }
  const saved = allOd - actual;
  const kinds = Object.keys(sources) as CostSource[];
  return {
    actualUsdPerHour: actual,
    allOnDemandUsdPerHour: allOd,
    savedUsdPerHour: saved,
    savedUsdPerMonth: saved * HOURS_PER_MONTH,
    savedShare: allOd > 0 ? saved / allOd : 0,
    spotNodes,
    unpricedSpotNodes: unpriced,
    sources,
    source: kinds.length === 1 ? (kinds[0] ?? "unknown") : kinds.length === 0 ? "unknown" : "mixed",
  };
}
