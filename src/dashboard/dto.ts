// The API's response shapes: the contract between core and the web UI (ui/ imports these
// types). Money is USD; memory is bytes; CPU is cores; times are epoch milliseconds.

import { Type, type Static, type TSchema } from "@sinclair/typebox";
import type { KarpenterSupport } from "../karpenter/compat.ts";

export type { KarpenterSupport };

export type PriceSource = "live" | "static" | "estimate" | "kwok" | "unknown";

// DTOs declared as TypeBox schemas: the route serializes with the schema (a field it leaves out
// would be dropped), its type is Static<> of it, and the OpenAPI document is generated from it.
// Objects are closed (additionalProperties: false), so a test that checks a builder's output
// against the schema fails when the builder adds a field the schema lacks (dto.test.ts).
const Obj = <T extends Record<string, TSchema>>(props: T, description?: string) =>
  Type.Object(props, { additionalProperties: false, ...(description ? { description } : {}) });
const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const Num = Type.Number();
const Int = Type.Integer();
const Str = Type.String();
const Counts = Type.Record(Type.String(), Type.Integer());
const Lit = <T extends string>(values: readonly T[]) => Type.Union(values.map((v) => Type.Literal(v)));

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
  /**
   * Core refused the agent's last snapshot or object at a bound (the stream ended, the agent backs
   * off and retries): when, which bound (e.g. "snapshot_bytes") and the message with the figures.
   * Null once a snapshot is accepted.
   */
  rejected: { at: number; bound: string; message: string } | null;
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
  /**
   * Scope "nodes": what the spot nodes save per hour against the same nodes on-demand. The Spot
   * page's savedPerHour is scope "workloads" (their requested share of it), so it is smaller.
   */
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
  /** The pool is flagged as thrashing (its severity medium or high). */
  thrashingFlagged: boolean;
  warmNodes: number;
}

export const PriceSourceSchema = Lit(["live", "static", "estimate", "kwok", "unknown"] as const);
const Usage = Obj({ allocatable: Num, requested: Num });

export const NodeSchema = Obj({
  name: Str,
  nodePool: Nullable(Str),
  nodeClaim: Nullable(Str),
  instanceType: Nullable(Str),
  capacityType: Nullable(Str),
  zone: Nullable(Str),
  ready: Type.Boolean(),
  createdAt: Nullable(Num),
  cpu: Usage,
  memoryBytes: Usage,
  pods: Int,
  costPerHour: Num,
  /** Where the node's price came from: live (AWS), static (shipped table), estimate, kwok, unknown. */
  priceSource: PriceSourceSchema,
  /** When that price was fetched or dated (ISO 8601); null when unpriced. */
  priceAsOf: Nullable(Str),
  doNotDisrupt: Type.Boolean(),
  warm: Type.Boolean(),
});
export type NodeDto = Static<typeof NodeSchema>;

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

/** Disruptions in a range counted per pool and reason by the store: exact, never a page. */
export const DisruptionCountsSchema = Obj(
  {
    from: Num,
    to: Num,
    total: Int,
    counts: Type.Array(Obj({ nodePool: Str, reason: Str, count: Int })),
  },
  "Disruptions in [from, to) counted per pool and reason (exact; the list pages)",
);
export type DisruptionCountsDto = Static<typeof DisruptionCountsSchema>;

export type ThrashSeverity = "none" | "low" | "medium" | "high";

export interface ThrashingDto {
  nodePool: string;
  severity: ThrashSeverity;
  /** Thrashing (warning or critical: medium or high); low is churn above the normal, not flagged. */
  flagged: boolean;
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
  /** The repair: on (default), off, or "dry-run" (plans and reports its evictions, makes none). */
  repair?: boolean | "dry-run";
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

export const WarmupPoolStateSchema = Lit(["idle", "warming", "warm", "protected"] as const);
export type WarmupPoolState = Static<typeof WarmupPoolStateSchema>;

/** Why a pool is not starting a warmup now (null when it is, or would be, warming). */
export const WarmupBlockerSchema = Lit([
  "disabled",
  "no-workload",
  "fits-existing-node",
  "max-warm-nodes",
  "in-flight",
  "cooldown",
  "pool-limit",
  "cost-cap",
  "price-unknown",
  "pool-missing",
] as const);
export type WarmupBlocker = Static<typeof WarmupBlockerSchema>;

/** A warmup policy with every field filled (defaults included). */
export const WarmupPolicyFieldsSchema = Obj({
  enabled: Type.Boolean(),
  maxWarmNodes: Int,
  ttlSeconds: Int,
  cooldownSeconds: Int,
  maxCostPerHour: Nullable(Num),
  prePull: Type.Boolean(),
  prePullDeadlineSeconds: Int,
});

export const WarmNodeSchema = Obj({
  name: Str,
  /** Seconds since Wave marked it warm. */
  ageSeconds: Nullable(Num),
  /** Seconds until the warmup counts as a miss (negative: overdue, released on the next pass). */
  ttlLeftSeconds: Nullable(Num),
  costPerHour: Nullable(Num),
  /** True while the warmup pod still holds it (no real pod came yet). */
  waiting: Type.Boolean(),
  images: Type.Array(Obj({ image: Str, status: Lit(["pulled", "pulling", "failed", "pending"] as const) })),
});
export type WarmNodeDto = Static<typeof WarmNodeSchema>;

export const WarmupPoolSchema = Obj({
  nodePool: Str,
  policy: WarmupPolicyFieldsSchema,
  /** The policy is stored (false: the defaults apply, warmup off). */
  configured: Type.Boolean(),
  state: WarmupPoolStateSchema,
  blocker: Nullable(WarmupBlockerSchema),
  blockerDetail: Nullable(Str),
  warmupPods: Type.Array(Obj({ name: Str, node: Nullable(Str), createdAt: Nullable(Num) })),
  warmNodes: Type.Array(WarmNodeSchema),
  /** Over the requested range, from the controller's stored events. */
  created: Int,
  hits: Int,
  misses: Int,
  missesByReason: Counts,
  imagesPulled: Int,
  pullFailures: Int,
  /** Median pending→Ready of pods that waited for a new node; null until one is measured. */
  coldStartSeconds: Nullable(Num),
  coldStartSamples: Int,
  /** Median pending→Ready of pods that landed on a node Wave held warm. */
  warmStartSeconds: Nullable(Num),
  warmStartSamples: Int,
  /**
   * hits × savedPerHitSeconds: the one definition of time saved (dashboard/figures/time-saved.ts),
   * the same as the Overview's and /metrics'.
   */
  timeSavedSeconds: Num,
  /**
   * What one hit saves: the pool's node cold start, median launch → initialized of its NodeClaims
   * in the last hour (`savedPerHitSamples` of them; 0: the cluster's median, or nothing measured).
   */
  savedPerHitSeconds: Num,
  savedPerHitSamples: Int,
  /** What Wave's warm capacity cost over the range (launch → release of each warm node). */
  warmCostUsd: Num,
  warmCostPerHourNow: Num,
  /** Hourly price of the node a warmup would launch now (the editor's preview). */
  newNodeCostPerHour: Nullable(Num),
  newNodeInstanceType: Nullable(Str),
  /** Warm nodes in a row that expired unused (reset by a hit): each one backs warmup off. */
  unusedStreak: Int,
  /** The cooldown in force now: the policy's, grown by the back-off. */
  cooldownSecondsNow: Num,
});
export type WarmupPoolDto = Static<typeof WarmupPoolSchema>;

export const WarmupViewSchema = Obj(
  { clusterId: Str, at: Num, from: Num, to: Num, pools: Type.Array(WarmupPoolSchema) },
  "Warmup per NodePool: policy, state, warm nodes, why not warming, and over [from, to) hits, misses, time saved and warm cost",
);
export type WarmupViewDto = Static<typeof WarmupViewSchema>;

export const SpotPodSchema = Obj({
  namespace: Str,
  name: Str,
  node: Nullable(Str),
  /** Capacity type of the node it runs on (null while pending). */
  capacityType: Nullable(Str),
  /** What Wave's webhook assigned ("on-demand" | "spot"), if it did. */
  assigned: Nullable(Str),
  phase: Nullable(Str),
  note: Nullable(Str),
  costPerHour: Nullable(Num),
});
export type SpotPodDto = Static<typeof SpotPodSchema>;

/**
 * The repair's progress on one workload: "adopting: toMove of pods pods to move, next in …", the
 * evictions done since the policy last changed, and in dry-run the evictions it would make.
 */
export const SpotProgressSchema = Obj({
  /** The policy's repair: on, off (never evicts) or dry-run (plans only). */
  mode: Lit(["on", "off", "dry-run"] as const),
  /** Pods to move before the pods on on-demand nodes meet the target (|actual − target|). */
  toMove: Int,
  /** Evictions done since the policy last changed (Evict actions within the view's range). */
  done: Int,
  /** Dry-run: the evictions it would make (PlanEvict actions since the policy last changed). */
  planned: Int,
  /** When the repair may evict next (epoch ms); null when nothing is to move or it will not evict. */
  nextAt: Nullable(Num),
});
export type SpotProgressDto = Static<typeof SpotProgressSchema>;

/** One self-heal action of the spot repair (a WaveSpotRepair Event, ADR 0006). */
export const SpotRepairSchema = Obj({
  at: Num,
  /** Evict, EvictBlocked, Fallback, … ("" when the Event named none). */
  action: Str,
  /** namespace/name of the pod acted on. */
  pod: Str,
  type: Lit(["Normal", "Warning"] as const),
  message: Str,
});
export type SpotRepairDto = Static<typeof SpotRepairSchema>;

export const SpotWarningSchema = Lit([
  "workload-not-found",
  "require-without-spot",
  "pinned-by-workload",
  "fallback",
] as const);
export type SpotWarning = Static<typeof SpotWarningSchema>;

const WorkloadRefSchema = Obj({
  namespace: Str,
  kind: Lit(["Deployment", "StatefulSet", "ReplicaSet"] as const),
  name: Str,
});

export const SpotWorkloadSchema = Obj({
  workload: WorkloadRefSchema,
  policy: Nullable(
    Obj({
      threshold: Int,
      strategy: Lit(["Prefer", "Require"] as const),
      percentAboveBase: Type.Optional(Int),
      /** The repair: on (default), off, or "dry-run" (plans and reports its evictions, makes none). */
      repair: Type.Optional(Type.Union([Type.Boolean(), Type.Literal("dry-run")])),
    }),
  ),
  pods: Int,
  target: Nullable(Obj({ onDemand: Int, spot: Int })),
  actual: Obj({ onDemand: Int, spot: Int, pending: Int }),
  /**
   * Prefer's fallbacks over [from, to): the repair's Fallback actions, the same rows as
   * `repairs.byAction.Fallback` (the self-heal column).
   */
  fallbacks: Int,
  /** Pods the webhook sent to spot that run on on-demand now (live state). */
  onDemandNow: Int,
  costPerHour: Num,
  /**
   * Scope "workloads": the pods' share of their spot nodes' savings against on-demand (each pod's
   * CPU request over its node's allocatable, figures/savings.ts podShareOfNode, as the savings
   * history counts it). The Overview's spotSavingsPerHour is scope "nodes": the nodes' whole savings.
   */
  savedPerHour: Num,
  /** Average hourly share of one pod on each capacity type (for the editor's preview). */
  podCostPerHour: Obj({ onDemand: Nullable(Num), spot: Nullable(Num) }),
  nodePools: Type.Array(Str),
  warnings: Type.Array(Obj({ kind: SpotWarningSchema, message: Str })),
  items: Type.Array(SpotPodSchema),
  /** The repair's self-heal actions for this workload over the view's [from, to). */
  repairs: Obj({ total: Int, byAction: Counts, recent: Type.Array(SpotRepairSchema) }),
  /** Moving the workload to its target (adoption of running pods, issue 28); null without a policy. */
  progress: Nullable(SpotProgressSchema),
  /**
   * Admissions of this workload the webhook answered after its deadline over [from, to): the pod
   * was created without Wave's capacity-type affinity (placed by the scheduler alone) until the
   * next rollout or repair. From the webhook's WaveSpotLateAnswer Events.
   */
  lateAnswers: Int,
});
export type SpotWorkloadDto = Static<typeof SpotWorkloadSchema>;

export const SpotViewSchema = Obj(
  {
    clusterId: Str,
    at: Num,
    /** The range repairs and late answers are counted over (epoch ms, [from, to)). */
    from: Num,
    to: Num,
    workloads: Type.Array(SpotWorkloadSchema),
    /** Over the workloads with a policy (Wave places only their pods); repairs over every listed one. */
    totals: Obj({
      /** Workloads with a spot policy. */
      workloads: Int,
      pods: Int,
      onDemand: Int,
      spot: Int,
      /** Scope "workloads": Σ of their savedPerHour. */
      savedPerHour: Num,
      fallbacks: Int,
      onDemandNow: Int,
      repairs: Int,
      /** The cluster's late answers over [from, to), workloads no longer listed included. */
      lateAnswers: Int,
    }),
  },
  "Spot placement per workload: policy, target vs actual, pods, savings (scope workloads), warnings, self-heal actions and late answers over [from, to)",
);
export type SpotViewDto = Static<typeof SpotViewSchema>;

export const LifecyclePhaseSchema = Lit([
  "Launched",
  "Registered",
  "Initialized",
  "Disrupted",
  "Terminated",
] as const);

export const NodeDetailSchema = Obj(
  {
    node: Nullable(NodeSchema),
    nodeClaim: Nullable(Str),
    /** The NodeClaim is gone (disrupted, terminated): shown from its stored lifecycle. */
    gone: Type.Boolean(),
    /** Each step once, with the time since the previous step. */
    timeline: Type.Array(
      Obj({
        phase: LifecyclePhaseSchema,
        at: Num,
        sincePreviousSeconds: Nullable(Num),
        reason: Nullable(Str),
      }),
    ),
    pods: Type.Array(
      Obj({
        namespace: Str,
        name: Str,
        phase: Nullable(Str),
        cpu: Num,
        memoryBytes: Num,
        wave: Nullable(Str),
      }),
    ),
    price: Obj({ usdPerHour: Nullable(Num), source: PriceSourceSchema, asOf: Nullable(Str) }),
    labels: Type.Record(Type.String(), Type.String()),
    taints: Type.Array(Obj({ key: Str, value: Nullable(Str), effect: Str })),
    /** Who set karpenter.sh/do-not-disrupt: null (not set), "wave-warmup" or "user". */
    doNotDisruptBy: Nullable(Str),
    annotations: Type.Record(Type.String(), Type.String()),
  },
  "One node or NodeClaim (also one that is gone, from its stored lifecycle): timeline, pods, price, labels, taints, who set do-not-disrupt",
);
export type NodeDetailDto = Static<typeof NodeDetailSchema>;

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
  role: "viewer" | "namespace-editor" | "admin";
  /** "token:viewer", "token:admin", an OIDC subject (email when the provider gives one), a proxy user. */
  subject: string;
  groups: string[];
  /** namespace-editor: the namespaces whose spot policies the caller may change. */
  namespaces?: string[];
  source: "token" | "oidc" | "proxy";
}

/** GET /auth/info (public): how one signs in to this core's console. */
export interface AuthInfoDto {
  /** OIDC configured: the button "Sign in with <provider>" goes to loginPath. */
  oidc: { provider: string; loginPath: string } | null;
  /** An auth proxy in front of core signs users in. */
  proxy: boolean;
}

/** One change made through Wave (GET /api/v1/clusters/{id}/audit). */
export interface AuditEntryDto {
  id: number;
  /** epoch ms */
  at: number;
  subject: string;
  groups: string[];
  /** How the caller signed in: token, oidc or proxy. */
  source: string;
  /** ui, api or cli */
  via: string;
  address: string;
  action: string;
  object: string;
  /** JSON summaries; null: the object did not exist before / no longer exists. */
  before: string | null;
  after: string | null;
}

/** A policy CR version another field manager wrote (a change made outside Wave). */
export interface ForeignChangeDto {
  at: number;
  kind: string;
  name: string;
  /** kubectl, argocd-controller, kustomize-controller, … */
  manager: string;
  deleted: boolean;
  spec: string | null;
}

export interface AuditListDto {
  entries: AuditEntryDto[];
  /** Changes made elsewhere, by their field manager. */
  elsewhere: ForeignChangeDto[];
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
