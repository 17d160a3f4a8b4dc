// Server-side apply's field ownership (metadata.managedFields, fieldsType FieldsV1), read and
// written the way the apiserver does for the fields Wave applies: every leaf of a map is a field,
// lists are atomic (one field), metadata counts only its labels and annotations. Shared by the
// in-memory apiserver (which enforces it) and the agent (which explains a conflict).
import type { FieldsV1, ManagedFieldsEntry, Status } from "../objects/kube.ts";

/** One field: its path of map keys, e.g. ["spec", "threshold"]. */
export type FieldPath = readonly string[];

const isMap = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/** The fields an applied (or stored) object sets: apiVersion, kind, status and server-owned metadata excluded. */
export function fieldPaths(obj: unknown): FieldPath[] {
  const out: FieldPath[] = [];
  const walk = (v: unknown, path: string[]): void => {
    if (isMap(v) && Object.keys(v).length > 0) {
      for (const [k, child] of Object.entries(v)) if (child !== undefined) walk(child, [...path, k]);
    } else out.push(path);
  };
  if (!isMap(obj)) return out;
  for (const [k, v] of Object.entries(obj)) {
    if (k === "apiVersion" || k === "kind" || k === "status" || v === undefined) continue;
    if (k === "metadata") {
      if (!isMap(v)) continue;
      for (const m of ["labels", "annotations"] as const) {
        const sub = v[m];
        if (isMap(sub)) for (const key of Object.keys(sub)) out.push(["metadata", m, key]);
      }
      continue;
    }
    walk(v, [k]);
  }
  return out;
}

export const pathKey = (p: FieldPath): string => p.join("\u0000");

/** ".spec.threshold", as the apiserver names a field in a conflict. */
export const pathText = (p: FieldPath): string =>
  p.map((s) => (/^[A-Za-z0-9_-]+$/.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`)).join("");

export function toFieldsV1(paths: readonly FieldPath[]): FieldsV1 {
  const root: FieldsV1 = {};
  for (const p of paths) {
    let node = root;
    for (const seg of p) node = node[`f:${seg}`] ??= {};
  }
  return root;
}

/** The leaf paths of a FieldsV1 set ("." entries, which own a map itself, are skipped). */
export function fromFieldsV1(set: FieldsV1 | undefined): FieldPath[] {
  const out: FieldPath[] = [];
  const walk = (node: FieldsV1, path: string[]): void => {
    const keys = Object.keys(node).filter((k) => k.startsWith("f:"));
    if (keys.length === 0) {
      if (path.length > 0) out.push(path);
      return;
    }
    for (const k of keys) walk(node[k] ?? {}, [...path, k.slice(2)]);
  };
  if (set) walk(set, []);
  return out;
}

export function valueAt(obj: unknown, path: FieldPath): unknown {
  let v: unknown = obj;
  for (const seg of path) {
    if (!isMap(v)) return undefined;
    v = v[seg];
  }
  return v;
}

/** Which manager owns each of `paths` in an object's managedFields (every owner, Apply or Update). */
export function ownersOf(
  entries: readonly ManagedFieldsEntry[] | undefined,
  paths: readonly FieldPath[],
): { manager: string; path: FieldPath }[] {
  const wanted = new Set(paths.map(pathKey));
  const out: { manager: string; path: FieldPath }[] = [];
  for (const e of entries ?? []) {
    if (e.subresource) continue;
    for (const p of fromFieldsV1(e.fieldsV1))
      if (wanted.has(pathKey(p))) out.push({ manager: e.manager, path: p });
  }
  return out;
}

export interface ApplyConflict {
  manager: string;
  /** ".spec.threshold" */
  field: string;
}

/**
 * The conflicts of a refused server-side apply, from its 409 Status: the apiserver lists one cause
 * per field ("conflict with \"argocd-controller\" using wave.sh/v1alpha1", field ".spec.threshold").
 * Empty when the 409 is not an apply conflict.
 */
export function applyConflicts(status: Status): ApplyConflict[] {
  const out: ApplyConflict[] = [];
  for (const c of status.details?.causes ?? []) {
    if (c.type !== "FieldManagerConflict") continue;
    const m = /conflict with "([^"]+)"/.exec(c.message ?? "");
    out.push({ manager: m?.[1] ?? "another manager", field: c.field ?? "" });
  }
  if (out.length === 0 && status.code === 409 && status.reason === "Conflict") {
    // Some clients drop the details: the message lists the same conflicts.
    for (const m of (status.message ?? "").matchAll(/conflict with "([^"]+)"(?: using [^:]+)?: ([^\n,]+)/g))
      out.push({ manager: m[1] ?? "", field: (m[2] ?? "").trim() });
  }
  return out;
}
