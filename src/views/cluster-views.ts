// One view model per cluster (issue 27): the producer of a cluster's figures. The API's overview,
// pool and thrashing routes, the live stream (SSE) and `/metrics` all read a cluster's figures
// from its `ClusterViews`: the machines joined, aggregated and priced once per state version
// (`basis`, the nodes, cost, spot ratio and savings of every reader), thrashing once per change of
// the recent history (`ClusterThrashing`), and the stream's snapshot once per state version and
// history revision, shared by every stream client.
import type { ClusterEntry, ClusterHub } from "../core/hub/hub.ts";
import type { NodePoolDto, OverviewDto, WarmupStatsDto } from "../dashboard/dto.ts";
import { ClusterThrashing } from "../dashboard/thrashing/cluster.ts";
import type { ThrashingOptions, ThrashingReport } from "../dashboard/thrashing/detect.ts";
import {
  basisOf,
  buildLive,
  buildNodePools,
  buildOverview,
  type Basis,
  type ViewInput,
} from "../dashboard/views.ts";
import type { PriceProvider } from "../pricing/types.ts";
import type { ClusterState } from "../state/cluster.ts";

const HOUR = 3_600_000;
/** How long one state version's priced machines are reused (as the node table's, 1 s). */
const BASIS_REUSE_MS = 1000;

export interface ViewsDeps {
  hub: ClusterHub;
  prices: PriceProvider;
  thrashing?: Partial<ThrashingOptions> | undefined;
  /**
   * Hit/miss counters and time saved (the hits' stored `saved`, warmup/time-saved.ts) from the
   * warmup controller's events; warm nodes themselves are read off the state.
   */
  warmupStats?: ((clusterId: string) => Partial<WarmupStatsDto> | undefined) | undefined;
  /** How long a live snapshot of one state version and history revision is served again (default 250 ms). */
  reuseMs?: number | undefined;
}

interface Computed<T> {
  key: string;
  at: number;
  value: T;
}

/** Reuses `hit` when it was computed for `key` at most `reuseMs` before `now` (never for a past `now`). */
const fresh = <T>(
  hit: Computed<T> | undefined,
  key: string,
  now: number,
  reuseMs: number,
): hit is Computed<T> => hit !== undefined && hit.key === key && now >= hit.at && now - hit.at < reuseMs;

/**
 * Each state's priced machines, shared by every `Views` over it (the API's and the metrics'), so
 * one state version is joined and priced once whoever asks first.
 */
const priced = new WeakMap<ClusterState, Computed<Basis> & { prices: PriceProvider; memo: PriceProvider }>();

/** A provider that looks each (type, capacity, zone, region) up once: one state version's prices. */
function memoPrices(p: PriceProvider): PriceProvider {
  const seen = new Map<string, ReturnType<PriceProvider["price"]>>();
  return {
    price: (type, capacity, zone, region) => {
      const k = `${type}|${capacity}|${zone ?? ""}|${region ?? ""}`;
      if (seen.has(k)) return seen.get(k);
      const q = p.price(type, capacity, zone, region);
      seen.set(k, q);
      return q;
    },
  };
}

/** The figures of one cluster, each computed once per change and read by every route, SSE and /metrics. */
export class ClusterViews {
  readonly #views: Views;
  #entry: ClusterEntry;
  #live: Computed<Promise<string>> | undefined;

  constructor(views: Views, entry: ClusterEntry) {
    this.#views = views;
    this.#entry = entry;
  }

  /** The hub may replace a cluster's entry (a reconnect): the views follow it. */
  rebind(entry: ClusterEntry): this {
    if (entry !== this.#entry) {
      this.#entry = entry;
      this.#live = undefined;
    }
    return this;
  }

  get entry(): ClusterEntry {
    return this.#entry;
  }

  /**
   * The state's machines joined, aggregated per pool and priced: once per state version (prices
   * refresh on their own schedule, so at most `BASIS_REUSE_MS` old).
   */
  basis(now: number): Basis {
    const { state } = this.#entry;
    const { prices } = this.#views.deps;
    const key = String(state.version);
    const hit = priced.get(state);
    if (hit?.prices === prices && fresh(hit, key, now, BASIS_REUSE_MS)) return hit.value;
    const memo = memoPrices(prices);
    const value = basisOf(state, memo);
    priced.set(state, { prices, key, at: now, value, memo });
    return value;
  }

  /**
   * The prices of the current state version, looked up once each: the consolidation explainer
   * reads the same quotes the basis priced (src/dashboard/consolidation), not a second lookup.
   */
  prices(now: number): PriceProvider {
    this.basis(now);
    return priced.get(this.#entry.state)?.memo ?? this.#views.deps.prices;
  }

  /** Every pool's thrashing report at `now` (the same reports the fixes list reads). */
  thrashing(now: number): Promise<ThrashingReport[]> {
    return this.#views.thrashingOf.reports(this.#entry, now);
  }

  /** What every figure of a snapshot reads: the last hour of disruptions, thrashing, warmup. */
  async input(now: number): Promise<ViewInput> {
    const { hub, prices, warmupStats } = this.#views.deps;
    const c = this.#entry;
    // From the hub's memory of recent history (a store query only for ranges older than it holds).
    const { disruptions } = await hub.recentHistory(c.id).rows(now - HOUR, now + 1);
    const thrashing = await this.thrashing(now);
    const warmup = warmupStats?.(c.id);
    return {
      clusterId: c.id,
      state: c.state,
      prices,
      now,
      disruptions,
      thrashing,
      basis: this.basis(now),
      ...(warmup ? { warmup } : {}),
    };
  }

  /** Cluster totals at `now`. */
  async overview(now: number): Promise<OverviewDto> {
    return buildOverview(await this.input(now));
  }

  /** Per-pool nodes, cost, limits and thrashing at `now`. */
  async nodePools(now: number): Promise<NodePoolDto[]> {
    return buildNodePools(await this.input(now));
  }

  /**
   * The live stream's snapshot (overview and pools from one pass) as JSON, built once per state
   * version and history revision and shared by every stream client of the cluster for up to
   * `reuseMs` (its `at` and time-windowed counts are at most that old).
   */
  liveJson(now: number): Promise<string> {
    const c = this.#entry;
    const key = `${c.state.version}/${this.#views.deps.hub.recentHistory(c.id).revision}`;
    if (fresh(this.#live, key, now, this.#views.reuseMs)) return this.#live.value;
    const value = this.input(now).then((input) => JSON.stringify(buildLive(input)));
    const entry = { key, at: now, value };
    this.#live = entry;
    // A failed read is not kept: the next reader tries again.
    value.catch(() => {
      if (this.#live === entry) this.#live = undefined;
    });
    return value;
  }
}

/** The views of every cluster of one hub: one `ClusterViews` per cluster id. */
export class Views {
  readonly deps: ViewsDeps;
  readonly reuseMs: number;
  readonly thrashingOf: ClusterThrashing;
  readonly #clusters = new Map<string, ClusterViews>();

  constructor(deps: ViewsDeps) {
    this.deps = deps;
    this.reuseMs = deps.reuseMs ?? 250;
    this.thrashingOf = ClusterThrashing.of(deps.hub, deps.thrashing ?? {});
  }

  /** The cluster's views (created on first use, following the hub's current entry). */
  of(entry: ClusterEntry): ClusterViews {
    const v = this.#clusters.get(entry.id);
    if (v) return v.rebind(entry);
    const created = new ClusterViews(this, entry);
    this.#clusters.set(entry.id, created);
    return created;
  }

  /** Forgets clusters the hub no longer has. */
  retain(ids: ReadonlySet<string>): void {
    for (const id of this.#clusters.keys()) if (!ids.has(id)) this.#clusters.delete(id);
  }
}
