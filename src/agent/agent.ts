// The metrics agent: source objects → trimmed → outbox → one gRPC bidi stream to core, with
// reconnects (backoff + jitter), resume from the last acknowledged sequence, and health metrics.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import type { SecureClientSessionOptions } from "node:http2";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { AgentMessageSchema, HelloAck_Mode, Ingest } from "../gen/wave/v1/ingest_pb.ts";
import type { AgentMessage, PolicyEdit } from "../gen/wave/v1/ingest_pb.ts";
import { Backoff } from "../shared/backoff.ts";
import type { BackoffOptions } from "../shared/backoff.ts";
import { realClock } from "../shared/clock.ts";
import type { Clock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import type { Logger } from "../shared/log.ts";
import { Registry } from "../shared/metrics.ts";
import type { Counter } from "../shared/metrics.ts";
import { Outbox } from "./outbox.ts";
import type { OutboxChange, OutboxOptions } from "./outbox.ts";
import type { AgentSource, SourceChange } from "./source.ts";
import { trim } from "./trim.ts";
import type { WireObject } from "../wire/wire.ts";
import { eventToProto, policiesFromProto, type WirePolicy } from "../wire/warmup.ts";
import { WarmupOutbox } from "./warmup-outbox.ts";
import {
  editFromProto,
  resultToProto,
  type WirePolicyEdit,
  type WirePolicyEditResult,
} from "../wire/policy-edit.ts";

export interface AgentTls {
  /** CA bundle that signed core's certificate (PEM file). */
  caFile?: string;
  /** Client certificate and key for mutual TLS (PEM files). */
  certFile?: string;
  keyFile?: string;
  /** Name to verify in core's certificate when it differs from the URL's host. */
  serverName?: string;
}

export interface AgentOptions {
  source: AgentSource;
  /** Core's gRPC endpoint: https://host:port (TLS) or http://host:port (plaintext HTTP/2). */
  coreUrl: string;
  tls?: AgentTls;
  /** Sent as `authorization: Bearer <token>` on every stream. */
  token?: string;
  clusterId: string;
  kubernetesVersion?: string;
  karpenterVersion?: string;
  agentVersion: string;
  clock?: Clock;
  log?: Logger;
  /** Where the agent registers its metrics (wave_agent_*). */
  metrics?: Registry;
  backoff?: BackoffOptions;
  /**
   * Waits after core refused what the agent sent at a bound (RESOURCE_EXHAUSTED, or a snapshot cut
   * at its duration bound): resending the same snapshot soon would be refused again, so these
   * grow to minutes (default 5 s doubling to 5 min) and do not start over until core accepts.
   */
  rejectedBackoff?: BackoffOptions;
  outbox?: Omit<OutboxOptions, "now">;
  /** HTTP/2 keepalive: detects a core that vanished without closing the connection. */
  pingIntervalMs?: number;
  /**
   * The cluster's warmup policies, each time core sends them (after every HelloAck and on every
   * change): the complete set, for the warmup controller beside this agent (ADR 0014).
   */
  onWarmupPolicies?: (policies: WirePolicy[]) => void;
  /**
   * Applies a policy edit core sent (a SpotPolicy/WarmupPolicy change made through Wave, ADR
   * 0018) and answers it; without it every edit is answered as failed.
   */
  onPolicyEdit?: (edit: WirePolicyEdit) => Promise<WirePolicyEditResult>;
}

export type AgentStatus = "idle" | "connecting" | "streaming" | "backoff" | "stopped";

/** Whether the agent's initial sync is done: streaming, and everything it listed acked by core. */
export const initialSyncDone = (a: Agent): boolean =>
  a.status === "streaming" && a.outbox.lastAcked > 0 && a.outbox.buffered === 0;

export class Agent {
  readonly sessionId = randomUUID();
  readonly outbox: Outbox;
  /** The warmup controller's events for core (`warmup.push`), sent beside the objects. */
  readonly warmup: WarmupOutbox;
  readonly #o: AgentOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #backoff: Backoff;
  readonly #rejectedBackoff: Backoff;
  /** Why core last refused what we sent, until it acknowledges something on a later stream. */
  #rejection: string | undefined;
  readonly #nodeOptions: SecureClientSessionOptions;
  readonly #reconnects: Counter;
  #reconnectCount = 0;
  readonly #errors: Counter;
  readonly #acks: Counter;
  #status: AgentStatus = "idle";
  #lastAckAt = 0;
  #statusWaiters: (() => void)[] = [];
  #helloAcked = false;
  #count: (() => number) | undefined;

  constructor(opts: AgentOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? realClock;
    this.#log = (opts.log ?? silentLogger).child({ component: "agent", cluster: opts.clusterId });
    this.#backoff = new Backoff(opts.backoff ?? { initialMs: 500, maxMs: 30_000 });
    this.#rejectedBackoff = new Backoff(opts.rejectedBackoff ?? { initialMs: 5_000, maxMs: 300_000 });
    this.outbox = new Outbox({ ...opts.outbox, now: () => this.#clock.now() });
    this.warmup = new WarmupOutbox({ onWork: () => this.outbox.poke() });
    this.#nodeOptions = tlsOptions(opts.tls);
    if (opts.tls && !opts.coreUrl.startsWith("https://")) {
      throw new Error(`agent: TLS is configured but core URL ${opts.coreUrl} is not https://`);
    }
    const m = opts.metrics ?? new Registry();
    const ob = this.outbox;
    m.gauge({
      name: "wave_agent_stream_lag_seconds",
      help: "Age of the oldest message core has not acknowledged.",
      collect: (g) => g.set(ob.lag() / 1000),
    });
    m.gauge({
      name: "wave_agent_buffered_messages",
      help: "Messages queued for core (unsent or unacknowledged).",
      collect: (g) => g.set(ob.buffered),
    });
    m.gauge({
      name: "wave_agent_objects",
      help: "Objects in the cluster as the agent last listed and watched it.",
      collect: (g) => g.set(this.objectCount),
    });
    m.counter({
      name: "wave_agent_dropped_messages_total",
      help: "Messages discarded because the buffer overflowed (each overflow forces a resync).",
      read: () => ob.dropped,
    });
    m.counter({
      name: "wave_agent_resyncs_total",
      help: "Full snapshots sent after the first one.",
      read: () => ob.resyncs,
    });
    m.gauge({
      name: "wave_agent_last_ack_sequence",
      help: "Highest sequence core acknowledged.",
      collect: (g) => g.set(ob.lastAcked),
    });
    m.gauge({
      name: "wave_agent_last_ack_timestamp_seconds",
      help: "When core last acknowledged (unix seconds, 0 = never).",
      collect: (g) => g.set(this.#lastAckAt / 1000),
    });
    m.gauge({
      name: "wave_agent_connected",
      help: "1 while the stream to core is established.",
      collect: (g) => g.set(this.#status === "streaming" ? 1 : 0),
    });
    this.#reconnects = m.counter({
      name: "wave_agent_reconnects_total",
      help: "Reconnection attempts after a failed or closed stream.",
    });
    this.#errors = m.counter({
      name: "wave_agent_stream_errors_total",
      help: "Streams that ended with an error, by gRPC code.",
      labelNames: ["code"],
    });
    this.#acks = m.counter({ name: "wave_agent_acks_total", help: "Acknowledgements received from core." });
    const warmup = this.warmup;
    m.gauge({
      name: "wave_agent_warmup_events_pending",
      help: "Warmup events core has not acknowledged yet.",
      collect: (g) => g.set(warmup.pending),
    });
    m.counter({
      name: "wave_agent_warmup_events_dropped_total",
      help: "Warmup events discarded because core was away too long.",
      read: () => warmup.dropped,
    });
  }

  /** Objects the source holds now (0 before it opens, or if it does not count them). */
  get objectCount(): number {
    return this.#count?.() ?? 0;
  }

  /** Core's reason for refusing what the agent sent, while it refuses it (undefined otherwise). */
  get rejection(): string | undefined {
    return this.#rejection;
  }

  get status(): AgentStatus {
    return this.#status;
  }

  get reconnects(): number {
    return this.#reconnectCount;
  }

  /** Resolves when the agent reaches `status` (tests and readiness probes). */
  async until(pred: (a: Agent) => boolean, signal?: AbortSignal): Promise<void> {
    while (!pred(this)) {
      signal?.throwIfAborted();
      await new Promise<void>((r) => this.#statusWaiters.push(r));
    }
  }

  #notify(): void {
    const w = this.#statusWaiters;
    this.#statusWaiters = [];
    for (const f of w) f();
  }

  #setStatus(s: AgentStatus): void {
    this.#status = s;
    this.#notify();
  }

  /** Core refused what we sent (a bound): said once as an error per reason, not every retry. */
  #rejected(ce: ConnectError): void {
    const fields = { code: Code[ce.code], error: ce.rawMessage, attempt: this.#rejectedBackoff.attempt + 1 };
    if (ce.rawMessage !== this.#rejection)
      this.#log.error("core rejected what the agent sent; backing off until it accepts", fields);
    else this.#log.debug("core rejected what the agent sent again", fields);
    this.#rejection = ce.rawMessage;
  }

  #wasHealthy(): boolean {
    return this.#helloAcked;
  }

  /** Runs until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const stream = await this.#o.source.open(signal);
    this.#count = stream.count;
    // Every snapshot is a fresh listing from the source, trimmed (unless the source did) and
    // encoded chunk by chunk as it streams: the agent keeps no copy of the cluster (ADR 0021).
    this.outbox.listFrom(() => stream.list(), stream.trimmed === true ? asIs : trim);
    const pump = this.#pump(stream.changes, stream.trimmed === true ? asIs : trim, signal);
    try {
      const stopped = (): boolean => signal.aborted;
      while (!stopped()) {
        this.#setStatus("connecting");
        this.#helloAcked = false;
        let rejected = false;
        try {
          await this.#connectOnce(signal);
          if (!stopped()) this.#log.warn("core closed the stream");
        } catch (err) {
          if (stopped()) break;
          const ce = ConnectError.from(err);
          this.#errors.inc({ code: Code[ce.code] });
          rejected = ce.code === Code.ResourceExhausted || ce.code === Code.DeadlineExceeded;
          if (rejected) this.#rejected(ce);
          else this.#log.warn("stream to core failed", { code: Code[ce.code], error: ce.rawMessage });
          // Core rejected what we sent: what it holds may not match us, so start over.
          if (ce.code === Code.InvalidArgument || ce.code === Code.FailedPrecondition)
            this.outbox.forceResync();
        }
        if (stopped()) break;
        // A stream that got as far as the HelloAck was healthy: start the backoff over.
        if (this.#wasHealthy()) this.#backoff.reset();
        this.#setStatus("backoff");
        // Refused at a bound: a HelloAck says nothing about whether core will take the snapshot.
        const delay = rejected ? this.#rejectedBackoff.next() : this.#backoff.next();
        try {
          await this.#clock.sleep(delay, signal);
        } catch {
          break;
        }
        this.#reconnects.inc();
        this.#reconnectCount++;
      }
    } finally {
      this.#setStatus("stopped");
      await pump;
    }
  }

  async #pump(
    changes: AsyncIterable<SourceChange>,
    trimObject: (o: WireObject) => WireObject | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    try {
      for await (const c of changes) {
        const t = trimChange(c, trimObject);
        if (t) this.outbox.apply(t);
        this.#notify();
      }
    } catch (err) {
      if (!signal.aborted) this.#log.error("agent source failed", { error: err as Error });
    }
  }

  /**
   * One stream, on a connection of its own that closes with it; resolves when core ends the
   * stream cleanly, rejects on an error.
   *
   * A new connection per attempt, because a connection that failed a stream may be one that can no
   * longer carry any: Node keeps an HTTP/2 session open after it starts refusing streams (its
   * memory budget spent: every stream then ends in RST_STREAM ENHANCE_YOUR_CALM), and a session
   * that merely went quiet is only found dead by the ping. Closing it also frees core's side at
   * once instead of leaving an idle connection per reconnect.
   */
  async #connectOnce(signal: AbortSignal): Promise<void> {
    const ac = new AbortController();
    const stop = (): void => ac.abort();
    signal.addEventListener("abort", stop, { once: true });
    const connection = new Http2SessionManager(
      this.#o.coreUrl,
      { pingIntervalMs: this.#o.pingIntervalMs ?? 15_000, pingTimeoutMs: 10_000 },
      this.#nodeOptions,
    );
    const transport = createGrpcTransport({
      baseUrl: this.#o.coreUrl,
      sessionManager: connection,
      readMaxBytes: 64 << 20,
      writeMaxBytes: 64 << 20,
    });
    const client = createClient(Ingest, transport);
    let ready!: () => void;
    const helloAcked = new Promise<void>((r) => (ready = r));
    const headers = this.#o.token ? { authorization: `Bearer ${this.#o.token}` } : undefined;
    // Answers to policy edits, sent on the stream the edit came on (core waits on that stream).
    const results: WirePolicyEditResult[] = [];
    try {
      const responses = client.stream(this.#requests(ac.signal, helloAcked, results), {
        signal: ac.signal,
        headers,
      });
      for await (const m of responses) {
        if (m.body.case === "helloAck") {
          const mode = m.body.value.mode;
          const last = Number(m.body.value.lastSequence);
          this.outbox.helloAck(mode, last);
          this.#log.info("connected to core", {
            mode: mode === HelloAck_Mode.RESUME ? "resume" : "snapshot",
            lastSequence: last,
          });
          this.#helloAcked = true;
          this.#setStatus("streaming");
          ready();
        } else if (m.body.case === "ack") {
          this.outbox.ack(Number(m.body.value.sequence));
          if (this.#rejection !== undefined) {
            // Core took something again: the refusal is over.
            this.#log.info("core accepts what the agent sends again", { after: this.#rejection });
            this.#rejection = undefined;
            this.#rejectedBackoff.reset();
          }
          this.#lastAckAt = this.#clock.now();
          this.#acks.inc();
          this.#notify();
        } else if (m.body.case === "warmupPolicies") {
          const { policies, bad } = policiesFromProto(m.body.value.policies);
          if (bad.length > 0)
            this.#log.warn("undecodable warmup policies from core left out", { pools: bad });
          this.#o.onWarmupPolicies?.(policies);
        } else if (m.body.case === "warmupEventsAck") {
          this.warmup.ack(Number(m.body.value.batch));
        } else if (m.body.case === "policyEdit") {
          void this.#policyEdit(m.body.value, results);
        }
      }
    } finally {
      signal.removeEventListener("abort", stop);
      ac.abort();
      connection.abort();
      ready();
    }
  }

  /** Applies one edit from core and queues its answer; never throws. */
  async #policyEdit(msg: PolicyEdit, results: WirePolicyEditResult[]): Promise<void> {
    let result: WirePolicyEditResult;
    try {
      const edit = editFromProto(msg);
      result = this.#o.onPolicyEdit
        ? await this.#o.onPolicyEdit(edit)
        : {
            id: edit.id,
            outcome: "failed",
            message: "this agent does not apply policy edits",
            conflicts: [],
          };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.#log.warn("policy edit failed", { id: Number(msg.id), error: message });
      result = { id: Number(msg.id), outcome: "failed", message, conflicts: [] };
    }
    results.push(result);
    this.outbox.poke();
  }

  async *#requests(
    signal: AbortSignal,
    helloAcked: Promise<void>,
    results: WirePolicyEditResult[] = [],
  ): AsyncGenerator<AgentMessage> {
    const o = this.#o;
    yield create(AgentMessageSchema, {
      body: {
        case: "hello",
        value: {
          clusterId: o.clusterId,
          kubernetesVersion: o.kubernetesVersion ?? "",
          karpenterVersion: o.karpenterVersion ?? "",
          agentVersion: o.agentVersion,
          sessionId: this.sessionId,
          resumeFromSequence: BigInt(this.outbox.resumeFrom()),
        },
      },
    });
    await helloAcked;
    // After the HelloAck everything up to lastAcked is with core (or superseded by a snapshot).
    let cursor = this.outbox.lastAcked;
    // Every warmup batch core has not acknowledged goes again on a new stream.
    let warmupCursor = 0;
    while (!signal.aborted) {
      const r = results.shift();
      if (r) {
        yield create(AgentMessageSchema, {
          sequence: 0n,
          body: { case: "policyEditResult", value: resultToProto(r) },
        });
        continue;
      }
      const w = this.warmup.next(warmupCursor);
      if (w) {
        warmupCursor = w.batch;
        yield create(AgentMessageSchema, {
          sequence: 0n,
          body: {
            case: "warmupEvents",
            value: { batch: BigInt(w.batch), events: w.events.map(eventToProto) },
          },
        });
        continue;
      }
      const e = this.outbox.next(cursor);
      if (e) {
        cursor = e.seq;
        yield e.msg;
        continue;
      }
      await this.outbox.waitForWork(signal);
    }
  }
}

const asIs = (o: WireObject): WireObject => o;

function trimChange(
  c: SourceChange,
  trimObject: (o: WireObject) => WireObject | undefined,
): OutboxChange | undefined {
  if (c.type === "replace") return { type: "resync" };
  const t = trimObject(c.object);
  return t ? { type: c.type, object: t } : undefined;
}

function tlsOptions(tls: AgentTls | undefined): SecureClientSessionOptions {
  if (!tls) return {};
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    throw new Error("agent TLS: certFile and keyFile must be given together");
  }
  const out: SecureClientSessionOptions = {};
  if (tls.caFile) out.ca = readFileSync(tls.caFile);
  if (tls.certFile) out.cert = readFileSync(tls.certFile);
  if (tls.keyFile) out.key = readFileSync(tls.keyFile);
  if (tls.serverName) out.servername = tls.serverName;
  return out;
}
