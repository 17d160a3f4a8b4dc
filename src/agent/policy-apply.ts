// The agent's side of a policy edit (ADR 0018): server-side apply of a SpotPolicy or WarmupPolicy
// with field manager wave-console — forced only when the user forced it — and the outcome for
// core: applied (with the resource as stored), or the fields other managers own.
import { CONSOLE_FIELD_MANAGER, INSTANCE_ANNOTATION } from "../objects/policy-crds.ts";
import type { KubeObject } from "../objects/kube.ts";
import { applyConflicts } from "../kube/managed-fields.ts";
import { KubeApiError, isNotFound, type KubeClient } from "../kube/port.ts";
import type { WirePolicyEdit, WirePolicyEditResult } from "../wire/policy-edit.ts";

/** `instance`: this install's namespace, stamped on the WarmupPolicies it applies (INSTANCE_ANNOTATION). */
export async function applyPolicyEdit(
  kube: KubeClient,
  edit: WirePolicyEdit,
  instance?: string,
): Promise<WirePolicyEditResult> {
  const { id, kind, name } = edit;
  const namespace = kind === "SpotPolicy" ? edit.namespace : undefined;
  const ns = namespace === undefined ? {} : { namespace };
  const answer = (r: Omit<WirePolicyEditResult, "id" | "conflicts"> & Partial<WirePolicyEditResult>) => ({
    id,
    conflicts: [],
    ...r,
  });
  try {
    if (edit.op === "delete") {
      await kube.delete(kind, name, ns);
      return answer({ outcome: "applied", message: `${kind} ${name} deleted` });
    }
    const given = edit.object as KubeObject;
    const obj: KubeObject =
      kind === "WarmupPolicy" && instance !== undefined
        ? {
            ...given,
            metadata: {
              ...given.metadata,
              annotations: { ...given.metadata.annotations, [INSTANCE_ANNOTATION]: instance },
            },
          }
        : given;
    if (edit.op === "create") {
      // The migration: an existing resource is never overwritten.
      try {
        const existing = await kube.get(kind, name, namespace);
        return answer({
          outcome: "exists",
          message: `${kind} ${name} exists; left as it is`,
          object: existing,
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    const out = await kube.patch(kind, name, obj, {
      ...ns,
      type: "apply",
      fieldManager: CONSOLE_FIELD_MANAGER,
      force: edit.op === "apply" && edit.force,
    });
    return answer({ outcome: "applied", message: "", object: out });
  } catch (err) {
    if (err instanceof KubeApiError) {
      const conflicts = err.code === 409 ? applyConflicts(err.status) : [];
      if (conflicts.length > 0) return answer({ outcome: "conflict", message: err.message, conflicts });
      if (err.code === 404 && edit.op === "delete")
        return answer({ outcome: "not-found", message: err.message });
      return answer({ outcome: "failed", message: err.message });
    }
    return answer({ outcome: "failed", message: err instanceof Error ? err.message : String(err) });
  }
}
