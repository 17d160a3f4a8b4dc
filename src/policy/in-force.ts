// Which policies are in force when several policy resources target one thing (issue 43): one rule,
// in one function, read by every reader — the webhook's SpotPolicy informer and its repair, core's
// policy routes (the set a webhook pulls), the console's pages, the what-if, /metrics, `wave start`
// and the warmup controller.
//
// The rule: of the resources that target the same workload (SpotPolicy) or NodePool
// (WarmupPolicy), the one created first decides — the oldest `metadata.creationTimestamp`; created
// in the same second, the first by namespace/name. Each other one is in conflict: not in force, its
// status says `Conflict` and which one decides, the Spot page and its API warn. A later edit of the
// loser never takes the workload over; deleting the winner hands it to the next oldest. An invalid
// resource competes with the last valid version it had (kept in force), none if it never had one.
import type { SpotPolicyResource, WarmupPolicyResource } from "../objects/policy-crds.ts";
import { resourceKey, spotPolicyFromResource, type Converted } from "./spot-resource.ts";
import { workloadKey, type SpotPolicy } from "./spot.ts";
import { warmupPolicyFromResource } from "./warmup-resource.ts";
import type { WarmupPolicy } from "./warmup.ts";

/** A resource left out because another one targets the same thing and decides. */
export interface PolicyConflict {
  /** The resource left out: namespace/name (a WarmupPolicy: its name). */
  key: string;
  /** What both target: a workload key (namespace/Kind/name) or a NodePool's name. */
  target: string;
  /** The resource that decides. */
  winner: string;
  /** One line for a status condition, a log and the Spot page. */
  message: string;
}

/** A resource that does not validate; its last valid version, if any, stays in force. */
export interface PolicyInvalid {
  key: string;
  errors: string[];
  keptPrevious: boolean;
}

interface Dated {
  metadata: { name?: string; namespace?: string; creationTimestamp?: string };
}

/** The rule's order: created first, then namespace/name (a missing time counts as the oldest). */
export function decidesBefore(a: Dated, b: Dated): number {
  return (
    (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "") ||
    resourceKey(a).localeCompare(resourceKey(b))
  );
}

interface Candidate<P> {
  cr: Dated;
  target: string;
  policy: P;
}

/** The rule itself: one candidate per target, the first in `decidesBefore` order; the rest conflict. */
function decide<P>(
  candidates: readonly Candidate<P>[],
  say: (target: string, winner: string) => string,
): { winners: Map<string, { key: string; policy: P }>; conflicts: PolicyConflict[] } {
  const winners = new Map<string, { key: string; policy: P }>();
  const conflicts: PolicyConflict[] = [];
  for (const c of [...candidates].sort((a, b) => decidesBefore(a.cr, b.cr))) {
    const key = resourceKey(c.cr);
    const first = winners.get(c.target);
    if (first === undefined) winners.set(c.target, { key, policy: c.policy });
    else conflicts.push({ key, target: c.target, winner: first.key, message: say(c.target, first.key) });
  }
  return { winners, conflicts };
}

export interface SpotInForce {
  /** One policy per workload, sorted by workload key. */
  policies: SpotPolicy[];
  /** Workload key → the SpotPolicy (namespace/name) that decides for it. */
  decidedBy: Map<string, string>;
  conflicts: PolicyConflict[];
  invalid: PolicyInvalid[];
}

/**
 * The SpotPolicies in force. `lastValid` (by namespace/name) is what an invalid resource keeps in
 * force: the webhook's informer remembers it; readers without that memory pass nothing.
 */
export function spotPoliciesInForce(
  crs: readonly SpotPolicyResource[],
  lastValid: ReadonlyMap<string, SpotPolicy> = new Map(),
  /** Each CR as the model (the webhook's informer passes what it converted once per change). */
  convert: (cr: SpotPolicyResource) => Converted<SpotPolicy> = spotPolicyFromResource,
): SpotInForce {
  const candidates: Candidate<SpotPolicy>[] = [];
  const invalid: PolicyInvalid[] = [];
  for (const cr of crs) {
    const r = convert(cr);
    const key = resourceKey(cr);
    const policy = r.ok ? r.policy : lastValid.get(key);
    if (!r.ok) invalid.push({ key, errors: r.errors, keptPrevious: policy !== undefined });
    if (policy) candidates.push({ cr, target: workloadKey(policy.workload), policy });
  }
  const { winners, conflicts } = decide(candidates, (target, winner) => {
    const [namespace, kind, name] = target.split("/");
    return `${kind} ${namespace}/${name} already has SpotPolicy ${winner}, created first, which decides: this one is not in force`;
  });
  const sorted = [...winners].sort(([a], [b]) => a.localeCompare(b));
  return {
    policies: sorted.map(([, w]) => w.policy),
    decidedBy: new Map(sorted.map(([target, w]) => [target, w.key])),
    conflicts,
    invalid,
  };
}

export interface WarmupInForce {
  /** NodePool → its policy in force. */
  policies: Map<string, WarmupPolicy>;
  /** NodePool → the WarmupPolicy (name) that decides for it. */
  decidedBy: Map<string, string>;
  conflicts: PolicyConflict[];
  invalid: PolicyInvalid[];
}

/** The WarmupPolicies in force; `previous` (by NodePool) is what an invalid resource keeps. */
export function warmupPoliciesInForce(
  crs: readonly WarmupPolicyResource[],
  previous: ReadonlyMap<string, WarmupPolicy> = new Map(),
): WarmupInForce {
  const candidates: Candidate<WarmupPolicy>[] = [];
  const invalid: PolicyInvalid[] = [];
  for (const cr of crs) {
    const r = warmupPolicyFromResource(cr);
    if (r.ok) {
      candidates.push({ cr, target: r.pool, policy: r.policy });
      continue;
    }
    const pool = (cr.spec as Partial<WarmupPolicyResource["spec"]> | undefined)?.nodePool;
    const kept = typeof pool === "string" ? previous.get(pool) : undefined;
    invalid.push({ key: resourceKey(cr), errors: r.errors, keptPrevious: kept !== undefined });
    if (kept && typeof pool === "string") candidates.push({ cr, target: pool, policy: kept });
  }
  const { winners, conflicts } = decide(
    candidates,
    (pool, winner) =>
      `NodePool ${pool} already has WarmupPolicy ${winner}, created first, which decides: this one is not in force`,
  );
  return {
    policies: new Map([...winners].map(([pool, w]) => [pool, w.policy])),
    decidedBy: new Map([...winners].map(([pool, w]) => [pool, w.key])),
    conflicts,
    invalid,
  };
}

/**
 * The warmup controller's reading (src/warmup/policy-set.ts): the pools' policies in force, and
 * each resource not applied as written — invalid, or in conflict — with why.
 */
export function warmupPoliciesFromResources(
  crs: readonly WarmupPolicyResource[],
  previous: ReadonlyMap<string, WarmupPolicy> = new Map(),
): { policies: Map<string, WarmupPolicy>; problems: { name: string; errors: string[] }[] } {
  const r = warmupPoliciesInForce(crs, previous);
  return {
    policies: r.policies,
    problems: [
      ...r.invalid.map((p) => ({ name: p.key, errors: p.errors })),
      ...r.conflicts.map((c) => ({ name: c.key, errors: [c.message] })),
    ],
  };
}
