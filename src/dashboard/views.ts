// The API's views: cluster state + history rows + prices in, the DTOs of src/api/dto.ts out.
// Pure (`now` and prices injected) so every number the UI shows can be checked by hand in tests.
import type {
  DisruptionDto,
  LifecycleEventDto,
  LiveDto,
  NodeDto,
  NodeListDto,
  NodePoolDto,
  OverviewDto,
  SeriesDto,
  SeriesPointDto,
  ThrashingDto,
  ThrashSeverity,
  WarmupStatsDto,
} from "../api/dto.ts";
import type { SeriesRow } from "../core/history/series.ts";
import type { LifecycleEvent } from "../core/store/store.ts";
import { isDoNotDisrupt } from "../karpenter/labels.ts";
import { CPU, MEMORY } from "../karpenter/resources.ts";
import { K, type NodePool } from "../karpenter/types.ts";
import type { KubeObject } from "../kube/objects.ts";
import type { PriceProvider } from "../pricing/types.ts";
import { HOURS_PER_MONTH } from "../pricing/types.ts";
import type { ClusterState } from "../state/cluster.ts";
import { W } from "../warmup/labels.ts";
import { nodeCosts, spotRatio, spotSavings, totalCost, type NodeCost } from "./figures/cost.ts";
import { disruptionsByReason } from "./figures/disruptions.ts";
import { poolUsageVsLimits } from "./figures/limits.ts";
import type { DisruptionRecord, LifecycleRecord } from "./history.ts";
import { machinesOf, NO_POOL, type Machine } from "./machines.ts";
import {
  DEFAULT_THRASHING_OPTIONS,
  detectThrashingAll,
  type ThrashingOptions,
  type ThrashingReport,
} from "./thrashing/detect.ts";

const HOUR = 3_600_000;
type Ct = "spot" | "on-demand" | "reserved";

export const ZERO_WARMUP: Readonly<WarmupStatsDto> = Object.freeze({
  warmNodes: 0,
  costPerHour: 0,
  hits: 0,
  misses: 0,
  timeSavedSeconds: 0,
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
}

/** Everything the views share, computed once per snapshot. */
interface Basis {
  machines: Machine[];
  costs: Map<string, NodeCost>;
  costLines: NodeCost[];
}

/**
 * Joining NodeClaims to Nodes (quantities parsed for every machine) and summing requests over
 * every node are the costliest steps of a view at thousands of nodes. Both depend on the state
 * alone, so they run once per state version and every request and stream client in between
 * shares them. Prices are applied per call (they refresh on their own schedule).
 */
interface PerVersion {
  version: number;
  machines: Machine[];
  usage?: {
    requested: { cpu: number; memoryBytes: number };
    allocatable: { cpu: number; memoryBytes: number };
  };
}
const perVersion = new WeakMap<ClusterState, PerVersion>();

function cached(state: ClusterState): PerVersion {
  const hit = perVersion.get(state);
  if (hit?.version === state.version) return hit;
  const fresh = { version: state.version, machines: machinesOf(state.nodes(), state.nodeClaims()) };
  perVersion.set(state, fresh);
  return fresh;
}

function machinesFor(state: ClusterState): Machine[] {
  return cached(state).machines;
}

/** Requested and allocatable cores and memory summed over the nodes. */
function usageTotals(state: ClusterState): NonNullable<PerVersion["usage"]> {
  const c = cached(state);
  if (c.usage) return c.usage;
  let reqCpu = 0;
  let reqMem = 0;
  let allocCpu = 0;
  let allocMem = 0;
  for (const n of state.nodes()) {
    const u = n.metadata.name === undefined ? undefined : state.nodeUsage(n.metadata.name);
    if (!u) continue;
    reqCpu += u.cpuMillis.requested;
    reqMem += u.memoryBytes.requested;
    allocCpu += u.cpuMillis.allocatable;
    allocMem += u.memoryBytes.allocatable;
  }
  c.usage = {
    requested: { cpu: reqCpu / 1000, memoryBytes: reqMem },
    allocatable: { cpu: allocCpu / 1000, memoryBytes: allocMem },
  };
  return c.usage;
}

function basisOf(state: ClusterState, prices: PriceProvider): Basis {
  const machines = machinesFor(state);
  const costLines = nodeCosts(machines, prices);
  return { machines, costLines, costs: new Map(costLines.map((c) => [c.machine, c])) };
}

/** A machine's size: the larger of capacity and allocatable (KWOK nodes under-report capacity). */
function sizeOf(m: Machine, resource: string): number {
  return Math.max(m.capacity[resource] ?? 0, m.allocatable[resource] ?? 0);
}

function annotatedObjects(state: ClusterState, m: Machine): KubeObject[] {
  const out: KubeObject[] = [];
  const node = m.node === undefined ? undefined : state.node(m.node);
  const claim = m.nodeClaim === undefined ? undefined : state.nodeClaim(m.nodeClaim);
  if (node) out.push(node);
  if (claim) out.push(claim);
  return out;
}

/** Held warm by Wave's warmup controller: it marks the do-not-disrupt it owns. */
function isWarm(objs: readonly KubeObject[]): boolean {
  return objs.some((o) => o.metadata.annotations?.[W.doNotDisruptOwner] === W.doNotDisruptOwnerValue);
}

function warmupOf(state: ClusterState, b: Basis, input: Partial<WarmupStatsDto> | undefined): WarmupStatsDto {
  let warmNodes = 0;
  let costPerHour = 0;
  for (const m of b.machines) {
    if (!isWarm(annotatedObjects(state, m))) continue;
    warmNodes++;
    costPerHour += b.costs.get(m.name)?.usdPerHour ?? 0;
  }
  return { ...ZERO_WARMUP, warmNodes, costPerHour, ...input };
}

function severityByPool(reports: readonly ThrashingReport[] | undefined): Map<string, ThrashSeverity> {
  return new Map((reports ?? []).map((r) => [r.nodePool, r.severity]));
}

function overviewOf(input: ViewInput, b: Basis): OverviewDto {
  const { state, now } = input;
  const total = totalCost(b.costLines);
  const ratio = spotRatio(b.machines, b.costLines);
  const usage = usageTotals(state);
  const lastHour = disruptionsByReason(input.disruptions ?? [], { from: now - HOUR, to: now + 1 });
  return {
    clusterId: input.clusterId,
    at: now,
    nodes: b.machines.length,
    nodePools: state.nodePools().length,
    pendingPods: state.pendingPods().length,
    costPerHour: total.usdPerHour,
    costPerMonth: total.usdPerMonth,
    priceSources: total.sources,
    spotRatio: { nodes: ratio.nodes.spotShare, vcpu: ratio.vcpu.spotShare, cost: ratio.cost.spotShare },
    spotSavingsPerHour: spotSavings(b.machines, input.prices).savedUsdPerHour,
    requested: { ...usage.requested },
    allocatable: { ...usage.allocatable },
    disruptionsLastHour: lastHour.total,
    thrashingPools: (input.thrashing ?? [])
      .filter((r) => r.severity !== "none")
      .map((r) => r.nodePool)
      .sort(),
    warmup: warmupOf(state, b, input.warmup),
  };
}

export function buildOverview(input: ViewInput): OverviewDto {
  return overviewOf(input, basisOf(input.state, input.prices));
}

/** Capacity types the pool's requirements allow (In), else those its nodes have. */
function capacityTypesOf(pool: NodePool | undefined, seen: Iterable<string>): string[] {
  const req = pool?.spec.template.spec.requirements?.find((r) => r.key === K.capacityTypeLabel);
  if (req?.operator === "In" && req.values?.length) return [...req.values].sort();
  return [...new Set(seen)].sort();
}

function poolsOf(input: ViewInput, b: Basis): NodePoolDto[] {
  const { state } = input;
  const pools = state.nodePools();
  const byName = new Map(pools.map((p) => [p.metadata.name ?? "", p]));
  const limits = new Map(poolUsageVsLimits(pools, b.machines).map((l) => [l.nodePool, l]));
  const severity = severityByPool(input.thrashing);
  const rows = new Map<string, NodePoolDto>();
  const seenCts = new Map<string, Set<string>>();
  const row = (name: string): NodePoolDto => {
    let r = rows.get(name);
    if (!r) {
      const pool = byName.get(name);
      const lim = limits.get(name);
      const cpuLimit = lim?.limits.find((l) => l.resource === CPU);
      const memLimit = lim?.limits.find((l) => l.resource === MEMORY);
      r = {
        name,
        nodes: 0,
        nodesByCapacityType: {},
        vcpu: 0,
        memoryBytes: 0,
        costPerHour: 0,
        costPerMonth: 0,
        costByCapacityType: {},
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
        capacityTypes: [],
        thrashing: severity.get(name) ?? "none",
        warmNodes: 0,
      };
      rows.set(name, r);
      seenCts.set(name, new Set());
    }
    return r;
  };
  for (const p of pools) row(p.metadata.name ?? "");
  for (const m of b.machines) {
    const r = row(m.nodePool);
    const ct: Ct = m.capacityType ?? "on-demand";
    const usd = b.costs.get(m.name)?.usdPerHour ?? 0;
    r.nodes++;
    r.nodesByCapacityType[ct] = (r.nodesByCapacityType[ct] ?? 0) + 1;
    r.vcpu += sizeOf(m, CPU) / 1000;
    r.memoryBytes += sizeOf(m, MEMORY);
    r.costPerHour += usd;
    r.costByCapacityType[ct] = (r.costByCapacityType[ct] ?? 0) + usd;
    if (m.capacityType) seenCts.get(m.nodePool)?.add(m.capacityType);
    if (isWarm(annotatedObjects(state, m))) r.warmNodes++;
  }
  for (const r of rows.values()) {
    r.costPerMonth = r.costPerHour * HOURS_PER_MONTH;
    r.capacityTypes = capacityTypesOf(byName.get(r.name), seenCts.get(r.name) ?? []);
  }
  return [...rows.values()].sort((a, c) => a.name.localeCompare(c.name));
}

export function buildNodePools(input: ViewInput): NodePoolDto[] {
  return poolsOf(input, basisOf(input.state, input.prices));
}

/** The SSE payload: overview and pools from one pass over the state. */
export function buildLive(input: ViewInput): LiveDto {
  const b = basisOf(input.state, input.prices);
  return { overview: overviewOf(input, b), nodePools: poolsOf(input, b) };
}

// ---- nodes ----------------------------------------------------------------------------------

export const NODE_SORT_KEYS = [
  "name",
  "nodePool",
  "instanceType",
  "capacityType",
  "zone",
  "createdAt",
  "cpu",
  "memory",
  "pods",
  "cost",
] as const;
export type NodeSortKey = (typeof NODE_SORT_KEYS)[number];

export interface NodeQuery {
  pool?: string | undefined;
  capacityType?: string | undefined;
  /** Case-insensitive substring of name, NodeClaim, instance type or zone. */
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
    default:
      return n[key] ?? "";
  }
}

/** Same order as String#localeCompare, many times faster over thousands of rows. */
const collator = new Intl.Collator();

export function buildNodeList(input: ViewInput, query: NodeQuery = {}): NodeListDto {
  const { state } = input;
  const b = basisOf(state, input.prices);
  let items: NodeDto[] = b.machines.map((m) => {
    const usage = m.node === undefined ? undefined : state.nodeUsage(m.node);
    const cost = b.costs.get(m.name);
    const objs = annotatedObjects(state, m);
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
        allocatable: (usage?.cpuMillis.allocatable ?? m.allocatable[CPU] ?? 0) / 1000,
        requested: (usage?.cpuMillis.requested ?? 0) / 1000,
      },
      memoryBytes: {
        allocatable: usage?.memoryBytes.allocatable ?? m.allocatable[MEMORY] ?? 0,
        requested: usage?.memoryBytes.requested ?? 0,
      },
      pods: usage?.pods.requested ?? 0,
      costPerHour: cost?.usdPerHour ?? 0,
      priceSource: cost?.source ?? "unknown",
      doNotDisrupt: objs.some((o) => isDoNotDisrupt(o)),
      warm: isWarm(objs),
    };
  });
  if (query.pool !== undefined) items = items.filter((n) => n.nodePool === query.pool);
  if (query.capacityType !== undefined) items = items.filter((n) => n.capacityType === query.capacityType);
  const q = query.q?.trim().toLowerCase();
  if (q) {
    items = items.filter((n) =>
      [n.name, n.nodeClaim, n.instanceType, n.zone].some((s) => s?.toLowerCase().includes(q)),
    );
  }
  const key = query.sort ?? "name";
  const dir = query.desc === true ? -1 : 1;
  items.sort((x, y) => {
    const a = sortValue(x, key);
    const c = sortValue(y, key);
    const cmp =
      typeof a === "number" && typeof c === "number" ? a - c : collator.compare(String(a), String(c));
    return dir * cmp || collator.compare(x.name, y.name);
  });
  const offset = query.offset ?? 0;
  const limit = query.limit ?? 500;
  return { total: items.length, items: items.slice(offset, offset + limit) };
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

/** How far back history must reach for the detector: its window plus the lives it links across. */
export function thrashingLookbackMs(options: Partial<ThrashingOptions> = {}): number {
  const o = { ...DEFAULT_THRASHING_OPTIONS, ...options };
  return o.windowMs + Math.max(o.shortLifetimeMs, o.replacementWithinMs);
}

export function thrashingReports(input: {
  pools: readonly NodePool[];
  events: readonly LifecycleRecord[];
  disruptions: readonly DisruptionRecord[];
  now: number;
  options?: Partial<ThrashingOptions>;
}): ThrashingReport[] {
  return detectThrashingAll({
    pools: input.pools,
    events: input.events,
    disruptions: input.disruptions,
    now: input.now,
    ...(input.options ? { options: input.options } : {}),
  });
}

export function thrashingDtos(reports: readonly ThrashingReport[]): ThrashingDto[] {
  return reports.map((r) => ({
    nodePool: r.nodePool,
    severity: r.severity,
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
