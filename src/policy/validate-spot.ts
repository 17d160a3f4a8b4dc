// Validates spot policies from untrusted JSON (core's API, policy files, the webhook's HTTP
// pull, each SpotPolicy CR through spot-resource.ts): every problem named, the field's path first.
import {
  FALLBACK_WINDOW_RANGE,
  PERCENT_ABOVE_BASE_RANGE,
  POLICY_SET_API_VERSION,
  WORKLOAD_KINDS,
  workloadKey,
  type RepairMode,
  type SpotPolicy,
  type SpotPolicySet,
  type Strategy,
  type WorkloadKind,
  type WorkloadRef,
} from "./spot.ts";

export class PolicyValidationError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid SpotPolicySet: ${problems.slice(0, 5).join("; ")}${problems.length > 5 ? "; …" : ""}`);
    this.name = "PolicyValidationError";
    this.problems = problems;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
// RFC 1123 label (namespaces) and subdomain (object names).
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Validates one policy; pushes problems prefixed with `at`. */
export function validatePolicy(v: unknown, at: string, problems: string[]): SpotPolicy | undefined {
  if (!isRecord(v)) {
    problems.push(`${at}: must be an object`);
    return undefined;
  }
  const before = problems.length;
  const w = v.workload;
  let workload: WorkloadRef | undefined;
  if (!isRecord(w)) problems.push(`${at}.workload: must be an object`);
  else {
    const { namespace, kind, name } = w;
    if (typeof namespace !== "string" || namespace.length > 63 || !DNS_LABEL.test(namespace))
      problems.push(`${at}.workload.namespace: must be a namespace name`);
    if (typeof kind !== "string" || !(WORKLOAD_KINDS as readonly string[]).includes(kind))
      problems.push(`${at}.workload.kind: must be one of ${WORKLOAD_KINDS.join(", ")}`);
    if (typeof name !== "string" || name.length > 253 || !DNS_SUBDOMAIN.test(name))
      problems.push(`${at}.workload.name: must be an object name`);
    if (problems.length === before)
      workload = { namespace: namespace as string, kind: kind as WorkloadKind, name: name as string };
  }
  const { threshold, strategy, percentAboveBase, repair, fallbackWindowSeconds } = v;
  if (repair !== undefined && typeof repair !== "boolean" && repair !== "dry-run")
    problems.push(`${at}.repair: must be true, false or "dry-run"`);
  if (typeof threshold !== "number" || !Number.isSafeInteger(threshold) || threshold < 0)
    problems.push(`${at}.threshold: must be an integer ≥ 0`);
  if (strategy !== "Prefer" && strategy !== "Require")
    problems.push(`${at}.strategy: must be "Prefer" or "Require"`);
  const [pctMin, pctMax] = PERCENT_ABOVE_BASE_RANGE;
  if (
    percentAboveBase !== undefined &&
    (typeof percentAboveBase !== "number" ||
      !Number.isInteger(percentAboveBase) ||
      percentAboveBase < pctMin ||
      percentAboveBase > pctMax)
  )
    problems.push(`${at}.percentAboveBase: must be an integer ${pctMin}–${pctMax}`);
  if (fallbackWindowSeconds !== undefined) {
    const [min, max] = FALLBACK_WINDOW_RANGE;
    if (
      typeof fallbackWindowSeconds !== "number" ||
      !Number.isInteger(fallbackWindowSeconds) ||
      fallbackWindowSeconds < min ||
      fallbackWindowSeconds > max
    )
      problems.push(`${at}.fallbackWindowSeconds: must be an integer ${min}–${max}`);
    else if (strategy === "Require")
      problems.push(`${at}.fallbackWindowSeconds: only a Prefer policy has a fallback window`);
  }
  for (const k of Object.keys(v))
    if (
      !["workload", "threshold", "strategy", "percentAboveBase", "repair", "fallbackWindowSeconds"].includes(
        k,
      )
    )
      problems.push(`${at}.${k}: unknown field`);
  if (problems.length !== before || !workload) return undefined;
  const policy: SpotPolicy = { workload, threshold: threshold as number, strategy: strategy as Strategy };
  if (percentAboveBase !== undefined) policy.percentAboveBase = percentAboveBase as number;
  if (repair !== undefined) policy.repair = repair as RepairMode;
  if (fallbackWindowSeconds !== undefined) policy.fallbackWindowSeconds = fallbackWindowSeconds as number;
  return policy;
}

/** Parses and validates a SpotPolicySet; throws PolicyValidationError listing every problem. */
export function parsePolicySet(input: unknown): SpotPolicySet {
  const problems: string[] = [];
  if (!isRecord(input)) throw new PolicyValidationError(["must be a JSON object"]);
  if (input.apiVersion !== POLICY_SET_API_VERSION)
    problems.push(`apiVersion: must be "${POLICY_SET_API_VERSION}"`);
  if (input.kind !== "SpotPolicySet") problems.push(`kind: must be "SpotPolicySet"`);
  if (input.revision !== undefined && typeof input.revision !== "string")
    problems.push("revision: must be a string");
  const policies: SpotPolicy[] = [];
  if (!Array.isArray(input.policies)) problems.push("policies: must be an array");
  else {
    const seen = new Set<string>();
    input.policies.forEach((p: unknown, i) => {
      const policy = validatePolicy(p, `policies[${i}]`, problems);
      if (!policy) return;
      const key = workloadKey(policy.workload);
      if (seen.has(key)) problems.push(`policies[${i}]: duplicate policy for ${key}`);
      seen.add(key);
      policies.push(policy);
    });
  }
  if (problems.length > 0) throw new PolicyValidationError(problems);
  const set: SpotPolicySet = { apiVersion: POLICY_SET_API_VERSION, kind: "SpotPolicySet", policies };
  if (typeof input.revision === "string") set.revision = input.revision;
  return set;
}

/**
 * Policies from untrusted JSON (a what-if candidate, a CLI flag set), validated as one
 * SpotPolicySet: its problems say `policies[i]`, duplicates included.
 */
export function parseSpotPolicies(input: unknown): SpotPolicy[] {
  return parsePolicySet({ apiVersion: POLICY_SET_API_VERSION, kind: "SpotPolicySet", policies: input })
    .policies;
}

/** One policy from untrusted JSON (an API body with its workload, a stored row), as a set of one. */
export function parseSpotPolicy(input: unknown): SpotPolicy {
  const [policy] = parseSpotPolicies([input]);
  if (policy === undefined) throw new PolicyValidationError(["policies[0]: missing"]);
  return policy;
}
