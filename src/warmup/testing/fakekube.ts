// A small in-memory KubeClient for the warmup tests: resourceVersions, 404/409, label selectors,
// JSON merge patch with a resourceVersion precondition. Stand-in until src/kube/memory lands;
// the controller only relies on KubeClient semantics, so switching is a one-line change.
import { KINDS, type KindName, type KindTypes } from "../../kube/kinds.ts";
import type { KubeObject } from "../../kube/objects.ts";
import {
  KubeApiError,
  type DeleteOptions,
  type KubeClient,
  type ListOptions,
  type ObjectList,
  type PatchOptions,
  type WatchEvent,
  type WriteOptions,
} from "../../kube/port.ts";

export interface Call {
  op: "create" | "patch" | "delete" | "replace";
  kind: KindName;
  name: string;
}

function err(code: number, reason: string, message: string): KubeApiError {
  return new KubeApiError({ kind: "Status", status: "Failure", code, reason, message });
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return patch;
  const base = new Map<string, unknown>(
    typeof target === "object" && target !== null && !Array.isArray(target) ? Object.entries(target) : [],
  );
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) base.delete(k);
    else base.set(k, mergePatch(base.get(k), v));
  }
  return Object.fromEntries(base);
}

function matchesLabels(labels: Record<string, string> | undefined, selector: string | undefined): boolean {
  if (selector === undefined || selector === "") return true;
  return selector.split(",").every((part) => {
    const [k = "", v] = part.split("=");
    return v === undefined ? Object.hasOwn(labels ?? {}, k) : labels?.[k] === v;
  });
}

export class FakeKube implements KubeClient {
  readonly calls: Call[] = [];
  /** Awaited inside every create: lets a test hold creates open to observe concurrency. */
  createGate: (() => Promise<void>) | undefined;
  #store = new Map<string, KubeObject>();
  #rv = 0;
  #uid = 0;
  #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  #key(kind: KindName, name: string, namespace: string | undefined): string {
    return `${kind}/${KINDS[kind].namespaced ? (namespace ?? "default") : ""}/${name}`;
  }

  /** Puts an object straight into the store (test setup), assigning metadata like create does. */
  seed<K extends KindName>(kind: K, obj: KindTypes[K]): KindTypes[K] {
    const o = structuredClone(obj) as KubeObject;
    o.metadata.uid ??= `uid-${++this.#uid}`;
    o.metadata.resourceVersion = String(++this.#rv);
    o.metadata.creationTimestamp ??= new Date(this.#now()).toISOString();
    if (KINDS[kind].namespaced) o.metadata.namespace ??= "default";
    this.#store.set(this.#key(kind, o.metadata.name ?? "", o.metadata.namespace), o);
    return structuredClone(o) as KindTypes[K];
  }

  /** Every stored object of a kind (test assertions). */
  all<K extends KindName>(kind: K): KindTypes[K][] {
    const prefix = `${kind}/`;
    return [...this.#store.entries()]
      .filter(([k]) => k.startsWith(prefix))
      .map(([, v]) => structuredClone(v) as KindTypes[K]);
  }

  list<K extends KindName>(kind: K, opts: ListOptions = {}): Promise<ObjectList<KindTypes[K]>> {
    const items = this.all(kind).filter(
      (o) =>
        (opts.namespace === undefined || o.metadata.namespace === opts.namespace) &&
        matchesLabels(o.metadata.labels, opts.labelSelector),
    );
    return Promise.resolve({ items, resourceVersion: String(this.#rv) });
  }

  watch<K extends KindName>(): AsyncIterable<WatchEvent<KindTypes[K]>> {
    throw new Error("FakeKube does not implement watch");
  }

  get<K extends KindName>(kind: K, name: string, namespace?: string): Promise<KindTypes[K]> {
    const o = this.#store.get(this.#key(kind, name, namespace));
    if (o === undefined) return Promise.reject(err(404, "NotFound", `${kind} ${name} not found`));
    return Promise.resolve(structuredClone(o) as KindTypes[K]);
  }

  async create<K extends KindName>(
    kind: K,
    obj: KindTypes[K],
    opts: WriteOptions = {},
  ): Promise<KindTypes[K]> {
    const name = obj.metadata.name ?? `${obj.metadata.generateName ?? "obj-"}${(++this.#uid).toString(36)}`;
    this.calls.push({ op: "create", kind, name });
    if (this.createGate) await this.createGate();
    const ns = opts.namespace ?? obj.metadata.namespace;
    if (this.#store.has(this.#key(kind, name, ns)))
      throw err(409, "AlreadyExists", `${kind} ${name} already exists`);
    return this.seed(kind, { ...obj, metadata: { ...obj.metadata, name, namespace: ns } });
  }

  replace<K extends KindName>(kind: K, obj: KindTypes[K], opts: WriteOptions = {}): Promise<KindTypes[K]> {
    const name = obj.metadata.name ?? "";
    this.calls.push({ op: "replace", kind, name });
    const cur = this.#store.get(this.#key(kind, name, opts.namespace ?? obj.metadata.namespace));
    if (cur === undefined) return Promise.reject(err(404, "NotFound", `${kind} ${name} not found`));
    if (obj.metadata.resourceVersion !== cur.metadata.resourceVersion) {
      return Promise.reject(err(409, "Conflict", `${kind} ${name}: resourceVersion changed`));
    }
    return Promise.resolve(this.seed(kind, { ...obj, metadata: { ...obj.metadata, uid: cur.metadata.uid } }));
  }

  patch<K extends KindName>(
    kind: K,
    name: string,
    patch: unknown,
    opts: PatchOptions = {},
  ): Promise<KindTypes[K]> {
    this.calls.push({ op: "patch", kind, name });
    if ((opts.type ?? "merge") !== "merge")
      return Promise.reject(new Error("FakeKube supports merge patches only"));
    const key = this.#key(kind, name, opts.namespace);
    const cur = this.#store.get(key);
    if (cur === undefined) return Promise.reject(err(404, "NotFound", `${kind} ${name} not found`));
    const want = (patch as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
    if (want !== undefined && want !== cur.metadata.resourceVersion) {
      return Promise.reject(err(409, "Conflict", `${kind} ${name}: resourceVersion changed`));
    }
    const next = mergePatch(cur, patch) as KubeObject;
    next.metadata.resourceVersion = String(++this.#rv);
    this.#store.set(key, next);
    return Promise.resolve(structuredClone(next) as KindTypes[K]);
  }

  delete(kind: KindName, name: string, opts: DeleteOptions = {}): Promise<void> {
    this.calls.push({ op: "delete", kind, name });
    const key = this.#key(kind, name, opts.namespace);
    const cur = this.#store.get(key);
    if (cur === undefined) return Promise.reject(err(404, "NotFound", `${kind} ${name} not found`));
    if (opts.uid !== undefined && opts.uid !== cur.metadata.uid) {
      return Promise.reject(err(409, "Conflict", `${kind} ${name}: uid precondition failed`));
    }
    this.#store.delete(key);
    return Promise.resolve();
  }
}
