// The embedded cluster's far past, generated at start without the agent → gRPC → core hop: the
// simulated cluster steps through it (the same simulator, Wave's admission and spot repair, the
// warmup controller on core's state), and every change it makes goes into core in process, the
// way core's ingest would have taken it live — trimmed as the agent trims (agent/trim.ts), its
// lifecycle steps derived as core's ingest derives them (ingest/apply.ts), written through the hub (the store's
// lifecycle, disruptions and repairs; core's ClusterState, which the warmup controller reads).
// History (series points, realized savings, pods per workload) is sampled at every minute boundary
// from that state by the functions core's samplers use, and written in a few large transactions.
// Only the last minutes stream through the agent and core's gRPC ingest (embedded.ts), so the live
// pipeline is what runs at the end. docs/simulator.md, "History at start".
import type { ClusterHub } from "../core/hub/hub.ts";
import { alignDown } from "../core/history/downsample.ts";
import { SeriesRecorder } from "../core/history/recorder.ts";
import type { PoolSample, SeriesRow } from "../core/history/series.ts";
import { ingestDelta, ingestSnapshot } from "../core/ingest/apply.ts";
import type { IngestBatch, IngestChange } from "../core/ingest/sink.ts";
import { snapshotCompletes } from "../core/ingest/sink.ts";
import type { SavingsRow, Store, WorkloadPodsRow } from "../core/store/store.ts";
import { LifecycleTracker, type LifecycleEvent } from "../core/lifecycle/derive.ts";
import { savingsRates, savingsRows, type SavingsRates } from "../dashboard/figures/savings.ts";
import {
  workloadPodCounts,
  workloadPodsRows,
  type WorkloadCensus,
} from "../dashboard/figures/workload-pods.ts";
import { trim } from "../agent/trim.ts";
import type { MemoryKube } from "../kube/memory/memory.ts";
import type { PriceProvider } from "../pricing/types.ts";
import type { Clock } from "../shared/clock.ts";
import type { LaggingClock } from "../sim/clock.ts";
import type { Logger } from "../shared/log.ts";
import { WIRE_KINDS, objectKey, type WireKind, type WireObject } from "../wire/wire.ts";
import { heapBurst } from "./heap.ts";
import { poolSamplesOf } from "../dashboard/views.ts";

/** The session id of the in-process feed (the agent's own session follows it). */
export const PREHISTORY_SESSION = "prehistory";
/** Simulated time between two writes of the sampled history (a few large transactions). */
const FLUSH_EVERY_MS = 4 * 3_600_000;
/**
 * Changes the steps gather before core stores them in one batch: a store transaction per step was
 * an eighth of the start-up (one SQLite commit each, ~750 for a day). The state takes every step
 * at once (the warmup controller and the samples read it); only the rows wait.
 */
const WRITE_EVERY_CHANGES = 2_000;

export interface PrehistoryOptions {
  kube: MemoryKube;
  hub: ClusterHub;
  store: Store;
  prices: PriceProvider;
  clusterId: string;
  /** The cluster's clock: its time is the history's. */
  clock: Clock;
  log: Logger;
  /** Realized savings rows once written (Prometheus's counters), as the live sampler reports them. */
  onSavings?: (rows: readonly SavingsRow[]) => void;
  /**
   * When (in the cluster's time) the live stream takes over: the API shows the cluster as
   * catching up until then instead of "agent disconnected" (default: the start).
   */
  until?: number;
}

const isWireKind = (k: string): k is WireKind => (WIRE_KINDS as readonly string[]).includes(k);

export class Prehistory {
  readonly #o: PrehistoryOptions;
  readonly #stepMs: number;
  readonly #tracker = new LifecycleTracker();
  /** Changes the cluster made since the last step, as the agent would have sent them. */
  #changes: IngestChange[] = [];
  /** Changes in core's state whose batch is not stored yet, and their lifecycle steps. */
  #unstored: { changes: IngestChange[]; lifecycle: LifecycleEvent[] } = { changes: [], lifecycle: [] };
  #sequence = 0;
  #unobserve: (() => void) | undefined;
  /** The minute boundary sampled last (samples are due at each later one). */
  #sampledTo = 0;
  #flushedAt = 0;
  #sampleAt = 0;
  readonly #recorder: SeriesRecorder;
  #series: SeriesRow[] = [];
  #savings: SavingsRow[] = [];
  #pods: WorkloadPodsRow[] = [];
  /** Whether the agent's own snapshot has reached the hub since `end()`. */
  #streaming = false;
  #offBatch: (() => void) | undefined;
  #restoreHeap: () => void = () => undefined;
  /** Counts for the log line at the end. */
  readonly counts = { batches: 0, changes: 0, lifecycle: 0, points: 0 };

  constructor(o: PrehistoryOptions) {
    this.#o = o;
    this.#stepMs = o.store.retention.tiers[0]?.stepMs ?? 60_000;
    this.#recorder = new SeriesRecorder({
      clusterId: o.clusterId,
      stepMs: this.#stepMs,
      clock: { now: () => this.#sampleAt, sleep: () => Promise.resolve() },
    });
  }

  /**
   * Whether the store is fresh for this cluster: a prehistory over a reused --data-dir would mix
   * today's generated day into the history a previous run recorded.
   */
  static async wanted(store: Store, clusterId: string): Promise<boolean> {
    return (await store.latestSeries(clusterId)) === undefined;
  }

  /** Starts following the cluster: its objects now are core's first snapshot. */
  async begin(): Promise<void> {
    const { kube } = this.#o;
    // A day of changes in seconds: let the heap grow for it (a service process keeps it small).
    this.#restoreHeap = heapBurst();
    const now = this.#o.clock.now();
    this.#sampledTo = alignDown(now, this.#stepMs);
    this.#flushedAt = now;
    const snapshot: WireObject[] = [];
    for (const kind of WIRE_KINDS)
      for (const o of kube.peek(kind)) {
        const w = trim({ kind, object: o } as WireObject);
        if (w) snapshot.push(w);
      }
    const state = this.#o.hub.state(this.#o.clusterId);
    const entry = this.#o.hub.get(this.#o.clusterId);
    if (entry) entry.catchingUp = { from: now, at: now, until: Math.max(now, this.#o.until ?? now) };
    let lifecycle: LifecycleEvent[] = [];
    state.batch(() => (lifecycle = ingestSnapshot(state, this.#tracker, snapshot, now)));
    this.#unobserve = kube.observe((kind, type, object) => {
      if (!isWireKind(kind)) return;
      const w = trim({ kind, object } as WireObject);
      if (!w) return;
      this.#changes.push({
        op: type === "DELETED" ? "delete" : "upsert",
        kind,
        key: objectKey(object),
        object: w.object,
        observedAt: this.#o.clock.now(),
      });
    });
    await this.#write({ snapshot, changes: [], lifecycle, at: now });
  }

  /**
   * After one step of the cluster (its changes made at `from`, its clock now at `to`): core takes
   * the step's changes, then the history samples every minute boundary in (from, to] — the state
   * between two steps is the one the first left.
   */
  async stepped(from: number, to: number): Promise<void> {
    await this.#ingest(from);
    this.#sample(to);
    const catchingUp = this.#o.hub.get(this.#o.clusterId)?.catchingUp;
    if (catchingUp) catchingUp.at = to;
    if (to - this.#flushedAt >= FLUSH_EVERY_MS) await this.#flush(to);
  }

  /** Writes what is left and stops following: the agent takes over from here. */
  async end(): Promise<void> {
    const now = this.#o.clock.now();
    await this.#ingest(now);
    this.#sample(now);
    await this.#flush(now);
    this.#unobserve?.();
    this.#unobserve = undefined;
    this.#restoreHeap();
    this.#offBatch = this.#o.hub.onBatch((b) => {
      if (b.clusterId !== this.#o.clusterId || !snapshotCompletes(b) || b.sessionId === PREHISTORY_SESSION)
        return;
      this.#streaming = true;
      this.#caughtUp();
      this.#offBatch?.();
    });
    this.#o.log.info("simulated prehistory written", { ...this.counts });
  }

  /** Whether the agent's first snapshot is in core (the streamed tail may start). */
  streaming(): boolean {
    return this.#streaming;
  }

  /** Stops waiting for the agent (shutdown). */
  close(): void {
    this.#caughtUp();
    this.#restoreHeap();
    this.#unobserve?.();
    this.#offBatch?.();
  }

  /** The agent streams (or the feed stopped): the cluster is connected or disconnected again. */
  #caughtUp(): void {
    const entry = this.#o.hub.get(this.#o.clusterId);
    if (entry) entry.catchingUp = null;
  }

  async #ingest(at: number): Promise<void> {
    if (this.#changes.length === 0) return;
    const changes = this.#changes;
    this.#changes = [];
    const state = this.#o.hub.state(this.#o.clusterId);
    const { lifecycle } = this.#unstored;
    state.batch(() => {
      for (const c of changes) lifecycle.push(...ingestDelta(state, this.#tracker, c));
    });
    this.#unstored.changes.push(...changes);
    if (this.#unstored.changes.length >= WRITE_EVERY_CHANGES) await this.#store(at);
  }

  /** Core stores what its state took since the last batch (as one ingest batch). */
  async #store(at: number): Promise<void> {
    const { changes, lifecycle } = this.#unstored;
    if (changes.length === 0 && lifecycle.length === 0) return;
    this.#unstored = { changes: [], lifecycle: [] };
    await this.#write({ changes, lifecycle, at });
  }

  async #write(b: {
    snapshot?: WireObject[];
    changes: IngestChange[];
    lifecycle: LifecycleEvent[];
    at: number;
  }): Promise<void> {
    const batch: IngestBatch = {
      clusterId: this.#o.clusterId,
      sessionId: PREHISTORY_SESSION,
      sequence: ++this.#sequence,
      receivedAt: b.at,
      changes: b.changes,
      lifecycle: b.lifecycle,
      ...(b.snapshot ? { snapshot: b.snapshot } : {}),
    };
    // Core's own write path after ingest wrote the state: the store's rows in one transaction.
    await this.#o.hub.write(batch);
    this.counts.batches++;
    this.counts.changes += b.changes.length + (b.snapshot?.length ?? 0);
    this.counts.lifecycle += b.lifecycle.length;
  }

  /** Samples every minute boundary up to `to`, as core's samplers would have at each. */
  #sample(to: number): void {
    const entry = this.#o.hub.get(this.#o.clusterId);
    if (!entry) return;
    const { clusterId, prices } = this.#o;
    const stepMs = this.#stepMs;
    // One state for every boundary of this step: read it once.
    let figures: { pools: PoolSample[]; rates: SavingsRates; pods: Map<string, WorkloadCensus> } | undefined;
    for (let b = this.#sampledTo + stepMs; b <= to; b += stepMs) {
      const { state } = entry;
      figures ??= {
        pools: poolSamplesOf(state, prices),
        rates: savingsRates(state, prices),
        pods: workloadPodCounts(state.pods()),
      };
      this.#sampleAt = b;
      const rows = this.#recorder.record(figures.pools);
      this.#series.push(...rows);
      this.counts.points += rows.length;
      // The bucket that just ended, at the rates it ran at (runSavingsSampler, runBucketSampler).
      const ts = b - stepMs;
      this.#savings.push(...savingsRows(figures.rates, { clusterId, ts, stepMs }));
      this.#pods.push(...workloadPodsRows(figures.pods, { clusterId, ts, stepMs }));
      this.#sampledTo = b;
    }
  }

  async #flush(at: number): Promise<void> {
    const { store } = this.#o;
    this.#flushedAt = at;
    await this.#store(at);
    if (this.#series.length > 0) await store.write({ series: this.#series });
    if (this.#savings.length > 0) {
      await store.writeSavings(this.#savings);
      this.#o.onSavings?.(this.#savings);
    }
    if (this.#pods.length > 0) await store.writeWorkloadPods(this.#pods);
    this.#series = [];
    this.#savings = [];
    this.#pods = [];
  }
}

/**
 * How much of the simulated history streams through the agent and core's gRPC ingest at the end:
 * thirty one-second steps, each waiting for core to store it (2 minutes took ~0.4 s of the start).
 */
export const STREAMED_TAIL_MS = 30_000;

/**
 * The embedded cluster's prehistory for start.ts: on a fresh store, a feed that starts the agent
 * once it is written; on a reused one (no prehistory: it would mix with the stored history), the
 * agent starts now and the clock skips to the streamed tail.
 */
export async function embeddedPrehistory(
  o: PrehistoryOptions & { clock: LaggingClock; startAgent: () => void; streamAll?: boolean },
): Promise<{ feed: Prehistory; tailMs: number; streamed: () => void } | undefined> {
  const { startAgent, streamAll, ...rest } = o;
  if (streamAll) {
    startAgent();
    return undefined;
  }
  if (o.clock.lag > STREAMED_TAIL_MS && (await Prehistory.wanted(o.store, o.clusterId)))
    return {
      feed: new Prehistory({ ...rest, until: o.clock.now() + o.clock.lag }),
      tailMs: STREAMED_TAIL_MS,
      streamed: startAgent,
    };
  o.clock.catchUp(Math.max(0, o.clock.lag - STREAMED_TAIL_MS));
  startAgent();
  return undefined;
}
