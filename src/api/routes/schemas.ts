// JSON schemas of the DTOs in src/dashboard/dto.ts: Fastify serializes responses with them (fields not
// listed here are dropped, so keep them in step with dto.ts) and they document the OpenAPI spec.

import { NodeSchema } from "../../dashboard/dto.ts";

const num = { type: "number" } as const;
const int = { type: "integer" } as const;
const str = { type: "string" } as const;
const bool = { type: "boolean" } as const;
const nullable = (type: "string" | "number" | "integer") => ({ type: [type, "null"] }) as const;
const counts = { type: "object", additionalProperties: num } as const;

const obj = (properties: Record<string, unknown>, optional: readonly string[] = []) => ({
  type: "object",
  required: Object.keys(properties).filter((k) => !optional.includes(k)),
  properties,
});

// Path and query parameters: names as Kubernetes and Karpenter allow them, so no NUL, CR/LF or
// markup is ever stored, and nothing is accepted that could never be used.
const DNS_SUBDOMAIN = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$";

/** A NodePool name Karpenter can use: it is also the value of the karpenter.sh/nodepool label (≤ 63). */
export const poolName = { type: "string", minLength: 1, maxLength: 63, pattern: DNS_SUBDOMAIN } as const;

/** A cluster id as agents may send it (src/core/ingest/core.ts). */
export const clusterIdParam = {
  type: "string",
  minLength: 1,
  maxLength: 63,
  pattern: DNS_SUBDOMAIN,
} as const;

export const errorSchema = obj({ error: str, message: str });

/** The last instant a JavaScript Date can hold (epoch ms): later ones cannot be stored or shown. */
export const MAX_EPOCH_MS = 8_640_000_000_000_000;

/**
 * An epoch-ms query parameter. Bounded above as every numeric parameter must be (app.ts refuses
 * to register a route whose number has no maximum): past a Date's range the store and the
 * builders fail, which was a 500 (`?to=9007199254740992`, issue 32).
 */
export const epochMsParam = (description: string) =>
  ({ type: "integer", minimum: 0, maximum: MAX_EPOCH_MS, description }) as const;

export const clusterSchema = obj({
  id: str,
  simulated: bool,
  connected: bool,
  lastSeen: nullable("number"),
  catchingUp: { ...obj({ from: num, at: num, until: num }), type: ["object", "null"] },
  kubernetesVersion: nullable("string"),
  karpenterVersion: nullable("string"),
  karpenterSupport: obj({
    status: { type: "string", enum: ["tested", "older", "newer", "unknown"] },
    oldestTested: str,
    newestTested: str,
    warning: nullable("string"),
  }),
  agentVersion: nullable("string"),
  rejected: { ...obj({ at: num, bound: str, message: str }), type: ["object", "null"] },
});

export const warmupStatsSchema = obj({
  warmNodes: int,
  costPerHour: num,
  hits: int,
  misses: int,
  timeSavedSeconds: num,
});

export const overviewSchema = obj({
  clusterId: str,
  at: num,
  nodes: int,
  nodePools: int,
  pendingPods: int,
  costPerHour: num,
  costPerMonth: num,
  priceSources: counts,
  spotRatio: obj({ nodes: num, vcpu: num, cost: num }),
  spotSavingsPerHour: num,
  requested: obj({ cpu: num, memoryBytes: num }),
  allocatable: obj({ cpu: num, memoryBytes: num }),
  disruptionsLastHour: int,
  thrashingPools: { type: "array", items: str },
  warmup: warmupStatsSchema,
});

const severity = { type: "string", enum: ["none", "low", "medium", "high"] } as const;

export const nodePoolSchema = obj({
  name: str,
  nodes: int,
  nodesByCapacityType: counts,
  vcpu: num,
  memoryBytes: num,
  costPerHour: num,
  costPerMonth: num,
  costByCapacityType: counts,
  priceSources: counts,
  oldestPriceAsOf: nullable("string"),
  limits: obj({ cpu: nullable("number"), memoryBytes: nullable("number") }),
  limitUsage: obj({ cpu: nullable("number"), memory: nullable("number") }),
  consolidationPolicy: nullable("string"),
  consolidateAfter: nullable("string"),
  capacityTypes: { type: "array", items: str },
  thrashing: severity,
  thrashingFlagged: bool,
  warmNodes: int,
});

/** NodeDto, declared once as a TypeBox schema in dto.ts. */
export const nodeSchema = NodeSchema;

export const nodeListSchema = obj({
  total: int,
  totalBeforeQuery: int,
  items: { type: "array", items: nodeSchema },
});

export const lifecycleEventSchema = obj({
  at: num,
  nodeClaim: str,
  nodePool: nullable("string"),
  nodeName: nullable("string"),
  instanceType: nullable("string"),
  capacityType: nullable("string"),
  phase: { type: "string", enum: ["Launched", "Registered", "Initialized", "Disrupted", "Terminated"] },
  reason: nullable("string"),
});

export const disruptionSchema = obj({ at: num, nodeClaim: str, nodePool: nullable("string"), reason: str });

export const thrashingSchema = obj({
  nodePool: str,
  severity,
  flagged: bool,
  score: num,
  summary: str,
  evidence: {
    type: "array",
    items: obj({
      nodeClaim: str,
      instanceType: nullable("string"),
      createdAt: num,
      terminatedAt: nullable("number"),
      lifetimeSeconds: nullable("number"),
      reason: nullable("string"),
      cause: nullable("string"),
    }),
  },
  advice: { type: "array", items: str },
});

export const seriesSchema = obj({
  from: num,
  to: num,
  step: num,
  nodePool: nullable("string"),
  points: {
    type: "array",
    items: obj({ t: num, nodes: num, spotNodes: num, vcpu: num, costPerHour: num }),
  },
  gaps: { type: "array", items: obj({ from: num, to: num }) },
});

export const liveSchema = obj({
  overview: overviewSchema,
  nodePools: { type: "array", items: nodePoolSchema },
});

export const warmupPolicySchema = obj({
  enabled: bool,
  maxWarmNodes: int,
  ttlSeconds: int,
  cooldownSeconds: int,
  maxCostPerHour: nullable("number"),
  prePull: bool,
  prePullDeadlineSeconds: int,
});

/** A warmup policy as PUT (and tried by what-if): fields left out take the defaults. */
export const warmupPolicyInputSchema = {
  type: "object",
  properties: {
    enabled: bool,
    maxWarmNodes: int,
    ttlSeconds: int,
    cooldownSeconds: int,
    maxCostPerHour: nullable("number"),
    prePull: bool,
    prePullDeadlineSeconds: int,
  },
} as const;

export const warmupPolicyRecordSchema = obj({ nodePool: str, policy: warmupPolicySchema, updatedAt: num });

export const spotPolicySchema = obj(
  {
    workload: obj({
      namespace: str,
      kind: { type: "string", enum: ["Deployment", "StatefulSet", "ReplicaSet"] },
      name: str,
    }),
    threshold: int,
    strategy: { type: "string", enum: ["Prefer", "Require"] },
    percentAboveBase: int,
    repair: { anyOf: [{ type: "boolean" }, { type: "string", enum: ["dry-run"] }] },
  },
  ["percentAboveBase", "repair"],
);

export const spotPolicySetSchema = obj({
  apiVersion: { type: "string", const: "wave.sh/v1alpha1" },
  kind: { type: "string", const: "SpotPolicySet" },
  revision: str,
  policies: { type: "array", items: spotPolicySchema },
});
