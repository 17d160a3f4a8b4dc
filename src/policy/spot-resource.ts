// A SpotPolicy custom resource (objects/policy-crds.ts) as the spot policy model (spot.ts):
// the workload is the targetRef in the CR's own namespace, repair On|Off|DryRun is true|false|
// "dry-run". The CRD's schema already refuses bad input; this checks again (a CRD applied
// without its schema, an older version of it) with the same validator core's sets go through.
import type { SpotPolicyResource, SpotRepairMode } from "../objects/policy-crds.ts";
import type { RepairMode, SpotPolicy } from "./spot.ts";
import { validatePolicy } from "./validate-spot.ts";

export type Converted<T> = { ok: true; policy: T } | { ok: false; errors: string[] };

const REPAIR: Record<SpotRepairMode, RepairMode> = { On: true, Off: false, DryRun: "dry-run" };

/** The CR's repair mode for a model's (the inverse of the conversion; status, migration). */
export function repairModeOf(repair: RepairMode | undefined): SpotRepairMode {
  return repair === undefined || repair === true ? "On" : repair === false ? "Off" : "DryRun";
}

/** "namespace/name" of a CR, for logs and conditions. */
export function resourceKey(cr: { metadata: { namespace?: string; name?: string } }): string {
  return cr.metadata.namespace === undefined
    ? (cr.metadata.name ?? "")
    : `${cr.metadata.namespace}/${cr.metadata.name ?? ""}`;
}

export function spotPolicyFromResource(cr: SpotPolicyResource): Converted<SpotPolicy> {
  // From the apiserver: a CRD applied without its schema could hand over anything.
  const spec = ((cr as { spec?: unknown }).spec ?? {}) as Partial<SpotPolicyResource["spec"]>;
  const errors: string[] = [];
  const target = spec.targetRef as Partial<SpotPolicyResource["spec"]["targetRef"]> | undefined;
  const candidate: Record<string, unknown> = {
    workload: { namespace: cr.metadata.namespace, kind: target?.kind, name: target?.name },
    threshold: spec.threshold,
    strategy: spec.strategy,
  };
  if (spec.percentAboveBase !== undefined) candidate.percentAboveBase = spec.percentAboveBase;
  if (spec.repair !== undefined) {
    const mode = REPAIR[spec.repair] as RepairMode | undefined;
    if (mode === undefined) errors.push(`spec.repair: must be On, Off or DryRun`);
    else candidate.repair = mode;
  }
  if (spec.fallbackWindowSeconds !== undefined) candidate.fallbackWindowSeconds = spec.fallbackWindowSeconds;
  const problems: string[] = [];
  const policy = validatePolicy(candidate, "spec", problems);
  // The model's field names, said as the CR's.
  for (const p of problems)
    errors.push(
      p
        .replace("spec.workload.namespace", "metadata.namespace")
        .replace("spec.workload.kind", "spec.targetRef.kind")
        .replace("spec.workload.name", "spec.targetRef.name")
        .replace("spec.workload", "spec.targetRef"),
    );
  if (errors.length > 0 || policy === undefined) return { ok: false, errors };
  return { ok: true, policy };
}
