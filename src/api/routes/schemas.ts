// The routes' JSON schemas. Response DTOs are declared once as TypeBox schemas in
// src/dashboard/dto.ts (their types are Static<> of them, the UI imports those types); Fastify
// serializes with them and the OpenAPI document is generated from them; the policy and what-if
// bodies are there too. Here: parameters and errors.

import {
  ClusterSchema,
  DisruptionSchema,
  DNS_SUBDOMAIN_PATTERN,
  LifecycleEventSchema,
  LiveSchema,
  NodeListSchema,
  NodePoolSchema,
  NodeSchema,
  OverviewSchema,
  SeriesSchema,
  ThrashingSchema,
  WarmupStatsSchema,
} from "../../dashboard/dto.ts";

export const num = { type: "number" } as const;
export const int = { type: "integer" } as const;
export const str = { type: "string" } as const;
export const bool = { type: "boolean" } as const;

const obj = (properties: Record<string, unknown>, optional: readonly string[] = []) => ({
  type: "object",
  required: Object.keys(properties).filter((k) => !optional.includes(k)),
  properties,
});

// Path and query parameters: names as Kubernetes and Karpenter allow them, so no NUL, CR/LF or
// markup is ever stored, and nothing is accepted that could never be used.
const DNS_SUBDOMAIN = DNS_SUBDOMAIN_PATTERN;

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

// The response DTOs, declared once in dto.ts (names kept for the routes).
export const clusterSchema = ClusterSchema;
export const warmupStatsSchema = WarmupStatsSchema;
export const overviewSchema = OverviewSchema;
export const nodePoolSchema = NodePoolSchema;
export const nodeSchema = NodeSchema;
export const nodeListSchema = NodeListSchema;
export const lifecycleEventSchema = LifecycleEventSchema;
export const disruptionSchema = DisruptionSchema;
export const thrashingSchema = ThrashingSchema;
export const seriesSchema = SeriesSchema;
export const liveSchema = LiveSchema;
