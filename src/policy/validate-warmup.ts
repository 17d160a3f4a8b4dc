// Validates a warmup policy from untrusted JSON (core's API, a WarmupPolicy CR through
// warmup-resource.ts). Every bad field is named so an API caller can fix all at once.
import { DEFAULT_POLICY, WARMUP_INTEGER_RANGES, type WarmupPolicy } from "./warmup.ts";

export type PolicyResult = { ok: true; policy: WarmupPolicy } | { ok: false; errors: string[] };

/**
 * Validates a (partial) policy from untrusted JSON and fills gaps from `base`. Unknown fields are
 * errors: a typo like "ttlSecond" must not silently keep the default.
 */
export function parsePolicy(input: unknown, base: Readonly<WarmupPolicy> = DEFAULT_POLICY): PolicyResult {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return { ok: false, errors: ["policy: expected an object"] };
  }
  const errors: string[] = [];
  const out: WarmupPolicy = { ...base };
  for (const [key, value] of Object.entries(input as Record<string, unknown>)) {
    switch (key) {
      case "enabled":
      case "prePull":
        if (typeof value === "boolean") out[key] = value;
        else errors.push(`${key}: expected true or false`);
        break;
      case "maxWarmNodes":
      case "ttlSeconds":
      case "cooldownSeconds":
      case "prePullDeadlineSeconds": {
        const [min, max] = WARMUP_INTEGER_RANGES[key];
        if (typeof value === "number" && Number.isInteger(value) && value >= min && value <= max)
          out[key] = value;
        else errors.push(`${key}: expected an integer from ${min} to ${max}`);
        break;
      }
      case "maxCostPerHour":
        if (value === null || (typeof value === "number" && Number.isFinite(value) && value >= 0)) {
          out.maxCostPerHour = value;
        } else errors.push("maxCostPerHour: expected a number >= 0 or null");
        break;
      default:
        errors.push(`${key}: unknown field`);
    }
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, policy: out };
}
