// Wave's policy custom resources (issue 31): the shapes of SpotPolicy (namespaced, targets a
// workload in its namespace) and WarmupPolicy (cluster-scoped, targets a NodePool) as the
// apiserver stores them: the one TypeScript view every component reads (webhook informer, agent,
// core, CLI). Each field's description, enum and range: policy/crd-schema.ts, which must name
// every field here (the compiler checks); the CRD manifests are generated from it (crds:gen).
import type { ObjectMeta } from "./kube.ts";

export const POLICY_GROUP = "wave.sh";
/**
 * The version Wave's own clients (informers, writers, CLI) read and write, and the CRDs' storage
 * version. It stays v1alpha1 while v1beta1 is served beside it: an older wave-crds chart serves
 * v1alpha1 only, and Wave must keep working on it (docs/crds.md, Versions).
 */
export const POLICY_VERSION = "v1alpha1";
/** Every version the CRDs serve, all from one schema (conversion None: they differ in name only). */
export const POLICY_SERVED_VERSIONS = ["v1alpha1", "v1beta1"] as const;
export type PolicyVersion = (typeof POLICY_SERVED_VERSIONS)[number];
/** The version objects are stored in (etcd); see docs/crds.md for the plan to move it to v1beta1. */
export const POLICY_STORAGE_VERSION: PolicyVersion = POLICY_VERSION;
export const POLICY_API_VERSION = `${POLICY_GROUP}/${POLICY_VERSION}`;

export const SPOT_POLICY_KIND = "SpotPolicy";
export const SPOT_POLICY_PLURAL = "spotpolicies";
export const WARMUP_POLICY_KIND = "WarmupPolicy";
export const WARMUP_POLICY_PLURAL = "warmuppolicies";

/** Server-side apply field manager of every edit made through Wave's console, API or CLI. */
export const CONSOLE_FIELD_MANAGER = "wave-console";
/** Field manager of the status Wave's controllers write. */
export const STATUS_FIELD_MANAGER = "wave-status";
/** On a policy CR: who last changed it through Wave (subject, e.g. an OIDC email or "token:admin"). */
export const CHANGED_BY_ANNOTATION = "wave.sh/changed-by";
/** Beside it: RFC 3339 time and where from ("ui", "api", "cli", "migration"). */
export const CHANGED_AT_ANNOTATION = "wave.sh/changed-at";
export const CHANGED_VIA_ANNOTATION = "wave.sh/changed-via";
/**
 * On a WarmupPolicy written through Wave: the namespace of the Wave install whose agent applied it.
 * That install's warmup acts on it; a WarmupPolicy without it (GitOps, kubectl) is every install's.
 * WarmupPolicies are cluster-scoped, so two installs on one cluster (or the e2e rig's tests) would
 * otherwise both warm each other's pools.
 */
export const INSTANCE_ANNOTATION = "wave.sh/instance";

/** Whether the install in `namespace` acts on this WarmupPolicy (see INSTANCE_ANNOTATION). */
export function ownWarmupPolicy(
  cr: { metadata: { annotations?: Record<string, string> } },
  namespace: string,
): boolean {
  const owner = cr.metadata.annotations?.[INSTANCE_ANNOTATION];
  return owner === undefined || owner === namespace;
}

/** On a CR created by the one-time migration of policies stored in core. */
export const MIGRATED_FROM_ANNOTATION = "wave.sh/migrated-from";

// The enums as values too: the CRD's schema (policy/crd-schema.ts) lists the same.
export const SPOT_STRATEGIES = ["Prefer", "Require"] as const;
export const SPOT_REPAIR_MODES = ["On", "Off", "DryRun"] as const;
export const SPOT_TARGET_KINDS = ["Deployment", "StatefulSet", "ReplicaSet"] as const;
export const CONDITION_STATUSES = ["True", "False", "Unknown"] as const;
export type SpotStrategy = (typeof SPOT_STRATEGIES)[number];
export type SpotRepairMode = (typeof SPOT_REPAIR_MODES)[number];
export type SpotTargetKind = (typeof SPOT_TARGET_KINDS)[number];

export interface PolicyCondition {
  type: string;
  status: (typeof CONDITION_STATUSES)[number];
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface SpotPolicySpec {
  targetRef: { kind: SpotTargetKind; name: string };
  /** The first `threshold` pods run on-demand (Pod Spot Threshold, the ASG base). */
  threshold: number;
  /** Share 0–100 of the pods above the threshold that also run on-demand. Default 0. */
  percentAboveBase?: number;
  strategy: SpotStrategy;
  /** Default On. */
  repair?: SpotRepairMode;
  /** Prefer only: how long spot stays a preference before on-demand is the fallback (ADR 0007). */
  fallbackWindowSeconds?: number;
}

export interface SpotPolicyStatus {
  observedGeneration?: number;
  /** Pods the policy wants on-demand / spot, and how many run there now. */
  targetOnDemand?: number;
  targetSpot?: number;
  onDemand?: number;
  spot?: number;
  conditions?: PolicyCondition[];
  lastRepair?: { time: string; pod: string; action: string };
}

export interface SpotPolicyResource {
  apiVersion: typeof POLICY_API_VERSION;
  kind: typeof SPOT_POLICY_KIND;
  metadata: ObjectMeta;
  spec: SpotPolicySpec;
  status?: SpotPolicyStatus;
}

export interface WarmupPolicySpec {
  /** The NodePool this policy warms. */
  nodePool: string;
  enabled: boolean;
  maxWarmNodes?: number;
  ttlSeconds?: number;
  cooldownSeconds?: number;
  /** Decimal string in USD ("0.50"); absent = no cap. */
  maxCostPerHour?: string;
  prePull?: boolean;
  prePullDeadlineSeconds?: number;
}

export interface WarmupPolicyStatus {
  observedGeneration?: number;
  /** idle | warming | warm | blocked | disabled */
  state?: string;
  blocker?: string;
  warmNodes?: number;
  hits?: number;
  misses?: number;
  conditions?: PolicyCondition[];
}

export interface WarmupPolicyResource {
  apiVersion: typeof POLICY_API_VERSION;
  kind: typeof WARMUP_POLICY_KIND;
  metadata: ObjectMeta;
  spec: WarmupPolicySpec;
  status?: WarmupPolicyStatus;
}
