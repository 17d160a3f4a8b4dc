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

export const KarpenterSupportSchema = Obj({
  /** tested: within the tested minors; older/newer: outside them; unknown: version not detected. */
  status: Lit(["tested", "older", "newer", "unknown"] as const),
  oldestTested: Str,
  newestTested: Str,
  /** What to show the user when status is not "tested" (null when it is). */
  warning: Nullable(Str),
});

export const ClusterSchema = Obj(
  {
    id: Str,
    simulated: Type.Boolean(),
    connected: Type.Boolean(),
    lastSeen: Nullable(Num),
    /**
     * The embedded simulated cluster generating its past day at start: history from `from` is
     * written up to `at`; its agent streams from about `until` (epoch ms). Null otherwise.
     */
    catchingUp: Nullable(Obj({ from: Num, at: Num, until: Num })),
    kubernetesVersion: Nullable(Str),
    karpenterVersion: Nullable(Str),
    /** The detected Karpenter against the releases Wave is tested with (src/karpenter/compat.ts). */
    karpenterSupport: KarpenterSupportSchema,
    agentVersion: Nullable(Str),
    /**
     * Core refused the agent's last snapshot or object at a bound (the stream ended, the agent backs
     * off and retries): when, which bound (e.g. "snapshot_bytes") and the message with the figures.
     * Null once a snapshot is accepted.
     */
    rejected: Nullable(Obj({ at: Num, bound: Str, message: Str })),
  },
  "A cluster core knows, with its agent's connection state",
);
export type ClusterDto = Static<typeof ClusterSchema>;

/** Fractions 0..1 of spot among nodes, vCPU and cost. */
export const SpotRatioSchema = Obj({ nodes: Num, vcpu: Num, cost: Num });
export type SpotRatioDto = Static<typeof SpotRatioSchema>;

export const WarmupStatsSchema = Obj({
  warmNodes: Int,
  costPerHour: Num,
  /** Over the window [from, to) (core's: the last 24 h), as the Warmup page over that range. */
  hits: Int,
  misses: Int,
  timeSavedSeconds: Num,
  /** Warm nodes' cost from the launch a warmup caused to first real pod, expiry or release. */
  warmCostUsd: Num,
  /** The window's bounds (ms); both 0 before core first read it. */
  from: Num,
  to: Num,
});
export type WarmupStatsDto = Static<typeof WarmupStatsSchema>;

/** Counts (or dollars) per key: an open object of numbers, typed by the keys it may hold. */
const PerKey = <K extends string>(of: TSchema = Type.Number()) =>
  Type.Unsafe<Partial<Record<K, number>>>(Type.Record(Type.String(), of));
const CpuMemory = Obj({ cpu: Num, memoryBytes: Num });

export const OverviewSchema = Obj(
  {
    clusterId: Str,
    at: Num,
    nodes: Int,
    nodePools: Int,
    pendingPods: Int,
    costPerHour: Num,
    costPerMonth: Num,
    /** How many nodes were priced from each source. */
    priceSources: PerKey<PriceSource>(Int),
    spotRatio: SpotRatioSchema,
    /**
     * Scope "nodes": what the spot nodes save per hour against the same nodes on-demand. The Spot
     * page's savedPerHour is scope "workloads" (their requested share of it), so it is smaller.
     */
    spotSavingsPerHour: Num,
    requested: CpuMemory,
    allocatable: CpuMemory,
    disruptionsLastHour: Int,
    thrashingPools: Type.Array(Str),
    warmup: WarmupStatsSchema,
  },
  "Cluster totals",
);
export type OverviewDto = Static<typeof OverviewSchema>;

export const ThrashSeveritySchema = Lit(["none", "low", "medium", "high"] as const);
export type ThrashSeverity = Static<typeof ThrashSeveritySchema>;

type CapacityTypeKey = "spot" | "on-demand" | "reserved";

export const NodePoolSchema = Obj(
  {
    name: Str,
    nodes: Int,
    nodesByCapacityType: PerKey<CapacityTypeKey>(Int),
    vcpu: Num,
    memoryBytes: Num,
    costPerHour: Num,
    costPerMonth: Num,
    costByCapacityType: PerKey<CapacityTypeKey>(),
    /** How many of the pool's nodes were priced from each source (live, static, estimate, …). */
    priceSources: PerKey<PriceSource>(Int),
    /** The oldest price date used (ISO 8601): how stale the pool's cost may be; null if none. */
    oldestPriceAsOf: Nullable(Str),
    /** spec.limits and current usage (cores / bytes); fraction is usage/limit. */
    limits: Obj({ cpu: Nullable(Num), memoryBytes: Nullable(Num) }),
    limitUsage: Obj({ cpu: Nullable(Num), memory: Nullable(Num) }),
    consolidationPolicy: Nullable(Str),
    consolidateAfter: Nullable(Str),
    capacityTypes: Type.Array(Str),
    thrashing: ThrashSeveritySchema,
    /** The pool is flagged as thrashing (its severity medium or high). */
    thrashingFlagged: Type.Boolean(),
    warmNodes: Int,
    /**
     * A static pool (spec.replicas, Karpenter v1.8+): the nodes it wants and those it has (not
     * being deleted); null for a pool that scales with its pods.
     */
    static: Nullable(Obj({ desiredNodes: Int, actualNodes: Int })),
  },
  "A NodePool's nodes, cost, limits and thrashing",
);
export type NodePoolDto = Static<typeof NodePoolSchema>;

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
  /**
   * Which source priced it: "overlay <name> <change>" when a Karpenter NodeOverlay set the price
   * Karpenter decides with (e.g. "overlay savings-plan -30%"), else priceSource.
   */
  pricedBy: Str,
  /** The list price beside costPerHour when a NodeOverlay changed it; null otherwise. */
  listPricePerHour: Nullable(Num),
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

export const NodeListSchema = Obj({
  /** Rows matching every filter (`items` is the page of them asked for). */
  total: Int,
  /** Rows matching pool and capacityType, before the text filter `q` (the table's "x of y"). */
  totalBeforeQuery: Int,
  items: Type.Array(NodeSchema),
});
export type NodeListDto = Static<typeof NodeListSchema>;

export const LifecycleEventSchema = Obj({
  at: Num,
  nodeClaim: Str,
  nodePool: Nullable(Str),
  nodeName: Nullable(Str),
  instanceType: Nullable(Str),
  capacityType: Nullable(Str),
  phase: Lit(["Launched", "Registered", "Initialized", "Disrupted", "Terminated"] as const),
  reason: Nullable(Str),
});
export type LifecycleEventDto = Static<typeof LifecycleEventSchema>;

export const DisruptionSchema = Obj({ at: Num, nodeClaim: Str, nodePool: Nullable(Str), reason: Str });
export type DisruptionDto = Static<typeof DisruptionSchema>;

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

export const ThrashingSchema = Obj(
  {
    nodePool: Str,
    severity: ThrashSeveritySchema,
    /** Thrashing (warning or critical: medium or high); low is churn above the normal, not flagged. */
    flagged: Type.Boolean(),
    score: Num,
    summary: Str,
    evidence: Type.Array(
      Obj({
        nodeClaim: Str,
        instanceType: Nullable(Str),
        createdAt: Num,
        terminatedAt: Nullable(Num),
        lifetimeSeconds: Nullable(Num),
        reason: Nullable(Str),
        /** "warmup": a warm node Wave launched and released unused — Wave's own churn. */
        cause: Nullable(Lit(["warmup"] as const)),
      }),
    ),
    advice: Type.Array(Str),
  },
  "A NodePool's thrashing (churn) report over the detector's window",
);
export type ThrashingDto = Static<typeof ThrashingSchema>;

export const SeriesPointSchema = Obj({ t: Num, nodes: Num, spotNodes: Num, vcpu: Num, costPerHour: Num });
export type SeriesPointDto = Static<typeof SeriesPointSchema>;

export const SeriesSchema = Obj({
  from: Num,
  to: Num,
  step: Num,
  nodePool: Nullable(Str),
  points: Type.Array(SeriesPointSchema),
  /** Periods with no data (agent down): shown as gaps, never interpolated. */
  gaps: Type.Array(Obj({ from: Num, to: Num })),
});
export type SeriesDto = Static<typeof SeriesSchema>;

/** What the SSE stream sends on every change (`event: snapshot`). */
export const LiveSchema = Obj({ overview: OverviewSchema, nodePools: Type.Array(NodePoolSchema) });
export type LiveDto = Static<typeof LiveSchema>;

/** A warmup policy's fields (src/policy/warmup.ts WarmupPolicy; validate-warmup.ts checks the bounds). */
const warmupPolicyFields = {
  enabled: Type.Boolean(),
  /** Warmup pods (pending or on a node) the pool may hold at once. */
  maxWarmNodes: Int,
  /** How long a warm node is protected waiting for a real pod before it counts as a miss. */
  ttlSeconds: Int,
  /** Quiet time after starting a warmup before the pool may start another. */
  cooldownSeconds: Int,
  /** Ceiling on the hourly price of the pool's warm capacity; null = no cap. */
  maxCostPerHour: Nullable(Num),
  /** Pre-pull the pool's workload images onto each warm node. */
  prePull: Type.Boolean(),
  /** A pre-pull pod still running after this is removed (pull stuck or image missing). */
  prePullDeadlineSeconds: Int,
};

/** A warmup policy as stored: every field filled (the policy module's WarmupPolicy). */
export const WarmupPolicySchema = Obj(warmupPolicyFields, "A NodePool's warmup policy");

/** A warmup policy as PUT (and tried by what-if): fields left out take the defaults. */
export const WarmupPolicyInputSchema = Type.Partial(Type.Object(warmupPolicyFields));

/** A NodePool's warmup policy as stored (every field filled, defaults included). */
export const WarmupPolicyRecordSchema = Obj({ nodePool: Str, policy: WarmupPolicySchema, updatedAt: Num });
export type WarmupPolicyDto = Static<typeof WarmupPolicyRecordSchema>;

/** One workload's spot placement policy (src/policy/spot.ts SpotPolicy; validate-spot.ts checks it). */
export const SpotPolicySchema = Obj(
  {
    workload: Obj({
      namespace: Str,
      kind: Lit(["Deployment", "StatefulSet", "ReplicaSet"] as const),
      name: Str,
    }),
    /** The first `threshold` live pods run on-demand. */
    threshold: Int,
    strategy: Lit(["Prefer", "Require"] as const),
    /** Share (0–100) of the pods above `threshold` that also run on-demand. Default 0. */
    percentAboveBase: Type.Optional(Int),
    /** Repair mode: on, off, or "dry-run" (plan only). Default true. */
    repair: Type.Optional(Type.Union([Type.Boolean(), Type.Literal("dry-run")])),
    /** Prefer only: how long the on-demand fallback stays open; absent = the webhook's default. */
    fallbackWindowSeconds: Type.Optional(Int),
  },
  "A workload's spot placement policy",
);
export type SpotPolicyDto = Static<typeof SpotPolicySchema>;

/** GET /api/v1/policies/spot: what the webhook pulls. */
export const SpotPolicySetSchema = Obj({
  apiVersion: Type.Literal("wave.sh/v1alpha1"),
  kind: Type.Literal("SpotPolicySet"),
  /** Opaque version of the set, for logs and conditional pulls. */
  revision: Str,
  policies: Type.Array(SpotPolicySchema),
  /**
   * SpotPolicies not in force: another one on their workload was created first and decides
   * (src/policy/in-force.ts). Absent when there is none; webhooks ignore it.
   */
  conflicts: Type.Optional(
    Type.Array(
      Obj({
        /** namespace/name of the SpotPolicy left out, and of the one that decides. */
        policy: Str,
        decidedBy: Str,
        /** The workload both target (namespace/Kind/name). */
        workload: Str,
        message: Str,
      }),
    ),
  ),
});
export type SpotPolicySetDto = Static<typeof SpotPolicySetSchema>;

/** Realized savings of one NodePool or workload (namespace/Kind/name) over a range, in USD. */
export const SavingsLineSchema = Obj({
  name: Str,
  actualUsd: Num,
  onDemandUsd: Num,
  savedUsd: Num,
  /** savedUsd / onDemandUsd (0..1). */
  savedShare: Num,
});
export type SavingsLineDto = Static<typeof SavingsLineSchema>;

/** GET /api/v1/clusters/:id/savings: summed from recorded history over [from, to). */
export const SavingsSchema = Obj(
  {
    from: Int,
    to: Int,
    total: SavingsLineSchema,
    pools: Type.Array(SavingsLineSchema),
    workloads: Type.Array(SavingsLineSchema),
  },
  "Realized savings over [from, to) per NodePool and per workload, against the same capacity all on-demand",
);
export type SavingsDto = Static<typeof SavingsSchema>;

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
  "static-pool",
] as const);
export type WarmupBlocker = Static<typeof WarmupBlockerSchema>;

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
  policy: WarmupPolicySchema,
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
  /**
   * Over the range, median pending → running of the pool's pods that waited for a new node
   * (core's cold starts); null until one is measured.
   */
  coldStartSeconds: Nullable(Num),
  coldStartSamples: Int,
  /** Over the range, median pending → running of the hits' pods (measured by the controller). */
  warmStartSeconds: Nullable(Num),
  warmStartSamples: Int,
  /** Both medians measured and the warm one is not faster: the page says so. */
  warmNotFaster: Type.Boolean(),
  /**
   * Σ over the range's hits of what each saved (warmup/time-saved.ts: the pool's cold start in the
   * 24 h before the hit minus the pod's own start, never negative): the same sum as the
   * Overview's and /metrics'.
   */
  timeSavedSeconds: Num,
  /** Hits that saved time (a measured start faster than the pool's cold start). */
  hitsCredited: Int,
  /**
   * The range's last hits (at most 20), newest first, as core stored them: the pod, its measured
   * start (null: counted without one), when the warm time began and what it saved.
   */
  recentHits: Type.Array(
    Obj({
      at: Num,
      node: Str,
      pod: Nullable(Str),
      since: Nullable(Num),
      seconds: Nullable(Num),
      saved: Nullable(Num),
    }),
  ),
  /** What Wave's warm capacity cost over the range (from the warmup's node launch to its first real pod, expiry or release). */
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

/** What holds a workload's move to its spot target (issue 43): named, with the object when there is one. */
export const SpotBlockerSchema = Obj({
  kind: Lit([
    "pdb",
    "pool-limit",
    "no-capacity",
    "pending",
    "rollout",
    "starting",
    "misplaced",
    "eviction-refused",
    "repair-idle",
  ] as const),
  /** The PodDisruptionBudget or pod (namespace/name) or NodePool that blocks; null when none is one. */
  object: Nullable(Str),
  message: Str,
});
export type SpotBlockerDto = Static<typeof SpotBlockerSchema>;

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
  /** What holds the move while pods are off target (views/spot-blocker.ts); null: nothing does. */
  blocker: Nullable(SpotBlockerSchema),
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
  // Two SpotPolicies target the workload: the one created first decides (src/policy/in-force.ts).
  "policy-conflict",
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

// ---- Why Karpenter does not consolidate a node, why a pod is pending (issue 34) ----

/**
 * Why Karpenter will not disrupt a node (docs/consolidation.md has each one's meaning):
 * - do-not-disrupt-pod: a pod on it carries karpenter.sh/do-not-disrupt;
 * - do-not-disrupt-node: the Node or NodeClaim carries it (set by a user);
 * - wave-warm-node: Wave's warmup holds the node warm (its own do-not-disrupt mark);
 * - pdb: a PodDisruptionBudget of a pod on it allows 0 disruptions now;
 * - budget: the NodePool's disruption budget allows no more disruptions now;
 * - when-empty: the pool's consolidationPolicy is WhenEmpty and the node has pods;
 * - consolidation-disabled: the pool's consolidateAfter is Never;
 * - consolidate-after: consolidateAfter has not elapsed since the last pod event;
 * - not-initialized: the node (NodeClaim) is not initialized yet;
 * - pods-fit-nowhere: Karpenter says a pod on it would schedule nowhere else;
 * - no-controller: a pod on it has no controller (evicted, nothing recreates it; not a blocker);
 * - karpenter: another reason Karpenter gave in its Event (message kept).
 */
export const BlockerReasonSchema = Lit([
  "do-not-disrupt-pod",
  "do-not-disrupt-node",
  "wave-warm-node",
  "pdb",
  "budget",
  "when-empty",
  "consolidation-disabled",
  "consolidate-after",
  "not-initialized",
  "pods-fit-nowhere",
  "no-controller",
  "karpenter",
  "static",
] as const);
export type BlockerReason = Static<typeof BlockerReasonSchema>;

export const ObjectRefSchema = Obj({ kind: Str, namespace: Nullable(Str), name: Str });
export type ObjectRefDto = Static<typeof ObjectRefSchema>;

/** The change that lifts a blocker: a merge patch on `target` and the kubectl line that applies it. */
export const BlockerFixSchema = Obj({
  title: Str,
  detail: Str,
  target: Nullable(ObjectRefSchema),
  /** JSON merge patch for `target`; null when the fix is no spec change (e.g. wait). */
  patch: Nullable(Type.Record(Type.String(), Type.Unknown())),
  kubectl: Nullable(Str),
});
export type BlockerFixDto = Static<typeof BlockerFixSchema>;

export const BlockerSchema = Obj({
  reason: BlockerReasonSchema,
  /** False for a caution that does not stop Karpenter (no-controller) and for a wait. */
  blocking: Type.Boolean(),
  /** A wait that ends by itself (consolidateAfter not elapsed): shown as waiting, never blocked, no patch. */
  waiting: Type.Boolean(),
  message: Str,
  /** The object that causes it (the pod, the PDB, the NodePool, the node). */
  object: ObjectRefSchema,
  /** Pods involved ("namespace/name"): the PDB's pods on the node, the pod that fits nowhere. */
  pods: Type.Array(Str),
  /** When it lifts by itself (epoch ms): a budget window's end, consolidateAfter elapsing; else null. */
  until: Nullable(Num),
  /** Seen in the cluster's objects ("state") or only in Karpenter's Event ("event"). */
  source: Lit(["state", "event"] as const),
  fix: Nullable(BlockerFixSchema),
});
export type BlockerDto = Static<typeof BlockerSchema>;

/** One of Karpenter's Events about a node, its NodeClaim or its pool, kept beyond the hour. */
export const KarpenterEventSchema = Obj({
  at: Num,
  reason: Str,
  message: Str,
  count: Int,
  object: ObjectRefSchema,
});
export type KarpenterEventDto = Static<typeof KarpenterEventSchema>;

export const NodeDisruptionSchema = Obj(
  {
    node: Str,
    nodeClaim: Nullable(Str),
    nodePool: Nullable(Str),
    /** No blocking blocker and no wait: Karpenter may disrupt it (when it finds it worth it). */
    disruptable: Type.Boolean(),
    /** A blocking blocker stands between Karpenter and a saving (savingsPerHour > 0): counted in the blocked cost. */
    blocked: Type.Boolean(),
    /** Only waits for consolidateAfter to elapse (no blocking blocker). */
    waiting: Type.Boolean(),
    /**
     * Of a static NodePool (spec.replicas): Karpenter never consolidates it, so it is neither
     * blocked nor disruptable, saves nothing here and has no fix; its one blocker "static" says so.
     */
    static: Type.Boolean(),
    /** No pods but DaemonSet pods and Wave's warmup pods. */
    empty: Type.Boolean(),
    costPerHour: Nullable(Num),
    /**
     * What consolidating it would save per hour now: all of its price (empty, or its pods fit on the
     * other nodes) or its price minus the cheapest replacement's; 0 when not under-used. A node a
     * blocker holds is priced in the plan of every such node together (each spare room used once).
     */
    savingsPerHour: Num,
    /** How it would be consolidated: "delete" (empty or its pods fit elsewhere), "replace", or null. */
    action: Nullable(Lit(["delete", "replace"] as const)),
    replacement: Nullable(Obj({ instanceType: Str, capacityType: Str, usdPerHour: Num })),
    blockers: Type.Array(BlockerSchema),
    events: Type.Array(KarpenterEventSchema),
  },
  "Whether Karpenter can disrupt a node, each blocker with its object and fix, and what consolidating it would save",
);
export type NodeDisruptionDto = Static<typeof NodeDisruptionSchema>;

const BlockedSum = { blockedNodes: Int, blockedCostPerHour: Num };
export const ConsolidationViewSchema = Obj(
  {
    clusterId: Str,
    at: Num,
    karpenterVersion: Nullable(Str),
    nodes: Int,
    /**
     * Blocked nodes (a blocking blocker, a saving > 0) and what consolidating them could save if
     * the blockers were lifted, planned together (each node counted once).
     */
    ...BlockedSum,
    /** Nodes that only wait for their consolidateAfter to elapse (not blocked). */
    waitingNodes: Int,
    /** Nodes of static NodePools: never consolidated, never blocked, no savings. */
    staticNodes: Int,
    /** The static NodePools with nodes here, each with why consolidation leaves them alone. */
    staticPools: Type.Array(Obj({ nodePool: Str, nodes: Int, replicas: Int, message: Str })),
    /** Per NodePool (each node once). */
    byPool: Type.Array(Obj({ nodePool: Str, nodes: Int, ...BlockedSum })),
    /** Per reason: a node blocked for two reasons counts under both. */
    byReason: Type.Array(Obj({ reason: BlockerReasonSchema, ...BlockedSum })),
    /** Per NodePool and reason (the /metrics series). */
    byPoolReason: Type.Array(Obj({ nodePool: Str, reason: BlockerReasonSchema, ...BlockedSum })),
    /** Every Karpenter node, blocked ones first, by savings. */
    items: Type.Array(NodeDisruptionSchema),
  },
  "Why Karpenter does not consolidate nodes: blocked nodes by pool and reason with what consolidation would save",
);
export type ConsolidationViewDto = Static<typeof ConsolidationViewSchema>;

export const PendingReasonKindSchema = Lit([
  "requirement",
  "taint",
  "limit",
  "resources",
  "no-nodepool",
  "other",
] as const);

export const PendingPodSchema = Obj({
  namespace: Str,
  name: Str,
  /** Pending since (epoch ms): its creation. */
  since: Num,
  waitingSeconds: Num,
  /** Karpenter's last FailedScheduling, read per NodePool; empty when Karpenter said nothing yet. */
  reasons: Type.Array(
    Obj({
      nodePool: Nullable(Str),
      kind: PendingReasonKindSchema,
      /** The conflicting requirement key, or the taint not tolerated. */
      key: Nullable(Str),
      /** One readable line (the requirement that rules out every instance type, when that is the cause). */
      text: Str,
      /** The part of Karpenter's message it was read from. */
      detail: Str,
      /** The change that would let the pod schedule here: a merge patch, or an instruction (patch null). */
      fix: Nullable(BlockerFixSchema),
      /** What the fix would cost per hour: the pool's cheapest machine the cluster runs that holds the pod; null when unknown. */
      costPerHour: Nullable(Num),
    }),
  ),
  /** Karpenter nominated it to this NodeClaim or node (a node is on its way). */
  nominatedTo: Nullable(Str),
  lastEvent: Nullable(Obj({ at: Num, reason: Str, message: Str })),
});
export type PendingPodDto = Static<typeof PendingPodSchema>;

export const PendingViewSchema = Obj(
  {
    clusterId: Str,
    at: Num,
    pods: Type.Array(PendingPodSchema),
    /** Pods per NodePool and reason kind. */
    byPoolReason: Type.Array(Obj({ nodePool: Nullable(Str), kind: PendingReasonKindSchema, pods: Int })),
  },
  "Pending pods with Karpenter's reasons per NodePool and how long each has waited",
);
export type PendingViewDto = Static<typeof PendingViewSchema>;

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
    price: Obj({
      usdPerHour: Nullable(Num),
      source: PriceSourceSchema,
      asOf: Nullable(Str),
      /** "overlay <name> <change>" when a Karpenter NodeOverlay priced it, else source. */
      pricedBy: Str,
      /** The list price when a NodeOverlay changed it; null otherwise. */
      listUsdPerHour: Nullable(Num),
    }),
    labels: Type.Record(Type.String(), Type.String()),
    taints: Type.Array(Obj({ key: Str, value: Nullable(Str), effect: Str })),
    /** Who set karpenter.sh/do-not-disrupt: null (not set), "wave-warmup" or "user". */
    doNotDisruptBy: Nullable(Str),
    annotations: Type.Record(Type.String(), Type.String()),
    /** Can Karpenter disrupt it, and if not why (null for a NodeClaim that is gone). */
    disruption: Nullable(NodeDisruptionSchema),
  },
  "One node or NodeClaim (also one that is gone, from its stored lifecycle): timeline, pods, price, labels, taints, who set do-not-disrupt",
);
export type NodeDetailDto = Static<typeof NodeDetailSchema>;

/** GET /clusters/{id}/thrashing/fixes: each thrashing pool's fixes, ready to paste. */
export const ThrashingFixesSchema = Obj({
  nodePool: Str,
  severity: ThrashSeveritySchema,
  /** Core can apply a fix itself (POST …/thrashing/apply): the embedded simulated cluster only. */
  canApply: Type.Boolean(),
  /**
   * A fix applied through Wave within the detector's window that the NodePool still holds: its
   * title, when, and when the cycles from before it leave the window (the score clears by then).
   * While it is in effect `fixes` is empty: the score does not yet say whether it worked.
   */
  applied: Nullable(Obj({ title: Str, at: Num, clearsBy: Num })),
  fixes: Type.Array(Obj({ title: Str, detail: Str, kubectl: Nullable(Str) })),
});
export type ThrashingFixesDto = Static<typeof ThrashingFixesSchema>;

/** GET /whoami. */
export const WhoAmISchema = Obj({
  role: Lit(["viewer", "namespace-editor", "admin"] as const),
  /** "token:viewer", "token:admin", an OIDC subject (email when the provider gives one), a proxy user. */
  subject: Str,
  groups: Type.Array(Str),
  /** namespace-editor: the namespaces whose spot policies the caller may change. */
  namespaces: Type.Optional(Type.Array(Str)),
  source: Lit(["token", "oidc", "proxy"] as const),
});
export type WhoAmIDto = Static<typeof WhoAmISchema>;

/** GET /auth/info (public): how one signs in to this core's console. */
export const AuthInfoSchema = Obj(
  {
    /** OIDC configured: the button "Sign in with <provider>" goes to loginPath. */
    oidc: Nullable(Obj({ provider: Str, loginPath: Str })),
    /** An auth proxy in front of core signs users in. */
    proxy: Type.Boolean(),
  },
  "How one signs in to this core's console",
);
export type AuthInfoDto = Static<typeof AuthInfoSchema>;

/** One change made through Wave (GET /api/v1/clusters/{id}/audit). */
export const AuditEntrySchema = Obj({
  id: Int,
  at: Type.Integer({ description: "epoch ms" }),
  subject: Str,
  groups: Type.Array(Str),
  source: Type.String({ description: "how the caller signed in: token, oidc or proxy" }),
  via: Type.String({ description: "ui, api or cli" }),
  address: Str,
  action: Str,
  object: Str,
  /** JSON summaries; null: the object did not exist before / no longer exists. */
  before: Nullable(Str),
  after: Nullable(Str),
});
export type AuditEntryDto = Static<typeof AuditEntrySchema>;

/** A policy CR version another field manager wrote (a change made outside Wave). */
export const ForeignChangeSchema = Obj({
  at: Type.Integer({ description: "epoch ms core received this version" }),
  kind: Str,
  name: Str,
  manager: Type.String({
    description: "the field manager of the change (kubectl, argocd-controller, kustomize-controller, …)",
  }),
  deleted: Type.Boolean(),
  spec: Nullable(Str),
});
export type ForeignChangeDto = Static<typeof ForeignChangeSchema>;

export const AuditListSchema = Obj(
  {
    entries: Type.Array(AuditEntrySchema),
    /** Changes made elsewhere, by their field manager. */
    elsewhere: Type.Array(ForeignChangeSchema),
  },
  "Changes made through Wave in a cluster, newest first, and policy CR versions written elsewhere",
);
export type AuditListDto = Static<typeof AuditListSchema>;

/** A name as Kubernetes allows it for NodePools and clusters (no NUL, CR/LF or markup). */
export const DNS_SUBDOMAIN_PATTERN = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$";

/**
 * A what-if's progress, streamed as `event: progress` when the request asks for
 * `accept: text/event-stream` (then `event: result` with the report, or `event: error`).
 */
export const WhatifProgressSchema = Obj({
  /** Waiting for a worker (or for the cluster's running replay), or replaying. */
  state: Lit(["queued", "running"] as const),
  /** Queued: what-ifs ahead (0 = next). */
  position: Int,
  /** Share of the replays' simulated time done (0–1). */
  fraction: Num,
  elapsedMs: Num,
  /** Estimated time left. */
  etaMs: Type.Optional(Num),
});
export type WhatifProgressDto = Static<typeof WhatifProgressSchema>;

/** POST /api/v1/clusters/{id}/whatif: the candidate (changes over the cluster's current policies). */
export const WhatifRequestSchema = Obj(
  {
    /**
     * Spot policies to try, by workload (the body of `PUT …/policies/spot/…` plus the workload).
     * Only objects here: the policy validator checks them, so a bad one is refused with its reason.
     */
    spot: Type.Optional(Type.Array(Type.Unsafe<SpotPolicyDto>({ type: "object" }), { maxItems: 100 })),
    /** Warmup policies to try, by NodePool (the body of `PUT …/policies/warmup/{pool}`). */
    warmup: Type.Optional(
      Type.Record(Str, WarmupPolicyInputSchema, {
        maxProperties: 100,
        propertyNames: { type: "string", minLength: 1, maxLength: 63, pattern: DNS_SUBDOMAIN_PATTERN },
      }),
    ),
    /** History replayed, hours back from now (default and most 24). */
    windowHours: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 24 })),
    /** Launch → node Ready in the simulator (default: the cluster's median recorded boot, else 60 s). */
    bootDelaySeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
    /** Per spot node per hour (default: the cluster's own rate over the window). */
    spotInterruptionRate: Type.Optional(Type.Number({ minimum: 0, maximum: 60 })),
    seed: Type.Optional(Type.Integer({ minimum: 0, maximum: 999_999_999 })),
  },
  "A what-if candidate: spot and/or warmup policies to try over the cluster's current ones",
);
export type WhatifRequestDto = Static<typeof WhatifRequestSchema>;

const SpotOnDemand = Obj({ spot: Num, onDemand: Num });
const PoolAverage = Obj({ nodes: Num, costPerHour: Num });

/** One side of a what-if: the cluster's window replayed under one policy. */
export const WhatifSideSchema = Obj({
  policy: Obj({ spot: Type.Array(SpotPolicySchema), warmup: Type.Record(Str, WarmupPolicySchema) }),
  /** Averages over the window. */
  costPerHour: Num,
  costPerMonth: Num,
  /** Spot node-hours / all node-hours (0..1). */
  spotShare: Num,
  nodeHours: SpotOnDemand,
  /** Per NodePool, averages over the window: nodes and cost rate (compare with `recorded.pools`). */
  pools: Type.Optional(Type.Record(Str, PoolAverage)),
  /** The window in about 96 buckets (t: epoch ms): cost rate and workload pods by capacity type. */
  timeline: Type.Optional(Type.Array(Obj({ t: Int, costPerHour: Num, onDemandPods: Int, spotPods: Int }))),
  /** Pod starts per latency bucket: ≤ 5 s, 15 s, 30 s, 1 min, 2 min, 5 min, longer. */
  podStartHistogram: Type.Optional(Type.Array(Int)),
  /** Workload pod creation → Running, ms. */
  podStart: Obj({ count: Int, p50Ms: Num, p95Ms: Num, maxMs: Num }),
  pendingAtEnd: Int,
  spotInterruptions: Int,
  nodeClaimsCreated: Int,
  /** As the replay ends: the cluster now, had this policy been in force. */
  now: Obj({
    costPerHour: Num,
    nodes: SpotOnDemand,
    /** Per NodePool: its nodes' cost rate and count. */
    pools: Type.Record(Str, Obj({ costPerHour: Num, nodes: Int })),
    /** Per workload (namespace/Kind/name): its pods by capacity type. */
    workloads: Type.Record(Str, Obj({ onDemand: Int, spot: Int, pending: Int })),
  }),
});
export type WhatifSideDto = Static<typeof WhatifSideSchema>;

export const WhatifReportSchema = Obj(
  {
    clusterId: Str,
    /** The replayed window (epoch ms). */
    from: Int,
    to: Int,
    historyBuckets: Int,
    catalog: Lit(["aws", "kwok"] as const),
    bootDelayMs: Int,
    /** Per NodePool: the node boot (launch → Ready) and image pull the replay used, ms. */
    poolBootMs: Type.Optional(Type.Record(Str, Num)),
    poolPullMs: Type.Optional(Type.Record(Str, Num)),
    spotInterruptionRate: Num,
    workloads: Type.Array(Str),
    skipped: Type.Array(Obj({ workload: Str, reason: Str })),
    current: WhatifSideSchema,
    candidate: WhatifSideSchema,
    /** Why a result may look wrong (e.g. warmup enabled yet a worse p95 start, and what the replay shows of why). */
    notes: Type.Optional(Type.Array(Str)),
    /**
     * What core recorded over the same window (averages over the time it has points for), and how
     * far the current policy's replay is from it (relative errors): judge the model before the
     * candidate. Null without recorded points.
     */
    recorded: Type.Optional(
      Nullable(
        Obj({
          coveredMs: Int,
          costPerHour: Num,
          pools: Type.Record(Str, PoolAverage),
          /** The pod starts core saw of pods created in the window (creation → Ready, ms). */
          podStart: Type.Optional(Obj({ count: Int, p50Ms: Num, p95Ms: Num, maxMs: Num })),
          fidelity: Obj({
            costError: Num,
            poolNodesError: Type.Record(Str, Num),
            /** The current policy's replayed pod start p50/p95 against the recorded ones. */
            podStartError: Type.Optional(Obj({ p50: Num, p95: Num })),
          }),
        }),
      ),
    ),
    /** How long the two replays took, ms. */
    tookMs: Int,
  },
  "A what-if: the cluster's window replayed under its current policies and under the candidate",
);
export type WhatifReportDto = Static<typeof WhatifReportSchema>;
