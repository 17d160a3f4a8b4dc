// The OpenAPI schema of Wave's CRDs (SpotPolicy, WarmupPolicy): every field's description, enum,
// range and pattern, from the constants the TypeScript shapes (objects/policy-crds.ts) and the
// validators (validate-spot.ts, validate-warmup.ts, warmup-resource.ts) use — one source. Each
// map is typed by its shape's keys, so a field added there fails to compile until described here.
// `npm run crds:gen` (hack/helm/crds-gen.ts) writes the CRD manifests from it. CEL only for what
// the schema cannot say (a rule across two fields).
import {
  CONDITION_STATUSES,
  POLICY_GROUP,
  POLICY_SERVED_VERSIONS,
  SPOT_REPAIR_MODES,
  SPOT_STRATEGIES,
  SPOT_TARGET_KINDS,
  type PolicyCondition,
  type SpotPolicySpec,
  type SpotPolicyStatus,
  type WarmupPolicySpec,
  type WarmupPolicyStatus,
} from "../objects/policy-crds.ts";
import { FALLBACK_WINDOW_RANGE, PERCENT_ABOVE_BASE_RANGE } from "./spot.ts";
import { DNS_SUBDOMAIN } from "./validate-spot.ts";
import { DEFAULT_POLICY, WARMUP_INTEGER_RANGES } from "./warmup.ts";
import { DECIMAL_USD } from "./warmup-resource.ts";

/** The subset of a CRD's JSONSchemaProps Wave uses. */
export interface Schema {
  /** Absent only on metadata: the apiserver refuses one there (kubectl explain shows ObjectMeta's). */
  description?: string;
  type: "object" | "string" | "integer" | "boolean" | "array";
  format?: "int32" | "int64" | "date-time";
  enum?: readonly string[];
  default?: string | number;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  required?: readonly string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  "x-kubernetes-list-type"?: "map";
  "x-kubernetes-list-map-keys"?: readonly string[];
  "x-kubernetes-validations"?: readonly { rule: string; message: string }[];
}

type Fields<T> = { [K in keyof Required<T>]: Schema };

// kubectl explain prints only the description: the range goes into it too, from the same numbers.
const int32 = (description: string, range?: readonly [number, number]): Schema => ({
  description: range === undefined ? description : `${description} From ${range[0]} to ${range[1]}.`,
  type: "integer",
  format: "int32",
  ...(range === undefined ? {} : { minimum: range[0], maximum: range[1] }),
});
const int64 = (description: string): Schema => ({ description, type: "integer", format: "int64" });
const str = (description: string): Schema => ({ description, type: "string" });
const time = (description: string): Schema => ({ description, type: "string", format: "date-time" });
const obj = <T>(
  description: string,
  properties: Fields<T>,
  required: readonly (keyof T & string)[] = [],
) => ({
  description,
  type: "object" as const,
  ...(required.length > 0 ? { required } : {}),
  properties: properties as Record<string, Schema>,
});
/** The apiserver fills in `value` when the field is absent; the description says so. */
const withDefault = (s: Schema, value: string | number): Schema => ({
  ...s,
  description: `${s.description ?? ""} Default ${value}.`,
  default: value,
});
const seconds = (n: number): string => (n % 60 === 0 ? `${n / 60} min` : `${n} s`);

const condition: Fields<PolicyCondition> = {
  type: str("The condition's type, e.g. Ready."),
  status: { ...str("Whether the condition holds: True, False or Unknown."), enum: CONDITION_STATUSES },
  reason: str("A CamelCase word for why the condition is in its status."),
  message: str("Why the condition is in its status, for people."),
  lastTransitionTime: time("When the status last changed."),
  observedGeneration: int64("The metadata.generation this condition was set for."),
};

/** Conditions as Kubernetes lists them: a map keyed by type (server-side apply merges by it). */
const conditions = (who: string): Schema => ({
  description: `The latest observations of the policy's state, written by ${who}.`,
  type: "array",
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["type"],
  items: obj<PolicyCondition>("One observation.", condition, [
    "type",
    "status",
    "reason",
    "message",
    "lastTransitionTime",
  ]),
});

export const SPOT_SPEC: Fields<SpotPolicySpec> = {
  targetRef: obj<SpotPolicySpec["targetRef"]>(
    "The workload in this policy's namespace whose pods it places.",
    {
      kind: {
        ...str("The workload's kind: Deployment, StatefulSet or ReplicaSet."),
        enum: SPOT_TARGET_KINDS,
      },
      name: {
        ...str("The workload's metadata.name (a lowercase RFC 1123 name)."),
        maxLength: 253,
        pattern: DNS_SUBDOMAIN.source,
      },
    },
    ["kind", "name"],
  ),
  threshold: {
    ...int32(
      "The first `threshold` live pods run on-demand (the base, as an ASG's OnDemandBaseCapacity). At least 0.",
    ),
    minimum: 0,
  },
  percentAboveBase: withDefault(
    int32(
      "Share in percent of the pods above the threshold that also run on-demand (as an ASG's " +
        "OnDemandPercentageAboveBaseCapacity).",
      PERCENT_ABOVE_BASE_RANGE,
    ),
    0,
  ),
  strategy: {
    ...str(
      "Require: spot pods must land on spot capacity. Prefer: spot while it is available, on-demand " +
        "as the fallback (ADR 0007).",
    ),
    enum: SPOT_STRATEGIES,
  },
  repair: withDefault(
    {
      ...str(
        "On: evict one pod at a time until the split matches (also adopting pods that ran before the " +
          "policy). Off: admission only. DryRun: plan and report the evictions, make none.",
      ),
      enum: SPOT_REPAIR_MODES,
    },
    "On",
  ),
  fallbackWindowSeconds: int32(
    "Prefer only: how long the on-demand fallback stays open once spot capacity looks unavailable " +
      `(absent: the webhook's default, 600).`,
    FALLBACK_WINDOW_RANGE,
  ),
};

export const SPOT_STATUS: Fields<SpotPolicyStatus> = {
  observedGeneration: int64("The metadata.generation the webhook last acted on."),
  targetOnDemand: int32("Pods the policy wants on on-demand capacity now."),
  targetSpot: int32("Pods the policy wants on spot capacity now."),
  onDemand: int32("Pods of the workload running on on-demand capacity now."),
  spot: int32("Pods of the workload running on spot capacity now."),
  conditions: conditions("the webhook"),
  lastRepair: obj<NonNullable<SpotPolicyStatus["lastRepair"]>>(
    "The repair's last eviction (or, with repair DryRun, the one it would have made).",
    {
      time: time("When."),
      pod: str("The pod's name."),
      action: str("What the repair did (or would have done) to the pod."),
    },
    ["time", "pod", "action"],
  ),
};

/**
 * A whole-number warmup field: its range from WARMUP_INTEGER_RANGES; its default is the agent's
 * (DEFAULT_POLICY fills a field the CR leaves out), so it is described, not set as the schema's.
 */
const warmInt = (k: keyof typeof WARMUP_INTEGER_RANGES, description: string): Schema => {
  const s = int32(description, WARMUP_INTEGER_RANGES[k]);
  const d = DEFAULT_POLICY[k];
  return { ...s, description: `${s.description ?? ""} Default ${k.endsWith("Seconds") ? seconds(d) : d}.` };
};

export const WARMUP_SPEC: Fields<WarmupPolicySpec> = {
  nodePool: {
    ...str("The Karpenter NodePool this policy warms (one WarmupPolicy per NodePool)."),
    minLength: 1,
    maxLength: 253,
  },
  enabled: { description: "Whether Wave keeps warm capacity in the pool.", type: "boolean" },
  maxWarmNodes: warmInt("maxWarmNodes", "Warmup pods (pending or on a node) the pool may hold at once."),
  ttlSeconds: warmInt(
    "ttlSeconds",
    "How long a warm node waits for a real pod before it counts as a miss, in seconds.",
  ),
  cooldownSeconds: warmInt(
    "cooldownSeconds",
    "Quiet time after a warmup before the pool may start another, in seconds.",
  ),
  maxCostPerHour: {
    ...str(
      'Ceiling on the hourly price of the warm capacity, a decimal number of USD ("0.50"); absent: no cap.',
    ),
    maxLength: 32,
    pattern: DECIMAL_USD.source,
  },
  prePull: {
    description: `Pre-pull the pool's workload images onto each warm node. Default ${DEFAULT_POLICY.prePull}.`,
    type: "boolean",
  },
  prePullDeadlineSeconds: warmInt(
    "prePullDeadlineSeconds",
    "A pre-pull still running after this many seconds is removed (pull stuck or image missing).",
  ),
};

export const WARMUP_STATUS: Fields<WarmupPolicyStatus> = {
  observedGeneration: int64("The metadata.generation the warmup controller last acted on."),
  state: str("What the pool's warmup is doing: idle, warming, warm, blocked or disabled."),
  blocker: str("While blocked: why no warmup can start (e.g. the NodePool is not found)."),
  warmNodes: int32("Warm nodes waiting for a pod now."),
  hits: int64("Warm nodes a real pod landed on, as the warmup controller counts them."),
  misses: int64("Warm nodes that expired unused (ttlSeconds), as the warmup controller counts them."),
  conditions: conditions("the warmup controller"),
};

/** The fields every Kubernetes object has, described as kubectl explain shows them. */
const TYPE_META = {
  // One schema for every served version (conversion None), so one description names them all.
  apiVersion: str(
    `The versioned schema of this object: ${POLICY_SERVED_VERSIONS.map((v) => `${POLICY_GROUP}/${v}`).join(" or ")} (the same fields).`,
  ),
  kind: str("The REST resource this object represents."),
  // The apiserver allows nothing but `type` here; kubectl explain shows ObjectMeta's own docs.
  metadata: { type: "object" } as Schema,
};

/** SpotPolicy's openAPIV3Schema. */
export function spotPolicySchema(): Schema {
  return {
    description:
      "SpotPolicy places a workload's pods on on-demand or spot capacity: the first `threshold` pods " +
      "run on-demand, then `percentAboveBase` % of the rest; the others run on spot (AWS Auto " +
      "Scaling's OnDemandBaseCapacity and OnDemandPercentageAboveBaseCapacity).",
    type: "object",
    required: ["spec"],
    properties: {
      ...TYPE_META,
      spec: {
        ...obj<SpotPolicySpec>("The split this policy wants.", SPOT_SPEC, [
          "targetRef",
          "threshold",
          "strategy",
        ]),
        // Across two fields: the one rule a schema cannot say.
        "x-kubernetes-validations": [
          {
            rule: "!has(self.fallbackWindowSeconds) || self.strategy == 'Prefer'",
            message: "fallbackWindowSeconds applies only to strategy Prefer",
          },
        ],
      },
      status: obj<SpotPolicyStatus>(
        "Written by Wave's webhook (its spot repair), through this subresource only.",
        SPOT_STATUS,
      ),
    },
  };
}

/** WarmupPolicy's openAPIV3Schema. */
export function warmupPolicySchema(): Schema {
  return {
    description:
      "WarmupPolicy keeps warm capacity in one Karpenter NodePool: a warm node waits for the pool's " +
      "next pod, with the workload images pre-pulled.",
    type: "object",
    required: ["spec"],
    properties: {
      ...TYPE_META,
      spec: obj<WarmupPolicySpec>("How the pool is kept warm.", WARMUP_SPEC, ["nodePool", "enabled"]),
      status: obj<WarmupPolicyStatus>(
        "Written by Wave's warmup controller, through this subresource only.",
        WARMUP_STATUS,
      ),
    },
  };
}
