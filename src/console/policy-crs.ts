// The policy API over the custom resources (issue 31, ADR 0018): what a PUT of a spot or warmup
// policy becomes (the SpotPolicy/WarmupPolicy apply configuration, stamped with who changed it,
// when and from where), how the CRs core holds read back as the API's policies, and what the
// agent's answer to an edit means for the caller (a conflict: "managed by <manager>: change it in
// Git"). Pure; the routes (api/routes/policies.ts) and the migration do the I/O.
import {
  CHANGED_AT_ANNOTATION,
  CHANGED_BY_ANNOTATION,
  CHANGED_VIA_ANNOTATION,
  MIGRATED_FROM_ANNOTATION,
  POLICY_API_VERSION,
  SPOT_POLICY_KIND,
  WARMUP_POLICY_KIND,
  type SpotPolicyResource,
  type WarmupPolicyResource,
} from "../objects/policy-crds.ts";
import { repairModeOf, resourceKey } from "../policy/spot-resource.ts";
import {
  decidesBefore,
  spotPoliciesInForce,
  warmupPoliciesInForce,
  type PolicyConflict,
  type PolicyInvalid,
} from "../policy/in-force.ts";
import { workloadKey, type SpotPolicy, type WorkloadRef } from "../policy/spot.ts";
import type { WarmupPolicy } from "../policy/warmup.ts";

/** Who makes a change through Wave: the identity's subject and where from. */
export interface ChangeStamp {
  subject: string;
  via: "ui" | "api" | "cli" | "migration";
  /** Epoch ms. */
  at: number;
  /** The migration: where the policy was stored before ("core:<cluster>/spot/<key>"). */
  migratedFrom?: string;
}

function annotations(s: ChangeStamp): Record<string, string> {
  return {
    [CHANGED_BY_ANNOTATION]: s.subject,
    [CHANGED_AT_ANNOTATION]: new Date(s.at).toISOString().replace(/\.\d{3}Z$/, "Z"),
    [CHANGED_VIA_ANNOTATION]: s.via,
    ...(s.migratedFrom === undefined ? {} : { [MIGRATED_FROM_ANNOTATION]: s.migratedFrom }),
  };
}

const DNS_SUBDOMAIN_MAX = 253;

/**
 * The CR name of a workload's policy: the existing CR targeting it, else the workload's name, else
 * (another CR already has that name) the name with its kind.
 */
export function spotPolicyName(ref: WorkloadRef, existing: readonly SpotPolicyResource[]): string {
  const inNs = existing.filter((cr) => cr.metadata.namespace === ref.namespace);
  const same = spotPolicyCrOf(ref, inNs);
  if (same?.metadata.name) return same.metadata.name;
  if (!inNs.some((cr) => cr.metadata.name === ref.name)) return ref.name;
  return `${ref.name}-${ref.kind.toLowerCase()}`.slice(0, DNS_SUBDOMAIN_MAX);
}

/**
 * The SpotPolicy that decides for a workload: of two on it, the one created first (in-force.ts) —
 * so an edit or a delete through Wave acts on the policy in force, never on one in conflict.
 */
export function spotPolicyCrOf(
  ref: WorkloadRef,
  crs: readonly SpotPolicyResource[],
): SpotPolicyResource | undefined {
  return crs
    .filter(
      (cr) =>
        cr.metadata.namespace === ref.namespace &&
        cr.spec.targetRef.kind === ref.kind &&
        cr.spec.targetRef.name === ref.name,
    )
    .sort(decidesBefore)[0];
}

/** The WarmupPolicy that decides for a pool (the one created first), if any. */
export function warmupPolicyCrOf(
  pool: string,
  crs: readonly WarmupPolicyResource[],
): WarmupPolicyResource | undefined {
  return crs.filter((cr) => cr.spec.nodePool === pool).sort(decidesBefore)[0];
}

/** The WarmupPolicy name of a pool: the existing CR in force for it, else the pool's name. */
export function warmupPolicyName(pool: string, existing: readonly WarmupPolicyResource[]): string {
  return warmupPolicyCrOf(pool, existing)?.metadata.name ?? pool;
}

/** The apply configuration of a workload's spot policy: every field the console sets. */
export function spotPolicyResource(p: SpotPolicy, name: string, stamp: ChangeStamp): SpotPolicyResource {
  return {
    apiVersion: POLICY_API_VERSION,
    kind: SPOT_POLICY_KIND,
    metadata: { name, namespace: p.workload.namespace, annotations: annotations(stamp) },
    spec: {
      targetRef: { kind: p.workload.kind, name: p.workload.name },
      threshold: p.threshold,
      strategy: p.strategy,
      percentAboveBase: p.percentAboveBase ?? 0,
      repair: repairModeOf(p.repair),
      ...(p.fallbackWindowSeconds === undefined ? {} : { fallbackWindowSeconds: p.fallbackWindowSeconds }),
    },
  };
}

/** maxCostPerHour as the CR's decimal string ("0.5" → "0.50"), the cent being the unit. */
const usd = (n: number): string => n.toFixed(Math.max(2, (String(n).split(".")[1] ?? "").length));

export function warmupPolicyResource(
  pool: string,
  p: WarmupPolicy,
  name: string,
  stamp: ChangeStamp,
): WarmupPolicyResource {
  return {
    apiVersion: POLICY_API_VERSION,
    kind: WARMUP_POLICY_KIND,
    metadata: { name, annotations: annotations(stamp) },
    spec: {
      nodePool: pool,
      enabled: p.enabled,
      maxWarmNodes: p.maxWarmNodes,
      ttlSeconds: p.ttlSeconds,
      cooldownSeconds: p.cooldownSeconds,
      ...(p.maxCostPerHour === null ? {} : { maxCostPerHour: usd(p.maxCostPerHour) }),
      prePull: p.prePull,
      prePullDeadlineSeconds: p.prePullDeadlineSeconds,
    },
  };
}

type Problem = { name: string; errors: string[] };
/**
 * The policies in force of a cluster's CRs (src/policy/in-force.ts: one per workload or pool, the
 * one created first), each CR that did not convert with why, and each CR left out by the rule.
 */
export interface FromCrs<P> {
  policies: P[];
  problems: Problem[];
  conflicts: PolicyConflict[];
}

/** Epoch ms of a CR's last change through Wave (its annotation), else its creation; 0 if neither. */
function changedAt(cr: {
  metadata: { annotations?: Record<string, string>; creationTimestamp?: string };
}): number {
  const at = Date.parse(
    cr.metadata.annotations?.[CHANGED_AT_ANNOTATION] ?? cr.metadata.creationTimestamp ?? "",
  );
  return Number.isFinite(at) ? at : 0;
}

const problemsOf = (invalid: readonly PolicyInvalid[]): Problem[] =>
  invalid.map((p) => ({ name: p.key, errors: p.errors }));

/** The cluster's SpotPolicies in force, sorted by workload key; invalid CRs and conflicts reported. */
export function spotPoliciesOf(crs: readonly SpotPolicyResource[]): FromCrs<SpotPolicy> {
  const r = spotPoliciesInForce(crs);
  return { policies: r.policies, problems: problemsOf(r.invalid), conflicts: r.conflicts };
}

/** The cluster's SpotPolicies in force as the console's pages read them: by workload key, with since when. */
export function spotPoliciesSince(crs: readonly SpotPolicyResource[]): {
  rows: { key: string; value: SpotPolicy; updatedAt: number }[];
  conflicts: PolicyConflict[];
} {
  const r = spotPoliciesInForce(crs);
  const byKey = new Map(crs.map((cr) => [resourceKey(cr), cr]));
  const rows = r.policies.map((p) => {
    const key = workloadKey(p.workload);
    const cr = byKey.get(r.decidedBy.get(key) ?? "");
    return { key, value: p, updatedAt: cr ? changedAt(cr) : 0 };
  });
  return { rows, conflicts: r.conflicts };
}

export interface WarmupFromCr {
  nodePool: string;
  policy: WarmupPolicy;
  /** Epoch ms of the last change through Wave (its annotation), else the CR's creation. */
  updatedAt: number;
  name: string;
}

/** The cluster's WarmupPolicies in force, sorted by NodePool; invalid CRs and conflicts reported. */
export function warmupPoliciesOf(crs: readonly WarmupPolicyResource[]): FromCrs<WarmupFromCr> {
  const r = warmupPoliciesInForce(crs);
  const byName = new Map(crs.map((cr) => [cr.metadata.name ?? "", cr]));
  const policies = [...r.policies]
    .map(([nodePool, policy]): WarmupFromCr => {
      const name = r.decidedBy.get(nodePool) ?? "";
      const cr = byName.get(name);
      return { nodePool, policy, updatedAt: cr ? changedAt(cr) : 0, name };
    })
    .sort((a, b) => a.nodePool.localeCompare(b.nodePool));
  return { policies, problems: problemsOf(r.invalid), conflicts: r.conflicts };
}

/** The agent's answer to an edit (wire/policy-edit.ts WirePolicyEditResult, as the API reads it). */
export interface EditAnswer {
  outcome: "applied" | "conflict" | "exists" | "not-found" | "failed";
  message: string;
  conflicts: { manager: string; field: string }[];
  object?: unknown;
}

/** The HTTP status and one-line message of an edit the agent did not apply. */
export function editRefusal(a: EditAnswer): { status: number; error: string; message: string } {
  if (a.outcome === "conflict") {
    const byManager = new Map<string, string[]>();
    for (const c of a.conflicts) byManager.set(c.manager, [...(byManager.get(c.manager) ?? []), c.field]);
    const parts = [...byManager].map(
      ([m, fields]) => `${fields.join(", ")} managed by ${m}: change it in Git`,
    );
    return {
      status: 409,
      error: "conflict",
      message: `${parts.join("; ")} (or force the edit to take the field over)`,
    };
  }
  if (a.outcome === "not-found") return { status: 404, error: "not_found", message: a.message };
  if (/could not find the requested resource|the server doesn't have a resource type/i.test(a.message))
    return {
      status: 503,
      error: "crd_missing",
      message: `the policy CRDs are not installed in this cluster (install the wave-crds chart): ${a.message}`,
    };
  if (/ is invalid: /.test(a.message)) return { status: 400, error: "bad_request", message: a.message };
  if (/forbidden/i.test(a.message)) return { status: 502, error: "agent_forbidden", message: a.message };
  return { status: 502, error: "agent_failed", message: a.message || "the agent could not apply the edit" };
}

export type { SpotPolicyResource, WarmupPolicyResource };

/** Core's policy edits, as the API routes use them (cli/parts.ts wires core/ingest's PolicyEdits). */
export interface PolicyCrAccess {
  /**
   * Calls `fn` when a cluster's SpotPolicy resources change in core's state (an edit through Wave
   * once its resource streamed back, or one made with kubectl/GitOps): the long-polls wake then.
   */
  onSpotChange?(fn: (clusterId: string) => void): () => void;
  /** The cluster's CRs as core holds them (streamed by its agent); undefined: core has no state of it. */
  spot(clusterId: string): readonly SpotPolicyResource[] | undefined;
  warmup(clusterId: string): readonly WarmupPolicyResource[] | undefined;
  /** Sends an edit down the cluster's agent stream; rejects with an EditUnavailable-like error. */
  edit(
    clusterId: string,
    e: {
      kind: "SpotPolicy" | "WarmupPolicy";
      namespace: string;
      name: string;
      op: "apply" | "create" | "delete";
      object?: unknown;
      force: boolean;
    },
  ): Promise<EditAnswer>;
}

/** An edit that got no answer (core/ingest PolicyEditUnavailable): 503 disconnected, 504 timeout. */
export function unavailable(err: unknown): { status: number; error: string; message: string } | undefined {
  const reason = (err as { reason?: unknown } | null)?.reason;
  if (!(err instanceof Error) || err.name !== "PolicyEditUnavailable") return undefined;
  return reason === "timeout"
    ? { status: 504, error: "agent_timeout", message: err.message }
    : { status: 503, error: "agent_disconnected", message: err.message };
}
