// One cluster's recent history — NodeClaim lifecycle events and disruptions of the last `keepMs` —
// held in memory exactly as the store holds it, so dashboard requests and stream snapshots read
// the thrashing window without a store query each. Seeded from the store on first use; after each
// batch the hub stores, the batch's time range is re-read from the store (which keeps the first
// of duplicate rows), so memory answers what a store query would.
import type { Clock } from "../../shared/clock.ts";
import type { Disruption, EventQuery, LifecycleEvent, Store } from "../store/store.ts";

export interface RecentRows {
  lifecycle: LifecycleEvent[];
  disruptions: Disruption[];
}

/** Rows read per store query. */
const PAGE = 5000;

/** The store's unique keys: a row with a seen key at the page boundary is a repeat. */
const lifecycleKey = (e: LifecycleEvent): string => `${e.nodeClaimUid}\u0000${e.phase}`;
const disruptionKey = (d: Disruption): string => `${d.nodeClaim}\u0000${d.reason}`;

/** Every row of [from, to) in the store's order (at, then insertion), paging as needed. */
export async function readRange<T extends { at: number }>(
  fetch: (from: number, to: number, limit: number) => Promise<T[]>,
  from: number,
  to: number,
  key: (row: T) => string,
  pageSize = PAGE,
): Promise<T[]> {
  const out: T[] = [];
  let cursor = from;
  let seen = new Set<string>();
  let limit = pageSize;
  for (;;) {
    const page = await fetch(cursor, to, limit);
    const last = page.at(-1);
    if (!last) return out;
    if (page.length === limit && page[0]?.at === last.at) {
      limit *= 2; // one instant fills the page: the cursor cannot move past it
      continue;
    }
    for (const r of page) if (!(r.at === cursor && seen.has(key(r)))) out.push(r);
    if (page.length < limit) return out;
    if (last.at !== cursor) seen = new Set();
    cursor = last.at;
    for (const r of page) if (r.at === cursor) seen.add(key(r));
  }
}

/** First index whose `at` is ≥ t (rows sorted by at). */
function lowerBound(rows: readonly { at: number }[], t: number): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((rows[mid]?.at ?? Infinity) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function replaceRange<T extends { at: number }>(rows: T[], from: number, to: number, fresh: T[]): T[] {
  const lo = lowerBound(rows, from);
  const hi = lowerBound(rows, to);
  return [...rows.slice(0, lo), ...fresh, ...rows.slice(hi)];
}

export class RecentHistory {
  readonly #store: Store;
  readonly #clusterId: string;
  readonly #clock: Clock;
  readonly #keepMs: number;
  #lifecycle: LifecycleEvent[] = [];
  #disruptions: Disruption[] = [];
  /** Memory holds every stored row with at ≥ floor; undefined until seeded. */
  #floor: number | undefined;
  /** Seeding and refreshes run one after another, in the order they were asked for. */
  #queue: Promise<void> = Promise.resolve();
  #revision = 0;

  constructor(store: Store, clusterId: string, clock: Clock, keepMs: number) {
    this.#store = store;
    this.#clusterId = clusterId;
    this.#clock = clock;
    this.#keepMs = keepMs;
  }

  /** Moves whenever the rows in memory change (for caches of what is computed from them). */
  get revision(): number {
    return this.#revision;
  }

  /** Lifecycle events and disruptions with at in [from, to), oldest first, as the store answers. */
  async rows(from: number, to: number): Promise<RecentRows> {
    await this.#run(() => this.#seedIfNeeded());
    const floor = this.#floor;
    if (floor === undefined || from < floor) return this.#read(from, to); // older than memory holds
    const slice = <T extends { at: number }>(rows: T[]): T[] =>
      rows.slice(lowerBound(rows, from), lowerBound(rows, to));
    return { lifecycle: slice(this.#lifecycle), disruptions: slice(this.#disruptions) };
  }

  /**
   * The store committed these rows (duplicates may have been dropped): refresh their time range.
   * A failed refresh forgets memory (the next read seeds again) rather than fail the ingest.
   */
  async written(rows: Partial<RecentRows>): Promise<void> {
    let min = Infinity;
    let max = -Infinity;
    for (const r of [...(rows.lifecycle ?? []), ...(rows.disruptions ?? [])]) {
      min = Math.min(min, r.at);
      max = Math.max(max, r.at);
    }
    if (min > max) return;
    await this.#run(async () => {
      const floor = this.#floor;
      if (floor === undefined || max < floor) return; // not seeded yet, or older than memory holds
      const from = Math.max(min, floor);
      try {
        const fresh = await this.#read(from, max + 1);
        this.#lifecycle = replaceRange(this.#lifecycle, from, max + 1, fresh.lifecycle);
        this.#disruptions = replaceRange(this.#disruptions, from, max + 1, fresh.disruptions);
      } catch {
        this.#forget();
      }
      this.#revision++;
    });
  }

  #run(fn: () => Promise<void>): Promise<void> {
    const next = this.#queue.then(fn);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #seedIfNeeded(): Promise<void> {
    const floor = this.#clock.now() - this.#keepMs;
    if (this.#floor === undefined) {
      const rows = await this.#read(floor, Number.MAX_SAFE_INTEGER);
      this.#lifecycle = rows.lifecycle;
      this.#disruptions = rows.disruptions;
      this.#floor = floor;
      this.#revision++;
      return;
    }
    // Drop what fell out of the window, a minute at a time rather than on every read.
    if (floor - this.#floor < 60_000) return;
    this.#lifecycle = this.#lifecycle.slice(lowerBound(this.#lifecycle, floor));
    this.#disruptions = this.#disruptions.slice(lowerBound(this.#disruptions, floor));
    this.#floor = floor;
  }

  #forget(): void {
    this.#floor = undefined;
    this.#lifecycle = [];
    this.#disruptions = [];
  }

  async #read(from: number, to: number): Promise<RecentRows> {
    const q = (f: number, t: number, limit: number): EventQuery => ({
      clusterId: this.#clusterId,
      from: f,
      to: t,
      limit,
    });
    const [lifecycle, disruptions] = await Promise.all([
      readRange((f, t, l) => this.#store.lifecycle(q(f, t, l)), from, to, lifecycleKey),
      readRange((f, t, l) => this.#store.disruptions(q(f, t, l)), from, to, disruptionKey),
    ]);
    return { lifecycle, disruptions };
  }
}
