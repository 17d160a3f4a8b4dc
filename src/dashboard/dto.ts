// The API's response shapes: the contract between core and the web UI (ui/ imports these
// types). Money is USD; memory is bytes; CPU is cores; times are epoch milliseconds.

export type PriceSource = "live" | "static" | "estimate" | "kwok" | "unknown";

export interface ClusterDto {
  id: string;
  simulated: boolean;
  connected: boolean;
  lastSeen: number | null;
  kubernetesVersion: string | null;
  karpenterVersion: string | null;
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
  priceSource: PriceSource;
  doNotDisrupt: boolean;
  warm: boolean;
}

export interface NodeListDto {
  total: number;
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
