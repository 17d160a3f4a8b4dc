// Per-NodePool aggregates of machine rows, and the cost figures priced over them. A pool's
// machines fall into a handful of price groups (instance type × capacity type × zone × region), so
// a view prices each group once and multiplies, instead of looking up 5,000 prices per request.
// Pure: the same figures as figures/cost.ts computes per machine (sums in another order, so
// floating-point totals may differ in the last bits; counts and integer sums are identical).
import type { PriceProvider, PriceQuote } from "../pricing/types.ts";
import { CPU, MEMORY, addInto, type Resources } from "../karpenter/resources.ts";
import type { CapacityType } from "../objects/karpenter.ts";
import type { CostSource } from "./figures/cost.ts";
import { sizeOf, vcpuOf, type Machine } from "./machines.ts";
import { machinePrice } from "./figures/price.ts";

export type Ct = CapacityType;

/** A machine row with the marks views show next to it. */
export interface MachineRow {
  machine: Machine;
  /** Held warm by Wave's warmup controller (it owns the node's do-not-disrupt). */
  warm: boolean;
  doNotDisrupt: boolean;
}

/** Machines of one pool that one price lookup covers. */
export interface PriceGroup {
  /** pool, instanceType, capacityType, zone, region joined: the memo key of the lookup. */
  key: string;
  /**
   * The first machine's labels: a NodeOverlay selects on the pool, the type and the offering
   * (capacity type, zone), the same for every machine of the group.
   */
  labels: Readonly<Record<string, string>> | undefined;
  instanceType: string | undefined;
  /** As labelled; undefined is priced as on-demand. */
  capacityType: Ct | undefined;
  zone: string | undefined;
  region: string | undefined;
  nodes: number;
  warmNodes: number;
  /** Sum of the machines' vCPU by sizeOf (the larger of capacity and allocatable). */
  vcpu: number;
}

export interface PoolAggregate {
  name: string;
  nodes: number;
  /** Of those, machines being deleted (Karpenter no longer counts them toward a static pool's replicas). */
  terminatingNodes: number;
  /** Keyed by capacity type, unlabelled machines as on-demand. */
  nodesByCapacityType: Partial<Record<Ct, number>>;
  /** Capacity types some machine is labelled with, sorted. */
  labelledCapacityTypes: Ct[];
  /** Sums of machine sizes (max of capacity and allocatable): cores and bytes. */
  vcpu: number;
  memoryBytes: number;
  /** Sum of machine capacity: what Karpenter counts against limits when the pool has no status. */
  capacity: Resources;
  warmNodes: number;
  groups: PriceGroup[];
}

export { sizeOf };

// The pool too: a NodeOverlay may price one pool's offering and not another's.
const groupKey = (m: Machine): string =>
  `${m.nodePool}\u0000${m.instanceType ?? ""}\u0000${m.capacityType ?? ""}\u0000${m.zone ?? ""}\u0000${m.region ?? ""}`;

/** Aggregates one pool's rows (pass them in machine order for sums identical to a full pass). */
export function aggregatePool(name: string, rows: readonly MachineRow[]): PoolAggregate {
  const agg: PoolAggregate = {
    name,
    nodes: 0,
    terminatingNodes: 0,
    nodesByCapacityType: {},
    labelledCapacityTypes: [],
    vcpu: 0,
    memoryBytes: 0,
    capacity: {},
    warmNodes: 0,
    groups: [],
  };
  const groups = new Map<string, PriceGroup>();
  const labelled = new Set<Ct>();
  for (const { machine: m, warm } of rows) {
    const ct = m.capacityType ?? "on-demand";
    agg.nodes++;
    if (m.terminating) agg.terminatingNodes++;
    agg.nodesByCapacityType[ct] = (agg.nodesByCapacityType[ct] ?? 0) + 1;
    if (m.capacityType) labelled.add(m.capacityType);
    agg.vcpu += sizeOf(m, CPU) / 1000;
    agg.memoryBytes += sizeOf(m, MEMORY);
    addInto(agg.capacity, m.capacity);
    if (warm) agg.warmNodes++;
    const key = groupKey(m);
    let g = groups.get(key);
    if (!g) {
      g = {
        key,
        labels: m.labels,
        instanceType: m.instanceType,
        capacityType: m.capacityType,
        zone: m.zone,
        region: m.region,
        nodes: 0,
        warmNodes: 0,
        vcpu: 0,
      };
      groups.set(key, g);
    }
    g.nodes++;
    if (warm) g.warmNodes++;
    // The one size function, as the pools' vCPU: capacity alone under-counts KWOK nodes.
    g.vcpu += vcpuOf(m);
  }
  agg.labelledCapacityTypes = [...labelled].sort();
  agg.groups = [...groups.values()];
  return agg;
}

/** Price lookups memoized for one view: each distinct group is looked up once. */
export class PriceMemo {
  readonly #prices: PriceProvider;
  readonly #memo = new Map<string, PriceQuote | undefined>();

  constructor(prices: PriceProvider) {
    this.#prices = prices;
  }

  /** Price of the machine's own capacity type (figures' nodeCosts), as its group's. */
  own(m: Machine): PriceQuote | undefined {
    if (!m.instanceType) return undefined;
    const { instanceType, zone, region, labels } = m;
    const ct = m.capacityType ?? "on-demand";
    return this.#lookup(`${groupKey(m)}\u0000${ct}`, () =>
      machinePrice(this.#prices, { instanceType, capacityType: ct, zone, region, labels }),
    );
  }

  /** Price of a group's machines as `ct` (its own capacity type, or on-demand for savings). */
  group(g: PriceGroup, ct: Ct): PriceQuote | undefined {
    if (!g.instanceType) return undefined;
    const type = g.instanceType;
    return this.#lookup(`${g.key}\u0000${ct}`, () =>
      machinePrice(this.#prices, {
        instanceType: type,
        capacityType: ct,
        zone: g.zone,
        region: g.region,
        labels: g.labels,
      }),
    );
  }

  #lookup(key: string, price: () => PriceQuote | undefined): PriceQuote | undefined {
    const hit = this.#memo.get(key);
    if (hit !== undefined || this.#memo.has(key)) return hit;
    const q = price();
    this.#memo.set(key, q);
    return q;
  }
}

export interface PoolCost {
  costPerHour: number;
  costByCapacityType: Partial<Record<Ct, number>>;
  /** Machines per price source, "unknown" for unpriced ones. */
  sources: Partial<Record<CostSource, number>>;
  /** The oldest price used: how stale the pool's cost may be. */
  oldestAsOf?: string;
}

export interface ClusterCost {
  /** Sum over priced machines (figures' totalCost). */
  costPerHour: number;
  /** Machines per price source, "unknown" for unpriced ones. */
  sources: Partial<Record<CostSource, number>>;
  /** Spot share by nodes, vCPU and cost (figures' spotRatio). */
  spotShare: { nodes: number; vcpu: number; cost: number };
  /** figures' spotSavings: each spot machine against on-demand of the same type and place. */
  spotSavingsPerHour: number;
  warmNodes: number;
  warmCostPerHour: number;
  pools: Map<string, PoolCost>;
}

const share = (byCt: Record<Ct, number>): number => {
  const total = byCt.spot + byCt["on-demand"] + byCt.reserved;
  return total > 0 ? byCt.spot / total : 0;
};

/** Prices every group of every pool once and sums the cluster's and each pool's cost figures. */
export function priceAggregates(pools: Iterable<PoolAggregate>, memo: PriceMemo): ClusterCost {
  const nodes = { spot: 0, "on-demand": 0, reserved: 0 };
  const vcpu = { spot: 0, "on-demand": 0, reserved: 0 };
  const cost = { spot: 0, "on-demand": 0, reserved: 0 };
  const out: ClusterCost = {
    costPerHour: 0,
    sources: {},
    spotShare: { nodes: 0, vcpu: 0, cost: 0 },
    spotSavingsPerHour: 0,
    warmNodes: 0,
    warmCostPerHour: 0,
    pools: new Map(),
  };
  let actual = 0;
  let allOnDemand = 0;
  for (const pool of pools) {
    const pc: PoolCost = { costPerHour: 0, costByCapacityType: {}, sources: {} };
    for (const g of pool.groups) {
      const ct = g.capacityType ?? "on-demand";
      const q = memo.group(g, ct);
      const usd = q ? q.usdPerHour * g.nodes : 0;
      const source: CostSource = q ? q.source : "unknown";
      out.sources[source] = (out.sources[source] ?? 0) + g.nodes;
      pc.sources[source] = (pc.sources[source] ?? 0) + g.nodes;
      if (q && (pc.oldestAsOf === undefined || q.asOf < pc.oldestAsOf)) pc.oldestAsOf = q.asOf;
      out.costPerHour += usd;
      nodes[ct] += g.nodes;
      vcpu[ct] += g.vcpu;
      cost[ct] += usd;
      pc.costPerHour += usd;
      pc.costByCapacityType[ct] = (pc.costByCapacityType[ct] ?? 0) + usd;
      out.warmNodes += g.warmNodes;
      out.warmCostPerHour += q ? q.usdPerHour * g.warmNodes : 0;
      // Savings: like for like, so groups missing either price are left out of both sides.
      const od = ct === "on-demand" ? q : memo.group(g, "on-demand");
      if (q && od) {
        actual += q.usdPerHour * g.nodes;
        allOnDemand += od.usdPerHour * g.nodes;
      }
    }
    out.pools.set(pool.name, pc);
  }
  out.spotShare = { nodes: share(nodes), vcpu: share(vcpu), cost: share(cost) };
  out.spotSavingsPerHour = allOnDemand - actual;
  return out;
}
