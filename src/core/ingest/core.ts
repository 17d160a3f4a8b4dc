// Core's side of the agent protocol, transport-free: validates each stream's messages (order,
// sequences, objects), applies each batch to the cluster's ClusterState (the sink's; ingest is its
// only writer), derives lifecycle steps from the changes the state reports, writes the batch and
// its steps to the sink and acknowledges what is durable. A bad peer gets a clear gRPC status;
// other clusters carry on.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { Delta_Op, HelloAck_Mode } from "../../gen/wave/v1/ingest_pb.ts";
import type { AgentMessage, CoreMessageSchema, Hello } from "../../gen/wave/v1/ingest_pb.ts";
import { WireError, decodeObject, objectKey } from "../../wire/wire.ts";
import { metadataProblem } from "../../objects/names.ts";
import { editToProto, resultFromProto } from "../../wire/policy-edit.ts";
import { PolicyEdits } from "./policy-edits.ts";
import { checkDecodeCost, DEFAULT_DECODE_LIMITS, type DecodeLimits } from "../../wire/bounds.ts";
import type { WireObject } from "../../wire/wire.ts";
import { realClock } from "../../shared/clock.ts";
import type { Clock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import type { Logger } from "../../shared/log.ts";
import { Registry } from "../../shared/metrics.ts";
import type { Counter, Gauge, Histogram } from "../../shared/metrics.ts";
import { LifecycleTracker } from "../lifecycle/derive.ts";
import type { LifecycleEvent, OpenNodeClaim } from "../lifecycle/derive.ts";
import type { ClusterState } from "../../state/cluster.ts";
import type { AgentPrincipal } from "./auth.ts";
import { ingestDelta, StreamedSnapshot } from "./apply.ts";
import { AsyncQueue } from "./queue.ts";
import type { IngestChange, IngestSink, RejectionBound } from "./sink.ts";
import { eventFromProto, policiesToProto, type WirePolicy, type WireWarmupEvent } from "../../wire/warmup.ts";
import type { WarmupEvents } from "../../gen/wave/v1/ingest_pb.ts";

/**
 * The warmup controllers that run beside each cluster's agent (ADR 0014): where core finds a
 * cluster's warmup policies to send, and stores the events the agents report.
 */
export interface WarmupExchange {
  /**
   * The cluster's warmup policies (the complete set), or undefined while core cannot know them yet
   * (after its restart, before the agent's snapshot landed): nothing is sent then, since an empty
   * set would switch off the warmups the agent runs from its remembered policies.
   */
  policies(clusterId: string): Promise<WirePolicy[] | undefined>;
  /** Calls `changed` with a cluster id whenever that cluster's warmup policies change; returns the remover. */
  watch(changed: (clusterId: string) => void): () => void;
  /** Stores the events under the cluster id (durably, ignoring ones already stored). */
  record(clusterId: string, events: readonly WireWarmupEvent[]): Promise<void>;
}

export type CoreMessageInit = MessageInitShape<typeof CoreMessageSchema>;

const CLUSTER_ID = /^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$/;

export interface IngestCoreOptions {
  sink: IngestSink;
  clock?: Clock;
  log?: Logger;
  metrics?: Registry;
  coreVersion?: string;
  /** Deltas received but not yet written before the stream stops reading (backpressure). */
  maxPendingDeltas?: number;
  /** Deltas per sink write at most (larger backlogs are split). */
  maxBatch?: number;
  /**
   * Objects one snapshot may carry (default 2,000,000: 3× a 20k-node / 600k-pod cluster); more ends
   * the stream. A snapshot is applied as it streams (ADR 0020): what core keeps until its end grows
   * with this count (the keys it saw), never with the snapshot's bytes.
   */
  maxSnapshotObjects?: number;
  /** Time from snapshot_begin to snapshot_end at most (default 10 min); longer ends the stream. */
  maxSnapshotMs?: number;
  /**
   * One object's bytes and decoded cost at most (src/wire/bounds.ts; default 3 MiB and 8× its
   * bytes); past them the stream ends (RESOURCE_EXHAUSTED) before the object is parsed.
   */
  decodeLimits?: Partial<DecodeLimits>;
  /**
   * Estimated heap of one chunk's decoded objects at most (default 128 MiB; the agent cuts 1 MiB
   * chunks, ~3 MiB decoded): what decoding one message may cost, before any of it is parsed.
   */
  maxChunkHeapBytes?: number;
  /** Warmup policies to the agents, their warmup events to the store; without it neither. */
  warmup?: WarmupExchange;
  /**
   * How often a stream re-reads its cluster's warmup policies (default 30 s): another core
   * replica's API may have changed them, which `watch` does not hear. Sent only when changed.
   */
  warmupPolicyPollMs?: number;
  /** How long an API request waits for the agent's answer to a policy edit (default 20 s). */
  policyEditTimeoutMs?: number;
}

/** The last instant a JavaScript Date can hold (epoch ms). */
const MAX_EPOCH_MS = 8_640_000_000_000_000;

/** One cluster as core knows it; survives reconnects of its agent (not a core restart). */
export class ClusterSession {
  readonly clusterId: string;
  sessionId = "";
  readonly lifecycle = new LifecycleTracker();
  /**
   * Lifecycle steps derived from batches already applied to the state but not yet stored (their
   * write failed): they go out with the next write, since the state will not report those
   * changes again. Emptied once a write holding them resolves.
   */
  owed: LifecycleEvent[] = [];
  /** Highest sequence durably written in this session. */
  durable = 0;
  /** A complete snapshot has been written in this session: deltas can apply. */
  hasBase = false;
  /** The snapshot being applied as it streams (its end deletes what it did not carry). */
  snapshot: StreamedSnapshot | undefined;
  /** The stream currently feeding this cluster. */
  stream: { abort: (reason: Error) => void; done: Promise<void> } | undefined;
  /** The credential whose stream feeds (or last fed) the cluster; another may not take it over. */
  owner: string | undefined;
  info: Omit<Hello, "$typeName" | "$unknown" | "resumeFromSequence"> | undefined;
  /**
   * Claims the sink held as alive when this core process first heard from the cluster (by name),
   * until the first snapshot: those it lacks were deleted while core was down.
   */
  recovered: Map<string, OpenNodeClaim> | undefined;

  constructor(clusterId: string) {
    this.clusterId = clusterId;
  }
}

type Op =
  | { type: "begin"; seq: number }
  | { type: "chunk"; seq: number; objects: WireObject[] }
  | { type: "end"; seq: number }
  | { type: "delta"; seq: number; change: IngestChange; wire: WireObject };

/**
 * Objects an op holds (what backpressure and batch size count: a chunk holds up to a thousand). A
 * begin weighs nothing (it is written with its first chunk); an end weighs one, so begin/end pairs
 * still count.
 */
const weight = (op: Op): number =>
  op.type === "chunk" ? Math.max(1, op.objects.length) : op.type === "begin" ? 0 : 1;

/** Node's errors for a request stream its peer closed or reset before ending it. */
const PEER_GONE = new Set(["ERR_STREAM_PREMATURE_CLOSE", "ECONNRESET", "ERR_HTTP2_STREAM_CANCEL"]);

/**
 * Reading the peer's stream failed (bad gRPC framing, undecodable protobuf, oversize message): the
 * peer's fault, so INVALID_ARGUMENT, never INTERNAL. A peer that went away (an agent stopping,
 * crashing or losing its connection) is CANCELED: nothing it sent was malformed.
 */
function malformed(err: unknown): ConnectError {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && PEER_GONE.has(code))
    return violation(Code.Canceled, `the agent closed its stream (${code})`);
  const ce = ConnectError.from(err);
  if (ce.code === Code.Internal || ce.code === Code.Unknown) {
    return violation(Code.InvalidArgument, `malformed message from the agent: ${ce.rawMessage}`);
  }
  return ce;
}

/**
 * The stream's next message, or its end as soon as `signal` aborts (superseded, rejected): reading
 * stops then, not at the next message. Not a Promise.race against one promise that lives as long
 * as the stream: each race leaves a reaction on that promise which holds the message it settled
 * with, so every message a stream ever carried (150k objects' chunks, ~130 MiB of buffers at the
 * ingest bench's size) stayed reachable until the stream ended.
 */
function nextOrStop(
  it: AsyncIterator<AgentMessage>,
  signal: AbortSignal,
): Promise<IteratorResult<AgentMessage, undefined>> {
  if (signal.aborted) return Promise.resolve({ done: true, value: undefined });
  return new Promise((resolve, reject) => {
    const end = (): void => resolve({ done: true, value: undefined });
    signal.addEventListener("abort", end, { once: true });
    it.next().then(
      (r) => {
        signal.removeEventListener("abort", end);
        resolve(r);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", end);
        reject(malformed(err));
      },
    );
  });
}

/** A protocol violation with its gRPC code. */
function violation(code: Code, message: string): ConnectError {
  return new ConnectError(message, code);
}

export interface IngestMetrics {
  messages: Counter;
  rejected: Counter;
  refused: Counter;
  streams: Gauge;
  lastSeq: Gauge;
  write: Histogram;
  lifecycle: Counter;
}

export class IngestCore {
  readonly clusters = new Map<string, ClusterSession>();
  readonly sink: IngestSink;
  readonly clock: Clock;
  readonly log: Logger;
  readonly coreVersion: string;
  readonly maxPending: number;
  readonly maxBatch: number;
  readonly maxSnapshotObjects: number;
  readonly maxSnapshotMs: number;
  readonly decodeLimits: DecodeLimits;
  readonly maxChunkHeapBytes: number;
  readonly metrics: IngestMetrics;
  readonly warmup: WarmupExchange | undefined;
  readonly warmupPolicyPollMs: number;
  /** Policy edits down the agents' streams (ADR 0018). */
  readonly edits: PolicyEdits;

  constructor(opts: IngestCoreOptions) {
    this.sink = opts.sink;
    this.clock = opts.clock ?? realClock;
    this.log = (opts.log ?? silentLogger).child({ component: "ingest" });
    this.coreVersion = opts.coreVersion ?? "";
    this.maxPending = opts.maxPendingDeltas ?? 20_000;
    this.maxBatch = opts.maxBatch ?? 5_000;
    this.maxSnapshotObjects = opts.maxSnapshotObjects ?? 2_000_000;
    this.maxSnapshotMs = opts.maxSnapshotMs ?? 10 * 60_000;
    this.decodeLimits = { ...DEFAULT_DECODE_LIMITS, ...opts.decodeLimits };
    this.maxChunkHeapBytes = opts.maxChunkHeapBytes ?? 128 << 20;
    this.warmup = opts.warmup;
    this.warmupPolicyPollMs = opts.warmupPolicyPollMs ?? 30_000;
    this.edits = new PolicyEdits({
      clock: this.clock,
      ...(opts.policyEditTimeoutMs ? { timeoutMs: opts.policyEditTimeoutMs } : {}),
    });
    const r = opts.metrics ?? new Registry();
    this.metrics = {
      messages: r.counter({
        name: "wave_ingest_messages_total",
        help: "Agent messages accepted, by cluster and type.",
        labelNames: ["cluster", "type"],
      }),
      rejected: r.counter({
        name: "wave_ingest_rejected_streams_total",
        help: "Streams ended with an error status, by gRPC code.",
        labelNames: ["code"],
      }),
      refused: r.counter({
        name: "wave_ingest_rejected_total",
        help: "Snapshots and objects refused at a bound (the stream ends), by cluster and bound.",
        labelNames: ["cluster", "reason"],
      }),
      streams: r.gauge({ name: "wave_ingest_streams", help: "Open agent streams." }),
      lastSeq: r.gauge({
        name: "wave_ingest_durable_sequence",
        help: "Highest sequence durably written, by cluster.",
        labelNames: ["cluster"],
      }),
      write: r.histogram({
        name: "wave_ingest_sink_write_seconds",
        help: "Duration of sink writes.",
        buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      }),
      lifecycle: r.counter({
        name: "wave_ingest_lifecycle_events_total",
        help: "Lifecycle steps derived, by type.",
        labelNames: ["type"],
      }),
    };
  }

  /**
   * Serves one stream: yields HelloAck and Acks; throws a ConnectError (its status goes to the
   * agent) when the peer breaks the protocol or the sink fails.
   */
  async *serve(
    requests: AsyncIterable<AgentMessage>,
    signal: AbortSignal,
    principal?: AgentPrincipal,
  ): AsyncGenerator<CoreMessageInit> {
    const out = new AsyncQueue<CoreMessageInit>();
    const stream = new StreamHandler(this, out, signal, principal);
    this.metrics.streams.inc();
    const reading = stream.run(requests);
    try {
      yield* out;
    } catch (err) {
      const ce = ConnectError.from(err);
      this.metrics.rejected.inc({ code: Code[ce.code] });
      if (ce.code !== Code.Aborted && ce.code !== Code.Canceled) {
        this.log.warn("agent stream rejected", {
          cluster: stream.clusterId,
          code: Code[ce.code],
          error: ce.rawMessage,
        });
      }
      throw ce;
    } finally {
      stream.stop(new ConnectError("stream closed", Code.Canceled));
      await reading;
      this.metrics.streams.dec();
    }
  }
}

class StreamHandler {
  readonly #core: IngestCore;
  readonly #out: AsyncQueue<CoreMessageInit>;
  readonly #ac = new AbortController();
  clusterId = "";
  #session: ClusterSession | undefined;
  /** Last sequence received on this stream. */
  #lastSeq = 0;
  #needSnapshot = true;
  /** The snapshot being received: how many objects so far (they are applied as they arrive). */
  #staging: { objects: number; timer: AbortController } | undefined;
  readonly #principal: AgentPrincipal | undefined;
  #pending: Op[] = [];
  /** Objects held by #pending (backpressure bounds this, not the op count). */
  #pendingObjects = 0;
  #writing: Promise<void> | undefined;
  #drained: (() => void)[] = [];
  #failed: ConnectError | undefined;
  #done!: () => void;
  readonly #finished = new Promise<void>((r) => (this.#done = r));
  /** Detaches this stream from core's policy edits (it fails the edits still waiting on it). */
  #detachEdits: (() => void) | undefined;

  constructor(
    core: IngestCore,
    out: AsyncQueue<CoreMessageInit>,
    signal: AbortSignal,
    principal?: AgentPrincipal,
  ) {
    this.#core = core;
    this.#out = out;
    this.#principal = principal;
    const onAbort = (): void => this.stop(new ConnectError("agent went away", Code.Canceled));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  }

  #isFailed(): boolean {
    return this.#failed !== undefined;
  }

  stop(reason: ConnectError): void {
    if (!this.#ac.signal.aborted) this.#ac.abort(reason);
    this.#fail(reason);
    this.#dropStaging();
  }

  /** Stops the snapshot deadline of a snapshot in progress. */
  #dropStaging(): void {
    this.#staging?.timer.abort();
    this.#staging = undefined;
  }

  #fail(err: ConnectError): void {
    if (this.#failed) return;
    this.#failed = err;
    this.#out.fail(err);
    this.#wakeDrained();
  }

  async run(requests: AsyncIterable<AgentMessage>): Promise<void> {
    const it = requests[Symbol.asyncIterator]();
    try {
      for (;;) {
        const r = await nextOrStop(it, this.#ac.signal);
        if (r.done || this.#isFailed()) break;
        await this.#receive(r.value);
      }
      if (!this.#isFailed()) {
        await this.#flushAll();
        this.#out.close();
      }
    } catch (err) {
      this.#fail(
        err instanceof WireError ? violation(Code.InvalidArgument, err.message) : ConnectError.from(err),
      );
    } finally {
      if (this.#ac.signal.aborted) void it.return?.().catch(() => undefined);
      // Let the write in flight finish so the session's durable sequence is final.
      await this.#writing?.catch(() => undefined);
      this.#dropStaging();
      this.#detachEdits?.();
      const s = this.#session;
      if (s?.stream?.done === this.#finished) {
        // This stream was the cluster's live feed and nothing replaced it: core's view of the
        // cluster is frozen from now on (history marks a gap instead of repeating it).
        s.stream = undefined;
        this.#core.sink.clusterDisconnected?.(s.clusterId);
        if (!s.hasBase && s.durable === 0 && s.owed.length === 0) {
          // It never delivered a snapshot: a throwaway id, not a cluster. Forget it. (One whose
          // snapshot was applied but not stored stays: its steps are owed to the store.)
          this.#core.clusters.delete(s.clusterId);
          this.#core.sink.clusterForgotten?.(s.clusterId);
        }
      }
      this.#done();
    }
  }

  async #receive(m: AgentMessage): Promise<void> {
    const body = m.body;
    if (body.case === undefined) throw violation(Code.InvalidArgument, "message has no body");
    if (!this.#session) {
      if (body.case !== "hello") {
        throw violation(Code.FailedPrecondition, `expected hello as the first message, got ${body.case}`);
      }
      await this.#hello(body.value);
      return;
    }
    if (body.case === "hello") throw violation(Code.FailedPrecondition, "duplicate hello on one stream");
    // Beside the object sequence (ingest.proto): no sequence of its own to check.
    if (body.case === "warmupEvents") {
      await this.#warmupEvents(this.#session.clusterId, body.value);
      return;
    }
    if (body.case === "policyEditResult") {
      this.#core.edits.settle(this.#session.clusterId, resultFromProto(body.value));
      return;
    }
    const seq = Number(m.sequence);
    if (seq <= 0) throw violation(Code.InvalidArgument, `${body.case}: sequence is required`);
    const expected = this.#lastSeq + 1;
    if (body.case === "snapshotBegin") {
      // A snapshot may jump forward: it restarts the contiguous run.
      if (seq < expected) {
        throw violation(Code.FailedPrecondition, `sequence regression: got ${seq}, expected ≥ ${expected}`);
      }
    } else if (seq !== expected) {
      const what = seq < expected ? "sequence regression" : "sequence gap";
      throw violation(Code.FailedPrecondition, `${what}: got ${seq}, expected ${expected}`);
    }
    this.#lastSeq = seq;
    const session = this.#session;
    const counted = (type: string): void =>
      this.#core.metrics.messages.inc({ cluster: session.clusterId, type });

    switch (body.case) {
      case "snapshotBegin":
        if (this.#staging) throw violation(Code.FailedPrecondition, "snapshot_begin inside a snapshot");
        this.#staging = { objects: 0, timer: new AbortController() };
        // From here the state is partial until the snapshot's end: a reconnect needs a new one.
        session.hasBase = false;
        this.#snapshotDeadline(this.#staging.timer.signal);
        counted("snapshot_begin");
        await this.#enqueue({ type: "begin", seq });
        return;
      case "snapshotChunk": {
        if (!this.#staging) throw violation(Code.FailedPrecondition, "snapshot_chunk outside a snapshot");
        const staging = this.#staging;
        const chunk = body.value.objects;
        if (staging.objects + chunk.length > this.#core.maxSnapshotObjects) {
          throw this.#tooBig(
            Code.ResourceExhausted,
            `snapshot exceeds ${this.#core.maxSnapshotObjects} objects; rejected`,
            "snapshot_objects",
          );
        }
        // What decoding will cost, before any of the chunk is parsed (crafted nesting grows ~25×).
        let heap = 0;
        for (const [i, o] of chunk.entries()) {
          const cost = checkDecodeCost(o.json, this.#core.decodeLimits);
          heap += cost.estimate;
          if (cost.refused !== undefined || heap > this.#core.maxChunkHeapBytes) {
            throw this.#tooBig(
              Code.ResourceExhausted,
              cost.refused !== undefined
                ? `snapshot object ${staging.objects + i + 1}: ${cost.refused}; rejected`
                : `snapshot chunk would take ~${heap} bytes decoded, more than ${this.#core.maxChunkHeapBytes}; rejected`,
              cost.refused !== undefined ? this.#objectBound(o.json) : "chunk_decoded",
            );
          }
        }
        const objects = chunk.map((o) => decodeObject(o));
        for (const [i, o] of objects.entries()) {
          const bad = metadataProblem(o.object.metadata);
          if (bad !== undefined)
            throw this.#refused(`snapshot object ${staging.objects + i + 1} (${o.kind}): ${bad}; rejected`);
        }
        staging.objects += objects.length;
        counted("snapshot_chunk");
        await this.#enqueue({ type: "chunk", seq, objects });
        return;
      }
      case "snapshotEnd": {
        const staged = this.#staging;
        if (!staged) throw violation(Code.FailedPrecondition, "snapshot_end outside a snapshot");
        const count = Number(body.value.objectCount);
        if (count !== staged.objects) {
          throw violation(
            Code.InvalidArgument,
            `snapshot_end: object_count ${count} but ${staged.objects} objects were sent`,
          );
        }
        this.#dropStaging();
        this.#needSnapshot = false;
        counted("snapshot_end");
        await this.#enqueue({ type: "end", seq });
        return;
      }
      case "delta": {
        if (this.#staging) throw violation(Code.FailedPrecondition, "delta inside a snapshot");
        if (this.#needSnapshot)
          throw violation(
            Code.FailedPrecondition,
            "delta before a snapshot: core asked for a snapshot first",
          );
        const d = body.value;
        if (d.op !== Delta_Op.UPSERT && d.op !== Delta_Op.DELETE) {
          throw violation(Code.InvalidArgument, `delta: unknown op ${d.op}`);
        }
        if (!d.object) throw violation(Code.InvalidArgument, "delta: object is required");
        const cost = checkDecodeCost(d.object.json, this.#core.decodeLimits);
        if (cost.refused !== undefined)
          throw this.#tooBig(
            Code.ResourceExhausted,
            `delta ${seq}: ${cost.refused}; rejected`,
            this.#objectBound(d.object.json),
            "object",
          );
        const wire = decodeObject(d.object);
        const bad = metadataProblem(wire.object.metadata);
        if (bad !== undefined) throw this.#refused(`delta ${seq} (${wire.kind}): ${bad}; rejected`);
        const observedAt = Number(d.observedAtMs) || this.#core.clock.now();
        if (!Number.isSafeInteger(observedAt) || observedAt < 0 || observedAt > MAX_EPOCH_MS) {
          throw violation(
            Code.InvalidArgument,
            `delta: observed_at_ms ${d.observedAtMs} is not a valid time`,
          );
        }
        counted("delta");
        await this.#enqueue({
          type: "delta",
          seq,
          wire,
          change: {
            op: d.op === Delta_Op.UPSERT ? "upsert" : "delete",
            kind: wire.kind,
            key: objectKey(wire.object),
            object: wire.object,
            observedAt,
          },
        });
        return;
      }
    }
  }

  /**
   * Stores a batch of the cluster's warmup events, then acknowledges it. Under the stream's
   * cluster id: an agent reports only for the cluster its credential may stream.
   */
  async #warmupEvents(clusterId: string, m: WarmupEvents): Promise<void> {
    const events = m.events.map(eventFromProto);
    this.#core.metrics.messages.inc({ cluster: clusterId, type: "warmup_events" });
    if (this.#core.warmup) {
      try {
        await this.#core.warmup.record(clusterId, events);
      } catch (err) {
        // As with objects: the agent keeps the batch and sends it again on its next stream.
        this.#core.log.error("storing warmup events failed", { cluster: clusterId, error: err as Error });
        throw violation(
          Code.Unavailable,
          `core could not store the warmup events: ${(err as Error).message}`,
        );
      }
    }
    this.#out.push({ body: { case: "warmupEventsAck", value: { batch: m.batch } } });
  }

  /**
   * Sends the cluster's warmup policies after the HelloAck, again whenever `watch` says they
   * changed, and after each poll that finds them different, until the stream ends.
   */
  async #feedWarmupPolicies(clusterId: string): Promise<void> {
    const core = this.#core;
    const exchange = core.warmup;
    if (!exchange) return;
    const signal = this.#ac.signal;
    const stopped = (): boolean => signal.aborted;
    let sent: string | undefined;
    let wake = new AbortController();
    const unwatch = exchange.watch((id) => {
      if (id === clusterId) wake.abort();
    });
    try {
      while (!signal.aborted) {
        try {
          const policies = (await exchange.policies(clusterId))?.sort((a, b) => a.pool.localeCompare(b.pool));
          const text = JSON.stringify(policies);
          if (policies !== undefined && text !== sent && !stopped()) {
            sent = text;
            this.#out.push({
              body: { case: "warmupPolicies", value: { policies: policiesToProto(policies) } },
            });
          }
        } catch (err) {
          core.log.warn("reading warmup policies failed", { cluster: clusterId, error: err as Error });
        }
        try {
          await core.clock.sleep(core.warmupPolicyPollMs, AbortSignal.any([signal, wake.signal]));
        } catch {
          wake = new AbortController();
        }
      }
    } finally {
      unwatch();
    }
  }

  /** Ends the stream if the snapshot begun now is not complete within the bound. */
  #snapshotDeadline(signal: AbortSignal): void {
    this.#core.clock.sleep(this.#core.maxSnapshotMs, signal).then(
      () =>
        this.stop(
          this.#tooBig(
            Code.DeadlineExceeded,
            `snapshot not complete within ${this.#core.maxSnapshotMs} ms; rejected`,
            "snapshot_duration",
          ),
        ),
      () => undefined,
    );
  }

  /**
   * A bound was hit: logged with the reason, which the agent gets as the stream's status, counted,
   * and told to the sink so the cluster is listed as rejected (issue 30: never silently refused).
   */
  #tooBig(
    code: Code,
    message: string,
    bound: RejectionBound,
    what: "snapshot" | "object" = "snapshot",
  ): ConnectError {
    this.#core.log.warn(`agent ${what} rejected`, { cluster: this.clusterId, bound, error: message });
    this.#core.metrics.refused.inc({ cluster: this.clusterId, reason: bound });
    this.#core.sink.clusterRejected?.(this.clusterId, { at: this.#core.clock.now(), bound, message });
    return violation(code, message);
  }

  /**
   * An object whose name or labels the apiserver would refuse (issue 42: such names reached
   * copyable shell commands): refused and reported like a bound (`object_name`).
   */
  #refused(message: string): ConnectError {
    return this.#tooBig(Code.InvalidArgument, message, "object_name", "object");
  }

  /** Which of an object's bounds `json` is past (checkDecodeCost tests its size first). */
  #objectBound(json: Uint8Array): RejectionBound {
    return json.length > this.#core.decodeLimits.maxObjectBytes ? "object_bytes" : "object_decoded";
  }

  async #hello(h: Hello): Promise<void> {
    if (!CLUSTER_ID.test(h.clusterId)) {
      throw violation(
        Code.InvalidArgument,
        `hello: invalid cluster_id ${JSON.stringify(h.clusterId)} (lowercase DNS label, ≤ 63)`,
      );
    }
    if (h.sessionId === "") throw violation(Code.InvalidArgument, "hello: session_id is required");
    if (h.agentVersion === "") throw violation(Code.InvalidArgument, "hello: agent_version is required");
    const principal = this.#principal;
    if (principal && !principal.allows(h.clusterId)) {
      throw violation(
        Code.PermissionDenied,
        `agent credential "${principal.name}" may not stream cluster ${JSON.stringify(h.clusterId)}`,
      );
    }
    this.clusterId = h.clusterId;
    const core = this.#core;
    let s = core.clusters.get(h.clusterId);
    if (s?.stream && principal && s.owner !== undefined && s.owner !== principal.name) {
      // Only the owner's own reconnect replaces a live stream; another credential never takes over.
      throw violation(
        Code.PermissionDenied,
        `cluster ${JSON.stringify(h.clusterId)} is streamed by another agent credential; not taken over`,
      );
    }
    if (s?.stream) {
      // A reconnect can arrive before core noticed the old connection died: the newest wins.
      const old = s.stream;
      old.abort(violation(Code.Aborted, "superseded by a newer stream from the same cluster"));
      await old.done;
    }
    if (this.#failed) return;
    if (!s) {
      s = new ClusterSession(h.clusterId);
      core.clusters.set(h.clusterId, s);
      s.recovered = await this.#recover(h.clusterId);
    }
    const resumeFrom = Number(h.resumeFromSequence);
    const sameSession = s.sessionId === h.sessionId;
    const resume = sameSession && s.hasBase && resumeFrom > 0 && resumeFrom <= s.durable;
    if (!sameSession) {
      s.sessionId = h.sessionId;
      s.durable = 0;
      s.hasBase = false;
    }
    this.#session = s;
    s.owner = principal?.name;
    s.stream = { abort: (r) => this.stop(ConnectError.from(r)), done: this.#finished };
    s.info = {
      clusterId: h.clusterId,
      kubernetesVersion: h.kubernetesVersion,
      karpenterVersion: h.karpenterVersion,
      agentVersion: h.agentVersion,
      sessionId: h.sessionId,
    };
    this.#lastSeq = s.durable;
    this.#needSnapshot = !resume;
    await core.sink.clusterConnected({
      clusterId: h.clusterId,
      kubernetesVersion: h.kubernetesVersion,
      karpenterVersion: h.karpenterVersion,
      agentVersion: h.agentVersion,
      sessionId: h.sessionId,
      connectedAt: core.clock.now(),
    });
    core.log.info("agent connected", {
      cluster: h.clusterId,
      agentVersion: h.agentVersion,
      mode: resume ? "resume" : "snapshot",
      lastSequence: s.durable,
    });
    this.#out.push({
      body: {
        case: "helloAck",
        value: {
          mode: resume ? HelloAck_Mode.RESUME : HelloAck_Mode.SNAPSHOT,
          lastSequence: BigInt(resume ? s.durable : 0),
          coreVersion: core.coreVersion,
        },
      },
    });
    void this.#feedWarmupPolicies(h.clusterId);
    this.#detachEdits?.();
    this.#detachEdits = core.edits.attach(h.clusterId, (e) =>
      this.#out.push({ body: { case: "policyEdit", value: editToProto(e) } }),
    );
  }

  /** What the sink remembers alive of a cluster this process has not seen yet (never throws). */
  async #recover(clusterId: string): Promise<Map<string, OpenNodeClaim> | undefined> {
    const core = this.#core;
    try {
      const open = await core.sink.openNodeClaims?.(clusterId);
      return open && new Map(open.map((c) => [c.name, c]));
    } catch (err) {
      // Not fatal: only the Terminated steps of claims deleted while core was down are at stake.
      core.log.warn("reading the NodeClaims the store holds as alive failed", {
        cluster: clusterId,
        error: err as Error,
      });
      return undefined;
    }
  }

  async #enqueue(op: Op): Promise<void> {
    this.#pending.push(op);
    this.#pendingObjects += weight(op);
    // A begin alone stores nothing: it goes with the snapshot's first chunk (or its end).
    if (!this.#writing && op.type !== "begin") this.#writing = this.#writeLoop();
    // Backpressure: stop reading (HTTP/2 flow control then slows the agent) while the sink lags.
    // Counted in objects: memory held by a stream is bounded however its snapshot is chunked.
    while (!this.#failed && this.#pendingObjects >= this.#core.maxPending) {
      await new Promise<void>((r) => this.#drained.push(r));
    }
  }

  #wakeDrained(): void {
    const w = this.#drained;
    this.#drained = [];
    for (const f of w) f();
  }

  async #flushAll(): Promise<void> {
    while (this.#writing) await this.#writing;
  }

  async #writeLoop(): Promise<void> {
    try {
      while (this.#pending.length > 0 && !this.#failed) {
        // Up to maxBatch objects per write (at least one op); a snapshot's begin opens a batch.
        let n = 0;
        let objects = 0;
        for (const op of this.#pending) {
          if (n > 0 && (op.type === "begin" || objects + weight(op) > this.#core.maxBatch)) break;
          objects += weight(op);
          n++;
        }
        const ops = this.#pending.splice(0, n);
        this.#pendingObjects -= objects;
        this.#wakeDrained();
        await this.#write(ops);
      }
    } catch (err) {
      const session = this.#session;
      // What the sink holds is now unknown: the next hello must start over with a snapshot.
      if (session) {
        session.hasBase = false;
        session.sessionId = "";
      }
      this.#core.log.error("sink write failed", { cluster: this.clusterId, error: err as Error });
      this.#fail(violation(Code.Unavailable, `core could not store the data: ${(err as Error).message}`));
    } finally {
      this.#writing = undefined;
    }
  }

  async #write(ops: Op[]): Promise<void> {
    const s = this.#session;
    const last = ops[ops.length - 1];
    if (!s || !last) return;
    const core = this.#core;
    const now = core.clock.now();
    const changes: IngestChange[] = [];
    let snapshot: WireObject[] | undefined;
    // Set inside the batch callback (a closure: flags in an object, not narrowed lets).
    const part = { first: false, last: false };
    // The state moves forward once, here, before the batch is durable; the steps derived from
    // what it reports are owed to the store until a write holding them resolves, so a failed
    // write loses none (the resync that follows finds nothing new for them) and a later one
    // stores each once. The agent's objects are acked only after that write.
    const state = core.sink.state(s.clusterId);
    state.batch(() => {
      for (const op of ops) {
        switch (op.type) {
          case "begin":
            part.first = true;
            snapshot = [];
            s.snapshot = new StreamedSnapshot(state, s.lifecycle, { claimUids: s.recovered !== undefined });
            break;
          case "chunk":
            if (!s.snapshot) throw new Error("snapshot chunk without its begin");
            snapshot ??= [];
            for (const o of op.objects) snapshot.push(o);
            s.owed.push(...s.snapshot.add(op.objects, now));
            break;
          case "end":
            snapshot ??= [];
            part.last = true;
            this.#endSnapshot(s, state, now);
            break;
          case "delta":
            changes.push(op.change);
            this.#applyDelta(s, state, op);
        }
      }
    });
    const lifecycle = [...s.owed];
    const started = performance.now();
    const batch = {
      clusterId: s.clusterId,
      sessionId: s.sessionId,
      sequence: last.seq,
      receivedAt: now,
      changes,
      lifecycle,
      ...(snapshot ? { snapshot, snapshotPart: part } : {}),
    };
    await core.sink.write(batch);
    s.owed.splice(0, lifecycle.length);
    core.metrics.write.observe((performance.now() - started) / 1000);
    for (const e of lifecycle) core.metrics.lifecycle.inc({ type: e.type });
    if (part.last) s.hasBase = true;
    s.durable = last.seq;
    core.metrics.lastSeq.set(last.seq, { cluster: s.clusterId });
    this.#out.push({ body: { case: "ack", value: { sequence: BigInt(last.seq) } } });
  }

  /** The streamed snapshot ended: what it did not carry goes, its claims' and Events' steps are owed. */
  #endSnapshot(s: ClusterSession, state: ClusterState, now: number): void {
    const snap = s.snapshot;
    if (!snap) throw new Error("snapshot end without its begin");
    s.snapshot = undefined;
    const at = new Date(now).toISOString();
    // Claims the store held alive when this core started, deleted while it was down: neither in
    // the state (whose own deletions the snapshot reports) nor, by uid, in the snapshot.
    const vanished: OpenNodeClaim[] = [];
    const incoming = snap.claimUids;
    const steps = snap.end(now);
    if (s.recovered && incoming) {
      for (const [name, c] of s.recovered) {
        if (state.nodeClaim(name) === undefined && incoming.get(name) !== c.uid) vanished.push(c);
      }
      s.recovered = undefined;
    }
    // The vanished claims' steps after the snapshot's (they end after what the snapshot shows).
    s.owed.push(...steps);
    for (const c of vanished) s.owed.push(...s.lifecycle.vanished(c, at));
  }

  #applyDelta(s: ClusterSession, state: ClusterState, op: Extract<Op, { type: "delta" }>): void {
    s.owed.push(...ingestDelta(state, s.lifecycle, op.change));
  }
}
