// A minimal RFC 6902 applier (add, replace, remove) — enough to check what the webhook's patches do
// to a pod in tests, the fuzzer and the e2e suite. Returns a new document; never mutates its input.
import type { JsonPatchOp } from "./admission.ts";

export class JsonPatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JsonPatchError";
  }
}

const unescape = (s: string): string => s.replaceAll("~1", "/").replaceAll("~0", "~");

export function applyJsonPatch<T>(doc: T, ops: readonly JsonPatchOp[]): T {
  let root: unknown = structuredClone(doc);
  for (const op of ops) {
    if (op.path === "") {
      if (op.op === "remove") throw new JsonPatchError("cannot remove the root");
      root = structuredClone(op.value);
      continue;
    }
    if (!op.path.startsWith("/")) throw new JsonPatchError(`bad path ${op.path}`);
    const parts = op.path.slice(1).split("/").map(unescape);
    const last = parts.pop() as string;
    let parent: unknown = root;
    for (const p of parts) {
      const next: unknown = Array.isArray(parent)
        ? parent[Number(p)]
        : typeof parent === "object" && parent !== null
          ? (parent as Record<string, unknown>)[p]
          : undefined;
      if (next === undefined || next === null || typeof next !== "object")
        throw new JsonPatchError(`path ${op.path}: ${p} does not exist`);
      parent = next;
    }
    if (Array.isArray(parent)) {
      const i = last === "-" ? parent.length : Number(last);
      if (!Number.isInteger(i) || i < 0 || i > parent.length || (op.op !== "add" && i >= parent.length))
        throw new JsonPatchError(`path ${op.path}: bad index`);
      if (op.op === "add") parent.splice(i, 0, structuredClone(op.value));
      else if (op.op === "replace") parent[i] = structuredClone(op.value);
      else parent.splice(i, 1);
    } else if (typeof parent === "object" && parent !== null) {
      const obj = parent as Record<string, unknown>;
      if (op.op !== "add" && !(last in obj)) throw new JsonPatchError(`path ${op.path} does not exist`);
      if (op.op === "remove") Reflect.deleteProperty(obj, last);
      else obj[last] = structuredClone(op.value);
    } else throw new JsonPatchError(`path ${op.path}: parent is not a container`);
  }
  return root as T;
}
