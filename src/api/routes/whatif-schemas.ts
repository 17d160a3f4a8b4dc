// The what-if route's JSON schemas: the candidate it takes and the report it answers.
import {
  int,
  num,
  poolName,
  spotPolicySchema,
  str,
  warmupPolicyInputSchema,
  warmupPolicySchema,
} from "./schemas.ts";

const array = <T>(items: T) => ({ type: "array", items }) as const;
const record = <T>(additionalProperties: T) => ({ type: "object", additionalProperties }) as const;

export const bodySchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    spot: { type: "array", maxItems: 100, items: { type: "object" } },
    warmup: {
      type: "object",
      maxProperties: 100,
      propertyNames: poolName,
      additionalProperties: warmupPolicyInputSchema,
    },
    windowHours: { type: "number", exclusiveMinimum: 0, maximum: 24 },
    bootDelaySeconds: { type: "integer", minimum: 1, maximum: 3600 },
    spotInterruptionRate: { type: "number", minimum: 0, maximum: 60 },
    seed: { type: "integer", minimum: 0, maximum: 999_999_999 },
  },
} as const;

const placement = {
  type: "object",
  required: ["onDemand", "spot", "pending"],
  properties: { onDemand: int, spot: int, pending: int },
} as const;
const capacity = {
  type: "object",
  required: ["spot", "onDemand"],
  properties: { spot: num, onDemand: num },
} as const;
const poolAverage = { type: "object", properties: { nodes: num, costPerHour: num } } as const;
const sideSchema = {
  type: "object",
  properties: {
    policy: {
      type: "object",
      properties: { spot: array(spotPolicySchema), warmup: record(warmupPolicySchema) },
    },
    costPerHour: num,
    costPerMonth: num,
    spotShare: num,
    nodeHours: capacity,
    pools: record(poolAverage),
    timeline: array({
      type: "object",
      properties: { t: int, costPerHour: num, onDemandPods: int, spotPods: int },
    }),
    podStartHistogram: array(int),
    podStart: { type: "object", properties: { count: int, p50Ms: num, p95Ms: num, maxMs: num } },
    pendingAtEnd: int,
    spotInterruptions: int,
    nodeClaimsCreated: int,
    now: {
      type: "object",
      properties: {
        costPerHour: num,
        nodes: capacity,
        pools: record({ type: "object", properties: { costPerHour: num, nodes: int } }),
        workloads: record(placement),
      },
    },
  },
} as const;
export const whatifReportSchema = {
  type: "object",
  properties: {
    clusterId: str,
    from: int,
    to: int,
    historyBuckets: int,
    catalog: str,
    bootDelayMs: int,
    spotInterruptionRate: num,
    workloads: array(str),
    skipped: array({ type: "object", properties: { workload: str, reason: str } }),
    current: sideSchema,
    candidate: sideSchema,
    notes: array(str),
    recorded: {
      type: ["object", "null"],
      properties: {
        coveredMs: int,
        costPerHour: num,
        pools: record(poolAverage),
        fidelity: { type: "object", properties: { costError: num, poolNodesError: record(num) } },
      },
    },
    tookMs: int,
  },
} as const;
