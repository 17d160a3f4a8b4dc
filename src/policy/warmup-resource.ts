// A WarmupPolicy custom resource (objects/policy-crds.ts) as the warmup policy model (warmup.ts):
// fields the CR leaves out take the defaults, maxCostPerHour is a decimal string ("0.50") in the
// CR and a number here. Validated by the same parser as core's API (the CRD's CEL rules say the
// same ranges, so the apiserver refuses what this would).
import type { WarmupPolicyResource } from "../objects/policy-crds.ts";
import { parsePolicy } from "./validate-warmup.ts";
import type { WarmupPolicy } from "./warmup.ts";

export type WarmupConverted =
  { ok: true; pool: string; policy: WarmupPolicy } | { ok: false; errors: string[] };

const DECIMAL = /^\d+(\.\d+)?$/;

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
    if (typeof spec.maxCostPerHour === "string" && DECIMAL.test(spec.maxCostPerHour))
      input.maxCostPerHour = Number(spec.maxCostPerHour);
    else errors.push('spec.maxCostPerHour: expected a decimal string in USD, e.g. "0.50"');
  }
  const parsed = parsePolicy(input);
  if (!parsed.ok) errors.push(...parsed.errors.map((e) => `spec.${e}`));
  if (errors.length > 0 || !parsed.ok || typeof pool !== "string") return { ok: false, errors };
  return { ok: true, pool, policy: parsed.policy };
}

/**
 * The pools' policies from every WarmupPolicy: one per pool (two CRs naming one pool: the oldest
 * wins, the other is reported). An invalid CR keeps its pool's previous policy (`previous`), so
 * a bad edit never turns warmup off by surprise.
 */
export function warmupPoliciesFromResources(
  crs: readonly WarmupPolicyResource[],
  previous: ReadonlyMap<string, WarmupPolicy> = new Map(),
): { policies: Map<string, WarmupPolicy>; problems: { name: string; errors: string[] }[] } {
  const policies = new Map<string, WarmupPolicy>();
  const owner = new Map<string, string>();
  const problems: { name: string; errors: string[] }[] = [];
  const sorted = [...crs].sort(
    (a, b) =>
      (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "") ||
      (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
  );
  for (const cr of sorted) {
    const name = cr.metadata.name ?? "";
    const r = warmupPolicyFromResource(cr);
    if (!r.ok) {
      problems.push({ name, errors: r.errors });
      const pool = (cr.spec as Partial<WarmupPolicyResource["spec"]> | undefined)?.nodePool;
      const kept = typeof pool === "string" ? previous.get(pool) : undefined;
      if (pool !== undefined && kept && !policies.has(pool)) {
        policies.set(pool, kept);
        owner.set(pool, name);
      }
      continue;
    }
    const first = owner.get(r.pool);
    if (first !== undefined) {
      problems.push({
        name,
        errors: [`spec.nodePool: NodePool ${r.pool} already has WarmupPolicy ${first}`],
      });
      continue;
    }
    policies.set(r.pool, r.policy);
    owner.set(r.pool, name);
  }
  return { policies, problems };
}
