// The API's response shapes: the contract between core and the web UI (ui/ imports these
// types). Money is USD; memory is bytes; CPU is cores; times are epoch milliseconds.

import type { KarpenterSupport } from "../karpenter/compat.ts";

export type { KarpenterSupport };

export type PriceSource = "live" | "static" | "estimate" | "kwok" | "unknown";

export interface ClusterDto {
  id: string;
  simulated: boolean;
  connected: boolean;
  lastSeen: number | null;
  /**
   * The embedded simulated cluster generating its past day at start: history from `from` is
   * written up to `at`; its agent streams from about `until` (epoch ms). Null otherwise.
   */
  catchingUp: { from: number; at: number; until: number } | null;
  kubernetesVersion: string | null;
  karpenterVersion: string | null;
  /** The detected Karpenter against the releases Wave is tested with (src/karpenter/compat.ts). */
  karpenterSupport: KarpenterSupport;
  agentVersion: string | null;
}

export interface SpotRatioDto {
  /** Fractions 0..1 of spot among nodes, vCPU and cost. */
  nodes: number;
  vcpu: number;
  cost: number;
}

export interface OverviewDto {
  clusterId: string;
  at: number;
  nodes: number;
  nodePools: number;
  pendingPods: number;
  costPerHour: number;
  costPerMonth: number;
  /** How many nodes were priced from each source. */
  priceSources: Partial<Record<PriceSource, number>>;
  spotRatio: SpotRatioDto;
  /** What the spot nodes save per hour against the same nodes on-demand. */
  spotSavingsPerHour: number;
  requested: { cpu: number; memoryBytes: number };
  allocatable: { cpu: number; memoryBytes: number };
  disruptionsLastHour: number;
  thrashingPools: string[];
  warmup: WarmupStatsDto;
}

export interface WarmupStatsDto {
  warmNodes: number;
  costPerHour: number;
  hits: number;
  misses: number;
  timeSavedSeconds: number;
}

export interface NodePoolDto {
  name: string;
  nodes: number;
  nodesByCapacityType: Partial<Record<"spot" | "on-demand" | "reserved", number>>;
  vcpu: number;
  memoryBytes: number;
  costPerHour: number;
  costPerMonth: number;
  costByCapacityType: Partial<Record<"spot" | "on-demand" | "reserved", number>>;
  /** How many of the pool's nodes were priced from each source (live, static, estimate, …). */
  priceSources: Partial<Record<PriceSource, number>>;
  /** The oldest price date used (ISO 8601): how stale the pool's cost may be; null if none. */
  oldestPriceAsOf: string | null;
  /** spec.limits and current usage (cores / bytes); fraction is usage/limit. */
  limits: { cpu: number | null; memoryBytes: number | null };
  limitUsage: { cpu: number | null; memory: number | null };
  consolidationPolicy: string | null;
  consolidateAfter: string | null;
  capacityTypes: string[];
  thrashing: ThrashSeverity;
  warmNodes: number;
}

export interface NodeDto {
  name: string;
  nodePool: string | null;
  nodeClaim: string | null;
  instanceType: string | null;
  capacityType: string | null;
  zone: string | null;
  ready: boolean;
  createdAt: number | null;
  cpu: { allocatable: number; requested: number };
  memoryBytes: { allocatable: number; requested: number };
  pods: number;
  costPerHour: number;
  /** Where the node's price came from: live (AWS), static (shipped table), estimate, kwok, unknown. */
  priceSource: PriceSource;
  /** When that price was fetched or dated (ISO 8601); null when unpriced. */
  priceAsOf: string | null;
  doNotDisrupt: boolean;
  warm: boolean;
}

/**
 * GET /nodes?sort=: cpu and memory sort by allocatable, cpuUse and memoryUse by requested over
 * allocatable, the rest by the field of that name (cost: costPerHour).
 */
export type NodeSortKey =
  | "name"
  | "nodePool"
  | "instanceType"
  | "capacityType"
  | "zone"
  | "createdAt"
  | "cpu"
  | "memory"
  | "pods"
  | "cost"
  | "cpuUse"
  | "memoryUse"
  | "priceSource";

export interface NodeListDto {
  /** Rows matching every filter (`items` is the page of them asked for). */
  total: number;
  /** Rows matching pool and capacityType, before the text filter `q` (the table's "x of y"). */
  totalBeforeQuery: number;
  items: NodeDto[];
}

export interface LifecycleEventDto {
  at: number;
  nodeClaim: string;
  nodePool: string | null;
  nodeName: string | null;
  instanceType: string | null;
  capacityType: string | null;
  phase: "Launched" | "Registered" | "Initialized" | "Disrupted" | "Terminated";
  reason: string | null;
}

export interface DisruptionDto {
  at: number;
  nodeClaim: string;
  nodePool: string | null;
  reason: string;
}

export type ThrashSeverity = "none" | "low" | "medium" | "high";

export interface ThrashingDto {
  nodePool: string;
  severity: ThrashSeverity;
  score: number;
  summary: string;
  evidence: {
    nodeClaim: string;
    instanceType: string | null;
    createdAt: number;
    terminatedAt: number | null;
    lifetimeSeconds: number | null;
    reason: string | null;
    /** "warmup": a warm node Wave launched and released unused — Wave's own churn. */
    cause: "warmup" | null;
  }[];
  advice: string[];
}

export interface SeriesPointDto {
  t: number;
  nodes: number;
  spotNodes: number;
  vcpu: number;
  costPerHour: number;
}

export interface SeriesDto {
  from: number;
  to: number;
  step: number;
  nodePool: string | null;
  points: SeriesPointDto[];
  /** Periods with no data (agent down): shown as gaps, never interpolated. */
  gaps: { from: number; to: number }[];
}

/** What the SSE stream sends on every change (`event: snapshot`). */
export interface LiveDto {
  overview: OverviewDto;
  nodePools: NodePoolDto[];
}

/** A NodePool's warmup policy as stored (every field filled, defaults included). */
export interface WarmupPolicyDto {
  nodePool: string;
  policy: {
    enabled: boolean;
    maxWarmNodes: number;
    ttlSeconds: number;
    cooldownSeconds: number;
    maxCostPerHour: number | null;
    prePull: boolean;
    prePullDeadlineSeconds: number;
  };
  updatedAt: number;
}

/** One workload's spot placement policy (the shape the webhook's SpotPolicySet holds). */
export interface SpotPolicyDto {
  workload: { namespace: string; kind: "Deployment" | "StatefulSet" | "ReplicaSet"; name: string };
  threshold: number;
  strategy: "Prefer" | "Require";
  percentAboveBase?: number;
}

/** GET /api/v1/policies/spot: what the webhook pulls. */
export interface SpotPolicySetDto {
  apiVersion: "wave.sh/v1alpha1";
  kind: "SpotPolicySet";
  revision: string;
  policies: SpotPolicyDto[];
}

/** Realized savings of one NodePool or workload (namespace/Kind/name) over a range, in USD. */
export interface SavingsLineDto {
  name: string;
  actualUsd: number;
  onDemandUsd: number;
  savedUsd: number;
  /** savedUsd / onDemandUsd (0..1). */
  savedShare: number;
}

/** GET /api/v1/clusters/:id/savings: summed from recorded history over [from, to). */
export interface SavingsDto {
  from: number;
  to: number;
  total: SavingsLineDto;
  pools: SavingsLineDto[];
  workloads: SavingsLineDto[];
}

// ---- Console pages (warmup, spot placement, node drawer) ----

export type WarmupPoolState = "idle" | "warming" | "warm" | "protected";

/** Why a pool is not starting a warmup now (null when it is, or would be, warming). */
export type WarmupBlocker =
  | "disabled"
  | "no-workload"
  | "fits-existing-node"
  | "max-warm-nodes"
  | "in-flight"
  | "cooldown"
  | "pool-limit"
  | "cost-cap"
  | "price-unknown"
  | "pool-missing";

export interface WarmNodeDto {
  name: string;
  /** Seconds since Wave marked it warm. */
  ageSeconds: number | null;
  /** Seconds until the warmup counts as a miss (negative: overdue, released on the next pass). */
  ttlLeftSeconds: number | null;
  costPerHour: number | null;
  /** True while the warmup pod still holds it (no real pod came yet). */
  waiting: boolean;
  images: { image: string; status: "pulled" | "pulling" | "failed" | "pending" }[];
}

export interface WarmupPoolDto {
  nodePool: string;
  policy: WarmupPolicyDto["policy"];
  /** The policy is stored (false: the defaults apply, warmup off). */
  configured: boolean;
  state: WarmupPoolState;
  blocker: WarmupBlocker | null;
  blockerDetail: string | null;
  warmupPods: { name: string; node: string | null; createdAt: number | null }[];
  warmNodes: WarmNodeDto[];
  /** Over the requested range, from the controller's stored events. */
  created: number;
  hits: number;
  misses: number;
  missesByReason: Record<string, number>;
  imagesPulled: number;
  pullFailures: number;
  /** Median pending→Ready of pods that waited for a new node; null until one is measured. */
  coldStartSeconds: number | null;
  coldStartSamples: number;
  /** Median pending→Ready of pods that landed on a node Wave held warm. */
  warmStartSeconds: number | null;
  warmStartSamples: number;
  /** Σ over measured warm hits of (cold median − that pod's start); null without a cold median. */
  timeSavedSeconds: number | null;
  /** What Wave's warm capacity cost over the range (launch → release of each warm node). */
  warmCostUsd: number;
  warmCostPerHourNow: number;
  /** Hourly price of the node a warmup would launch now (the editor's preview). */
  newNodeCostPerHour: number | null;
  newNodeInstanceType: string | null;
  /** Warm nodes in a row that expired unused (reset by a hit): each one backs warmup off. */
  unusedStreak: number;
  /** The cooldown in force now: the policy's, grown by the back-off. */
  cooldownSecondsNow: number;
}

export interface WarmupViewDto {
  clusterId: string;
  at: number;
  from: number;
  to: number;
  pools: WarmupPoolDto[];
}

export interface SpotPodDto {
  namespace: string;
  name: string;
  node: string | null;
  /** Capacity type of the node it runs on (null while pending). */
  capacityType: string | null;
  /** What Wave's webhook assigned ("on-demand" | "spot"), if it did. */
  assigned: string | null;
  phase: string | null;
  note: string | null;
  costPerHour: number | null;
}

/** One self-heal action of the spot repair (a WaveSpotRepair Event, ADR 0006). */
export interface SpotRepairDto {
  at: number;
  /** Evict, EvictBlocked, Fallback, … ("" when the Event named none). */
  action: string;
  /** namespace/name of the pod acted on. */
  pod: string;
  type: "Normal" | "Warning";
  message: string;
}

export type SpotWarning = "workload-not-found" | "require-without-spot" | "pinned-by-workload" | "fallback";

export interface SpotWorkloadDto {
  workload: SpotPolicyDto["workload"];
  policy: Omit<SpotPolicyDto, "workload"> | null;
  pods: number;
  target: { onDemand: number; spot: number } | null;
  actual: { onDemand: number; spot: number; pending: number };
  /** Pods the webhook sent to spot that run on on-demand (Prefer's fallback), as core sees them. */
  fallbacks: number;
  costPerHour: number;
  /** The same pods all on on-demand, minus what they cost now. */
  savedPerHour: number;
  /** Average hourly share of one pod on each capacity type (for the editor's preview). */
  podCostPerHour: { onDemand: number | null; spot: number | null };
  nodePools: string[];
  warnings: { kind: SpotWarning; message: string }[];
  items: SpotPodDto[];
  /** The repair's self-heal actions for this workload over the view's [from, to). */
  repairs: { total: number; byAction: Record<string, number>; recent: SpotRepairDto[] };
  /**
   * Admissions of this workload the webhook answered after its deadline over [from, to): the pod
   * was created without Wave's capacity-type affinity (placed by the scheduler alone) until the
   * next rollout or repair. From the webhook's WaveSpotLateAnswer Events.
   */
  lateAnswers: number;
}

export interface SpotViewDto {
  clusterId: string;
  at: number;
  /** The range repairs and late answers are counted over (epoch ms, [from, to)). */
  from: number;
  to: number;
  workloads: SpotWorkloadDto[];
  totals: {
    pods: number;
    onDemand: number;
    spot: number;
    savedPerHour: number;
    fallbacks: number;
    repairs: number;
    /** The cluster's late answers over [from, to), workloads no longer listed included. */
    lateAnswers: number;
  };
}

export interface NodeDetailDto {
  node: NodeDto | null;
  nodeClaim: string | null;
  /** Each step once, with the time since the previous step. */
  timeline: {
    phase: LifecycleEventDto["phase"];
    at: number;
    sincePreviousSeconds: number | null;
    reason: string | null;
  }[];
  pods: {
    namespace: string;
    name: string;
    phase: string | null;
    cpu: number;
    memoryBytes: number;
    wave: string | null;
  }[];
  price: { usdPerHour: number | null; source: PriceSource; asOf: string | null };
  labels: Record<string, string>;
  taints: { key: string; value: string | null; effect: string }[];
  /** Who set karpenter.sh/do-not-disrupt: null (not set), "wave-warmup" or "user". */
  doNotDisruptBy: string | null;
  annotations: Record<string, string>;
}

/** GET /clusters/{id}/thrashing/fixes: each thrashing pool's fixes, ready to paste. */
export interface ThrashingFixesDto {
  nodePool: string;
  severity: ThrashSeverity;
  /** Core can apply a fix itself (POST …/thrashing/apply): the embedded simulated cluster only. */
  canApply: boolean;
  fixes: { title: string; detail: string; kubectl: string | null }[];
}

/** GET /whoami. */
export interface WhoAmIDto {
  role: "viewer" | "admin";
}

/** POST /api/v1/clusters/{id}/whatif: the candidate (changes over the cluster's current policies). */
/**
 * A what-if's progress, streamed as `event: progress` when the request asks for
 * `accept: text/event-stream` (then `event: result` with the report, or `event: error`).
 */
export interface WhatifProgressDto {
  /** Waiting for a worker (or for the cluster's running replay), or replaying. */
  state: "queued" | "running";
  /** Queued: what-ifs ahead (0 = next). */
  position: number;
  /** Share of the replays' simulated time done (0–1). */
  fraction: number;
  elapsedMs: number;
  /** Estimated time left. */
  etaMs: number | undefined;
}

export interface WhatifRequestDto {
  /** Spot policies to try, by workload (the body of `PUT …/policies/spot/…` plus the workload). */
  spot?: SpotPolicyDto[];
  /** Warmup policies to try, by NodePool (the body of `PUT …/policies/warmup/{pool}`). */
  warmup?: Record<string, Partial<WarmupPolicyDto["policy"]>>;
  /** History replayed, hours back from now (default and most 24). */
  windowHours?: number;
  /** Launch → node Ready in the simulator (default: the cluster's median recorded boot, else 60 s). */
  bootDelaySeconds?: number;
  /** Per spot node per hour (default: the cluster's own rate over the window). */
  spotInterruptionRate?: number;
  seed?: number;
}

/** One side of a what-if: the cluster's window replayed under one policy. */
export interface WhatifSideDto {
  policy: { spot: SpotPolicyDto[]; warmup: Record<string, WarmupPolicyDto["policy"]> };
  /** Averages over the window. */
  costPerHour: number;
  costPerMonth: number;
  /** Spot node-hours / all node-hours (0..1). */
  spotShare: number;
  nodeHours: { spot: number; onDemand: number };
  /** Per NodePool, averages over the window: nodes and cost rate (compare with `recorded.pools`). */
  pools?: Record<string, { nodes: number; costPerHour: number }>;
  /** The window in about 96 buckets (t: epoch ms): cost rate and workload pods by capacity type. */
  timeline?: { t: number; costPerHour: number; onDemandPods: number; spotPods: number }[];
  /** Pod starts per latency bucket: ≤ 5 s, 15 s, 30 s, 1 min, 2 min, 5 min, longer. */
  podStartHistogram?: number[];
  /** Workload pod creation → Running, ms. */
  podStart: { count: number; p50Ms: number; p95Ms: number; maxMs: number };
  pendingAtEnd: number;
  spotInterruptions: number;
  nodeClaimsCreated: number;
  /** As the replay ends: the cluster now, had this policy been in force. */
  now: {
    costPerHour: number;
    nodes: { spot: number; onDemand: number };
    /** Per NodePool: its nodes' cost rate and count. */
    pools: Record<string, { costPerHour: number; nodes: number }>;
    /** Per workload (namespace/Kind/name): its pods by capacity type. */
    workloads: Record<string, { onDemand: number; spot: number; pending: number }>;
  };
}

export interface WhatifReportDto {
  clusterId: string;
  /** The replayed window (epoch ms). */
  from: number;
  to: number;
  historyBuckets: number;
  catalog: "aws" | "kwok";
  bootDelayMs: number;
  spotInterruptionRate: number;
  workloads: string[];
  skipped: { workload: string; reason: string }[];
  current: WhatifSideDto;
  candidate: WhatifSideDto;
  /** Why a result may look wrong (e.g. warmup enabled yet a worse p95 start, and what the replay shows of why). */
  notes?: string[];
  /**
   * What core recorded over the same window (averages over the time it has points for), and how
   * far the current policy's replay is from it (relative errors): judge the model before the
   * candidate. Null without recorded points.
   */
  recorded?: {
    coveredMs: number;
    costPerHour: number;
    pools: Record<string, { nodes: number; costPerHour: number }>;
    fidelity: { costError: number; poolNodesError: Record<string, number> };
  } | null;
  /** How long the two replays took, ms. */
  tookMs: number;
}
