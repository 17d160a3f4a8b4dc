// Core's side of the warmup controllers that run beside each cluster's agent (ADR 0014): the
// policies the agent stream sends (from the store, per cluster), a change signal for the streams,
// and the events the agents report, stored per cluster id for the dashboard and /metrics.
import type { PolicyKind, Store, StoredWarmupEvent } from "../store/store.ts";
import type { WarmupEvent } from "../../warmup/stats.ts";
import { fromStored } from "./stats-store.ts";
import { COLD_START_WINDOW_MS, coldStartAt, savedByHit } from "../../warmup/time-saved.ts";

/** A warmup event as the agent reports it: a stored event without its cluster (the stream's). */
export type ReportedWarmupEvent = Omit<StoredWarmupEvent, "clusterId">;

/** One pool's warmup policy as the agent stream carries it. */
export interface PolicyRow {
  pool: string;
  value: unknown;
}

/** Most cold starts read to measure one batch's hits against. */
const COLD_ROWS = 100_000;

export class WarmupRelay {
  readonly #store: Pick<Store, "listPolicies" | "writeWarmupEvents" | "coldStarts">;
  readonly #coldStarts: { flush(): Promise<void> } | undefined;
  readonly #listeners = new Set<(clusterId: string) => void>();
  readonly #onStored: (clusterId: string, events: readonly WarmupEvent[]) => void;
  readonly #resources: ((clusterId: string) => Promise<PolicyRow[] | undefined | null>) | undefined;

  constructor(o: {
    store: Pick<Store, "listPolicies" | "writeWarmupEvents" | "coldStarts">;
    /** Core's cold-start recorder: written out before a hit is measured against it. */
    coldStarts?: { flush(): Promise<void> };
    /**
     * The cluster's WarmupPolicy resources as policies (issue 31), once its stored policies became
     * resources; undefined before: the store's are sent; null while core does not hold the
     * cluster's resources yet (its agent's snapshot has not landed since core started).
     */
    resources?: (clusterId: string) => Promise<PolicyRow[] | undefined | null>;
    /** After events were stored (the dashboard's cache, Prometheus's counters). */
    onStored?: (clusterId: string, events: readonly WarmupEvent[]) => void;
  }) {
    this.#store = o.store;
    this.#coldStarts = o.coldStarts;
    this.#onStored = o.onStored ?? (() => undefined);
    this.#resources = o.resources;
  }

  /** Only this cluster's policies: a policy set for another cluster never reaches its agent. */
  async policies(clusterId: string): Promise<PolicyRow[] | undefined> {
    const fromResources = await this.#resources?.(clusterId);
    if (fromResources === null) return undefined;
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
    const rows = await this.#withSaved(
      clusterId,
      events.map((e) => ({ ...e, clusterId })),
    );
    const added = await this.#store.writeWarmupEvents(rows);
    // A batch sent again after a lost acknowledgement adds nothing: not counted twice.
    if (added > 0) this.#onStored(clusterId, rows.map(fromStored));
  }

  /**
   * Each hit with a measured start gets what it saved against the pool's cold start before it
   * (time-saved.ts), computed here once: every reader then adds the same stored number.
   */
  async #withSaved(clusterId: string, rows: StoredWarmupEvent[]): Promise<StoredWarmupEvent[]> {
    const hits = rows.filter((r) => r.type === "hit" && r.seconds !== undefined);
    if (hits.length === 0) return rows;
    await this.#coldStarts?.flush();
    const ats = hits.map((h) => h.at);
    const cold = await this.#store.coldStarts({
      clusterId,
      from: Math.max(0, Math.min(...ats) - COLD_START_WINDOW_MS),
      to: Math.max(...ats),
      limit: COLD_ROWS,
    });
    return rows.map((r) =>
      r.type === "hit" && r.seconds !== undefined
        ? { ...r, saved: savedByHit(r.seconds, coldStartAt(cold, r.pool, r.at)) }
        : r,
    );
  }
}
