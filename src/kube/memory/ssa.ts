// Server-side apply for the in-memory apiserver, pure: the object after `manager` applies
// `applied` to `current`, with managedFields kept per manager as the apiserver keeps them.
// - Each applied field the manager now owns; a field another manager owns with a different value
//   is a conflict (409, one FieldManagerConflict cause per field) unless `force`, which takes it
//   over. The same value shares ownership.
// - A field the manager applied before and leaves out now is removed, unless someone else owns it.
// - Maps merge key by key; lists and scalars are atomic.
// Writes that are not applies (create/update/merge patch) given a fieldManager take ownership of
// the fields they change (operation Update), as the apiserver does.
import type { KubeObject, ManagedFieldsEntry, Status } from "../../objects/kube.ts";
import {
  fieldPaths,
  fromFieldsV1,
  pathKey,
  pathText,
  toFieldsV1,
  valueAt,
  type FieldPath,
} from "../managed-fields.ts";
import { KubeApiError } from "../port.ts";
import { copyJson, sameJson } from "./copy.ts";

const isMap = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

function setAt(obj: Record<string, unknown>, path: FieldPath, value: unknown): void {
  let node = obj;
  for (const seg of path.slice(0, -1)) {
    const next = node[seg];
    if (!isMap(next)) node[seg] = {};
    node = node[seg] as Record<string, unknown>;
  }
  const last = path[path.length - 1];
  if (last !== undefined) node[last] = copyJson(value);
}

function deleteAt(obj: Record<string, unknown>, path: FieldPath): void {
  const parents: Record<string, unknown>[] = [];
  let node: unknown = obj;
  for (const seg of path.slice(0, -1)) {
    if (!isMap(node)) return;
    parents.push(node);
    node = node[seg];
  }
  const last = path[path.length - 1];
  if (!isMap(node) || last === undefined) return;
  Reflect.deleteProperty(node, last);
  // A map the removal left empty goes too (labels: {} → gone), as the apiserver prunes it.
  for (let i = path.length - 2; i >= 0; i--) {
    const parent = parents[i];
    const seg = path[i];
    if (parent === undefined || seg === undefined) break;
    const child = parent[seg];
    if (isMap(child) && Object.keys(child).length === 0) Reflect.deleteProperty(parent, seg);
    else break;
  }
}

const stamp = (
  manager: string,
  operation: ManagedFieldsEntry["operation"],
  apiVersion: string | undefined,
  time: string,
  paths: readonly FieldPath[],
): ManagedFieldsEntry => ({
  manager,
  operation,
  ...(apiVersion ? { apiVersion } : {}),
  time,
  fieldsType: "FieldsV1",
  fieldsV1: toFieldsV1(paths),
});

function conflictError(
  resource: string,
  name: string,
  apiVersion: string | undefined,
  conflicts: { manager: string; path: FieldPath }[],
): KubeApiError {
  const using = apiVersion ? ` using ${apiVersion}` : "";
  const n = conflicts.length;
  const message =
    n === 1 && conflicts[0]
      ? `Apply failed with 1 conflict: conflict with "${conflicts[0].manager}"${using}: ${pathText(conflicts[0].path)}`
      : `Apply failed with ${n} conflicts: ${conflicts.map((c) => `conflict with "${c.manager}"${using}: ${pathText(c.path)}`).join(", ")}`;
  const status: Status = {
    apiVersion: "v1",
    kind: "Status",
    status: "Failure",
    message,
    reason: "Conflict",
    code: 409,
    details: {
      name,
      kind: resource,
      causes: conflicts.map((c) => ({
        type: "FieldManagerConflict",
        message: `conflict with "${c.manager}"${using}`,
        field: pathText(c.path),
      })),
    },
  };
  return new KubeApiError(status);
}

export interface ApplyInput {
  /** The stored object, or undefined when the apply creates it. */
  current: KubeObject | undefined;
  applied: KubeObject;
  manager: string;
  force: boolean;
  /** RFC 3339, the managedFields entry's time. */
  time: string;
  /** "spotpolicies.wave.sh", for the conflict's Status. */
  resource: string;
  name: string;
}

/**
 * The object after the apply (metadata.managedFields set), or a 409 KubeApiError listing the
 * conflicts. Server-owned metadata (uid, resourceVersion, …) is the caller's to keep.
 */
export function serverSideApply(input: ApplyInput): KubeObject {
  const { current, manager, force, time } = input;
  const applied = copyJson(input.applied);
  if (isMap(applied.metadata)) delete applied.metadata.managedFields;
  const apiVersion = applied.apiVersion ?? current?.apiVersion;
  const paths = fieldPaths(applied);
  const entries = (current?.metadata.managedFields ?? []).map((e) => ({
    e,
    paths: fromFieldsV1(e.fieldsV1),
  }));
  const mine = entries.find((x) => x.e.manager === manager && x.e.operation === "Apply" && !x.e.subresource);

  const conflicts: { manager: string; path: FieldPath }[] = [];
  const taken = new Set<string>();
  for (const x of entries) {
    if (x.e.manager === manager || x.e.subresource) continue;
    for (const p of x.paths) {
      const k = pathKey(p);
      if (!paths.some((q) => pathKey(q) === k)) continue;
      if (sameJson(valueAt(current, p), valueAt(applied, p))) continue;
      conflicts.push({ manager: x.e.manager, path: p });
      taken.add(k);
    }
  }
  if (conflicts.length > 0 && !force) throw conflictError(input.resource, input.name, apiVersion, conflicts);

  const next = (
    current
      ? copyJson(current)
      : {
          metadata: {
            ...(applied.metadata.name ? { name: applied.metadata.name } : {}),
            ...(applied.metadata.namespace ? { namespace: applied.metadata.namespace } : {}),
          },
        }
  ) as KubeObject & Record<string, unknown>;
  for (const p of paths) setAt(next, p, valueAt(applied, p));
  if (applied.apiVersion) next.apiVersion = applied.apiVersion;
  if (applied.kind) next.kind = applied.kind;

  // Forced fields leave their old owners; entries left with nothing are dropped.
  const others: ManagedFieldsEntry[] = [];
  const stillOwned = new Set<string>();
  for (const x of entries) {
    if (x === mine) continue;
    const kept =
      x.e.manager === manager || x.e.subresource ? x.paths : x.paths.filter((p) => !taken.has(pathKey(p)));
    if (kept.length === 0) continue;
    for (const p of kept) stillOwned.add(pathKey(p));
    others.push(kept.length === x.paths.length ? x.e : { ...x.e, fieldsV1: toFieldsV1(kept) });
  }
  // What this manager applied before and leaves out now is removed, unless another owns it.
  const now = new Set(paths.map(pathKey));
  for (const p of mine?.paths ?? []) {
    const k = pathKey(p);
    if (!now.has(k) && !stillOwned.has(k)) deleteAt(next, p);
  }
  const unchanged =
    current !== undefined &&
    mine !== undefined &&
    others.length === entries.length - 1 &&
    sameJson(stripManaged(current), stripManaged(next)) &&
    sameJson(toFieldsV1(paths), mine.e.fieldsV1 ?? {});
  if (unchanged) return copyJson(current);
  next.metadata.managedFields = [...others, stamp(manager, "Apply", apiVersion, time, paths)];
  return next;
}

/**
 * managedFields after a write that is not an apply (operation Update): the manager takes the fields
 * whose value changed (all of them on a create) from everyone else.
 */
export function recordUpdate(
  current: KubeObject | undefined,
  next: KubeObject,
  manager: string,
  time: string,
): ManagedFieldsEntry[] | undefined {
  const changed = fieldPaths(next).filter(
    (p) => current === undefined || !sameJson(valueAt(current, p), valueAt(next, p)),
  );
  const previous = current?.metadata.managedFields ?? next.metadata.managedFields ?? [];
  if (changed.length === 0) return previous.length > 0 ? previous : undefined;
  const gone = new Set(changed.map(pathKey));
  const out: ManagedFieldsEntry[] = [];
  let own: FieldPath[] = [];
  for (const e of previous) {
    const paths = fromFieldsV1(e.fieldsV1);
    if (e.manager === manager && e.operation === "Update" && !e.subresource) {
      own = paths.filter((p) => !gone.has(pathKey(p)));
      continue;
    }
    const kept = e.subresource ? paths : paths.filter((p) => !gone.has(pathKey(p)));
    if (kept.length > 0) out.push(kept.length === paths.length ? e : { ...e, fieldsV1: toFieldsV1(kept) });
  }
  out.push(stamp(manager, "Update", next.apiVersion, time, [...own, ...changed]));
  return out;
}

function stripManaged(o: KubeObject): KubeObject {
  const { managedFields: _m, ...meta } = o.metadata;
  return { ...o, metadata: meta };
}
