// The what-if route's JSON schemas: the candidate it takes and the report it answers.
import { poolName, spotPolicySchema, warmupPolicyInputSchema, warmupPolicySchema } from "./schemas.ts";

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
  properties: { onDemand: { type: "integer" }, spot: { type: "integer" }, pending: { type: "integer" } },
} as const;
const capacity = {
  type: "object",
  required: ["spot", "onDemand"],
  properties: { spot: { type: "number" }, onDemand: { type: "number" } },
} as const;
const poolAverage = {
  type: "object",
  properties: { nodes: { type: "number" }, costPerHour: { type: "number" } },
} as const;
const sideSchema = {
  type: "object",
  properties: {
    policy: {
      type: "object",
      properties: {
        spot: { type: "array", items: spotPolicySchema },
        warmup: { type: "object", additionalProperties: warmupPolicySchema },
      },
    },
    costPerHour: { type: "number" },
    costPerMonth: { type: "number" },
    spotShare: { type: "number" },
    nodeHours: capacity,
    pools: { type: "object", additionalProperties: poolAverage },
    timeline: {
      type: "array",
      items: {
        type: "object",
        properties: {
          t: { type: "integer" },
          costPerHour: { type: "number" },
          onDemandPods: { type: "integer" },
          spotPods: { type: "integer" },
        },
      },
    },
    podStartHistogram: { type: "array", items: { type: "integer" } },
    podStart: {
      type: "object",
      properties: {
        count: { type: "integer" },
        p50Ms: { type: "number" },
        p95Ms: { type: "number" },
        maxMs: { type: "number" },
      },
    },
    pendingAtEnd: { type: "integer" },
    spotInterruptions: { type: "integer" },
    nodeClaimsCreated: { type: "integer" },
    now: {
      type: "object",
      properties: {
        costPerHour: { type: "number" },
        nodes: capacity,
        pools: {
          type: "object",
          additionalProperties: {
            type: "object",
            properties: { costPerHour: { type: "number" }, nodes: { type: "integer" } },
          },
        },
        workloads: { type: "object", additionalProperties: placement },
      },
    },
  },
} as const;
export const whatifReportSchema = {
  type: "object",
  properties: {
    clusterId: { type: "string" },
    from: { type: "integer" },
    to: { type: "integer" },
    historyBuckets: { type: "integer" },
    catalog: { type: "string" },
    bootDelayMs: { type: "integer" },
    spotInterruptionRate: { type: "number" },
    workloads: { type: "array", items: { type: "string" } },
    skipped: {
      type: "array",
      items: { type: "object", properties: { workload: { type: "string" }, reason: { type: "string" } } },
    },
    current: sideSchema,
    candidate: sideSchema,
    notes: { type: "array", items: { type: "string" } },
    recorded: {
      type: ["object", "null"],
      properties: {
        coveredMs: { type: "integer" },
        costPerHour: { type: "number" },
        pools: { type: "object", additionalProperties: poolAverage },
        fidelity: {
          type: "object",
          properties: {
            costError: { type: "number" },
            poolNodesError: { type: "object", additionalProperties: { type: "number" } },
          },
        },
      },
    },
    tookMs: { type: "integer" },
  },
} as const;
