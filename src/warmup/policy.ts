// Per-NodePool warmup policy and its validator. Core's API stores and serves policies; the
// controller only reads them. Validation names every bad field so an API caller can fix all at once.

export interface WarmupPolicy {
  enabled: boolean;
  /** Warmup pods (pending or on a node) the pool may hold at once. */
  maxWarmNodes: number;
  /** How long a warm node is protected waiting for a real pod before it counts as a miss. */
  ttlSeconds: number;
  /** Quiet time after starting a warmup before the pool may start another. */
  cooldownSeconds: number;
  /** Ceiling on the hourly price of the pool's warm capacity; null = no cap. */
  maxCostPerHour: number | null;
  /** Pre-pull the pool's workload images onto each warm node. */
  prePull: boolean;
  /** A pre-pull pod still running after this is removed (pull stuck or image missing). */
  prePullDeadlineSeconds: number;
}

export const DEFAULT_POLICY: Readonly<WarmupPolicy> = Object.freeze({
  enabled: false,
  maxWarmNodes: 1,
  ttlSeconds: 600,
  cooldownSeconds: 300,
  maxCostPerHour: null,
  prePull: true,
  prePullDeadlineSeconds: 300,
});

const DAY = 86_400;

const INTEGER_RANGES = {
  maxWarmNodes: [0, 100],
  ttlSeconds: [30, DAY],
  cooldownSeconds: [0, DAY],
  prePullDeadlineSeconds: [10, 3600],
} as const;

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
        const [min, max] = INTEGER_RANGES[key];
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
