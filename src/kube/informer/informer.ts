// A hardened informer over the KubeClient port: a paginated list, then a watch from the list's
// resourceVersion, feeding a cache (namespace/name → object) and typed add/update/delete events.
//
// Failure handling, all timed by the injected Clock:
// - 410 Gone (ERROR event or error) → relist and emit only the diff against the cache, so
//   consumers see no lost and no duplicated objects.
// - any other error, or a stream that ends → re-watch from the last resourceVersion (events and
//   bookmarks both advance it) after exponential backoff with full jitter; the backoff resets
//   when the previous watch was healthy for `healthyAfterMs` (then the re-watch is immediate).
// - a watch silent for longer than `watchdogMs` (bookmarks count as life; they are requested)
//   is aborted and restarted like an ended one.
// - resync (`resyncMs`) re-emits `update(obj, obj)` for every cached object from the cache, as
//   client-go does; it costs no apiserver traffic. A relist only happens after 410.
//
// Listeners receive the cached objects themselves: treat them as read-only (copy before changing).
//
// `transform` maps every listed or watched object before it is cached or emitted, so a consumer
// that needs a few fields (the agent: src/agent/trim.ts) never holds whole objects; `undefined`
// leaves an object out (if it was cached, it goes as a delete). A transform must keep
// metadata.name, namespace and resourceVersion: keys and change detection read them.
import { KubeApiError, isGone, type KubeClient } from "../port.ts";
import type { KindName, KindTypes } from "../kinds.ts";
import { Backoff, type BackoffOptions } from "../../shared/backoff.ts";
import { realClock, type Clock } from "../../shared/clock.ts";
import { silentLogger, type Logger } from "../../shared/log.ts";
import { diffPage, gone, objectKey, type Change } from "./diff.ts";

export interface InformerHandlers<T> {
  add: (obj: T) => void;
  /** `old === obj` (same resourceVersion) for a periodic resync. */
  update: (obj: T, old: T) => void;
  /** The object's last state (from the DELETED event, or the cache after a relist). */
  delete: (obj: T) => void;
}

export type InformerPhase = "idle" | "listing" | "watching" | "backoff" | "stopped";

export interface RetryInfo {
  /** 1-based attempts since the last reset. */
  attempt: number;
  delayMs: number;
  reason: "gone" | "error" | "ended" | "watchdog";
  error?: unknown;
}

export interface InformerStats {
  /** Successful full lists (the first one included). */
  lists: number;
  /** Lists after the first (410 recovery). */
  relists: number;
  listFailures: number;
  watchStarts: number;
  /** Reconnections after the first watch, whatever the cause. */
  watchRestarts: number;
  watchErrors: number;
  watchdogFires: number;
  /** 410 Gone answers seen. */
  gones: number;
  /** Watch events received (bookmarks and errors included). */
  events: number;
  bookmarks: number;
  resyncs: number;
  lastResourceVersion: string;
  lastError: string | undefined;
}

export interface InformerOptions<K extends KindName> {
  client: KubeClient;
  kind: K;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  clock?: Clock;
  log?: Logger;
  /** Page size for lists (default 500). */
  pageSize?: number;
  /** Reconnect backoff (default 1 s doubling to 30 s, full jitter). */
  backoff?: BackoffOptions;
  /** A watch that lived this long resets the backoff (default 30 s). */
  healthyAfterMs?: number;
  /** Abort a watch silent for this long (default 180 s; 0 disables). */
  watchdogMs?: number;
  /** Periodic resync from the cache (default 0 = off). */
  resyncMs?: number;
  /** Server-side watch timeout, randomised in [t, 2t) to spread reconnects (default 300 s). */
  watchTimeoutSeconds?: number;
  /** Uniform [0,1) source for the watch timeout spread (backoff has its own in `backoff`). */
  random?: () => number;
  /** Called before each reconnect delay (tests record the schedule; metrics may count). */
  onRetry?: (info: RetryInfo) => void;
  /**
   * Applied to each listed/watched object before caching (see the header): keep name, namespace
   * and resourceVersion; undefined leaves the object out.
   */
  transform?: (obj: KindTypes[K]) => KindTypes[K] | undefined;
  /**
   * What the cache keeps of each (transformed) object; default all of it. An informer whose
   * listeners keep what they need (the agent forwards objects, ADR 0021) keeps `stub`s: the
   * name, namespace and resourceVersion are all a relist's diff and the watch's updates compare.
   * `list`, `get`, the `old` of an update and the object of a relist's delete are then stubs.
   */
  cacheAs?: (obj: KindTypes[K]) => KindTypes[K];
}

/** An object reduced to what an informer's cache compares (see `cacheAs`). */
export function stub<T extends { metadata: { name?: string; namespace?: string; resourceVersion?: string } }>(
  obj: T,
): T {
  const m = obj.metadata;
  const metadata: T["metadata"] = {};
  if (m.name !== undefined) metadata.name = m.name;
  if (m.namespace !== undefined) metadata.namespace = m.namespace;
  if (m.resourceVersion !== undefined) metadata.resourceVersion = m.resourceVersion;
  return { metadata } as T;
}

type Listeners<T> = { [E in keyof InformerHandlers<T>]: Set<InformerHandlers<T>[E]> };

interface WatchOutcome {
  reason: RetryInfo["reason"] | "stopped";
  healthy: boolean;
  error?: unknown;
}

export class Informer<K extends KindName> {
  readonly kind: K;
  readonly #client: KubeClient;
  readonly #opts: InformerOptions<K>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #backoff: Backoff;
  readonly #cache = new Map<string, KindTypes[K]>();
  readonly #listeners: Listeners<KindTypes[K]> = { add: new Set(), update: new Set(), delete: new Set() };
  readonly #stats: InformerStats = {
    lists: 0,
    relists: 0,
    listFailures: 0,
    watchStarts: 0,
    watchRestarts: 0,
    watchErrors: 0,
    watchdogFires: 0,
    gones: 0,
    events: 0,
    bookmarks: 0,
    resyncs: 0,
    lastResourceVersion: "",
    lastError: undefined,
  };
  readonly #stop = new AbortController();
  readonly #synced: Promise<void>;
  #resolveSynced: () => void = () => undefined;
  #rejectSynced: (err: Error) => void = () => undefined;
  #hasSynced = false;
  #phase: InformerPhase = "idle";
  #done: Promise<void> | undefined;

  constructor(opts: InformerOptions<K>) {
    this.kind = opts.kind;
    this.#client = opts.client;
    this.#opts = opts;
    this.#clock = opts.clock ?? realClock;
    this.#log = (opts.log ?? silentLogger).child({ informer: opts.kind, namespace: opts.namespace });
    // Capped at 10 s (client-go caps at 30 s): with full jitter a watcher is back at most ~10 s
    // after its apiserver returns, and a few watchers per process cannot storm it.
    this.#backoff = new Backoff(opts.backoff ?? { initialMs: 1000, maxMs: 10_000 });
    this.#synced = new Promise<void>((resolve, reject) => {
      this.#resolveSynced = resolve;
      this.#rejectSynced = reject;
    });
    // Nobody may await `synced`; a stop before the first list must not become an unhandled rejection.
    this.#synced.catch(() => undefined);
  }

  /** Subscribes to an event; returns the unsubscriber. */
  on<E extends keyof InformerHandlers<KindTypes[K]>>(
    event: E,
    fn: InformerHandlers<KindTypes[K]>[E],
  ): () => void {
    const set = this.#listeners[event] as Set<InformerHandlers<KindTypes[K]>[E]>;
    set.add(fn);
    return () => set.delete(fn);
  }

  /** Resolves after the first full list has been emitted; rejects if stopped before that. */
  get synced(): Promise<void> {
    return this.#synced;
  }

  get hasSynced(): boolean {
    return this.#hasSynced;
  }

  get phase(): InformerPhase {
    return this.#phase;
  }

  /** A copy of the counters (for /metrics). */
  get stats(): InformerStats {
    return { ...this.#stats };
  }

  /** Cached objects, sorted by namespace/name. */
  list(): KindTypes[K][] {
    return [...this.#cache.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
  }

  get(name: string, namespace?: string): KindTypes[K] | undefined {
    return this.#cache.get(namespace ? `${namespace}/${name}` : name);
  }

  get size(): number {
    return this.#cache.size;
  }

  /** Starts listing and watching in the background; `signal` (or stop()) ends it. */
  start(signal?: AbortSignal): this {
    if (this.#done !== undefined) return this;
    if (this.#stop.signal.aborted) throw new Error(`informer ${this.kind} was stopped; create a new one`);
    signal?.addEventListener("abort", () => this.#stop.abort(), { once: true });
    if (signal?.aborted) this.#stop.abort();
    const loops = [this.#run()];
    if ((this.#opts.resyncMs ?? 0) > 0) loops.push(this.#resyncLoop(this.#opts.resyncMs ?? 0));
    this.#done = Promise.all(loops)
      .then(
        () => undefined,
        // The loops handle every expected failure; this is a bug, and it must not go unheard.
        (err: unknown) => {
          this.#stats.lastError = err instanceof Error ? err.message : JSON.stringify(err);
          this.#log.error("informer loop crashed", { error: err });
          this.#stop.abort();
        },
      )
      .then(() => {
        this.#phase = "stopped";
        if (!this.#hasSynced)
          this.#rejectSynced(new Error(`informer ${this.kind} stopped before its first list`));
      });
    return this;
  }

  /** Stops and waits until the loops have exited. */
  async stop(): Promise<void> {
    this.#stop.abort();
    if (this.#done === undefined) {
      this.#phase = "stopped";
      this.#rejectSynced(new Error(`informer ${this.kind} stopped before its first list`));
      return;
    }
    await this.#done;
  }

  // ---- the loop ----

  async #run(): Promise<void> {
    const stop = this.#stop.signal;
    let needList = true;
    let watched = false;
    while (!stop.aborted) {
      let outcome: WatchOutcome;
      try {
        if (needList) {
          await this.#relist(stop);
          needList = false;
        }
        if (watched) this.#stats.watchRestarts++;
        watched = true;
        outcome = await this.#watchOnce(stop);
      } catch (err) {
        // Only the list throws; #watchOnce reports its failures as outcomes.
        if (this.#stopped()) break;
        if (isGone(err)) this.#stats.gones++;
        outcome = { reason: isGone(err) ? "gone" : "error", healthy: false, error: err };
      }
      if (this.#stopped() || outcome.reason === "stopped") break;
      if (outcome.reason === "gone") needList = true;
      if (outcome.error !== undefined) {
        this.#stats.lastError =
          outcome.error instanceof Error ? outcome.error.message : JSON.stringify(outcome.error);
      }
      if (outcome.healthy) this.#backoff.reset();
      const delayMs = outcome.healthy ? 0 : this.#backoff.next();
      const info: RetryInfo = { attempt: this.#backoff.attempt, delayMs, reason: outcome.reason };
      if (outcome.error !== undefined) info.error = outcome.error;
      this.#opts.onRetry?.(info);
      this.#log[outcome.reason === "error" ? "warn" : "debug"]("informer reconnecting", {
        reason: outcome.reason,
        delayMs,
        attempt: info.attempt,
        error: outcome.error,
      });
      if (delayMs > 0) {
        this.#phase = "backoff";
        try {
          await this.#clock.sleep(delayMs, stop);
        } catch {
          break;
        }
      }
    }
  }

  /**
   * A fresh paged LIST with this informer's selectors and transform, page by page, without
   * touching the cache: its relist, and a snapshot read beside the watch (the agent, ADR 0021).
   */
  async *pages(signal?: AbortSignal): AsyncGenerator<{ items: KindTypes[K][]; resourceVersion: string }> {
    const t = this.#opts.transform;
    let cont: string | undefined;
    do {
      signal?.throwIfAborted();
      const page = await this.#client.list(this.kind, {
        ...this.#selectors(),
        limit: this.#opts.pageSize ?? 500,
        ...(cont !== undefined ? { continue: cont } : {}),
      });
      const items: KindTypes[K][] = [];
      if (t === undefined) items.push(...page.items);
      else
        for (const item of page.items) {
          const kept = t(item);
          if (kept !== undefined) items.push(kept);
        }
      yield { items, resourceVersion: page.resourceVersion };
      cont = page.continue;
    } while (cont !== undefined && cont !== "");
  }

  async #relist(stop: AbortSignal): Promise<void> {
    this.#phase = "listing";
    let rv = "";
    let listed = 0;
    let changed = 0;
    const seen = new Set<string>();
    try {
      for await (const page of this.pages(stop)) {
        if (stop.aborted) return;
        if (rv === "") rv = page.resourceVersion;
        listed += page.items.length;
        // Each page is applied as it comes, so a list of 300,000 pods is never held whole; what
        // the list no longer has is deleted once its last page is in.
        const changes = diffPage(this.#cache, page.items, seen);
        this.#applyAll(changes);
        changed += changes.length;
      }
    } catch (err) {
      if (stop.aborted) return;
      this.#stats.listFailures++;
      throw err;
    }
    if (stop.aborted) return;
    const deletes = gone(this.#cache, seen);
    this.#applyAll(deletes);
    changed += deletes.length;
    if (this.#stats.lists > 0) this.#stats.relists++;
    this.#stats.lists++;
    this.#setRv(rv);
    this.#log.debug("informer listed", { items: listed, changes: changed, resourceVersion: rv });
    if (!this.#hasSynced) {
      this.#hasSynced = true;
      this.#resolveSynced();
    }
  }

  async #watchOnce(stop: AbortSignal): Promise<WatchOutcome> {
    this.#phase = "watching";
    const ac = new AbortController();
    const onStop = (): void => ac.abort();
    stop.addEventListener("abort", onStop, { once: true });
    // stop() may have come while the list was finishing: the listener above would never fire.
    if (stop.aborted) ac.abort();
    const started = this.#clock.now();
    let last = started;
    const dog = { fired: false };
    const watchdogMs = this.#opts.watchdogMs ?? 180_000;
    const watchdog =
      watchdogMs > 0
        ? this.#watchdog(
            ac,
            watchdogMs,
            () => last,
            () => (dog.fired = true),
          )
        : Promise.resolve();
    const base = this.#opts.watchTimeoutSeconds ?? 300;
    const timeoutSeconds = base + Math.floor((this.#opts.random ?? Math.random)() * base);
    let gone = false;
    let errored = false;
    let error: unknown;
    this.#stats.watchStarts++;
    try {
      const stream = this.#client.watch(
        this.kind,
        {
          ...this.#selectors(),
          resourceVersion: this.#stats.lastResourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds,
        },
        ac.signal,
      );
      for await (const ev of stream) {
        last = this.#clock.now();
        this.#stats.events++;
        if (ev.type === "ERROR") {
          if (ev.object.code === 410) {
            this.#stats.gones++;
            gone = true;
            break;
          }
          throw new KubeApiError(ev.object);
        }
        if (ev.type === "BOOKMARK") {
          this.#stats.bookmarks++;
          this.#setRv(ev.object.metadata.resourceVersion);
          continue;
        }
        const key = objectKey(ev.object);
        const old = this.#cache.get(key);
        const rv = ev.object.metadata.resourceVersion;
        const obj = this.#opts.transform ? this.#opts.transform(ev.object) : ev.object;
        if (ev.type === "DELETED" || obj === undefined) {
          // Deleted, or no longer kept by the transform: either way it leaves the cache.
          if (old !== undefined) {
            this.#cache.delete(key);
            this.#emit({ type: "delete", obj: obj ?? old });
          }
        } else {
          this.#cache.set(key, this.#cached(obj));
          // ADDED for a known key (a replay) is an update; an unchanged version is no event at all.
          if (old === undefined) this.#emit({ type: "add", obj });
          else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) {
            this.#emit({ type: "update", obj, old });
          }
        }
        this.#setRv(rv);
      }
    } catch (err) {
      // Our own aborts (stop, watchdog) are not failures.
      if (!stop.aborted && !dog.fired) {
        errored = true;
        error = err;
      }
    } finally {
      ac.abort();
      stop.removeEventListener("abort", onStop);
      await watchdog;
    }
    if (stop.aborted) return { reason: "stopped", healthy: false };
    // A stalled watch was alive only until its last event; any other for its whole life.
    const lived = (dog.fired ? last : this.#clock.now()) - started;
    const healthy = lived >= (this.#opts.healthyAfterMs ?? 30_000);
    if (errored) {
      this.#stats.watchErrors++;
      if (isGone(error)) {
        this.#stats.gones++;
        return { reason: "gone", healthy, error };
      }
      return { reason: "error", healthy, error };
    }
    return { reason: gone ? "gone" : dog.fired ? "watchdog" : "ended", healthy };
  }

  async #watchdog(
    ac: AbortController,
    limitMs: number,
    last: () => number,
    onFire: () => void,
  ): Promise<void> {
    while (!ac.signal.aborted) {
      const wait = last() + limitMs - this.#clock.now();
      if (wait <= 0) {
        this.#stats.watchdogFires++;
        this.#log.warn("informer watch silent too long; restarting it", {
          silentMs: this.#clock.now() - last(),
        });
        onFire();
        ac.abort();
        return;
      }
      try {
        await this.#clock.sleep(wait, ac.signal);
      } catch {
        return;
      }
    }
  }

  async #resyncLoop(everyMs: number): Promise<void> {
    const stop = this.#stop.signal;
    while (!stop.aborted) {
      try {
        await this.#clock.sleep(everyMs, stop);
      } catch {
        return;
      }
      if (!this.#hasSynced) continue;
      this.#stats.resyncs++;
      for (const obj of this.list()) this.#emit({ type: "update", obj, old: obj });
    }
  }

  // A method call, so the compiler does not narrow the flag across awaits.
  #stopped(): boolean {
    return this.#stop.signal.aborted;
  }

  #selectors(): { namespace?: string; labelSelector?: string; fieldSelector?: string } {
    const o = this.#opts;
    return {
      ...(o.namespace !== undefined ? { namespace: o.namespace } : {}),
      ...(o.labelSelector !== undefined ? { labelSelector: o.labelSelector } : {}),
      ...(o.fieldSelector !== undefined ? { fieldSelector: o.fieldSelector } : {}),
    };
  }

  #setRv(rv: string | undefined): void {
    if (rv !== undefined && rv !== "") this.#stats.lastResourceVersion = rv;
  }

  /** Applies list changes to the cache, then tells the listeners. */
  #applyAll(changes: readonly Change<KindTypes[K]>[]): void {
    for (const c of changes) {
      if (c.type === "delete") this.#cache.delete(objectKey(c.obj));
      else this.#cache.set(objectKey(c.obj), this.#cached(c.obj));
    }
    for (const c of changes) this.#emit(c);
  }

  #cached(obj: KindTypes[K]): KindTypes[K] {
    return this.#opts.cacheAs ? this.#opts.cacheAs(obj) : obj;
  }

  #emit(c: Change<KindTypes[K]>): void {
    // One failing listener must neither stop the informer nor starve the others.
    const call = (fn: () => void): void => {
      try {
        fn();
      } catch (err) {
        this.#log.error("informer listener failed", { event: c.type, error: err });
      }
    };
    if (c.type === "add") for (const fn of this.#listeners.add) call(() => fn(c.obj));
    else if (c.type === "update") for (const fn of this.#listeners.update) call(() => fn(c.obj, c.old));
    else for (const fn of this.#listeners.delete) call(() => fn(c.obj));
  }
}
