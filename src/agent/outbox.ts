// The agent's send side as a pure state machine: the current (trimmed) objects, the ordered queue
// of messages core has not acknowledged yet, sequence numbers, the buffer bound and resyncs.
// No I/O: the connection loop in agent.ts feeds it acks and pulls messages from it.
import { create } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AgentMessageSchema, Delta_Op, HelloAck_Mode } from "../gen/wave/v1/ingest_pb.ts";
import type { AgentMessage } from "../gen/wave/v1/ingest_pb.ts";
import { objectKey, snapshotChunkMessage, toMessage } from "../wire/wire.ts";
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
  /** The message to send (snapshot chunks are encoded when read: see #buildSnapshot). */
  readonly msg: AgentMessage;
  /** When the entry was queued (ms): the age of the oldest one is the stream lag. */
  at: number;
  delta: boolean;
}

/** The source's initial list, trimmed and encoded only as the first snapshot streams (loadLazily). */
interface Loading {
  objects: readonly WireObject[];
  trim: (o: WireObject) => WireObject | undefined;
  /** Index of the next source object to trim. */
  next: number;
  /** Objects sent in chunks of the snapshot streaming from this list. */
  sent: number;
  /** Trimmed, encoded, not yet placed: it did not fit the previous chunk. */
  carry: { key: string; obj: EncodedObject; bytes: number } | undefined;
}

export type OutboxChange =
  { type: "upsert" | "delete"; object: WireObject } | { type: "replace"; objects: WireObject[] };

export class Outbox {
  readonly #maxDeltas: number;
  readonly #chunkObjects: number;
  readonly #chunkBytes: number;
  readonly #now: () => number;
  /**
   * Current state: trimmed JSON text per object. Strings live in the JS heap (one byte per
   * character for ASCII) and cost less than a Buffer each; they become bytes only when sent.
   */
  readonly #objects = new Map<string, EncodedObject>();
  #queue: OutboxEntry[] = [];
  #queuedDeltas = 0;
  #nextSeq = 1;
  #lastAcked = 0;
  #needSnapshot = true;
  #waiters: (() => void)[] = [];
  #loading: Loading | undefined;
  /** The snapshot being sent is cut from #loading chunk by chunk (its end is not queued yet). */
  #streaming = false;
  #loadedResolve!: () => void;
  /** Resolves once the initial list is all in the state (immediately unless loadLazily is used). */
  loaded: Promise<void> = new Promise<void>((r) => (this.#loadedResolve = r));
  /** Messages discarded because the buffer overflowed. */
  dropped = 0;
  /** Snapshots sent after the first one (overflow, lost session, core restart). */
  resyncs = 0;
  #snapshots = 0;

  constructor(opts: OutboxOptions) {
    this.#maxDeltas = opts.maxBufferedDeltas ?? 50_000;
    this.#chunkObjects = opts.chunkMaxObjects ?? 1000;
    this.#chunkBytes = opts.chunkMaxBytes ?? 1 << 20;
    this.#now = opts.now;
    this.#loadedResolve();
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

  /** The initial list is still being trimmed as the first snapshot streams. */
  get loading(): boolean {
    return this.#loading !== undefined;
  }

  get objectCount(): number {
    return this.#objects.size;
  }

  /** Age in ms of the oldest unacknowledged message (0 when core is caught up). */
  lag(): number {
    const first = this.#queue[0];
    return first ? Math.max(0, this.#now() - first.at) : 0;
  }

  /** Applies a source change to the current state and queues the matching delta. */
  apply(change: OutboxChange): void {
    // A change follows the initial list: finish it (and the snapshot streaming from it) first.
    this.#completeLoad();
    if (change.type === "replace") {
      this.#objects.clear();
      for (const o of change.objects) this.#objects.set(storeKey(o), encodeObject(o));
      this.#resync();
      return;
    }
    const key = storeKey(change.object);
    const stored = encodeObject(change.object);
    if (change.type === "upsert") this.#objects.set(key, stored);
    else this.#objects.delete(key);
    // While a snapshot is due, it will carry this change: queue nothing.
    if (this.#needSnapshot) return;
    if (this.#queuedDeltas >= this.#maxDeltas) {
      this.dropped += this.#queue.length + 1;
      this.#resync();
      return;
    }
    const op = change.type === "upsert" ? Delta_Op.UPSERT : Delta_Op.DELETE;
    this.#push(true, {
      case: "delta",
      value: {
        op,
        object: toMessage(stored.kind, Buffer.from(stored.json, "utf8")),
        observedAtMs: BigInt(this.#now()),
      },
    });
  }

  /** Replaces the whole state without queueing anything (the source's initial lists). */
  load(objects: WireObject[]): void {
    this.#endLoading();
    this.#objects.clear();
    for (const o of objects) this.#objects.set(storeKey(o), encodeObject(o));
  }

  /**
   * Like `load` with untrimmed objects, but the work is done as the first snapshot is sent: each
   * chunk is trimmed and encoded when the stream asks for it, so core decodes one chunk while the
   * agent prepares the next instead of waiting for the whole cluster to be encoded. The snapshot
   * is still exactly the initial list (changes are applied after it: `apply` finishes the load
   * first). If that snapshot is interrupted, the next one is built from the full state as usual.
   */
  loadLazily(objects: readonly WireObject[], trim: (o: WireObject) => WireObject | undefined): void {
    this.#endLoading();
    this.#objects.clear();
    this.loaded = new Promise<void>((r) => (this.#loadedResolve = r));
    this.#loading = { objects, trim, next: 0, sent: 0, carry: undefined };
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
   * The next message to send on a stream that has sent up to `cursor`. Builds the due snapshot
   * first (from the state at this instant, so it includes every change so far).
   */
  next(cursor: number): OutboxEntry | undefined {
    if (this.#needSnapshot) this.#buildSnapshot();
    const e = this.#after(cursor);
    if (e || !this.#streaming) return e;
    this.#streamChunk();
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
    this.#streaming = false;
    this.#queue = [];
    this.#queuedDeltas = 0;
    this.#needSnapshot = true;
    this.#wake();
  }

  #push(delta: boolean, body: MessageInitShape<typeof AgentMessageSchema>["body"]): void {
    const seq = this.#nextSeq++;
    const msg = create(AgentMessageSchema, { sequence: BigInt(seq), body });
    this.#queue.push({ seq, msg, at: this.#now(), delta });
    if (delta) this.#queuedDeltas++;
    this.#wake();
  }

  /**
   * A snapshot chunk whose bytes are encoded each time it is sent: the entry holds only the
   * objects (shared, immutable JSON strings), so an unacknowledged snapshot costs one reference
   * per object instead of a second encoded copy of the cluster, and each chunk's buffer is
   * garbage as soon as it is on the wire. A replay after RESUME encodes the same bytes again.
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

  #buildSnapshot(): void {
    this.#needSnapshot = false;
    this.#streaming = false;
    this.#queue = [];
    this.#queuedDeltas = 0;
    if (this.#snapshots++ > 0) this.resyncs++;
    if (this.#loading?.next === 0) {
      // Nothing trimmed yet: stream the initial list (#streamChunk). `expected_objects` is an
      // upper bound here: Events that are not Karpenter's are dropped on the way.
      this.#streaming = true;
      this.#push(false, {
        case: "snapshotBegin",
        value: { expectedObjects: BigInt(this.#loading.objects.length) },
      });
      return;
    }
    this.#completeLoad();
    this.#push(false, { case: "snapshotBegin", value: { expectedObjects: BigInt(this.#objects.size) } });
    // The chunks are cut from the state at this instant; later changes replace map entries (they
    // never mutate a stored object), so the chunks keep exactly this snapshot.
    let chunk: EncodedObject[] = [];
    let sizes: number[] = [];
    let bytes = 0;
    const flush = (): void => {
      if (chunk.length === 0) return;
      this.#pushChunk(chunk, sizes);
      chunk = [];
      sizes = [];
      bytes = 0;
    };
    for (const o of this.#objects.values()) {
      const n = Buffer.byteLength(o.json, "utf8");
      if (chunk.length >= this.#chunkObjects || (bytes > 0 && bytes + n > this.#chunkBytes)) flush();
      chunk.push(o);
      sizes.push(n);
      bytes += n;
    }
    flush();
    this.#push(false, { case: "snapshotEnd", value: { objectCount: BigInt(this.#objects.size) } });
  }

  /** Cuts the next chunk of the streaming snapshot from the initial list; queues its end when done. */
  #streamChunk(): void {
    const l = this.#loading;
    if (!l) {
      this.#streaming = false;
      return;
    }
    const chunk: EncodedObject[] = [];
    const sizes: number[] = [];
    let bytes = 0;
    for (;;) {
      let item = l.carry;
      l.carry = undefined;
      if (!item) {
        if (l.next >= l.objects.length) break;
        const t = l.trim(l.objects[l.next++] as WireObject);
        if (!t) continue;
        const obj = encodeObject(t);
        item = { key: storeKey(t), obj, bytes: Buffer.byteLength(obj.json, "utf8") };
      }
      if (chunk.length >= this.#chunkObjects || (bytes > 0 && bytes + item.bytes > this.#chunkBytes)) {
        l.carry = item;
        break;
      }
      this.#objects.set(item.key, item.obj);
      chunk.push(item.obj);
      sizes.push(item.bytes);
      bytes += item.bytes;
    }
    if (chunk.length > 0) {
      this.#pushChunk(chunk, sizes);
      l.sent += chunk.length;
    }
    if (!l.carry && l.next >= l.objects.length) {
      this.#streaming = false;
      this.#push(false, { case: "snapshotEnd", value: { objectCount: BigInt(l.sent) } });
      this.#endLoading();
    }
  }

  /** Puts the rest of the initial list into the state now (and finishes a snapshot streaming from it). */
  #completeLoad(): void {
    const l = this.#loading;
    if (!l) return;
    if (this.#streaming) {
      while (this.#loading) this.#streamChunk();
      return;
    }
    if (l.carry) this.#objects.set(l.carry.key, l.carry.obj);
    for (; l.next < l.objects.length; l.next++) {
      const t = l.trim(l.objects[l.next] as WireObject);
      if (t) this.#objects.set(storeKey(t), encodeObject(t));
    }
    this.#endLoading();
  }

  #endLoading(): void {
    this.#loading = undefined;
    this.#streaming = false;
    this.#loadedResolve();
  }
}

function encodeObject(o: WireObject): EncodedObject {
  return { kind: o.kind, json: JSON.stringify(o.object) };
}

function storeKey(o: WireObject): string {
  return `${o.kind}\u0000${objectKey(o.object)}`;
}
