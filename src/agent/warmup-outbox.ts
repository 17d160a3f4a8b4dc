// The warmup controller's events on their way to core (ADR 0014). They travel beside the object
// stream, in numbered batches core acknowledges once stored; unacknowledged batches are sent
// again on the next stream (core stores events idempotently). Bounded: while core is away the
// oldest events go first, counted.
import type { WireWarmupEvent } from "../wire/warmup.ts";

export interface WarmupBatch {
  batch: number;
  events: WireWarmupEvent[];
}

export interface WarmupOutboxOptions {
  /** Events kept unacknowledged at most (default 10 000). */
  maxEvents?: number;
  /** Events per batch at most (default 500). */
  maxBatch?: number;
  /** Called when there is something new to send. */
  onWork?: () => void;
}

export class WarmupOutbox {
  readonly #maxEvents: number;
  readonly #maxBatch: number;
  readonly #onWork: () => void;
  /** Sent at least once, not yet acknowledged, oldest first. */
  #batches: WarmupBatch[] = [];
  /** Not yet in a batch. */
  #open: WireWarmupEvent[] = [];
  #nextBatch = 1;
  /** Events dropped because core was away too long. */
  dropped = 0;

  constructor(o: WarmupOutboxOptions = {}) {
    this.#maxEvents = o.maxEvents ?? 10_000;
    this.#maxBatch = o.maxBatch ?? 500;
    this.#onWork = o.onWork ?? (() => undefined);
  }

  /** Events not yet acknowledged by core. */
  get pending(): number {
    return this.#open.length + this.#batches.reduce((n, b) => n + b.events.length, 0);
  }

  push(e: WireWarmupEvent): void {
    this.#open.push(e);
    let over = this.pending - this.#maxEvents;
    while (over > 0) {
      const first = this.#batches[0];
      const from = first ? first.events : this.#open;
      const n = Math.min(over, from.length);
      from.splice(0, n);
      if (first && first.events.length === 0) this.#batches.shift();
      this.dropped += n;
      over -= n;
    }
    this.#onWork();
  }

  /** The next batch to send on a stream that has sent batches up to `cursor` (0 = none yet). */
  next(cursor: number): WarmupBatch | undefined {
    const sent = this.#batches.find((b) => b.batch > cursor);
    if (sent) return sent;
    if (this.#open.length === 0) return undefined;
    const b = { batch: this.#nextBatch++, events: this.#open.splice(0, this.#maxBatch) };
    this.#batches.push(b);
    return b;
  }

  /** Core stored `batch` (and, sent in order on one stream, every batch before it). */
  ack(batch: number): void {
    this.#batches = this.#batches.filter((b) => b.batch > batch);
  }
}
