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
import { repairModeOf, spotPolicyFromResource } from "../policy/spot-resource.ts";
import { workloadKey, type SpotPolicy, type WorkloadRef } from "../policy/spot.ts";
import { warmupPolicyFromResource } from "../policy/warmup-resource.ts";
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
  const same = inNs.find((cr) => cr.spec.targetRef.kind === ref.kind && cr.spec.targetRef.name === ref.name);
  if (same?.metadata.name) return same.metadata.name;
  if (!inNs.some((cr) => cr.metadata.name === ref.name)) return ref.name;
  return `${ref.name}-${ref.kind.toLowerCase()}`.slice(0, DNS_SUBDOMAIN_MAX);
}

/** The WarmupPolicy name of a pool: the existing CR for it, else the pool's name. */
export function warmupPolicyName(pool: string, existing: readonly WarmupPolicyResource[]): string {
  return existing.find((cr) => cr.spec.nodePool === pool)?.metadata.name ?? pool;
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
/** The policies of a cluster's CRs, and each CR that did not convert with why. */
export interface FromCrs<P> {
  policies: P[];
  problems: Problem[];
}

/** Each CR converted and kept as `keep` makes it; the ones that do not convert reported by `nameOf`. */
function convertEach<C, R extends { ok: true } | { ok: false; errors: string[] }, P>(
  crs: readonly C[],
  convert: (cr: C) => R,
  nameOf: (cr: C) => string,
  keep: (cr: C, r: Extract<R, { ok: true }>) => P,
): FromCrs<P> {
  const policies: P[] = [];
  const problems: Problem[] = [];
  for (const cr of crs) {
    const r = convert(cr);
    if (r.ok) policies.push(keep(cr, r as Extract<R, { ok: true }>));
    else problems.push({ name: nameOf(cr), errors: (r as { errors: string[] }).errors });
  }
  return { policies, problems };
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

/** The cluster's SpotPolicies as the API's policies, by workload key; invalid CRs reported. */
export function spotPoliciesOf(crs: readonly SpotPolicyResource[]): FromCrs<SpotPolicy> {
  const { policies, problems } = convertEach(
    crs,
    spotPolicyFromResource,
    (cr) => `${cr.metadata.namespace ?? ""}/${cr.metadata.name ?? ""}`,
    (_cr, r) => r.policy,
  );
  policies.sort((a, b) => workloadKey(a.workload).localeCompare(workloadKey(b.workload)));
  return { policies, problems };
}

/** The cluster's SpotPolicies as the console's spot page reads them: by workload key, with since when. */
export function spotPoliciesSince(
  crs: readonly SpotPolicyResource[],
): { key: string; value: SpotPolicy; updatedAt: number }[] {
  const byName = new Map(
    crs.map((cr) => [
      `${cr.metadata.namespace ?? ""}/${cr.spec.targetRef.kind}/${cr.spec.targetRef.name}`,
      cr,
    ]),
  );
  return spotPoliciesOf(crs).policies.map((p) => {
    const key = workloadKey(p.workload);
    const cr = byName.get(key);
    return { key, value: p, updatedAt: cr ? changedAt(cr) : 0 };
  });
}

export interface WarmupFromCr {
  nodePool: string;
  policy: WarmupPolicy;
  /** Epoch ms of the last change through Wave (its annotation), else the CR's creation. */
  updatedAt: number;
  name: string;
}

export function warmupPoliciesOf(crs: readonly WarmupPolicyResource[]): FromCrs<WarmupFromCr> {
  const { policies, problems } = convertEach(
    crs,
    warmupPolicyFromResource,
    (cr) => cr.metadata.name ?? "",
    (cr, r): WarmupFromCr => ({
      nodePool: r.pool,
      policy: r.policy,
      updatedAt: changedAt(cr),
      name: cr.metadata.name ?? "",
    }),
  );
  policies.sort((a, b) => a.nodePool.localeCompare(b.nodePool));
  return { policies, problems };
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
