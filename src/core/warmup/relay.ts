// Core's side of the warmup controllers that run beside each cluster's agent (ADR 0014): the
// policies the agent stream sends (from the store, per cluster), a change signal for the streams,
// and the events the agents report, stored per cluster id for the dashboard and /metrics.
import type { PolicyKind, Store, StoredWarmupEvent } from "../store/store.ts";
import type { WarmupEvent } from "../../warmup/stats.ts";
import { fromStored } from "./stats-store.ts";

/** A warmup event as the agent reports it: a stored event without its cluster (the stream's). */
export type ReportedWarmupEvent = Omit<StoredWarmupEvent, "clusterId">;

/** One pool's warmup policy as the agent stream carries it. */
export interface PolicyRow {
  pool: string;
  value: unknown;
}

export class WarmupRelay {
  readonly #store: Pick<Store, "listPolicies" | "writeWarmupEvents">;
  readonly #listeners = new Set<(clusterId: string) => void>();
  readonly #onStored: (clusterId: string, events: readonly WarmupEvent[]) => void;
  readonly #resources: ((clusterId: string) => Promise<PolicyRow[] | undefined>) | undefined;

  constructor(o: {
    store: Pick<Store, "listPolicies" | "writeWarmupEvents">;
    /**
     * The cluster's WarmupPolicy resources as policies (issue 31), once its stored policies became
     * resources; undefined before: the store's are sent.
     */
    resources?: (clusterId: string) => Promise<PolicyRow[] | undefined>;
    /** After events were stored (the dashboard's cache, Prometheus's counters). */
    onStored?: (clusterId: string, events: readonly WarmupEvent[]) => void;
  }) {
    this.#store = o.store;
    this.#onStored = o.onStored ?? (() => undefined);
    this.#resources = o.resources;
  }

  /** Only this cluster's policies: a policy set for another cluster never reaches its agent. */
  async policies(clusterId: string): Promise<PolicyRow[]> {
    const fromResources = await this.#resources?.(clusterId);
    if (fromResources) return fromResources;
    return (await this.#store.listPolicies(clusterId, "warmup")).map((r) => ({
      pool: r.key,
      value: r.value,
    }));
  }

  watch(changed: (clusterId: string) => void): () => void {
    this.#listeners.add(changed);
    return () => this.#listeners.delete(changed);
  }

  /** A policy changed through this replica's API: the cluster's stream sends the new set now. */
  changed(kind: PolicyKind, clusterId: string): void {
    if (kind !== "warmup") return;
    for (const f of this.#listeners) f(clusterId);
  }

  async record(clusterId: string, events: readonly ReportedWarmupEvent[]): Promise<void> {
    const rows = events.map((e) => ({ ...e, clusterId }));
    const added = await this.#store.writeWarmupEvents(rows);
    // A batch sent again after a lost acknowledgement adds nothing: not counted twice.
    if (added > 0) this.#onStored(clusterId, rows.map(fromStored));
  }
}
