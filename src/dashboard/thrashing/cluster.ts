// A cluster's thrashing reports, the one place they are computed: the `/thrashing` route, the
// overview and pool table (and their live stream), the fixes list and its apply, and `/metrics`
// all read them from here — so the same advice, with the same Karpenter version and the same
// warmup attribution, reaches every path. The thin I/O shell around detect.ts: it gathers the
// recent history, the pools, their node counts, the warm nodes Wave released and the version,
// and reuses the reports until the history, the pools or the version change (or `reuseMs` passes,
// as the window slides).
import type { Disruption, EventQuery, LifecycleEvent, StoredWarmupEvent } from "../../core/store/store.ts";
import { NODE_POOL_LABEL, type NodePool } from "../../objects/karpenter.ts";
import type { ClusterState } from "../../state/cluster.ts";
import { clusterKarpenterVersion } from "../karpenter-version.ts";
import {
  DEFAULT_THRASHING_OPTIONS,
  detectThrashingAll,
  type ThrashingOptions,
  type ThrashingReport,
} from "./detect.ts";

const HOUR = 3_600_000;

/** What the reports read of a cluster (core's hub entry fits). */
export interface ThrashingCluster {
  id: string;
  state: ClusterState;
  info?: { karpenterVersion?: string } | undefined;
}

/** Where the history comes from (core's hub fits): its recent rows, and the store's warmup events. */
export interface ThrashingHistory {
  recentHistory(clusterId: string): {
    readonly revision: number;
    rows(from: number, to: number): Promise<{ lifecycle: LifecycleEvent[]; disruptions: Disruption[] }>;
  };
  readonly store: { warmupEvents(q: EventQuery): Promise<StoredWarmupEvent[]> };
}

/** How far back history must reach for the detector: its window plus the lives it links across. */
export function thrashingLookbackMs(options: Partial<ThrashingOptions> = {}): number {
  const o = { ...DEFAULT_THRASHING_OPTIONS, ...options };
  return o.windowMs + Math.max(o.shortLifetimeMs, o.replacementWithinMs);
}

/** The cluster's Karpenter: as its agent reported it, else as its controller pods say. */
export function thrashingKarpenterVersion(c: ThrashingCluster): string | undefined {
  return c.info?.karpenterVersion || clusterKarpenterVersion(c.state);
}

function nodesByPool(state: ClusterState): Map<string, number> {
  const out = new Map<string, number>();
  for (const nc of state.nodeClaims()) {
    const pool = nc.metadata.labels?.[NODE_POOL_LABEL];
    if (pool) out.set(pool, (out.get(pool) ?? 0) + 1);
  }
  return out;
}

interface Cached {
  key: string;
  at: number;
  reports: Promise<ThrashingReport[]>;
}

export class ClusterThrashing {
  static readonly #shared = new WeakMap<object, Map<string, ClusterThrashing>>();

  /** One instance per history source and options, shared by every route and the metrics. */
  static of(history: ThrashingHistory, options: Partial<ThrashingOptions> = {}): ClusterThrashing {
    let byOptions = ClusterThrashing.#shared.get(history);
    if (!byOptions) ClusterThrashing.#shared.set(history, (byOptions = new Map<string, ClusterThrashing>()));
    const key = JSON.stringify(options);
    let t = byOptions.get(key);
    if (!t) byOptions.set(key, (t = new ClusterThrashing(history, options)));
    return t;
  }

  readonly #history: ThrashingHistory;
  readonly #options: Partial<ThrashingOptions>;
  readonly #reuseMs: number;
  readonly #cache = new Map<string, Cached>();

  constructor(history: ThrashingHistory, options: Partial<ThrashingOptions> = {}, reuseMs = 15_000) {
    this.#history = history;
    this.#options = options;
    this.#reuseMs = reuseMs;
  }

  /** Every pool's report at `now`, worst first. */
  reports(c: ThrashingCluster, now: number): Promise<ThrashingReport[]> {
    const recent = this.#history.recentHistory(c.id);
    const pools = c.state.nodePools();
    const nodes = nodesByPool(c.state);
    const karpenterVersion = thrashingKarpenterVersion(c);
    const key = JSON.stringify([
      recent.revision,
      karpenterVersion,
      pools.map((p) => [p.metadata.name, p.spec.disruption]),
      [...nodes],
    ]);
    const hit = this.#cache.get(c.id);
    if (hit?.key === key && now >= hit.at && now - hit.at < this.#reuseMs) return hit.reports;
    const reports = this.#compute(c.id, recent, now, { pools, nodes, karpenterVersion });
    this.#cache.set(c.id, { key, at: now, reports });
    // A failed read is not kept: the next request tries again.
    reports.catch(() => {
      if (this.#cache.get(c.id)?.reports === reports) this.#cache.delete(c.id);
    });
    return reports;
  }

  async #compute(
    clusterId: string,
    recent: ReturnType<ThrashingHistory["recentHistory"]>,
    now: number,
    cluster: {
      pools: readonly NodePool[];
      nodes: ReadonlyMap<string, number>;
      karpenterVersion?: string | undefined;
    },
  ): Promise<ThrashingReport[]> {
    const { pools, nodes, karpenterVersion } = cluster;
    const from = now - Math.max(HOUR, thrashingLookbackMs(this.#options));
    const [{ lifecycle, disruptions }, warmup] = await Promise.all([
      recent.rows(from, now + 1),
      this.#history.store.warmupEvents({ clusterId, from, to: now + 1 }),
    ]);
    // Warm nodes Wave released unused: their removal is Wave's churn, and the report says so.
    const warmNodes = new Set(
      warmup
        .filter((e) => e.type === "miss" && e.reason === "ttl" && e.node !== undefined)
        .map((e) => e.node ?? ""),
    );
    return detectThrashingAll({
      pools,
      events: lifecycle,
      disruptions,
      nodes,
      warmNodes,
      now,
      options: { ...this.#options, ...(karpenterVersion ? { karpenterVersion } : {}) },
    });
  }
}
