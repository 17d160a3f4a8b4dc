// Karpenter's Events per cluster, kept beyond the hour the apiserver keeps them (--event-ttl): the
// consolidation and pending explanations read them (docs/consolidation.md). In memory, bounded:
// per involved object the newest `perObject`, at most `max` in all (the oldest dropped first),
// none older than `retainMs`. An Event's deletion (its TTL) is ignored on purpose.
import type { Event } from "../../objects/kube.ts";

export interface KarpenterEventLogOptions {
  perObject?: number;
  max?: number;
  retainMs?: number;
}

const timeOf = (e: Event): number => {
  for (const t of [e.lastTimestamp, e.eventTime, e.firstTimestamp, e.metadata.creationTimestamp]) {
    const ms = t ? Date.parse(t) : NaN;
    if (!Number.isNaN(ms)) return ms;
  }
  return 0;
};

export class KarpenterEventLog {
  readonly #perObject: number;
  readonly #max: number;
  readonly #retainMs: number;
  /** involved object → Event key → Event (insertion order refreshed on update). */
  readonly #byObject = new Map<string, Map<string, Event>>();
  #size = 0;
  #revision = 0;

  constructor(opts: KarpenterEventLogOptions = {}) {
    this.#perObject = opts.perObject ?? 20;
    this.#max = opts.max ?? 20_000;
    this.#retainMs = opts.retainMs ?? 24 * 3_600_000;
  }

  get size(): number {
    return this.#size;
  }

  /** Moves on every Event kept: views computed from the log are reused while it stands still. */
  get revision(): number {
    return this.#revision;
  }

  /** Keeps (or updates: same namespace/name, a higher count) one Event. */
  add(e: Event, now: number): void {
    if (now - timeOf(e) > this.#retainMs) return;
    const io = e.involvedObject;
    const obj = `${io.kind ?? ""}/${io.namespace ?? ""}/${io.name ?? ""}`;
    const key = `${e.metadata.namespace ?? ""}/${e.metadata.name ?? ""}`;
    let m = this.#byObject.get(obj);
    if (!m) {
      m = new Map();
      this.#byObject.set(obj, m);
    } else if (m.has(key)) {
      m.delete(key);
      this.#size--;
    } else {
      // Re-inserted at the end: the map's order is the objects' recency.
      this.#byObject.delete(obj);
      this.#byObject.set(obj, m);
    }
    m.set(key, e);
    this.#size++;
    this.#revision++;
    while (m.size > this.#perObject) {
      const oldest = m.keys().next().value as string;
      m.delete(oldest);
      this.#size--;
    }
    while (this.#size > this.#max) this.#dropOldestObject();
  }

  #dropOldestObject(): void {
    const first = this.#byObject.entries().next().value;
    if (!first) return;
    this.#byObject.delete(first[0]);
    this.#size -= first[1].size;
  }

  /** Every kept Event not older than the retention at `now`. */
  events(now: number): Event[] {
    const out: Event[] = [];
    for (const [obj, m] of this.#byObject) {
      for (const [k, e] of m)
        if (now - timeOf(e) > this.#retainMs) {
          m.delete(k);
          this.#size--;
        } else out.push(e);
      if (m.size === 0) this.#byObject.delete(obj);
    }
    return out;
  }
}
