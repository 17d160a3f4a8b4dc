// Per-NodePool time series: the rows the recorder produces, the store keeps and the dashboard
// charts. A series is one (cluster, NodePool, capacity type). Gauges are averaged over the
// samples a row stands for; gaps (no data for a period) are explicit rows, never interpolated.

/** The capacity type as Karpenter labels it, or any other value a provider reports. */
export type SeriesCapacityType = string;

/** One NodePool × capacity type at one instant, as the cluster state reports it. */
export interface PoolSample {
  nodePool: string;
  capacityType: SeriesCapacityType;
  nodes: number;
  vcpu: number;
  memoryBytes: number;
  costPerHour: number;
}

/** A measured (or downsampled) value of one series over [ts, ts + resolutionMs). */
export interface SeriesPoint {
  kind: "point";
  clusterId: string;
  nodePool: string;
  capacityType: SeriesCapacityType;
  /** Bucket start, epoch ms, a multiple of resolutionMs. */
  ts: number;
  /** Width of the bucket this row stands for. */
  resolutionMs: number;
  /** Averages over the samples in the bucket. */
  nodes: number;
  vcpu: number;
  memoryBytes: number;
  costPerHour: number;
  /** Highest node count seen in the bucket (peaks survive downsampling). */
  nodesMax: number;
  /** Number of raw samples the averages stand for (coverage of the bucket). */
  samples: number;
}

/**
 * No data for the whole cluster over [ts, until): the agent or core was down. Applies to every
 * series of the cluster; charts must break their lines here instead of joining across.
 */
export interface SeriesGap {
  kind: "gap";
  clusterId: string;
  ts: number;
  until: number;
  resolutionMs: number;
}

export type SeriesRow = SeriesPoint | SeriesGap;

export function seriesKey(p: { nodePool: string; capacityType: string }): string {
  return `${p.nodePool}\u0000${p.capacityType}`;
}

/** Orders rows by time, gaps before points at the same instant, then by series. */
export function compareRows(a: SeriesRow, b: SeriesRow): number {
  if (a.ts !== b.ts) return a.ts - b.ts;
  if (a.kind !== b.kind) return a.kind === "gap" ? -1 : 1;
  if (a.kind === "point" && b.kind === "point") {
    if (a.nodePool !== b.nodePool) return a.nodePool < b.nodePool ? -1 : 1;
    if (a.capacityType !== b.capacityType) return a.capacityType < b.capacityType ? -1 : 1;
  }
  return 0;
}

/** Throws a clear error when a sample cannot be recorded (negative or non-finite numbers). */
export function validateSample(s: PoolSample): void {
  if (typeof s.nodePool !== "string" || s.nodePool === "") throw new Error("sample: nodePool is required");
  if (typeof s.capacityType !== "string" || s.capacityType === "") {
    throw new Error(`sample ${s.nodePool}: capacityType is required`);
  }
  for (const f of ["nodes", "vcpu", "memoryBytes", "costPerHour"] as const) {
    const v = s[f];
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
      throw new Error(`sample ${s.nodePool}/${s.capacityType}: ${f} must be a finite number >= 0, got ${v}`);
    }
  }
}
