// The API's views: cluster state + history rows + prices in, the DTOs of src/dashboard/dto.ts out.
// Pure but for the machine index they read the state through (kept current by the state's own
// change notifications); `now` and prices are injected, so every number the UI shows can be
// checked by hand in tests.
import type {
  DisruptionDto,
  LifecycleEventDto,
  LiveDto,
  NodeDto,
  NodeListDto,
  NodePoolDto,
  NodeSortKey,
  OverviewDto,
  SeriesDto,
  SeriesPointDto,
  ThrashingDto,
  ThrashSeverity,
  WarmupStatsDto,
} from "./dto.ts";
import type { PoolSample, SeriesRow } from "../core/history/series.ts";
import type { LifecycleEvent } from "../core/store/store.ts";
import { CPU, MEMORY } from "../karpenter/resources.ts";
import { CAPACITY_TYPE_LABEL, type NodePool } from "../objects/karpenter.ts";
import type { PriceProvider } from "../pricing/types.ts";
import { HOURS_PER_MONTH } from "../pricing/types.ts";
import type { ClusterState } from "../state/cluster.ts";
import {
  priceAggregates,
  PriceMemo,
  sizeOf,
  type ClusterCost,
  type MachineRow,
  type PoolAggregate,
} from "./aggregates.ts";
import { clusterPrices, priceSourceOf } from "./figures/price.ts";
import { disruptionsByReason } from "./figures/disruptions.ts";
import { poolLimits } from "./figures/limits.ts";
import { staticNodes } from "./figures/static-pool.ts";
import type { DisruptionRecord, LifecycleRecord } from "./history.ts";
import { machineIndex, type MachineIndex } from "./machine-index.ts";
import { NO_POOL } from "./machines.ts";
import {
  detectThrashingAll,
  isFlagged,
  type ThrashingOptions,
  type ThrashingReport,
} from "./thrashing/detect.ts";

const HOUR = 3_600_000;

export const ZERO_WARMUP: Readonly<WarmupStatsDto> = Object.freeze({
  warmNodes: 0,
  costPerHour: 0,
  hits: 0,
  misses: 0,
  timeSavedSeconds: 0,
  warmCostUsd: 0,
  from: 0,
  to: 0,
});

export interface ViewInput {
  clusterId: string;
  state: ClusterState;
  prices: PriceProvider;
  now: number;
  /** Disruptions of (at least) the last hour, for the overview's count. */
  disruptions?: readonly DisruptionRecord[];
  /** Thrashing reports (see thrashingReports); absent means no pool is flagged. */
  thrashing?: readonly ThrashingReport[];
  /** Hits, misses and time saved from the warmup controller; warm nodes are read off the state. */
  warmup?: Partial<WarmupStatsDto>;
  /** The state's machines priced once (basisOf), shared with /metrics; computed here when absent. */
  basis?: Basis;
}

/**
 * What a view reads off the state: the machine index (joins, per-pool aggregates and usage kept
 * current as objects change, see machine-index.ts) and its pools priced once for this call.
 * Prices are applied per call (they refresh on their own schedule).
 */
export interface Basis {
  index: MachineIndex;
  pools: ReadonlyMap<string, PoolAggregate>;
  cost: ClusterCost;
  /** The prices this basis was priced with (per instance group), for figures priced per group. */
  memo: PriceMemo;
}

export function basisOf(state: ClusterState, prices: PriceProvider): Basis {
  const index = machineIndex(state);
  const pools = index.pools();
  const memo = new PriceMemo(clusterPrices(prices, state.nodeOverlays()));
  return { index, pools, cost: priceAggregates(pools.values(), memo), memo };
}

const basisFor = (input: ViewInput): Basis => input.basis ?? basisOf(input.state, input.prices);

function warmupOf(b: Basis, input: Partial<WarmupStatsDto> | undefined): WarmupStatsDto {
  return { ...ZERO_WARMUP, warmNodes: b.cost.warmNodes, costPerHour: b.cost.warmCostPerHour, ...input };
}

function severityByPool(reports: readonly ThrashingReport[] | undefined): Map<string, ThrashSeverity> {
  return new Map((reports ?? []).map((r) => [r.nodePool, r.severity]));
}

function overviewOf(input: ViewInput, b: Basis): OverviewDto {
  const { state, now } = input;
  const usage = b.index.usage();
  const lastHour = disruptionsByReason(input.disruptions ?? [], { from: now - HOUR, to: now + 1 });
  return {
    clusterId: input.clusterId,
    at: now,
    nodes: b.index.rows().length,
    nodePools: state.counts().nodePools,
    pendingPods: state.counts().pendingPods,
    costPerHour: b.cost.costPerHour,
    costPerMonth: b.cost.costPerHour * HOURS_PER_MONTH,
    priceSources: b.cost.sources,
    spotRatio: { ...b.cost.spotShare },
    spotSavingsPerHour: b.cost.spotSavingsPerHour,
    requested: { ...usage.requested },
    allocatable: { ...usage.allocatable },
    disruptionsLastHour: lastHour.total,
    thrashingPools: (input.thrashing ?? [])
      .filter((r) => isFlagged(r.severity))
      .map((r) => r.nodePool)
      .sort(),
    warmup: warmupOf(b, input.warmup),
  };
}

export function buildOverview(input: ViewInput): OverviewDto {
  return overviewOf(input, basisFor(input));
}

/**
 * The history chart's samples, per pool and capacity type: the overview's figures over time. The
 * same machines (NodeClaims joined to their Nodes, so a launching NodeClaim counts and costs), the
 * same size (sizeOf) and the same price (each machine's type, capacity type, zone and region).
 */
export function poolSamplesOf(state: ClusterState, prices: PriceProvider): PoolSample[] {
  const memo = new PriceMemo(clusterPrices(prices, state.nodeOverlays()));
  const acc = new Map<string, PoolSample>();
  for (const { machine: m } of machineIndex(state).rows()) {
    const capacityType = m.capacityType ?? "on-demand";
    const k = `${m.nodePool}\u0000${capacityType}`;
    let s = acc.get(k);
    if (!s) {
      s = { nodePool: m.nodePool, capacityType, nodes: 0, vcpu: 0, memoryBytes: 0, costPerHour: 0 };
      acc.set(k, s);
    }
    s.nodes += 1;
    s.vcpu += sizeOf(m, CPU) / 1000;
    s.memoryBytes += sizeOf(m, MEMORY);
    s.costPerHour += memo.own(m)?.usdPerHour ?? 0;
  }
  return [...acc.values()];
}

/** Capacity types the pool's requirements allow (In), else those its nodes have. */
function capacityTypesOf(pool: NodePool | undefined, seen: Iterable<string>): string[] {
  const req = pool?.spec.template.spec.requirements?.find((r) => r.key === CAPACITY_TYPE_LABEL);
  if (req?.operator === "In" && req.values?.length) return [...req.values].sort();
  return [...new Set(seen)].sort();
}

function staticDto(pool: NodePool | undefined, agg: PoolAggregate | undefined): NodePoolDto["static"] {
  const s = staticNodes(pool, agg);
  return s ? { desiredNodes: s.desired, actualNodes: s.actual } : null;
}

function poolsOf(input: ViewInput, b: Basis): NodePoolDto[] {
  const pools = input.state.nodePools();
  const byName = new Map(pools.map((p) => [p.metadata.name ?? "", p]));
  const limits = new Map(poolLimits(pools, b.index.capacityByPool()).map((l) => [l.nodePool, l]));
  const severity = severityByPool(input.thrashing);
  const names = new Set<string>([...byName.keys(), ...b.pools.keys()]);
  const rows: NodePoolDto[] = [];
  for (const name of names) {
    const pool = byName.get(name);
    const agg = b.pools.get(name);
    const cost = b.cost.pools.get(name);
    const lim = limits.get(name);
    const cpuLimit = lim?.limits.find((l) => l.resource === CPU);
    const memLimit = lim?.limits.find((l) => l.resource === MEMORY);
    const costPerHour = cost?.costPerHour ?? 0;
    rows.push({
      name,
      nodes: agg?.nodes ?? 0,
      nodesByCapacityType: { ...agg?.nodesByCapacityType },
      vcpu: agg?.vcpu ?? 0,
      memoryBytes: agg?.memoryBytes ?? 0,
      costPerHour,
      costPerMonth: costPerHour * HOURS_PER_MONTH,
      costByCapacityType: { ...cost?.costByCapacityType },
      priceSources: { ...cost?.sources },
      oldestPriceAsOf: cost?.oldestAsOf ?? null,
      limits: {
        cpu: cpuLimit ? cpuLimit.limit / 1000 : null,
        memoryBytes: memLimit ? memLimit.limit : null,
      },
      limitUsage: {
        cpu: cpuLimit && cpuLimit.limit > 0 ? cpuLimit.usage / cpuLimit.limit : null,
        memory: memLimit && memLimit.limit > 0 ? memLimit.usage / memLimit.limit : null,
      },
      consolidationPolicy: pool?.spec.disruption?.consolidationPolicy ?? null,
      consolidateAfter: pool?.spec.disruption?.consolidateAfter ?? null,
      capacityTypes: capacityTypesOf(pool, agg?.labelledCapacityTypes ?? []),
      thrashing: severity.get(name) ?? "none",
      thrashingFlagged: isFlagged(severity.get(name) ?? "none"),
      warmNodes: agg?.warmNodes ?? 0,
      static: staticDto(pool, agg),
    });
  }
  return rows.sort((a, c) => a.name.localeCompare(c.name));
}

export function buildNodePools(input: ViewInput): NodePoolDto[] {
  return poolsOf(input, basisFor(input));
}

/** The SSE payload: overview and pools from one pass over the state. */
export function buildLive(input: ViewInput): LiveDto {
  const b = basisFor(input);
  return { overview: overviewOf(input, b), nodePools: poolsOf(input, b) };
}

// ---- nodes ----------------------------------------------------------------------------------

/** Every sort key of the node list (a record, so a key added to NodeSortKey must be listed). */
const SORT_KEYS: Record<NodeSortKey, true> = {
  name: true,
  nodePool: true,
  instanceType: true,
  capacityType: true,
  zone: true,
  createdAt: true,
  cpu: true,
  memory: true,
  pods: true,
  cost: true,
  cpuUse: true,
  memoryUse: true,
  priceSource: true,
};
export const NODE_SORT_KEYS = Object.keys(SORT_KEYS) as NodeSortKey[];
export type { NodeSortKey };

export interface NodeQuery {
  pool?: string | undefined;
  capacityType?: string | undefined;
  /**
   * Case-insensitive substring of the name, NodeClaim, NodePool, instance type, capacity type,
   * zone or price source (what the node table shows as text).
   */
  q?: string | undefined;
  sort?: NodeSortKey | undefined;
  desc?: boolean | undefined;
  /** Default 500. */
  limit?: number | undefined;
  offset?: number | undefined;
}

function sortValue(n: NodeDto, key: NodeSortKey): string | number {
  switch (key) {
    case "cpu":
      return n.cpu.allocatable;
    case "memory":
      return n.memoryBytes.allocatable;
    case "cost":
      return n.costPerHour;
    case "createdAt":
      return n.createdAt ?? 0;
    case "pods":
      return n.pods;
    case "cpuUse":
      return n.cpu.allocatable ? n.cpu.requested / n.cpu.allocatable : 0;
    case "memoryUse":
      return n.memoryBytes.allocatable ? n.memoryBytes.requested / n.memoryBytes.allocatable : 0;
    default:
      return n[key] ?? "";
  }
}

/** Same order as String#localeCompare, many times faster over thousands of rows. */
const collator = new Intl.Collator();

function nodeRow(index: MachineIndex, memo: PriceMemo, r: MachineRow): NodeDto {
  const m = r.machine;
  const usage = m.node === undefined ? undefined : index.nodeTotals(m.node);
  const q = memo.own(m);
  return {
    name: m.name,
    nodePool: m.nodePool === NO_POOL ? null : m.nodePool,
    nodeClaim: m.nodeClaim ?? null,
    instanceType: m.instanceType ?? null,
    capacityType: m.capacityType ?? null,
    zone: m.zone ?? null,
    ready: m.ready,
    createdAt: m.createdAt ?? null,
    cpu: {
      allocatable: (usage?.allocCpu ?? m.allocatable[CPU] ?? 0) / 1000,
      requested: (usage?.reqCpu ?? 0) / 1000,
    },
    memoryBytes: {
      allocatable: usage?.allocMem ?? m.allocatable[MEMORY] ?? 0,
      requested: usage?.reqMem ?? 0,
    },
    pods: usage?.pods ?? 0,
    costPerHour: q?.usdPerHour ?? 0,
    priceSource: q?.source ?? "unknown",
    priceAsOf: q?.asOf ?? null,
    pricedBy: priceSourceOf(q),
    listPricePerHour: q?.overlay?.listUsdPerHour ?? null,
    doNotDisrupt: r.doNotDisrupt,
    warm: r.warm,
  };
}

export function buildNodeList(input: ViewInput, query: NodeQuery = {}): NodeListDto {
  const { state } = input;
  const index = machineIndex(state);
  const memo = new PriceMemo(clusterPrices(input.prices, state.nodeOverlays()));
  const offset = query.offset ?? 0;
  const limit = query.limit ?? 500;
  const q = query.q?.trim().toLowerCase();
  const key = query.sort ?? "name";
  // The table's default (every node by name): the index keeps that order, so build one page only.
  if (query.pool === undefined && query.capacityType === undefined && !q && key === "name" && !query.desc) {
    const ordered = index.rowsByCollatedName();
    return {
      total: ordered.length,
      totalBeforeQuery: ordered.length,
      items: ordered.slice(offset, offset + limit).map((r) => nodeRow(index, memo, r)),
    };
  }
  let rows = index.rows();
  if (query.pool !== undefined) rows = rows.filter((r) => r.machine.nodePool === query.pool);
  if (query.capacityType !== undefined)
    rows = rows.filter((r) => r.machine.capacityType === query.capacityType);
  let items = rows.map((r) => nodeRow(index, memo, r));
  if (query.pool === NO_POOL) items = []; // rows without a pool show null, which no filter names
  const totalBeforeQuery = items.length;
  if (q) {
    items = items.filter((n) =>
      [n.name, n.nodeClaim, n.nodePool, n.instanceType, n.capacityType, n.zone, n.priceSource].some((s) =>
        s?.toLowerCase().includes(q),
      ),
    );
  }
  const dir = query.desc === true ? -1 : 1;
  items.sort((x, y) => {
    const a = sortValue(x, key);
    const c = sortValue(y, key);
    const cmp =
      typeof a === "number" && typeof c === "number" ? a - c : collator.compare(String(a), String(c));
    return dir * cmp || collator.compare(x.name, y.name);
  });
  return { total: items.length, totalBeforeQuery, items: items.slice(offset, offset + limit) };
}

// ---- history ------------------------------------------------------------------------------

const orNull = (s: string | undefined): string | null => (s === undefined || s === "" ? null : s);

/** Store rows → DTOs, newest first. */
export function lifecycleDtos(rows: readonly LifecycleEvent[]): LifecycleEventDto[] {
  return rows
    .map((e) => ({
      at: e.at,
      nodeClaim: e.nodeClaim,
      nodePool: orNull(e.nodePool),
      nodeName: orNull(e.nodeName),
      instanceType: orNull(e.instanceType),
      capacityType: orNull(e.capacityType),
      phase: e.phase,
      reason: orNull(e.reason),
    }))
    .sort((a, b) => b.at - a.at || a.nodeClaim.localeCompare(b.nodeClaim));
}

export function disruptionDtos(rows: readonly DisruptionRecord[]): DisruptionDto[] {
  return rows
    .map((d) => ({ at: d.at, nodeClaim: d.nodeClaim, nodePool: orNull(d.nodePool), reason: d.reason }))
    .sort((a, b) => b.at - a.at || a.nodeClaim.localeCompare(b.nodeClaim));
}

export { thrashingLookbackMs } from "./thrashing/cluster.ts";

/** The detector over given history (routes and /metrics read a cluster's through ClusterThrashing). */
export function thrashingReports(input: {
  pools: readonly NodePool[];
  events: readonly LifecycleRecord[];
  disruptions: readonly DisruptionRecord[];
  /** Nodes Wave's warmup released unused (from its stored miss events). */
  warmNodes?: ReadonlySet<string>;
  now: number;
  options?: Partial<ThrashingOptions>;
}): ThrashingReport[] {
  return detectThrashingAll({
    pools: input.pools,
    events: input.events,
    disruptions: input.disruptions,
    ...(input.warmNodes ? { warmNodes: input.warmNodes } : {}),
    now: input.now,
    ...(input.options ? { options: input.options } : {}),
  });
}

export function thrashingDtos(reports: readonly ThrashingReport[]): ThrashingDto[] {
  return reports.map((r) => ({
    nodePool: r.nodePool,
    severity: r.severity,
    flagged: isFlagged(r.severity),
    score: r.score,
    summary: r.summary,
    evidence: r.evidence.map((e) => {
      const createdAt = e.launchedAt ?? e.disruptedAt ?? e.terminatedAt ?? 0;
      const endedAt = e.terminatedAt ?? e.disruptedAt;
      return {
        nodeClaim: e.nodeClaim,
        instanceType: e.instanceType ?? null,
        createdAt,
        terminatedAt: e.terminatedAt ?? null,
        lifetimeSeconds:
          e.lifetimeMs !== undefined
            ? e.lifetimeMs / 1000
            : endedAt !== undefined && e.launchedAt !== undefined
              ? (endedAt - e.launchedAt) / 1000
              : null,
        reason: e.reason ?? null,
        cause: e.warmup ? ("warmup" as const) : null,
      };
    }),
    advice: r.advice.map((a) => `${a.title}: ${a.detail}`),
  }));
}

/**
 * Store series rows → one chart line: per bucket, the sum over the pools (or the one asked for)
 * and capacity types; gaps pass through so the chart breaks instead of bridging.
 */
export function buildSeries(
  rows: readonly SeriesRow[],
  q: { from: number; to: number; step: number; nodePool?: string | undefined },
): SeriesDto {
  const byTs = new Map<number, SeriesPointDto>();
  const gaps: { from: number; to: number }[] = [];
  for (const r of rows) {
    if (r.kind === "gap") {
      gaps.push({ from: r.ts, to: r.until });
      continue;
    }
    if (q.nodePool !== undefined && r.nodePool !== q.nodePool) continue;
    let p = byTs.get(r.ts);
    if (!p) byTs.set(r.ts, (p = { t: r.ts, nodes: 0, spotNodes: 0, vcpu: 0, costPerHour: 0 }));
    p.nodes += r.nodes;
    if (r.capacityType === "spot") p.spotNodes += r.nodes;
    p.vcpu += r.vcpu;
    p.costPerHour += r.costPerHour;
  }
  gaps.sort((a, b) => a.from - b.from);
  return {
    from: q.from,
    to: q.to,
    step: q.step,
    nodePool: q.nodePool ?? null,
    points: [...byTs.values()].sort((a, b) => a.t - b.t),
    gaps,
  };
}
