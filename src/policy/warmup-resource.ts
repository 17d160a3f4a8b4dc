// A WarmupPolicy custom resource (objects/policy-crds.ts) as the warmup policy model (warmup.ts):
// fields the CR leaves out take the defaults, maxCostPerHour is a decimal string ("0.50") in the
// CR and a number here. Validated by the same parser as core's API (the CRD's schema has the
// same ranges, policy/crd-schema.ts, so the apiserver refuses what this would).
import type { WarmupPolicyResource } from "../objects/policy-crds.ts";
import { parsePolicy } from "./validate-warmup.ts";
import type { WarmupPolicy } from "./warmup.ts";

export type WarmupConverted =
  { ok: true; pool: string; policy: WarmupPolicy } | { ok: false; errors: string[] };

/** A decimal number of USD ("0.50"): the CRD's pattern for maxCostPerHour is this one. */
export const DECIMAL_USD = /^\d+(\.\d+)?$/;

export function warmupPolicyFromResource(cr: WarmupPolicyResource): WarmupConverted {
  // From the apiserver: a CRD applied without its schema could hand over anything.
  const spec = ((cr as { spec?: unknown }).spec ?? {}) as Partial<WarmupPolicyResource["spec"]>;
  const errors: string[] = [];
  const pool = spec.nodePool;
  if (typeof pool !== "string" || pool === "") errors.push("spec.nodePool: must name a NodePool");
  const input: Record<string, unknown> = {};
  for (const key of [
    "enabled",
    "maxWarmNodes",
    "ttlSeconds",
    "cooldownSeconds",
    "prePull",
    "prePullDeadlineSeconds",
  ] as const)
    if (spec[key] !== undefined) input[key] = spec[key];
  if (spec.enabled === undefined) errors.push("spec.enabled: expected true or false");
  if (spec.maxCostPerHour !== undefined) {
    if (typeof spec.maxCostPerHour === "string" && DECIMAL_USD.test(spec.maxCostPerHour))
      input.maxCostPerHour = Number(spec.maxCostPerHour);
    else errors.push('spec.maxCostPerHour: expected a decimal string in USD, e.g. "0.50"');
  }
  const parsed = parsePolicy(input);
  if (!parsed.ok) errors.push(...parsed.errors.map((e) => `spec.${e}`));
  if (errors.length > 0 || !parsed.ok || typeof pool !== "string") return { ok: false, errors };
  return { ok: true, pool, policy: parsed.policy };
}
