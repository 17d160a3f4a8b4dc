// The one-time migration of issue 31 (ADR 0018): the spot and warmup policies an older core kept
// in its store become SpotPolicy/WarmupPolicy CRs in their cluster, through the cluster's agent
// (op "create": a CR that exists already is never overwritten), annotated with where they came
// from. Once every policy is a CR (created or found), the store marks the cluster; a marked
// cluster is never migrated again, so a re-run changes nothing. A failure leaves it unmarked:
// the next connection of the agent tries again (creating is idempotent).
import type { PolicyMigrationMark, PolicyRevision, Store } from "../core/store/store.ts";
import { CHANGED_BY_ANNOTATION } from "../objects/policy-crds.ts";
import { parsePolicy } from "../policy/validate-warmup.ts";
import { parseSpotPolicy } from "../policy/validate-spot.ts";
import {
  spotPolicyName,
  spotPolicyResource,
  warmupPolicyName,
  warmupPolicyResource,
  type ChangeStamp,
  type PolicyCrAccess,
  type SpotPolicyResource,
  type WarmupPolicyResource,
} from "./policy-crs.ts";

/** Who the migration's CRs say changed them. */
export const MIGRATION_SUBJECT = "wave:migration";

export interface MigrationResult {
  /** "already": the cluster was marked before; nothing was sent. */
  status: "migrated" | "already";
  created: number;
  existed: number;
  /** Stored policies that no longer validate: left in the store, reported. */
  skipped: { kind: "spot" | "warmup"; key: string; errors: string[] }[];
}

export async function migrateStoredPolicies(o: {
  store: Pick<Store, "listPolicies" | "policyMigration" | "markPolicyMigration">;
  clusterId: string;
  crs: PolicyCrAccess;
  now: () => number;
}): Promise<MigrationResult> {
  const { store, clusterId, crs } = o;
  const mark = await store.policyMigration(clusterId);
  if (mark) return { status: "already", created: mark.created, existed: mark.existed, skipped: [] };
  let created = 0;
  let existed = 0;
  const skipped: MigrationResult["skipped"] = [];
  const stamp = (kind: string, key: string): ChangeStamp => ({
    subject: MIGRATION_SUBJECT,
    via: "migration",
    at: o.now(),
    migratedFrom: `core:${clusterId}/${kind}/${key}`,
  });
  const send = async (e: Parameters<PolicyCrAccess["edit"]>[1], what: string): Promise<void> => {
    const r = await crs.edit(clusterId, e);
    if (r.outcome === "applied") created++;
    else if (r.outcome === "exists") existed++;
    else throw new Error(`migrating ${what} to a CR failed (${r.outcome}): ${r.message}`);
  };

  for (const rec of await store.listPolicies(clusterId, "spot")) {
    let policy;
    try {
      policy = parseSpotPolicy(rec.value);
    } catch (err) {
      skipped.push({ kind: "spot", key: rec.key, errors: [(err as Error).message] });
      continue;
    }
    const name = spotPolicyName(policy.workload, crs.spot(clusterId) ?? []);
    await send(
      {
        kind: "SpotPolicy",
        namespace: policy.workload.namespace,
        name,
        op: "create",
        object: spotPolicyResource(policy, name, stamp("spot", rec.key)),
        force: false,
      },
      `spot policy ${rec.key}`,
    );
  }
  for (const rec of await store.listPolicies(clusterId, "warmup")) {
    const parsed = parsePolicy(rec.value);
    if (!parsed.ok) {
      skipped.push({ kind: "warmup", key: rec.key, errors: parsed.errors });
      continue;
    }
    const name = warmupPolicyName(rec.key, crs.warmup(clusterId) ?? []);
    await send(
      {
        kind: "WarmupPolicy",
        namespace: "",
        name,
        op: "create",
        object: warmupPolicyResource(rec.key, parsed.policy, name, stamp("warmup", rec.key)),
        force: false,
      },
      `warmup policy ${rec.key}`,
    );
  }
  const done: PolicyMigrationMark = { clusterId, at: o.now(), created, existed };
  // Another replica (or an earlier run that lost its answer) may have marked it meanwhile.
  await store.markPolicyMigration(done);
  return { status: "migrated", created, existed, skipped };
}

/** A streamed policy CR (snapshot object or change) as a revision to keep; undefined for other kinds. */
export function policyRevisionOf(
  clusterId: string,
  kind: string,
  object: unknown,
  at: number,
  deleted: boolean,
): PolicyRevision | undefined {
  if (kind !== "SpotPolicy" && kind !== "WarmupPolicy") return undefined;
  const cr = object as SpotPolicyResource | WarmupPolicyResource;
  const rv = cr.metadata.resourceVersion ?? "";
  const name = cr.metadata.namespace
    ? `${cr.metadata.namespace}/${cr.metadata.name ?? ""}`
    : (cr.metadata.name ?? "");
  if (rv === "" || name === "") return undefined;
  // The newest managedFields entry is who changed it last.
  const last = [...(cr.metadata.managedFields ?? [])]
    .filter((m) => m.subresource === undefined)
    .sort((a, b) => (a.time ?? "").localeCompare(b.time ?? ""))
    .at(-1);
  return {
    clusterId,
    kind,
    name,
    // A deletion is a version of its own after the last one.
    resourceVersion: deleted ? `${rv}-deleted` : rv,
    at,
    deleted,
    manager: last?.manager ?? "",
    changedBy: cr.metadata.annotations?.[CHANGED_BY_ANNOTATION] ?? "",
    spec: cr.spec,
  };
}
