// JSON Merge Patch (RFC 7386) and JSON Patch (RFC 6902), pure: the inputs are never mutated.
import { copyJson } from "./copy.ts";

export class PatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PatchError";
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/** RFC 7386: objects merge recursively, null deletes a member, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return copyJson(patch);
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) Reflect.deleteProperty(out, k);
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

export interface JsonPatchOp {
  op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  path: string;
  from?: string;
  value?: unknown;
}

function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new PatchError(`invalid JSON pointer "${pointer}"`);
  return pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function arrayIndex(arr: unknown[], token: string, forAdd: boolean, path: string): number {
  if (forAdd && token === "-") return arr.length;
  if (!/^(0|[1-9]\d*)$/.test(token)) throw new PatchError(`invalid array index "${token}" in ${path}`);
  const i = Number(token);
  if (i > arr.length || (!forAdd && i === arr.length))
    throw new PatchError(`index ${i} out of range in ${path}`);
  return i;
}

// Walks to the parent of the pointer's last token; containers on the way are the document's own.
function parentOf(doc: unknown, tokens: string[], path: string): { parent: unknown; last: string } {
  let cur = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[arrayIndex(cur, t, false, path)];
    else if (isObject(cur) && Object.hasOwn(cur, t)) cur = cur[t];
    else throw new PatchError(`path ${path} does not exist`);
  }
  const last = tokens[tokens.length - 1];
  if (last === undefined) throw new PatchError(`path ${path} has no parent`);
  return { parent: cur, last };
}

function getAt(doc: unknown, path: string): unknown {
  let cur = doc;
  for (const t of parsePointer(path)) {
    if (Array.isArray(cur)) cur = cur[arrayIndex(cur, t, false, path)];
    else if (isObject(cur) && Object.hasOwn(cur, t)) cur = cur[t];
    else throw new PatchError(`path ${path} does not exist`);
  }
  return cur;
}

function addAt(doc: unknown, path: string, value: unknown): unknown {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return value;
  const { parent, last } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, true, path), 0, value);
  else if (isObject(parent)) parent[last] = value;
  else throw new PatchError(`cannot add at ${path}: parent is not a container`);
  return doc;
}

function removeAt(doc: unknown, path: string): unknown {
  const tokens = parsePointer(path);
  if (tokens.length === 0) throw new PatchError("cannot remove the whole document");
  const { parent, last } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, false, path), 1);
  else if (isObject(parent) && Object.hasOwn(parent, last)) Reflect.deleteProperty(parent, last);
  else throw new PatchError(`path ${path} does not exist`);
  return doc;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return (
      ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]))
    );
  }
  return false;
}

/** RFC 6902, atomically: any failing operation (including "test") leaves the input untouched. */
export function jsonPatch<T>(target: T, ops: unknown): T {
  if (!Array.isArray(ops)) throw new PatchError("a JSON patch must be an array of operations");
  let doc: unknown = copyJson(target);
  for (const raw of ops as unknown[]) {
    if (!isObject(raw) || typeof raw.path !== "string" || typeof raw.op !== "string") {
      throw new PatchError(`invalid JSON patch operation ${JSON.stringify(raw)}`);
    }
    const op = raw as unknown as JsonPatchOp;
    const needsValue = op.op === "add" || op.op === "replace" || op.op === "test";
    if (needsValue && !Object.hasOwn(raw, "value"))
      throw new PatchError(`"${op.op}" at ${op.path} needs a value`);
    const needsFrom = op.op === "move" || op.op === "copy";
    if (needsFrom && typeof op.from !== "string")
      throw new PatchError(`"${op.op}" at ${op.path} needs "from"`);
    switch (op.op) {
      case "add":
        doc = addAt(doc, op.path, copyJson(op.value));
        break;
      case "remove":
        doc = removeAt(doc, op.path);
        break;
      case "replace":
        getAt(doc, op.path);
        doc =
          op.path === "" ? copyJson(op.value) : addAt(removeAt(doc, op.path), op.path, copyJson(op.value));
        break;
      case "move": {
        const from = op.from ?? "";
        if (op.path.startsWith(from + "/"))
          throw new PatchError(`cannot move ${from} into its own child ${op.path}`);
        const v = getAt(doc, from);
        doc = addAt(removeAt(doc, from), op.path, v);
        break;
      }
      case "copy":
        doc = addAt(doc, op.path, copyJson(getAt(doc, op.from ?? "")));
        break;
      case "test":
        if (!deepEqual(getAt(doc, op.path), op.value)) throw new PatchError(`test failed at ${op.path}`);
        break;
      default:
        throw new PatchError(`unknown JSON patch op "${String((raw as { op: unknown }).op)}"`);
    }
  }
  return doc as T;
}
