// Spot placement policies: the JSON shape core serves (a SpotPolicySet), its validator, and the
// on-demand target arithmetic (AWS Auto Scaling's OnDemandBaseCapacity +
// OnDemandPercentageAboveBaseCapacity).

export type Strategy = "Prefer" | "Require";
/** The repair's mode for a policy: on, off, or planning only (ADR 0006, "Adoption"). */
export type RepairMode = boolean | "dry-run";
export type WorkloadKind = "Deployment" | "StatefulSet" | "ReplicaSet";
export const WORKLOAD_KINDS: readonly WorkloadKind[] = ["Deployment", "StatefulSet", "ReplicaSet"];

export interface WorkloadRef {
  namespace: string;
  kind: WorkloadKind;
  name: string;
}

export interface SpotPolicy {
  workload: WorkloadRef;
  /** The first `threshold` live pods run on-demand (the ASG "base"). */
  threshold: number;
  /** Require: spot pods must land on spot. Prefer: spot is preferred, on-demand is the fallback. */
  strategy: Strategy;
  /** Share (0–100) of the pods above `threshold` that also run on-demand. Default 0. */
  percentAboveBase?: number;
  /**
   * Repair (ADR 0006): when the workload has fewer or more on-demand pods than its target and no
   * admission will fix it, evict one pod at a time so its replacement takes the right slot — also
   * for pods that ran before the policy (adoption). Default true. `"dry-run"`: plan only — the
   * evictions it would make are reported (Events, API), nothing is labelled or evicted.
   */
  repair?: RepairMode;
  /**
   * Prefer only: how long the on-demand fallback stays open once spot capacity looks unavailable
   * (ADR 0007); absent = the webhook's default (10 min).
   */
  fallbackWindowSeconds?: number;
}

/** Bounds of `fallbackWindowSeconds` (the CRD's CEL rules say the same). */
export const FALLBACK_WINDOW_RANGE = [60, 86_400] as const;

/** What core serves (and the file/HTTP policy sources read). */
export interface SpotPolicySet {
  apiVersion: "wave.sh/v1alpha1";
  kind: "SpotPolicySet";
  /** Opaque version of the set, for logs and conditional pulls. */
  revision?: string;
  policies: SpotPolicy[];
}

export const POLICY_SET_API_VERSION = "wave.sh/v1alpha1";

export function workloadKey(ref: WorkloadRef): string {
  return `${ref.namespace}/${ref.kind}/${ref.name}`;
}

/**
 * How many of `total` live pods run on-demand: all of the first `threshold`, then
 * ceil(percentAboveBase% of the rest) — rounding up favours availability
 * (base 2, 50 %, 10 pods → 6 on-demand).
 */
export function onDemandTarget(
  policy: Pick<SpotPolicy, "threshold" | "percentAboveBase">,
  total: number,
): number {
  if (total <= policy.threshold) return Math.max(0, total);
  const pct = policy.percentAboveBase ?? 0;
  return policy.threshold + Math.ceil(((total - policy.threshold) * pct) / 100);
}

/** Whether the ledger must also count spot pods (only the percentage needs the total). */
export function tracksTotal(policy: Pick<SpotPolicy, "percentAboveBase">): boolean {
  return (policy.percentAboveBase ?? 0) > 0;
}

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
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

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
  if (
    percentAboveBase !== undefined &&
    (typeof percentAboveBase !== "number" ||
      !Number.isInteger(percentAboveBase) ||
      percentAboveBase < 0 ||
      percentAboveBase > 100)
  )
    problems.push(`${at}.percentAboveBase: must be an integer 0–100`);
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

/** Policies indexed by workload for O(1) lookup on the admission path. */
export class PolicyIndex {
  readonly revision: string | undefined;
  readonly size: number;
  readonly #byKey: Map<string, SpotPolicy>;

  constructor(set: SpotPolicySet) {
    this.revision = set.revision;
    this.#byKey = new Map(set.policies.map((p) => [workloadKey(p.workload), p]));
    this.size = this.#byKey.size;
  }

  get(ref: WorkloadRef): SpotPolicy | undefined {
    return this.#byKey.get(workloadKey(ref));
  }

  all(): SpotPolicy[] {
    return [...this.#byKey.values()];
  }
}
