// Core's per-cluster live state. The hub is the ingest sink: every durable batch from an agent
// lands here, updates that cluster's ClusterState (the one model every reader shares) and is
// written to the history store before core acknowledges it.
import type { IngestBatch, IngestSink, ClusterInfo } from "../ingest/sink.ts";
import { StoreSink, toStoreRows } from "../ingest/store-sink.ts";
import type { Store } from "../store/store.ts";
import { ClusterState, STATE_KINDS, type StateKind } from "../../state/cluster.ts";
import type { WireObject } from "../../wire/wire.ts";
import type { Clock } from "../../shared/clock.ts";
import type { KindTypes } from "../../kube/kinds.ts";
import type { OpenNodeClaim } from "../lifecycle/derive.ts";
import { RecentHistory } from "./recent.ts";

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
}

export interface ClusterHubOptions {
  /**
   * How much lifecycle and disruption history each cluster keeps in memory for the dashboard
   * (default 90 min: the thrashing detector's window plus the lives it links across, and the
   * overview's last hour); older ranges are read from the store.
   */
  recentHistoryMs?: number;
}

const isStateKind = (k: string): k is StateKind => (STATE_KINDS as readonly string[]).includes(k);

export class ClusterHub implements IngestSink {
  readonly #store: Store;
  readonly #durable: StoreSink;
  readonly #clock: Clock;
  readonly #clusters = new Map<string, ClusterEntry>();
  readonly #listeners = new Set<(clusterId: string) => void>();
  readonly #recent = new Map<string, RecentHistory>();
  readonly #recentMs: number;

  constructor(store: Store, clock: Clock, opts: ClusterHubOptions = {}) {
    this.#store = store;
    this.#durable = new StoreSink(store);
    this.#clock = clock;
    this.#recentMs = opts.recentHistoryMs ?? 90 * 60_000;
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

  get store(): Store {
    return this.#store;
  }

  clusters(): ClusterEntry[] {
    return [...this.#clusters.values()].sort((a, b) => a.id.localeCompare(b.id));
  }

  get(id: string): ClusterEntry | undefined {
    return this.#clusters.get(id);
  }

  /** Creates (or returns) a cluster's entry; the simulator marks its own cluster here. */
  ensure(id: string, simulated = false): ClusterEntry {
    let c = this.#clusters.get(id);
    if (!c) {
      c = { id, state: new ClusterState(), info: undefined, connected: false, lastSeen: null, simulated };
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

  notify(clusterId: string): void {
    for (const fn of this.#listeners) fn(clusterId);
  }

  /** Claims the store holds as alive, so a restarted core can close those deleted meanwhile. */
  openNodeClaims(clusterId: string): Promise<OpenNodeClaim[]> {
    return this.#durable.openNodeClaims(clusterId);
  }

  async clusterConnected(info: ClusterInfo): Promise<void> {
    await this.#durable.clusterConnected(info);
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

  async write(batch: IngestBatch): Promise<void> {
    // Durable first: core acks only what the store holds, and a failed write leaves state as is.
    await this.#durable.write(batch);
    const c = this.ensure(batch.clusterId);
    c.lastSeen = this.#clock.now();
    try {
      c.state.batch(() => {
        if (batch.snapshot) applySnapshot(c.state, batch.snapshot);
        for (const ch of batch.changes) {
          if (!isStateKind(ch.kind)) continue;
          const obj = ch.object as KindTypes[typeof ch.kind];
          // "add" of a known object is an update in ClusterState.
          c.state.apply(ch.kind, ch.op === "delete" ? "delete" : "add", obj);
        }
      });
    } finally {
      // The stored rows, into the dashboard's memory of recent history (once it keeps one).
      const recent = this.#recent.get(batch.clusterId);
      if (recent && batch.lifecycle.length > 0)
        await recent.written(toStoreRows(batch.clusterId, batch.lifecycle, batch.receivedAt));
    }
    this.notify(batch.clusterId);
  }
}

function applySnapshot(state: ClusterState, objects: readonly WireObject[]): void {
  const byKind = new Map<StateKind, unknown[]>(STATE_KINDS.map((k) => [k, []]));
  for (const o of objects) if (isStateKind(o.kind)) byKind.get(o.kind)?.push(o.object);
  for (const [kind, list] of byKind) state.replaceAll(kind, list as KindTypes[typeof kind][]);
}
