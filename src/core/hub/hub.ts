// Core's per-cluster live state. The hub is the ingest sink: it keeps each cluster's ClusterState
// (the one model every reader shares; ingest applies every batch to it) and writes each batch's
// lifecycle rows and checkpoint to the history store before core acknowledges it.
import type { IngestBatch, IngestSink, ClusterInfo, IngestRejection } from "../ingest/sink.ts";
import { StoreSink, toStoreRows } from "../ingest/store-sink.ts";
import type { Store } from "../store/store.ts";
import type { Event } from "../../objects/kube.ts";
import { ClusterState } from "../../state/cluster.ts";
import type { Clock } from "../../shared/clock.ts";
import type { OpenNodeClaim } from "../lifecycle/derive.ts";
import { RecentHistory } from "./recent.ts";
import { KarpenterEventLog } from "./karpenter-events.ts";
import { SoleOwnership, type Ownership } from "./ownership.ts";

export interface ClusterEntry {
  id: string;
  state: ClusterState;
  info: ClusterInfo | undefined;
  /**
   * An agent stream currently feeds this cluster. While false the state is the last one seen
   * (frozen), not the cluster's present.
   */
  connected: boolean;
  /** Last time a batch arrived (ms). */
  lastSeen: number | null;
  /** Set by the composition root for the embedded simulator. */
  simulated: boolean;
  /**
   * The embedded simulated cluster is generating its past (cli/prehistory.ts) before its agent
   * streams: not connected, yet not disconnected either.
   */
  catchingUp: CatchingUp | null;
  /** Core refused the agent's last snapshot or object at a bound; cleared by an accepted snapshot. */
  rejected: IngestRejection | null;
}

/** History generated from `from`, written up to `at`; the live stream takes over near `until`. */
export interface CatchingUp {
  from: number;
  at: number;
  until: number;
}

export interface ClusterHubOptions {
  /**
   * How much lifecycle and disruption history each cluster keeps in memory for the dashboard
   * (default 90 min: the thrashing detector's window plus the lives it links across, and the
   * overview's last hour); older ranges are read from the store.
   */
  recentHistoryMs?: number;
  /**
   * Which clusters this core replica owns (ADR 0012); default: all of them (one replica). An
   * agent's hello claims its cluster here before core answers it.
   */
  ownership?: Ownership;
}

export class ClusterHub implements IngestSink {
  readonly #store: Store;
  readonly #durable: StoreSink;
  readonly #clock: Clock;
  readonly #clusters = new Map<string, ClusterEntry>();
  readonly #listeners = new Set<(clusterId: string) => void>();
  readonly #batchListeners = new Set<(batch: IngestBatch) => void>();
  readonly #recent = new Map<string, RecentHistory>();
  readonly #recentMs: number;
  readonly #karpenterEvents = new Map<string, KarpenterEventLog>();
  readonly ownership: Ownership;
  /** Clusters named by the composition root: listed even before (or without) an agent. */
  readonly #pinned = new Set<string>();

  constructor(store: Store, clock: Clock, opts: ClusterHubOptions = {}) {
    this.#store = store;
    this.#durable = new StoreSink(store);
    this.#clock = clock;
    this.#recentMs = opts.recentHistoryMs ?? 90 * 60_000;
    this.ownership = opts.ownership ?? new SoleOwnership();
    // Another replica took the cluster (its agent streams there now): what we hold is not live.
    this.ownership.onLost((id) => this.clusterDisconnected(id));
  }

  /** Whether this replica owns the cluster's live state (always, with one replica). */
  owns(clusterId: string): boolean {
    return this.ownership.owns(clusterId);
  }

  /**
   * The cluster's entry, also for a cluster this process has not heard from but the store knows
   * (an agent that streams to another replica, or has not reconnected since a restart).
   */
  async known(id: string): Promise<ClusterEntry | undefined> {
    const c = this.#clusters.get(id);
    if (c) return c;
    const rec = await this.#store.getCluster(id);
    if (!rec) return undefined;
    const entry = this.ensure(id);
    entry.lastSeen ??= rec.lastSeen;
    // What its agent said last (its versions), as stored; not connected to this replica.
    entry.info ??= {
      clusterId: id,
      kubernetesVersion: rec.versions["kubernetes"] ?? "",
      karpenterVersion: rec.versions["karpenter"] ?? "",
      agentVersion: rec.versions["agent"] ?? "",
      sessionId: "",
      connectedAt: rec.lastSeen,
    };
    return entry;
  }

  /** The cluster's recent lifecycle events and disruptions, in memory (seeded on first use). */
  recentHistory(clusterId: string): RecentHistory {
    let r = this.#recent.get(clusterId);
    if (!r) {
      r = new RecentHistory(this.#store, clusterId, this.#clock, this.#recentMs);
      this.#recent.set(clusterId, r);
    }
    return r;
  }

  /** The cluster's Karpenter Events, kept beyond their hour (in memory, bounded). */
  karpenterEvents(clusterId: string): KarpenterEventLog {
    let log = this.#karpenterEvents.get(clusterId);
    if (!log) {
      log = new KarpenterEventLog();
      this.#karpenterEvents.set(clusterId, log);
    }
    return log;
  }

  get store(): Store {
    return this.#store;
  }

  clusters(): ClusterEntry[] {
    return [...this.#clusters.values()].sort((a, b) => a.id.localeCompare(b.id));
  }

  get(id: string): ClusterEntry | undefined {
    return this.#clusters.get(id);
  }

  /**
   * Creates (or returns) a cluster's entry and keeps it listed; the simulator marks its own
   * cluster here.
   */
  ensure(id: string, simulated = false): ClusterEntry {
    this.#pinned.add(id);
    return this.#entry(id, simulated);
  }

  #entry(id: string, simulated = false): ClusterEntry {
    let c = this.#clusters.get(id);
    if (!c) {
      c = {
        id,
        state: new ClusterState(),
        info: undefined,
        connected: false,
        lastSeen: null,
        simulated,
        catchingUp: null,
        rejected: null,
      };
      this.#clusters.set(id, c);
    }
    if (simulated) c.simulated = true;
    return c;
  }

  /** Called after every applied batch (and by anything else that changes what clients see). */
  onChange(fn: (clusterId: string) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** Called with every batch once it is durable and applied (event-fed metrics). */
  onBatch(fn: (batch: IngestBatch) => void): () => void {
    this.#batchListeners.add(fn);
    return () => this.#batchListeners.delete(fn);
  }

  notify(clusterId: string): void {
    for (const fn of this.#listeners) fn(clusterId);
  }

  /** The cluster's model, which ingest writes (its entry is created on first use). */
  state(clusterId: string): ClusterState {
    return this.#entry(clusterId).state;
  }

  /** Claims the store holds as alive, so a restarted core can close those deleted meanwhile. */
  openNodeClaims(clusterId: string): Promise<OpenNodeClaim[]> {
    return this.#durable.openNodeClaims(clusterId);
  }

  async clusterConnected(info: ClusterInfo): Promise<void> {
    await this.#durable.clusterConnected(info);
    await this.ownership.claim(info.clusterId);
    const c = this.ensure(info.clusterId);
    c.info = info;
    c.connected = true;
    c.lastSeen = info.connectedAt;
    this.notify(info.clusterId);
  }

  clusterDisconnected(clusterId: string): void {
    const c = this.#clusters.get(clusterId);
    if (!c?.connected) return;
    c.connected = false;
    this.notify(clusterId);
  }

  clusterForgotten(clusterId: string): void {
    const c = this.#clusters.get(clusterId);
    // Only an id nothing else knows: not pinned, and no batch ever arrived for it.
    // A refused one stays listed with why (its agent retries; the refusal must not be silent).
    if (!c || c.rejected || this.#pinned.has(clusterId) || c.lastSeen !== c.info?.connectedAt) return;
    this.#clusters.delete(clusterId);
    this.#recent.delete(clusterId);
    this.notify(clusterId);
  }

  clusterRejected(clusterId: string, rejection: IngestRejection): void {
    this.#entry(clusterId).rejected = rejection;
    this.notify(clusterId);
  }

  /**
   * Stores the batch (its objects are already in the cluster's state, applied by ingest), then
   * tells readers: core acks only what the store holds.
   */
  async write(batch: IngestBatch): Promise<void> {
    await this.#durable.write(batch);
    const c = this.#entry(batch.clusterId);
    c.lastSeen = this.#clock.now();
    if (batch.snapshot) c.rejected = null;
    // Karpenter's Events, kept past their TTL: a snapshot's and each upsert (deletes ignored).
    const log = this.karpenterEvents(batch.clusterId);
    const now = this.#clock.now();
    for (const o of batch.snapshot ?? []) if (o.kind === "Event") log.add(o.object, now);
    for (const ch of batch.changes)
      if (ch.kind === "Event" && ch.op === "upsert") log.add(ch.object as Event, now);
    // The stored rows, into the dashboard's memory of recent history (once it keeps one).
    const recent = this.#recent.get(batch.clusterId);
    if (recent && batch.lifecycle.length > 0)
      await recent.written(toStoreRows(batch.clusterId, batch.lifecycle, batch.receivedAt));
    for (const fn of this.#batchListeners) fn(batch);
    this.notify(batch.clusterId);
  }
}
