// An in-memory apiserver behind the KubeClient port, with the semantics Wave's code depends on:
// one monotonic resourceVersion across kinds, optimistic concurrency, finalizers, selectors,
// and watches replayed from a bounded per-kind history (older versions → 410 Gone, like the
// apiserver's watch cache). It backs unit tests and the embedded simulator.
//
// Deliberate simplifications (documented so nobody relies on them): no garbage collection of
// dependents (propagationPolicy is accepted and ignored), pods are deleted at once (no kubelet
// grace period), no subresources but pods' eviction (PodDisruptionBudgets checked), no admission,
// no defaulting; "strategic" patches are merged like RFC 7386 merge patches. "apply" is server-side
// apply with managedFields per manager, conflicts and force (ssa.ts).
import { randomUUID } from "node:crypto";
import { KINDS, apiVersionOf, type KindName, type KindTypes } from "../kinds.ts";
import {
  KubeApiError,
  type DeleteOptions,
  type KubeClient,
  type ListOptions,
  type ObjectList,
  type PatchOptions,
  type WatchEvent,
  type WatchOptions,
  type WriteOptions,
} from "../port.ts";
import type { KubeObject, Pod, PodDisruptionBudget, Status } from "../../objects/kube.ts";
import { SelectorError, fieldMatcher, labelMatcher, labelSelectorMatcher } from "../selectors.ts";
import { realClock, type Clock } from "../../shared/clock.ts";
import {
  alreadyExists,
  badRequest,
  conflict,
  gone,
  invalid,
  notFound,
  resourceName,
  statusError,
} from "./errors.ts";
import { recordUpdate, serverSideApply } from "./ssa.ts";
import { PatchError, jsonPatch, mergePatch } from "./patch.ts";
import { pdbStatus, podHealthy } from "../pdb.ts";
import { copyJson, sameJson } from "./copy.ts";

export type MemoryOp = "list" | "watch" | "get" | "create" | "replace" | "patch" | "delete";

export interface MemoryRequest {
  op: MemoryOp;
  kind: KindName;
  namespace?: string;
  name?: string;
}

/** A test hook run before every request: throw, or return a Status/Error to fail the request. */
export type Interceptor = (req: MemoryRequest) => Status | Error | undefined;

export interface MemoryKubeOptions {
  clock?: Clock;
  /** Watch events retained per kind; watching from before them → 410 Gone. Default 1000. */
  historyLimit?: number;
  /** Reject namespaced objects whose Namespace does not exist (as the apiserver). Default false. */
  enforceNamespaces?: boolean;
  /** Namespace used when a namespaced request names none. Default "default". */
  defaultNamespace?: string;
  /** uid source (deterministic simulators inject one). */
  uid?: () => string;
  /** Uniform [0,1) source for generateName suffixes. */
  random?: () => number;
  /** BOOKMARK period for watches that allow them (the apiserver: ~60 s). Default 0: only bookmark(). */
  bookmarkIntervalMs?: number;
  /**
   * How long an Event lives after its last write, as kube-apiserver's `--event-ttl` (default there:
   * 1 h): then it is deleted (watchers see DELETED). Default 0: Events are kept.
   */
  eventTtlMs?: number;
  /**
   * `list` answers the stored objects themselves, deep-frozen, instead of copies (default false).
   * For a simulator whose readers never change what they list (a replay: a change to a frozen
   * object throws, strict mode): a day's replay copied some 100,000 pods for Wave's spot repair's
   * and warmup's lists alone. A real apiserver's answer is the caller's to change; so is this one's
   * without the option.
   */
  sharedLists?: boolean;
}

export type EventType = "ADDED" | "MODIFIED" | "DELETED";

interface StoredEvent {
  rv: number;
  type: EventType;
  object: KubeObject;
  /** The state before this event (MODIFIED, DELETED); selector-filtered watches need it. */
  prev?: KubeObject;
}

interface Watcher {
  matches: (obj: KubeObject) => boolean;
  bookmarks: boolean;
  queue: WatchEvent<KubeObject>[];
  wake: (() => void) | undefined;
  closed: boolean;
  error: Error | undefined;
}

/** A synchronous change observer (see MemoryKube.observe). */
export type Observer = (kind: KindName, type: EventType, object: KubeObject) => void;

interface KindState {
  kind: KindName;
  objects: Map<string, KubeObject>;
  history: StoredEvent[];
  /** Index of the oldest retained event in `history`. */
  start: number;
  /** Events at or below this version are gone from history. */
  floor: number;
  watchers: Set<Watcher>;
  /** `objects`' keys in order, for peek; dropped when a key is added or removed. */
  sortedKeys?: string[] | undefined;
  /** What peek answered for the whole kind; dropped on every change to the kind. */
  peeked?: readonly KubeObject[] | undefined;
}

const GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";
const NAME_RE = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

const keyOf = (namespace: string | undefined, name: string): string =>
  namespace === undefined ? name : `${namespace}/${name}`;

function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

// Everything except metadata and status: a change here bumps metadata.generation.
function sameSpec(a: KubeObject, b: KubeObject): boolean {
  const { metadata: _am, status: _as, ...ra } = a as KubeObject & { status?: unknown };
  const { metadata: _bm, status: _bs, ...rb } = b as KubeObject & { status?: unknown };
  return sameJson(ra, rb);
}

export class MemoryKube implements KubeClient {
  readonly #clock: Clock;
  readonly #historyLimit: number;
  readonly #enforceNamespaces: boolean;
  readonly #defaultNamespace: string;
  readonly #uid: () => string;
  readonly #random: () => number;
  readonly #bookmarkIntervalMs: number;
  readonly #eventTtlMs: number;
  readonly #sharedLists: boolean;
  /** Each Event's expiry by key, in write order (a write moves it to the end): oldest first. */
  readonly #eventExpiry = new Map<string, number>();
  readonly #kinds = new Map<KindName, KindState>();
  readonly #interceptors = new Set<Interceptor>();
  readonly #observers = new Set<Observer>();
  #rv = 0;

  constructor(opts: MemoryKubeOptions = {}) {
    this.#clock = opts.clock ?? realClock;
    this.#historyLimit = Math.max(1, opts.historyLimit ?? 1000);
    this.#enforceNamespaces = opts.enforceNamespaces ?? false;
    this.#defaultNamespace = opts.defaultNamespace ?? "default";
    this.#uid = opts.uid ?? randomUUID;
    this.#random = opts.random ?? Math.random;
    this.#bookmarkIntervalMs = opts.bookmarkIntervalMs ?? 0;
    this.#eventTtlMs = Math.max(0, opts.eventTtlMs ?? 0);
    this.#sharedLists = opts.sharedLists ?? false;
  }

  // ---- test and simulator hooks ----

  /** The current (global) resourceVersion. */
  get resourceVersion(): string {
    return String(this.#rv);
  }

  /**
   * Calls `fn` synchronously on every stored change (what a watch would deliver, without the
   * wait): the simulator and tests keep a cluster state in step with it. Returns its remover.
   */
  observe(fn: Observer): () => void {
    this.#observers.add(fn);
    return () => {
      this.#observers.delete(fn);
    };
  }

  /** Adds a request interceptor; returns its remover. */
  inject(fn: Interceptor): () => void {
    this.#interceptors.add(fn);
    return () => this.#interceptors.delete(fn);
  }

  /** Fails the next `times` requests of `op` (optionally for one kind) with `status`. */
  failNext(op: MemoryOp, status: Status, opts: { kind?: KindName; times?: number } = {}): void {
    let left = opts.times ?? 1;
    const remove = this.inject((req) => {
      if (req.op !== op || (opts.kind !== undefined && req.kind !== opts.kind)) return undefined;
      if (--left <= 0) remove();
      return { apiVersion: "v1", kind: "Status", status: "Failure", ...status };
    });
  }

  /** Drops the whole history: every watch from an older version now gets 410 Gone. */
  compact(): void {
    for (const st of this.#kinds.values()) {
      st.history = [];
      st.start = 0;
      st.floor = this.#rv;
    }
  }

  /** Sends a BOOKMARK at the current version to watches that asked for bookmarks. */
  bookmark(kind?: KindName): void {
    for (const [k, st] of this.#kinds) {
      if (kind !== undefined && k !== kind) continue;
      for (const w of st.watchers) {
        if (!w.bookmarks) continue;
        w.queue.push({ type: "BOOKMARK", object: { metadata: { resourceVersion: String(this.#rv) } } });
        w.wake?.();
      }
    }
  }

  /** Ends open watch streams (a dropped connection); with `error`, their iterators throw it. */
  dropWatches(kind?: KindName, error?: Error): void {
    for (const [k, st] of this.#kinds) {
      if (kind !== undefined && k !== kind) continue;
      for (const w of st.watchers) {
        w.closed = true;
        w.error = error;
        w.wake?.();
      }
    }
  }

  /** Open watch streams on a kind. */
  watcherCount(kind: KindName): number {
    return this.#kinds.get(kind)?.watchers.size ?? 0;
  }

  /**
   * The stored objects of a kind, not copied, for an in-process reader that treats them as
   * read-only (the simulator reads every kind every tick; deep copies were most of its cost).
   * Writes replace a stored object, never change it, so what the caller holds stays a snapshot.
   * Not part of the port: Wave's components read through `list` like on a real cluster.
   */
  peek<K extends KindName>(kind: K, namespace?: string): readonly Readonly<KindTypes[K]>[] {
    this.#expireEvents();
    // In key order, as `list` answers (callers' tie-breaks depend on it).
    // The same array while the kind is unchanged: a reader may keep what it derived from it.
    const st = this.#state(kind);
    if (namespace === undefined && st.peeked !== undefined) return st.peeked as KindTypes[K][];
    const objects = st.objects;
    const out: KubeObject[] = [];
    for (const key of sortedKeys(st)) {
      const o = objects.get(key);
      if (o !== undefined && (namespace === undefined || o.metadata.namespace === namespace)) out.push(o);
    }
    if (namespace === undefined) st.peeked = Object.freeze(out);
    return out as KindTypes[K][];
  }

  /** Watch events queued for watchers that have not read them yet (how far behind they are). */
  watchBacklog(kind?: KindName): number {
    let n = 0;
    for (const [k, st] of this.#kinds) {
      if (kind !== undefined && k !== kind) continue;
      for (const w of st.watchers) if (!w.closed) n += w.queue.length;
    }
    return n;
  }

  /**
   * Puts back an object saved by an earlier run (the embedded cluster's data dir): its uid,
   * creationTimestamp, generation and managedFields are kept (who owns a field, which policy is
   * older), only the resourceVersion is new. Not part of the port: no admission, no interceptors.
   */
  restore<K extends KindName>(kind: K, obj: KindTypes[K]): void {
    const o = copyJson(obj) as KubeObject;
    const nsName = this.#namespaceFor(kind, o.metadata.namespace);
    const name = o.metadata.name ?? "";
    if (!NAME_RE.test(name)) throw invalid(kind, name, "metadata.name: a saved object needs a name");
    const st = this.#state(kind);
    const key = keyOf(nsName, name);
    if (st.objects.has(key)) throw alreadyExists(kind, name);
    o.apiVersion = apiVersionOf(KINDS[kind]);
    o.kind = KINDS[kind].kind;
    if (nsName === undefined) delete o.metadata.namespace;
    else o.metadata.namespace = nsName;
    o.metadata.uid ??= this.#uid();
    o.metadata.creationTimestamp ??= rfc3339(this.#clock.now());
    o.metadata.generation ??= 1;
    o.metadata.resourceVersion = String(++this.#rv);
    st.objects.set(key, o);
    st.sortedKeys = undefined;
    this.#record(st, { rv: this.#rv, type: "ADDED", object: o });
  }

  // ---- the port ----

  list<K extends KindName>(kind: K, opts: ListOptions = {}): Promise<ObjectList<KindTypes[K]>> {
    return this.#run({ op: "list", kind, ...ns(opts.namespace) }, () => {
      const st = this.#state(kind);
      const filter = this.#filter(kind, opts.namespace, opts.labelSelector, opts.fieldSelector);
      // Every read is consistent: opts.resourceVersion ("0" = from cache) cannot be staler here.
      let listRv = this.#rv;
      let after: string | undefined;
      if (opts.continue !== undefined && opts.continue !== "") {
        const token = decodeContinue(opts.continue);
        if (token.rv < st.floor) {
          throw gone("The provided continue parameter is too old to display a consistent list result.");
        }
        listRv = token.rv;
        after = token.key;
      }
      const keys = sortedKeys(st);
      const items: KubeObject[] = [];
      let next: string | undefined;
      const limit = opts.limit !== undefined && opts.limit > 0 ? opts.limit : Infinity;
      for (const key of keys) {
        if (after !== undefined && key <= after) continue;
        const obj = st.objects.get(key);
        if (obj === undefined || !filter(obj)) continue;
        if (items.length >= limit) {
          next = encodeContinue(
            listRv,
            keyOf(items.at(-1)?.metadata.namespace, items.at(-1)?.metadata.name ?? ""),
          );
          break;
        }
        // Stored objects are replaced by writes, never changed: frozen once, shared by every list.
        items.push(this.#sharedLists ? deepFreeze(obj) : copyJson(obj));
      }
      const out: ObjectList<KindTypes[K]> = {
        items: items as KindTypes[K][],
        resourceVersion: String(listRv),
      };
      if (next !== undefined) out.continue = next;
      return out;
    });
  }

  async *watch<K extends KindName>(
    kind: K,
    opts: WatchOptions,
    signal?: AbortSignal,
  ): AsyncIterable<WatchEvent<KindTypes[K]>> {
    await this.#run({ op: "watch", kind, ...ns(opts.namespace) }, () => undefined);
    if (signal?.aborted) return;
    const st = this.#state(kind);
    const matches = this.#filter(kind, opts.namespace, opts.labelSelector, opts.fieldSelector);
    const w: Watcher = {
      matches,
      bookmarks: opts.allowWatchBookmarks ?? false,
      queue: [],
      wake: undefined,
      closed: false,
      error: undefined,
    };
    // Replay and registration happen in one synchronous step so no event falls between them.
    const from = opts.resourceVersion;
    if (from === "" || from === "0") {
      for (const key of sortedKeys(st)) {
        const obj = st.objects.get(key);
        if (obj !== undefined && matches(obj)) w.queue.push({ type: "ADDED", object: copyJson(obj) });
      }
    } else {
      const rv = Number(from);
      if (!Number.isSafeInteger(rv) || rv < 0) throw badRequest(`invalid resourceVersion "${from}"`);
      if (rv < st.floor) {
        yield {
          type: "ERROR",
          object: {
            apiVersion: "v1",
            kind: "Status",
            status: "Failure",
            code: 410,
            reason: "Expired",
            message: `too old resource version: ${rv} (${st.floor + 1})`,
          },
        };
        return;
      }
      for (let i = st.start; i < st.history.length; i++) {
        const ev = st.history[i];
        if (ev !== undefined && ev.rv > rv) deliver(w, ev);
      }
    }
    st.watchers.add(w);
    const stop = new AbortController();
    const close = (): void => {
      w.closed = true;
      w.wake?.();
    };
    signal?.addEventListener("abort", close, { once: true });
    if (w.bookmarks && this.#bookmarkIntervalMs > 0) void this.#bookmarkLoop(w, stop.signal);
    if (opts.timeoutSeconds !== undefined && opts.timeoutSeconds > 0) {
      this.#clock.sleep(opts.timeoutSeconds * 1000, stop.signal).then(close, () => undefined);
    }
    try {
      for (;;) {
        if (w.closed && (w.error !== undefined || signal?.aborted)) break;
        const ev = w.queue.shift();
        if (ev !== undefined) {
          yield ev as WatchEvent<KindTypes[K]>;
          continue;
        }
        if (w.closed) break;
        await new Promise<void>((resolve) => (w.wake = resolve));
        w.wake = undefined;
      }
      if (w.error !== undefined) throw w.error;
    } finally {
      st.watchers.delete(w);
      signal?.removeEventListener("abort", close);
      stop.abort();
    }
  }

  get<K extends KindName>(kind: K, name: string, namespace?: string): Promise<KindTypes[K]> {
    const nsName = this.#namespaceFor(kind, namespace);
    return this.#run({ op: "get", kind, name, ...ns(nsName) }, () => {
      const obj = this.#state(kind).objects.get(keyOf(nsName, name));
      if (obj === undefined) throw notFound(kind, name);
      return copyJson(obj) as KindTypes[K];
    });
  }

  create<K extends KindName>(kind: K, obj: KindTypes[K], opts: WriteOptions = {}): Promise<KindTypes[K]> {
    const { meta, nsName, request } = this.#written("create", kind, obj, opts);
    return this.#run(request, () => {
      let input: unknown = obj;
      if (opts.fieldManager && meta !== undefined && typeof meta === "object") {
        const withOwner = copyJson(obj) as KubeObject;
        this.#recordUpdate(undefined, withOwner, opts.fieldManager);
        input = withOwner;
      }
      return this.#create(kind, input, nsName, opts.namespace, opts.dryRun ?? false) as KindTypes[K];
    });
  }

  replace<K extends KindName>(kind: K, obj: KindTypes[K], opts: WriteOptions = {}): Promise<KindTypes[K]> {
    const { meta, nsName, request } = this.#written("replace", kind, obj, opts);
    return this.#run(request, () => {
      if (!meta?.name) throw badRequest("name is required for an update");
      checkNamespaceMatch(KINDS[kind].namespaced, opts.namespace, meta.namespace);
      const current = this.#state(kind).objects.get(keyOf(nsName, meta.name));
      if (current === undefined) throw notFound(kind, meta.name);
      const rv = meta.resourceVersion;
      if (rv !== undefined && rv !== "" && rv !== current.metadata.resourceVersion)
        throw conflict(kind, meta.name);
      if (meta.uid !== undefined && meta.uid !== "" && meta.uid !== current.metadata.uid) {
        throw conflict(
          kind,
          meta.name,
          `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${current.metadata.uid ?? ""}`,
        );
      }
      const next = copyJson(obj) as KubeObject;
      // managedFields left out of an update are kept, as on the apiserver.
      if (next.metadata.managedFields === undefined && current.metadata.managedFields !== undefined)
        next.metadata.managedFields = copyJson(current.metadata.managedFields);
      this.#recordUpdate(current, next, opts.fieldManager);
      return this.#update(kind, current, next, opts.dryRun ?? false) as KindTypes[K];
    });
  }

  patch<K extends KindName>(
    kind: K,
    name: string,
    patch: unknown,
    opts: PatchOptions = {},
  ): Promise<KindTypes[K]> {
    const nsName = this.#namespaceFor(kind, opts.namespace);
    return this.#run({ op: "patch", kind, name, ...ns(nsName) }, () => {
      const type = opts.type ?? "merge";
      if (type === "apply" && (opts.fieldManager === undefined || opts.fieldManager === "")) {
        throw badRequest(
          'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        );
      }
      if (type !== "json" && (patch === null || typeof patch !== "object" || Array.isArray(patch))) {
        throw badRequest(`a ${type} patch must be a JSON object`);
      }
      const current = this.#state(kind).objects.get(keyOf(nsName, name));
      if (current === undefined) {
        if (type !== "apply") throw notFound(kind, name);
        // Server-side apply creates what does not exist.
        const applied = copyJson(patch) as KubeObject;
        applied.metadata = { ...applied.metadata, name };
        const obj = this.#apply(kind, undefined, applied, name, opts);
        return this.#create(kind, obj, nsName, opts.namespace, opts.dryRun ?? false) as KindTypes[K];
      }
      // An apply to the status subresource only writes status (below), which apply does not own.
      if (type === "apply" && opts.subresource !== "status") {
        const applied = copyJson(patch) as KubeObject;
        const meta = (applied as { metadata?: unknown }).metadata;
        const wanted =
          meta !== null && typeof meta === "object" ? applied.metadata.resourceVersion : undefined;
        if (wanted !== undefined && wanted !== current.metadata.resourceVersion) throw conflict(kind, name);
        const next = this.#apply(kind, current, applied, name, opts);
        return this.#update(kind, current, next, opts.dryRun ?? false) as KindTypes[K];
      }
      let next: unknown;
      try {
        if (opts.subresource === "status") {
          // The status subresource: only the patch's status counts, the rest stays.
          const status = (patch as { status?: unknown }).status;
          next = status === undefined ? copyJson(current) : mergePatch(current, { status });
        } else next = type === "json" ? jsonPatch(current, patch) : mergePatch(current, patch);
      } catch (err) {
        if (err instanceof PatchError) throw invalid(kind, name, err.message);
        throw err;
      }
      if (next === null || typeof next !== "object" || Array.isArray(next)) {
        throw invalid(kind, name, "the patch does not produce an object");
      }
      const obj = next as KubeObject;
      const rawMeta = (obj as { metadata?: unknown }).metadata;
      if (rawMeta === null || typeof rawMeta !== "object") obj.metadata = {};
      // A resourceVersion inside the patch is a precondition, as on the apiserver.
      const wanted = obj.metadata.resourceVersion;
      if (wanted !== undefined && wanted !== current.metadata.resourceVersion) throw conflict(kind, name);
      this.#recordUpdate(current, obj, opts.fieldManager);
      return this.#update(kind, current, obj, opts.dryRun ?? false) as KindTypes[K];
    });
  }

  delete(kind: KindName, name: string, opts: DeleteOptions = {}): Promise<void> {
    const nsName = this.#namespaceFor(kind, opts.namespace);
    return this.#run({ op: "delete", kind, name, ...ns(nsName) }, () => {
      const current = this.#state(kind).objects.get(keyOf(nsName, name));
      if (current === undefined) throw notFound(kind, name);
      if (opts.uid !== undefined && opts.uid !== current.metadata.uid) {
        throw conflict(
          kind,
          name,
          `Precondition failed: UID in precondition: ${opts.uid}, UID in object meta: ${current.metadata.uid ?? ""}`,
        );
      }
      this.#delete(kind, current);
    });
  }

  /**
   * The Eviction API: a delete the pod's PodDisruptionBudget must allow, else 429 as on the
   * apiserver. The budget is computed at the eviction from the pods its selector matches and their
   * controllers' scale (the apiserver reads status.disruptionsAllowed, which the disruption
   * controller keeps from the same count).
   */
  evict(name: string, namespace: string, opts: { uid?: string } = {}): Promise<void> {
    return this.#run({ op: "delete", kind: "Pod", name, namespace }, () => {
      const current = this.#state("Pod").objects.get(keyOf(namespace, name)) as Pod | undefined;
      if (current === undefined) throw notFound("Pod", name);
      if (opts.uid !== undefined && opts.uid !== current.metadata.uid)
        throw conflict(
          "Pod",
          name,
          `Precondition failed: UID in precondition: ${opts.uid}, UID in object meta: ${current.metadata.uid ?? ""}`,
        );
      // A pod already terminating is not disrupted again: the apiserver accepts its eviction.
      if (current.metadata.deletionTimestamp === undefined) this.#checkDisruptionBudget(current);
      this.#delete("Pod", current);
    });
  }

  // ---- internals ----

  /** Throws what the apiserver's eviction answers when the pod's budget forbids deleting it. */
  #checkDisruptionBudget(pod: Pod): void {
    const ns = pod.metadata.namespace;
    const budgets = [...this.#state("PodDisruptionBudget").objects.values()].filter(
      (b) =>
        b.metadata.namespace === ns &&
        labelSelectorMatcher((b as PodDisruptionBudget).spec.selector)(pod.metadata.labels),
    ) as PodDisruptionBudget[];
    if (budgets.length === 0) return;
    if (budgets.length > 1)
      throw statusError(
        500,
        "InternalError",
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
      );
    const pdb = budgets[0] as PodDisruptionBudget;
    const match = labelSelectorMatcher(pdb.spec.selector);
    const pods = [...this.#state("Pod").objects.values()].filter(
      (p) =>
        p.metadata.namespace === ns &&
        p.metadata.deletionTimestamp === undefined &&
        !["Succeeded", "Failed"].includes((p as Pod).status?.phase ?? "") &&
        match(p.metadata.labels),
    ) as Pod[];
    const { desiredHealthy, currentHealthy } = pdbStatus(pdb, pods, (o) => {
      const owner = this.#state(o.kind as "ReplicaSet" | "StatefulSet").objects.get(keyOf(ns, o.name)) as
        { spec?: { replicas?: number } } | undefined;
      return owner ? (owner.spec?.replicas ?? 1) : undefined;
    });
    const healthy = podHealthy;
    // An unhealthy pod may go while the budget itself is met (IfHealthyBudget) or always.
    const allowed = healthy(pod)
      ? currentHealthy - desiredHealthy >= 1
      : pdb.spec.unhealthyPodEvictionPolicy === "AlwaysAllow" || currentHealthy >= desiredHealthy;
    if (!allowed)
      throw statusError(
        429,
        "TooManyRequests",
        `Cannot evict pod as it would violate the pod's disruption budget. The disruption budget ${pdb.metadata.name ?? ""} needs ${desiredHealthy} healthy pods and has ${currentHealthy} currently`,
      );
  }

  async #bookmarkLoop(w: Watcher, signal: AbortSignal): Promise<void> {
    while (!w.closed) {
      try {
        await this.#clock.sleep(this.#bookmarkIntervalMs, signal);
      } catch {
        return;
      }
      w.queue.push({ type: "BOOKMARK", object: { metadata: { resourceVersion: String(this.#rv) } } });
      w.wake?.();
    }
  }

  #state(kind: KindName): KindState {
    let st = this.#kinds.get(kind);
    if (st === undefined) {
      st = { kind, objects: new Map(), history: [], start: 0, floor: 0, watchers: new Set() };
      this.#kinds.set(kind, st);
    }
    return st;
  }

  async #run<T>(req: MemoryRequest, fn: () => T): Promise<T> {
    // Answer asynchronously like a network call, so callers cannot depend on synchronous effects.
    await Promise.resolve();
    for (const hook of [...this.#interceptors]) {
      const r = hook(req);
      if (r instanceof Error) throw r;
      if (r !== undefined) throw new KubeApiError(r);
    }
    this.#expireEvents();
    return fn();
  }

  /** Deletes the Events whose TTL ran out (the apiserver's etcd lease), oldest first. */
  #expireEvents(): void {
    if (this.#eventExpiry.size === 0) return;
    const now = this.#clock.now();
    const st = this.#state("Event");
    for (const [key, at] of this.#eventExpiry) {
      if (at > now) break;
      this.#eventExpiry.delete(key);
      const obj = st.objects.get(key);
      if (obj !== undefined) this.#delete("Event", obj);
    }
  }

  /** A create's or replace's object: its metadata, its namespace, and the request as #run records it. */
  #written(op: "create" | "replace", kind: KindName, obj: unknown, opts: WriteOptions) {
    const meta = (obj as KubeObject | undefined)?.metadata;
    const nsName = this.#namespaceFor(kind, opts.namespace ?? meta?.namespace);
    const request: MemoryRequest = { op, kind, ...ns(nsName), ...(meta?.name ? { name: meta.name } : {}) };
    return { meta, nsName, request };
  }

  #namespaceFor(kind: KindName, namespace: string | undefined): string | undefined {
    if (!KINDS[kind].namespaced) return undefined;
    return namespace === undefined || namespace === "" ? this.#defaultNamespace : namespace;
  }

  #filter(
    kind: KindName,
    namespace: string | undefined,
    labelSelector: string | undefined,
    fieldSelector: string | undefined,
  ): (obj: KubeObject) => boolean {
    try {
      const labels = labelMatcher(labelSelector);
      const fields = fieldMatcher(kind, fieldSelector);
      const nsFilter =
        KINDS[kind].namespaced && namespace !== undefined && namespace !== "" ? namespace : undefined;
      return (obj) =>
        (nsFilter === undefined || obj.metadata.namespace === nsFilter) &&
        labels(obj.metadata.labels) &&
        fields(obj);
    } catch (err) {
      if (err instanceof SelectorError) throw badRequest(err.message);
      throw err;
    }
  }

  #create(
    kind: KindName,
    input: unknown,
    nsName: string | undefined,
    requestNamespace: string | undefined,
    dryRun: boolean,
  ): KubeObject {
    if (input === null || typeof input !== "object" || typeof (input as KubeObject).metadata !== "object") {
      throw badRequest(`a ${KINDS[kind].kind} needs an object with metadata`);
    }
    const obj = copyJson(input) as KubeObject;
    const meta = obj.metadata;
    const k = KINDS[kind];
    checkNamespaceMatch(k.namespaced, requestNamespace, meta.namespace);
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== "") {
      throw statusError(500, "InternalError", "resourceVersion should not be set on objects to be created");
    }
    const st = this.#state(kind);
    if (k.namespaced && this.#enforceNamespaces && nsName !== undefined) {
      if (!this.#state("Namespace").objects.has(nsName)) throw notFound("Namespace", nsName);
    }
    if (!meta.name) {
      if (!meta.generateName)
        throw invalid(kind, "", "metadata.name: Required value: name or generateName is required");
      meta.name = this.#generateName(st, nsName, meta.generateName);
    }
    if (meta.name.length > 253 || !NAME_RE.test(meta.name)) {
      throw invalid(
        kind,
        meta.name,
        `metadata.name: Invalid value: "${meta.name}": must be a lowercase RFC 1123 subdomain`,
      );
    }
    const key = keyOf(nsName, meta.name);
    if (st.objects.has(key)) throw alreadyExists(kind, meta.name);
    obj.apiVersion = apiVersionOf(k);
    obj.kind = k.kind;
    if (nsName === undefined) delete meta.namespace;
    else meta.namespace = nsName;
    meta.uid = this.#uid();
    meta.creationTimestamp = rfc3339(this.#clock.now());
    meta.generation = 1;
    delete meta.deletionTimestamp;
    if (dryRun) return obj;
    meta.resourceVersion = String(++this.#rv);
    st.objects.set(key, obj);
    st.sortedKeys = undefined;
    this.#record(st, { rv: this.#rv, type: "ADDED", object: obj });
    return copyJson(obj);
  }

  #generateName(st: KindState, nsName: string | undefined, prefix: string): string {
    for (let attempt = 0; attempt < 100; attempt++) {
      let suffix = "";
      for (let i = 0; i < 5; i++) {
        suffix += GENERATE_ALPHABET.charAt(Math.floor(this.#random() * GENERATE_ALPHABET.length));
      }
      const name = prefix.slice(0, 58) + suffix;
      if (!st.objects.has(keyOf(nsName, name))) return name;
    }
    throw statusError(500, "InternalError", `could not generate a unique name from "${prefix}"`);
  }

  // Replaces `current` with `next` (immutable metadata kept), honouring finalizer rules.
  // Server-side apply (ssa.ts): the merged object with its managedFields, or a 409 of conflicts.
  #apply(
    kind: KindName,
    current: KubeObject | undefined,
    applied: KubeObject,
    name: string,
    opts: PatchOptions,
  ): KubeObject {
    const k = KINDS[kind];
    return serverSideApply({
      current,
      applied: {
        ...applied,
        apiVersion: applied.apiVersion ?? apiVersionOf(k),
        kind: applied.kind ?? k.kind,
      },
      manager: opts.fieldManager ?? "",
      force: opts.force ?? false,
      time: rfc3339(this.#clock.now()),
      resource: resourceName(kind),
      name,
    });
  }

  // A write given a fieldManager owns the fields it changed (operation Update); without one the
  // in-memory apiserver records nothing (the real one names the client after its user agent).
  #recordUpdate(current: KubeObject | undefined, next: KubeObject, fieldManager: string | undefined): void {
    if (fieldManager === undefined || fieldManager === "") return;
    const entries = recordUpdate(current, next, fieldManager, rfc3339(this.#clock.now()));
    if (entries === undefined) delete next.metadata.managedFields;
    else next.metadata.managedFields = entries;
  }

  #update(kind: KindName, current: KubeObject, next: KubeObject, dryRun: boolean): KubeObject {
    const k = KINDS[kind];
    const cm = current.metadata;
    const name = cm.name ?? "";
    next.apiVersion = apiVersionOf(k);
    next.kind = k.kind;
    next.metadata = {
      ...next.metadata,
      name,
      uid: cm.uid,
      creationTimestamp: cm.creationTimestamp,
      resourceVersion: cm.resourceVersion,
      generation: cm.generation,
    };
    if (cm.namespace === undefined) delete next.metadata.namespace;
    else next.metadata.namespace = cm.namespace;
    if (cm.deletionTimestamp === undefined) delete next.metadata.deletionTimestamp;
    else next.metadata.deletionTimestamp = cm.deletionTimestamp;
    for (const key of ["uid", "creationTimestamp", "resourceVersion", "generation"] as const) {
      if (next.metadata[key] === undefined) Reflect.deleteProperty(next.metadata, key);
    }
    if (cm.deletionTimestamp !== undefined) {
      const added = (next.metadata.finalizers ?? []).filter((f) => !(cm.finalizers ?? []).includes(f));
      if (added.length > 0) {
        throw invalid(
          kind,
          name,
          `metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`,
        );
      }
    }
    if (next.metadata.finalizers?.length === 0) delete next.metadata.finalizers;
    // An update that changes nothing is a no-op: no new version, no watch event.
    if (sameJson(current, next)) return copyJson(current);
    if (!sameSpec(current, next)) next.metadata.generation = (cm.generation ?? 0) + 1;
    if (dryRun) return next;
    const st = this.#state(kind);
    const key = keyOf(cm.namespace, name);
    if (cm.deletionTimestamp !== undefined && (next.metadata.finalizers ?? []).length === 0) {
      // The last finalizer is gone: the deletion completes.
      st.objects.delete(key);
      st.sortedKeys = undefined;
      next.metadata.resourceVersion = String(++this.#rv);
      this.#record(st, { rv: this.#rv, type: "DELETED", object: next, prev: current });
      return copyJson(next);
    }
    next.metadata.resourceVersion = String(++this.#rv);
    st.objects.set(key, next);
    this.#record(st, { rv: this.#rv, type: "MODIFIED", object: next, prev: current });
    return copyJson(next);
  }

  #delete(kind: KindName, current: KubeObject): void {
    const st = this.#state(kind);
    const cm = current.metadata;
    const key = keyOf(cm.namespace, cm.name ?? "");
    if (kind === "Namespace") {
      // Namespace deletion removes its contents first, as the namespace controller does.
      for (const k of Object.keys(KINDS) as KindName[]) {
        if (!KINDS[k].namespaced) continue;
        for (const obj of [...this.#state(k).objects.values()]) {
          if (obj.metadata.namespace === cm.name) this.#delete(k, obj);
        }
      }
    }
    if ((cm.finalizers ?? []).length > 0) {
      if (cm.deletionTimestamp !== undefined) return;
      const next = copyJson(current);
      next.metadata.deletionTimestamp = rfc3339(this.#clock.now());
      next.metadata.resourceVersion = String(++this.#rv);
      st.objects.set(key, next);
      this.#record(st, { rv: this.#rv, type: "MODIFIED", object: next, prev: current });
      return;
    }
    st.objects.delete(key);
    st.sortedKeys = undefined;
    // The deleted version shares all but its metadata with the stored one: stored objects are
    // replaced by writes, never changed, and every reader outside gets a copy (a deep copy here
    // was a third of a day's delete cost).
    const gone = { ...current, metadata: { ...current.metadata, resourceVersion: String(++this.#rv) } };
    this.#record(st, { rv: this.#rv, type: "DELETED", object: gone, prev: current });
  }

  #record(st: KindState, ev: StoredEvent): void {
    st.peeked = undefined;
    if (this.#eventTtlMs > 0 && st.kind === "Event") {
      const key = keyOf(ev.object.metadata.namespace, ev.object.metadata.name ?? "");
      this.#eventExpiry.delete(key);
      if (ev.type !== "DELETED") this.#eventExpiry.set(key, this.#clock.now() + this.#eventTtlMs);
    }
    st.history.push(ev);
    if (st.history.length - st.start > this.#historyLimit) {
      st.floor = st.history[st.start]?.rv ?? st.floor;
      st.start++;
      // Reclaim the dropped prefix in batches so trimming stays O(1) amortised.
      if (st.start >= this.#historyLimit) {
        st.history = st.history.slice(st.start);
        st.start = 0;
      }
    }
    for (const w of st.watchers) {
      if (!w.closed && deliver(w, ev)) w.wake?.();
    }
    if (this.#observers.size > 0) {
      const kind = st.kind;
      for (const fn of this.#observers) fn(kind, ev.type, ev.object);
    }
  }
}

/** The value with every object and array in it frozen (one already frozen is frozen throughout). */
function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}

/** A kind's keys in order; they change only when an object is added or removed, not on every read. */
function sortedKeys(st: KindState): readonly string[] {
  st.sortedKeys ??= [...st.objects.keys()].sort();
  return st.sortedKeys;
}

const ns = (namespace: string | undefined): { namespace?: string } =>
  namespace === undefined ? {} : { namespace };

function checkNamespaceMatch(
  namespaced: boolean,
  requestNs: string | undefined,
  objectNs: string | undefined,
): void {
  if (!namespaced) return;
  if (
    requestNs !== undefined &&
    requestNs !== "" &&
    objectNs !== undefined &&
    objectNs !== "" &&
    requestNs !== objectNs
  ) {
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  }
}

// Translates a stored event for one watcher as the apiserver's cacher does: an object that starts
// matching the filter is ADDED, one that stops matching is DELETED (its previous state, new version).
function deliver(w: Watcher, ev: StoredEvent): boolean {
  const now = ev.type !== "DELETED" && w.matches(ev.object);
  const before = ev.prev !== undefined && w.matches(ev.prev);
  let out: WatchEvent<KubeObject> | undefined;
  if (ev.type === "ADDED") {
    if (now) out = { type: "ADDED", object: copyJson(ev.object) };
  } else if (ev.type === "MODIFIED") {
    if (now && before) out = { type: "MODIFIED", object: copyJson(ev.object) };
    else if (now) out = { type: "ADDED", object: copyJson(ev.object) };
    else if (before && ev.prev !== undefined) out = { type: "DELETED", object: withRv(ev.prev, ev.rv) };
  } else if (before) {
    out = { type: "DELETED", object: copyJson(ev.object) };
  }
  if (out === undefined) return false;
  w.queue.push(out);
  return true;
}

function withRv(obj: KubeObject, rv: number): KubeObject {
  const copy = copyJson(obj);
  copy.metadata.resourceVersion = String(rv);
  return copy;
}

function encodeContinue(rv: number, key: string): string {
  return Buffer.from(JSON.stringify({ rv, key })).toString("base64url");
}

function decodeContinue(token: string): { rv: number; key: string } {
  try {
    const v = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as { rv?: unknown; key?: unknown };
    if (typeof v.rv === "number" && typeof v.key === "string") return { rv: v.rv, key: v.key };
  } catch {
    // fall through to the error below
  }
  throw badRequest(`invalid continue token "${token}"`);
}
