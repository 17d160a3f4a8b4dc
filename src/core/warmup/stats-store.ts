// Durable warmup counters. The controller's events go to core's store (warmup_events), and the
// dashboard's counters are the pure reducer (stats.ts) folded over a window of stored events, so
// a core restart does not reset them and every core replica on one database shows the same.
//
// Writing never blocks a reconcile: `record` only queues; a loop writes the queue in batches,
// retries a failed write with capped backoff (the store ignores duplicates, so a batch whose
// commit was not acknowledged is simply sent again) and drops the oldest events, logged, past a
// bound. Reading is cached per cluster: the dashboard asks on every snapshot, the store is read at
// most once per `refreshMs` (and right after this replica's own writes).
import type { Store, StoredWarmupEvent } from "../store/store.ts";
import { backoffCeiling } from "../../shared/backoff.ts";
import type { Clock } from "../../shared/clock.ts";
import type { Logger } from "../../shared/log.ts";
import { missReasons, reduceCounters } from "../../warmup/stats.ts";
import type { MissReason, WarmupCounters, WarmupEvent } from "../../warmup/stats.ts";

const HOUR = 3_600_000;
/** The dashboard's window: hits, misses and time saved of the last 24 h. */
export const DEFAULT_WINDOW_MS = 24 * HOUR;
/** Rows read per store query while folding a window. */
const PAGE = 5_000;
/** Events per write transaction. */
const BATCH = 1_000;

export function toStored(clusterId: string, e: WarmupEvent): StoredWarmupEvent {
  const base = { clusterId, pool: e.pool, at: e.at };
  switch (e.type) {
    case "created":
      return { ...base, type: "created", pod: e.pod };
    case "hit":
      return {
        ...base,
        type: "hit",
        node: e.node,
        pod: e.pod,
        since: e.since,
        seconds: e.seconds,
        saved: e.saved,
      };
    case "miss":
      return { ...base, type: "miss", node: e.node, pod: e.pod, reason: e.reason, since: e.since };
    case "prepull":
      return { ...base, type: "prepull", node: e.node, image: e.image, reason: e.outcome };
  }
}

const isMissReason = (r: string | undefined): r is MissReason =>
  (missReasons as readonly (string | undefined)[]).includes(r);

export function fromStored(r: StoredWarmupEvent): WarmupEvent {
  const base = { pool: r.pool, at: r.at };
  switch (r.type) {
    case "created":
      return { ...base, type: "created", pod: r.pod ?? "" };
    case "hit":
      return {
        ...base,
        type: "hit",
        node: r.node ?? "",
        ...(r.pod === undefined ? {} : { pod: r.pod }),
        ...(r.since === undefined ? {} : { since: r.since }),
        ...(r.seconds === undefined ? {} : { seconds: r.seconds }),
        ...(r.saved === undefined ? {} : { saved: r.saved }),
      };
    case "miss":
      return {
        ...base,
        type: "miss",
        // A reason this build does not know (written by a newer one) is still a miss.
        reason: isMissReason(r.reason) ? r.reason : "lost",
        ...(r.node === undefined ? {} : { node: r.node }),
        ...(r.pod === undefined ? {} : { pod: r.pod }),
        ...(r.since === undefined ? {} : { since: r.since }),
      };
    case "prepull":
      return {
        ...base,
        type: "prepull",
        node: r.node ?? "",
        image: r.image ?? "",
        outcome: r.reason === "pulled" ? "pulled" : "failed",
      };
  }
}

/** Folds stored events with the same reducer the controller's in-memory events use. */
export function foldStored(rows: Iterable<StoredWarmupEvent>, init: WarmupCounters = {}): WarmupCounters {
  let c = init;
  for (const r of rows) c = reduceCounters(c, fromStored(r));
  return c;
}

const keyOf = (r: StoredWarmupEvent): string =>
  [r.pool, r.type, r.node ?? "", r.pod ?? "", r.image ?? "", r.reason ?? ""].join("\u0000");

/**
 * Counters of a cluster's events in [from, to), read in pages. The store answers oldest first; the
 * next page starts at the last row's instant, asks for as many more rows as were already folded
 * at that instant (they come first again) and skips them by natural key, so every row is folded
 * exactly once however many share one millisecond.
 */
export async function countersInWindow(
  store: Pick<Store, "warmupEvents">,
  clusterId: string,
  from: number,
  to: number,
  pageSize = PAGE,
): Promise<WarmupCounters> {
  let counters: WarmupCounters = {};
  let cursor = from;
  let seen = new Set<string>();
  for (;;) {
    const limit = pageSize + seen.size;
    const rows = await store.warmupEvents({ clusterId, from: cursor, to, limit });
    counters = foldStored(
      rows.filter((r) => !(r.at === cursor && seen.has(keyOf(r)))),
      counters,
    );
    const last = rows.at(-1);
    if (rows.length < limit || !last) return counters;
    if (last.at !== cursor) {
      cursor = last.at;
      seen = new Set();
    }
    for (const r of rows) if (r.at === cursor) seen.add(keyOf(r));
  }
}

export interface DurableWarmupStatsOptions {
  store: Pick<Store, "writeWarmupEvents" | "warmupEvents">;
  /** The cluster this replica's controller acts on; its events are stored under this id. */
  clusterId: string;
  clock: Clock;
  log: Logger;
  /** Counted window, ms (default 24 h). */
  windowMs?: number;
  /** Queue written this often, ms (default 5 s). */
  flushMs?: number;
  /** Cached counters are re-read from the store when older than this, ms (default 30 s). */
  refreshMs?: number;
  /** Oldest events are dropped (and logged) beyond this many unwritten ones (default 10 000). */
  maxPending?: number;
  /** Largest retry delay after failed writes, ms (default 5 min). */
  maxBackoffMs?: number;
  /**
   * Warm cost per pool over [from, to) (the Warmup page's function, injected: core/warmup does
   * not read views): read with the counters, so the window's figures are of one instant.
   */
  warmCost?: (clusterId: string, from: number, to: number) => Promise<Readonly<Record<string, number>>>;
}

/** The counted window's figures, all of one read: hits, misses, time saved and warm cost. */
export interface WarmupWindow {
  counters: WarmupCounters;
  /** Dollars per pool (empty without a `warmCost` reader). */
  warmCost: Readonly<Record<string, number>>;
  /** The window read, [from, to); both 0 until the first read. */
  from: number;
  to: number;
}

interface Cached extends WarmupWindow {
  /** When the window was read; -Infinity until the first read. */
  at: number;
  reading?: Promise<WarmupCounters> | undefined;
}

export class DurableWarmupStats {
  readonly clusterId: string;
  readonly windowMs: number;
  readonly #o: Required<
    Omit<DurableWarmupStatsOptions, "store" | "clusterId" | "clock" | "log" | "warmCost">
  >;
  readonly #warmCost: DurableWarmupStatsOptions["warmCost"];
  readonly #store: DurableWarmupStatsOptions["store"];
  readonly #clock: Clock;
  readonly #log: Logger;
  #pending: StoredWarmupEvent[] = [];
  #failures = 0;
  #dropped = 0;
  readonly #cache = new Map<string, Cached>();
  #writing: Promise<boolean> | undefined;

  constructor(o: DurableWarmupStatsOptions) {
    this.clusterId = o.clusterId;
    this.windowMs = o.windowMs ?? DEFAULT_WINDOW_MS;
    this.#o = {
      windowMs: this.windowMs,
      flushMs: o.flushMs ?? 5_000,
      refreshMs: o.refreshMs ?? 30_000,
      maxPending: o.maxPending ?? 10_000,
      maxBackoffMs: o.maxBackoffMs ?? 300_000,
    };
    for (const [k, v] of Object.entries(this.#o)) {
      if (!Number.isSafeInteger(v) || v <= 0)
        throw new Error(`warmup stats: ${k} must be a positive integer`);
    }
    this.#store = o.store;
    this.#warmCost = o.warmCost;
    this.#clock = o.clock;
    this.#log = o.log;
  }

  /** The controller's event sink: queues only, never waits for the store. */
  readonly record = (e: WarmupEvent): void => {
    this.#pending.push(toStored(this.clusterId, e));
    const over = this.#pending.length - this.#o.maxPending;
    if (over > 0) {
      this.#pending.splice(0, over);
      this.#dropped += over;
      this.#log.error("warmup events dropped: store unavailable for too long", {
        cluster: this.clusterId,
        dropped: this.#dropped,
      });
    }
  };

  /** Events queued but not yet stored. */
  get pending(): number {
    return this.#pending.length;
  }

  /**
   * Writes the queue, in batches; true when it is empty afterwards. A failed batch stays queued
   * (with what came after it) for the next call. Calls do not overlap.
   */
  flush(): Promise<boolean> {
    this.#writing ??= this.#flush().finally(() => {
      this.#writing = undefined;
    });
    return this.#writing;
  }

  async #flush(): Promise<boolean> {
    let added = 0;
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending.slice(0, BATCH);
        try {
          added += await this.#store.writeWarmupEvents(batch);
        } catch (err) {
          this.#failures++;
          this.#log.warn("warmup events write failed; will retry", {
            cluster: this.clusterId,
            events: this.#pending.length,
            attempt: this.#failures,
            err,
          });
          return false;
        }
        // Only what was written goes: record() may have appended (or dropped) meanwhile.
        const gone = this.#pending.findIndex((e) => e === batch.at(-1));
        this.#pending.splice(0, gone + 1);
        this.#failures = 0;
      }
      return true;
    } finally {
      // Our own new events show at once rather than after the next refresh interval.
      if (added > 0) {
        this.#invalidate(this.clusterId);
        void this.refresh().catch((err: unknown) =>
          this.#log.warn("reading warmup events failed", { cluster: this.clusterId, err }),
        );
      }
    }
  }

  /** Writes the queue every `flushMs` (backing off after failures) until `signal`, then once more. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const wait =
        this.#failures === 0
          ? this.#o.flushMs
          : backoffCeiling(this.#failures, { initialMs: this.#o.flushMs, maxMs: this.#o.maxBackoffMs });
      try {
        await this.#clock.sleep(wait, signal);
      } catch {
        break; // aborted
      }
      await this.flush();
    }
    await this.drain();
  }

  /** One last write at shutdown; what still fails is logged as lost. */
  async drain(): Promise<void> {
    if (this.#pending.length > 0 && !(await this.flush())) {
      this.#log.error("warmup events not stored at shutdown", {
        cluster: this.clusterId,
        events: this.#pending.length,
      });
    }
  }

  /**
   * The cached counters of a cluster's window (default: this replica's cluster). Starts a
   * background re-read when they are stale, so the answer is at most `refreshMs` old; empty until
   * the first read of that cluster completes.
   */
  counters(clusterId = this.clusterId): WarmupCounters {
    return this.window(clusterId).counters;
  }

  /** The cached window of a cluster (as `counters`), with its warm cost and bounds. */
  window(clusterId = this.clusterId): WarmupWindow {
    const c = this.#entry(clusterId);
    if (this.#clock.now() - c.at >= this.#o.refreshMs && !c.reading) {
      void this.refresh(clusterId).catch((err: unknown) =>
        this.#log.warn("reading warmup events failed", { cluster: clusterId, err }),
      );
    }
    return { counters: c.counters, warmCost: c.warmCost, from: c.from, to: c.to };
  }

  /** Reads the window from the store now (joining a read already under way). */
  refresh(clusterId = this.clusterId): Promise<WarmupCounters> {
    const c = this.#entry(clusterId);
    if (c.reading) return c.reading;
    const now = this.#clock.now();
    const [from, to] = [now - this.windowMs, now + 1];
    const reading = Promise.all([
      countersInWindow(this.#store, clusterId, from, to),
      this.#warmCost?.(clusterId, from, to) ?? {},
    ]).then(([counters, warmCost]) => {
      // A read invalidated while under way (our own write landed) is not newer than the write.
      if (c.reading === reading) Object.assign(c, { counters, warmCost, from, to, at: now });
      return counters;
    });
    c.reading = reading;
    void reading
      .finally(() => {
        if (c.reading === reading) c.reading = undefined;
      })
      .catch(() => undefined);
    return reading;
  }

  #entry(clusterId: string): Cached {
    let c = this.#cache.get(clusterId);
    if (!c) {
      c = { counters: {}, warmCost: {}, from: 0, to: 0, at: -Infinity };
      this.#cache.set(clusterId, c);
    }
    return c;
  }

  /**
   * Events of the cluster were stored elsewhere (an agent's report, ADR 0014): the next read
   * shows them rather than waiting out the refresh interval.
   */
  stored(clusterId: string): void {
    this.#invalidate(clusterId);
    void this.refresh(clusterId).catch((err: unknown) =>
      this.#log.warn("reading warmup events failed", { cluster: clusterId, err }),
    );
  }

  #invalidate(clusterId: string): void {
    const c = this.#entry(clusterId);
    c.at = -Infinity;
    c.reading = undefined;
  }
}
