// The agent's send side as a pure state machine: the ordered queue of messages core has not
// acknowledged yet, sequence numbers, the buffer bound and resyncs. It keeps no copy of the
// cluster (ADR 0021): every snapshot — the first one and each resync — is a fresh listing from the
// source, trimmed and encoded chunk by chunk as the stream asks for it, and changes that arrive
// while a snapshot is listed wait (bounded) until its end. No I/O: the connection loop in agent.ts
// feeds it acks and pulls messages from it.
import { create } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AgentMessageSchema, Delta_Op, HelloAck_Mode } from "../gen/wave/v1/ingest_pb.ts";
import type { AgentMessage } from "../gen/wave/v1/ingest_pb.ts";
import { snapshotChunkMessage, toMessage } from "../wire/wire.ts";
import type { EncodedObject, WireObject } from "../wire/wire.ts";

export interface OutboxOptions {
  /** Deltas held for core (unsent + unacknowledged) before the agent gives up and resyncs. */
  maxBufferedDeltas?: number;
  /** Snapshot chunk limits: objects and JSON bytes per message. */
  chunkMaxObjects?: number;
  chunkMaxBytes?: number;
  now: () => number;
}

export interface OutboxEntry {
  seq: number;
  /** The message to send (snapshot chunks are encoded when read: see #pushChunk). */
  readonly msg: AgentMessage;
  /** When the entry was queued (ms): the age of the oldest one is the stream lag. */
  at: number;
  delta: boolean;
}

/**
 * A complete listing of the cluster as it is when the listing is read, page by page: a source's
 * paged LIST (async) or an in-memory list (sync). Each snapshot reads a new one.
 */
export type SnapshotPages = Iterable<readonly WireObject[]> | AsyncIterable<readonly WireObject[]>;

/** The snapshot being listed: pages read as the stream asks for chunks. */
interface Listing {
  pages: Iterator<readonly WireObject[]> | AsyncIterator<readonly WireObject[]>;
  async: boolean;
  page: readonly WireObject[];
  /** Index of the next object of `page`. */
  at: number;
  done: boolean;
  /** The next page, while an async listing reads it. */
  reading: Promise<void> | undefined;
  /** Objects sent in chunks of this snapshot. */
  sent: number;
  /** Trimmed, encoded, not yet placed: it did not fit the previous chunk. */
  carry: { obj: EncodedObject; bytes: number } | undefined;
}

export type OutboxChange =
  | { type: "upsert" | "delete"; object: WireObject }
  /** The source lost track (e.g. it relisted): send a fresh snapshot. */
  | { type: "resync" };

const noPages = (): SnapshotPages => [];

export class Outbox {
  readonly #maxDeltas: number;
  readonly #chunkObjects: number;
  readonly #chunkBytes: number;
  readonly #now: () => number;
  #list: () => SnapshotPages = noPages;
  #trim: (o: WireObject) => WireObject | undefined = (o) => o;
  #queue: OutboxEntry[] = [];
  #queuedDeltas = 0;
  #nextSeq = 1;
  #lastAcked = 0;
  #needSnapshot = true;
  #waiters: (() => void)[] = [];
  #listing: Listing | undefined;
  /** Changes that arrived while a snapshot was listed: queued as deltas after its end. */
  #held: { type: "upsert" | "delete"; object: WireObject; at: number }[] = [];
  /** Why the last listing failed, until `next` reports it. */
  #listError: unknown;
  /** Messages discarded because the buffer overflowed. */
  dropped = 0;
  /** Snapshots sent after the first one (overflow, lost session, core restart). */
  resyncs = 0;
  /** Objects in the last complete snapshot. */
  listed = 0;
  #snapshots = 0;

  constructor(opts: OutboxOptions) {
    this.#maxDeltas = opts.maxBufferedDeltas ?? 50_000;
    this.#chunkObjects = opts.chunkMaxObjects ?? 1000;
    this.#chunkBytes = opts.chunkMaxBytes ?? 1 << 20;
    this.#now = opts.now;
    if (!(this.#maxDeltas >= 1) || !(this.#chunkObjects >= 1) || !(this.#chunkBytes >= 1)) {
      throw new Error("outbox limits must be ≥ 1");
    }
  }

  get lastAcked(): number {
    return this.#lastAcked;
  }

  get needsSnapshot(): boolean {
    return this.#needSnapshot;
  }

  /** Messages queued (unsent or unacknowledged). */
  get buffered(): number {
    return this.#queue.length;
  }

  /** A snapshot is being listed (its end is not queued yet). */
  get listing(): boolean {
    return this.#listing !== undefined;
  }

  /** Changes waiting for the end of the snapshot being listed. */
  get held(): number {
    return this.#held.length;
  }

  /** Age in ms of the oldest unacknowledged message (0 when core is caught up). */
  lag(): number {
    const first = this.#queue[0];
    const held = this.#held[0];
    const oldest = Math.min(first?.at ?? Infinity, held?.at ?? Infinity);
    return oldest === Infinity ? 0 : Math.max(0, this.#now() - oldest);
  }

  /**
   * Where every snapshot comes from: `list` reads the complete current state anew each time (the
   * source's paged LIST), `trim` is applied to each listed object (undefined leaves it out).
   */
  listFrom(list: () => SnapshotPages, trim: (o: WireObject) => WireObject | undefined = (o) => o): void {
    this.#list = list;
    this.#trim = trim;
    this.#resync();
  }

  /** Queues the delta for a source change (or a resync). */
  apply(change: OutboxChange): void {
    if (change.type === "resync") {
      this.#resync();
      return;
    }
    // While a snapshot is due, the listing it reads will carry this change: queue nothing.
    if (this.#needSnapshot) return;
    if (this.#listing) {
      // Core takes no delta inside a snapshot: it waits for the end (the listing may already carry
      // it; sent again after the end it changes nothing).
      if (this.#held.length >= this.#maxDeltas) {
        this.dropped += this.#held.length + 1;
        this.#resync();
        return;
      }
      this.#held.push({ type: change.type, object: change.object, at: this.#now() });
      return;
    }
    this.#pushDelta(change.type, change.object, this.#now());
  }

  #pushDelta(type: "upsert" | "delete", object: WireObject, at: number): void {
    if (this.#queuedDeltas >= this.#maxDeltas) {
      this.dropped += this.#queue.length + 1;
      this.#resync();
      return;
    }
    const op = type === "upsert" ? Delta_Op.UPSERT : Delta_Op.DELETE;
    this.#push(
      true,
      {
        case: "delta",
        value: {
          op,
          object: toMessage(object.kind, Buffer.from(JSON.stringify(object.object), "utf8")),
          observedAtMs: BigInt(at),
        },
      },
      at,
    );
  }

  /** `resume_from_sequence` for the next Hello: 0 asks core for a fresh snapshot. */
  resumeFrom(): number {
    return this.#needSnapshot ? 0 : this.#lastAcked;
  }

  /** Core's HelloAck: decides whether the queue can be replayed or a snapshot must be sent. */
  helloAck(mode: HelloAck_Mode, lastSequence: number): void {
    if (mode !== HelloAck_Mode.RESUME || this.#needSnapshot) {
      this.#resync();
      return;
    }
    if (lastSequence < this.#lastAcked) {
      // Core has less than it acknowledged (it lost its store): only a snapshot can repair that.
      this.#resync();
      return;
    }
    this.ack(lastSequence);
    const first = this.#queue[0];
    if (first && first.seq !== lastSequence + 1) this.#resync();
  }

  /** Discards the queue and sends a fresh snapshot next (core rejected what it was sent). */
  forceResync(): void {
    this.#resync();
  }

  /** Drops everything up to `seq`, which core has stored durably. */
  ack(seq: number): void {
    if (seq <= this.#lastAcked) return;
    this.#lastAcked = seq;
    let n = 0;
    while (n < this.#queue.length && (this.#queue[n]?.seq ?? Infinity) <= seq) {
      if (this.#queue[n]?.delta) this.#queuedDeltas--;
      n++;
    }
    if (n > 0) this.#queue.splice(0, n);
  }

  /**
   * The next message to send on a stream that has sent up to `cursor`. Begins the due snapshot
   * first, and cuts its next chunk from the listing when the stream has sent everything queued.
   * Throws when the listing failed (the stream ends; the next one resyncs after its backoff).
   */
  next(cursor: number): OutboxEntry | undefined {
    if (this.#listError !== undefined) {
      const err = this.#listError;
      this.#listError = undefined;
      throw err instanceof Error ? err : new Error(`listing the cluster failed: ${JSON.stringify(err)}`);
    }
    if (this.#needSnapshot) this.#beginSnapshot();
    const e = this.#after(cursor);
    if (e || !this.#listing) return e;
    this.#cutChunk();
    return this.#after(cursor);
  }

  #after(cursor: number): OutboxEntry | undefined {
    // Sequences in the queue increase: binary search for the first one after the cursor.
    let lo = 0;
    let hi = this.#queue.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.#queue[mid]?.seq ?? 0) <= cursor) lo = mid + 1;
      else hi = mid;
    }
    return this.#queue[lo];
  }

  /** Resolves when something new may be sendable (or the signal aborts). */
  waitForWork(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        signal.removeEventListener("abort", done);
        resolve();
      };
      if (signal.aborted) {
        resolve();
        return;
      }
      this.#waiters.push(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /** Wakes the stream's sender for something sent beside the outbox (warmup events). */
  poke(): void {
    this.#wake();
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  #resync(): void {
    this.#stopListing();
    this.#queue = [];
    this.#queuedDeltas = 0;
    this.#held = [];
    this.#needSnapshot = true;
    this.#wake();
  }

  #stopListing(): void {
    const l = this.#listing;
    this.#listing = undefined;
    // Ends the source's listing (its paged LIST) if it was cut short.
    if (l && !l.done) void Promise.resolve(l.pages.return?.()).catch(() => undefined);
  }

  #push(delta: boolean, body: MessageInitShape<typeof AgentMessageSchema>["body"], at = this.#now()): void {
    const seq = this.#nextSeq++;
    const msg = create(AgentMessageSchema, { sequence: BigInt(seq), body });
    this.#queue.push({ seq, msg, at, delta });
    if (delta) this.#queuedDeltas++;
    this.#wake();
  }

  /**
   * A snapshot chunk whose bytes are encoded each time it is sent: the entry holds only the
   * objects' JSON strings until core acknowledges it, and each chunk's buffer is garbage as soon
   * as it is on the wire. A replay after RESUME encodes the same bytes again.
   */
  #pushChunk(objects: EncodedObject[], bytes: number[]): void {
    const seq = this.#nextSeq++;
    this.#queue.push({
      seq,
      at: this.#now(),
      delta: false,
      get msg() {
        return snapshotChunkMessage(seq, objects, bytes);
      },
    });
    this.#wake();
  }

  #beginSnapshot(): void {
    this.#needSnapshot = false;
    this.#queue = [];
    this.#queuedDeltas = 0;
    this.#held = [];
    if (this.#snapshots++ > 0) this.resyncs++;
    const pages = this.#list();
    const isAsync = Symbol.asyncIterator in pages;
    this.#listing = {
      pages: isAsync
        ? (pages as AsyncIterable<readonly WireObject[]>)[Symbol.asyncIterator]()
        : (pages as Iterable<readonly WireObject[]>)[Symbol.iterator](),
      async: isAsync,
      page: [],
      at: 0,
      done: false,
      reading: undefined,
      sent: 0,
      carry: undefined,
    };
    // `expected_objects` is a hint only (core does not read it): the listing's size is not known.
    this.#push(false, { case: "snapshotBegin", value: { expectedObjects: 0n } });
  }

  /** The next listed object, trimmed and encoded; undefined when the page in hand is used up. */
  #nextObject(l: Listing): { obj: EncodedObject; bytes: number } | undefined {
    for (;;) {
      if (l.at < l.page.length) {
        const t = this.#trim(l.page[l.at++] as WireObject);
        if (!t) continue;
        const obj: EncodedObject = { kind: t.kind, json: JSON.stringify(t.object) };
        return { obj, bytes: Buffer.byteLength(obj.json, "utf8") };
      }
      if (l.done || l.async) return undefined;
      const r = (l.pages as Iterator<readonly WireObject[]>).next();
      if (r.done === true) l.done = true;
      else {
        l.page = r.value;
        l.at = 0;
      }
    }
  }

  /** Reads the next page of an async listing, then wakes the sender. */
  #readPage(l: Listing): void {
    if (l.reading || l.done) return;
    l.reading = (l.pages as AsyncIterator<readonly WireObject[]>).next().then(
      (r) => {
        l.reading = undefined;
        if (this.#listing !== l) return;
        if (r.done === true) l.done = true;
        else {
          l.page = r.value;
          l.at = 0;
        }
        this.#wake();
      },
      (err: unknown) => {
        l.reading = undefined;
        if (this.#listing !== l) return;
        // The stream reports it (and ends); the next stream's snapshot lists anew.
        this.#resync();
        this.#listError = err;
        this.#wake();
      },
    );
  }

  /** Cuts the next chunk from the listing; at its end queues snapshot_end and the held changes. */
  #cutChunk(): void {
    const l = this.#listing;
    if (!l) return;
    const chunk: EncodedObject[] = [];
    const sizes: number[] = [];
    let bytes = 0;
    for (;;) {
      const item = l.carry ?? this.#nextObject(l);
      l.carry = undefined;
      if (!item) break;
      if (chunk.length >= this.#chunkObjects || (bytes > 0 && bytes + item.bytes > this.#chunkBytes)) {
        l.carry = item;
        break;
      }
      chunk.push(item.obj);
      sizes.push(item.bytes);
      bytes += item.bytes;
    }
    if (chunk.length > 0) {
      this.#pushChunk(chunk, sizes);
      l.sent += chunk.length;
    }
    if (l.carry || (chunk.length > 0 && !l.done)) {
      // More to come: an async listing reads its next page meanwhile.
      if (l.async && l.at >= l.page.length) this.#readPage(l);
      return;
    }
    if (!l.done) {
      this.#readPage(l);
      return;
    }
    this.#listing = undefined;
    this.listed = l.sent;
    this.#push(false, { case: "snapshotEnd", value: { objectCount: BigInt(l.sent) } });
    const held = this.#held;
    this.#held = [];
    for (const h of held) {
      this.#pushDelta(h.type, h.object, h.at);
      if (this.#needSnapshot) break;
    }
  }
}
