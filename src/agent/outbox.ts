// The agent's send side as a pure state machine: the current (trimmed) objects, the ordered queue
// of messages core has not acknowledged yet, sequence numbers, the buffer bound and resyncs.
// No I/O: the connection loop in agent.ts feeds it acks and pulls messages from it.
import { create } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AgentMessageSchema, Delta_Op, HelloAck_Mode } from "../gen/wave/v1/ingest_pb.ts";
import type { AgentMessage, KubeObject as KubeObjectMsg } from "../gen/wave/v1/ingest_pb.ts";
import { encodeJson, objectKey, toMessage } from "./wire.ts";
import type { WireKind, WireObject } from "./wire.ts";

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
  msg: AgentMessage;
  /** When the entry was queued (ms): the age of the oldest one is the stream lag. */
  at: number;
  delta: boolean;
}

interface Stored {
  kind: WireKind;
  json: Uint8Array;
}

export type OutboxChange =
  { type: "upsert" | "delete"; object: WireObject } | { type: "replace"; objects: WireObject[] };

export class Outbox {
  readonly #maxDeltas: number;
  readonly #chunkObjects: number;
  readonly #chunkBytes: number;
  readonly #now: () => number;
  readonly #objects = new Map<string, Stored>();
  #queue: OutboxEntry[] = [];
  #queuedDeltas = 0;
  #nextSeq = 1;
  #lastAcked = 0;
  #needSnapshot = true;
  #waiters: (() => void)[] = [];
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
    if (change.type === "replace") {
      this.#objects.clear();
      for (const o of change.objects) this.#objects.set(storeKey(o), { kind: o.kind, json: encodeJson(o) });
      this.#resync();
      return;
    }
    const key = storeKey(change.object);
    const json = encodeJson(change.object);
    if (change.type === "upsert") this.#objects.set(key, { kind: change.object.kind, json });
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
      value: { op, object: toMessage(change.object.kind, json), observedAtMs: BigInt(this.#now()) },
    });
  }

  /** Replaces the whole state without queueing anything (the source's initial lists). */
  load(objects: WireObject[]): void {
    this.#objects.clear();
    for (const o of objects) this.#objects.set(storeKey(o), { kind: o.kind, json: encodeJson(o) });
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

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  #resync(): void {
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

  #buildSnapshot(): void {
    this.#needSnapshot = false;
    this.#queue = [];
    this.#queuedDeltas = 0;
    if (this.#snapshots++ > 0) this.resyncs++;
    this.#push(false, { case: "snapshotBegin", value: { expectedObjects: BigInt(this.#objects.size) } });
    let chunk: KubeObjectMsg[] = [];
    let bytes = 0;
    const flush = (): void => {
      if (chunk.length === 0) return;
      this.#push(false, { case: "snapshotChunk", value: { objects: chunk } });
      chunk = [];
      bytes = 0;
    };
    for (const o of this.#objects.values()) {
      if (chunk.length >= this.#chunkObjects || (bytes > 0 && bytes + o.json.length > this.#chunkBytes))
        flush();
      chunk.push(toMessage(o.kind, o.json));
      bytes += o.json.length;
    }
    flush();
    this.#push(false, { case: "snapshotEnd", value: { objectCount: BigInt(this.#objects.size) } });
  }
}

function storeKey(o: WireObject): string {
  return `${o.kind}\u0000${objectKey(o.object)}`;
}
