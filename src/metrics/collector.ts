// Core's dashboard exposition: registers the figures' gauges and the event-fed counters on a
// registry and, once per scrape, recomputes every cluster's gauges from the hub's live state
// (figures.ts). The thin I/O shell: reading recent history, policies and the hub.
import type { ClusterHub } from "../core/hub/hub.ts";
import type { Store } from "../core/store/store.ts";
import type { ThrashingOptions } from "../dashboard/thrashing/detect.ts";
import type { PriceProvider } from "../pricing/types.ts";
import type { Gauge, Registry } from "../shared/metrics.ts";
import { Views } from "../views/cluster-views.ts";
import type { SpotPolicy } from "../policy/spot.ts";
import { parseSpotPolicy } from "../policy/validate-spot.ts";
import { EventMetrics } from "./events.ts";
import { clusterExplanations } from "../dashboard/consolidation/view.ts";
import { clusterFigures, emptyFigures, GAUGE_LABELS, GAUGES, type GaugeName } from "./figures.ts";

export interface DashboardMetricsDeps {
  hub: ClusterHub;
  prices: PriceProvider;
  now: () => number;
  /** The stored spot policies (read once per scrape). */
  /** A cluster's spot policies (each cluster has its own, ADR 0012). */
  spotPolicies: (clusterId: string) => Promise<readonly SpotPolicy[]>;
  thrashing?: Partial<ThrashingOptions>;
  /** The clusters' view models (shared with the API); built from these deps when absent. */
  views?: Views;
}

export interface DashboardMetrics {
  events: EventMetrics;
  /**
   * A cluster's warm cost per pool over core's warmup window (the Overview's): set by core's
   * warmup (cli/parts.ts coreWarmup), which is built after the metrics.
   */
  warmCost?: ((clusterId: string) => Readonly<Record<string, number>> | undefined) | undefined;
  /** Stops feeding the event counters from the hub. */
  close(): void;
}

export function registerDashboardMetrics(registry: Registry, deps: DashboardMetricsDeps): DashboardMetrics {
  const gauges = new Map<GaugeName, Gauge>();
  for (const [name, help] of Object.entries(GAUGES) as [GaugeName, string][]) {
    gauges.set(name, registry.gauge({ name, help, labelNames: GAUGE_LABELS[name] }));
  }
  const events = new EventMetrics(registry);
  const views = deps.views ?? new Views({ hub: deps.hub, prices: deps.prices, thrashing: deps.thrashing });
  const off = deps.hub.onBatch((b) => events.batch(b));
  const out: DashboardMetrics = { events, close: off };

  registry.beforeScrape(async () => {
    const now = deps.now();
    const figures = emptyFigures();
    for (const c of deps.hub.clusters()) {
      const policies = await deps.spotPolicies(c.id);
      events.namespaces(
        c.id,
        policies.map((p) => p.workload.namespace),
      );
      for (const p of c.state.nodePools()) if (p.metadata.name) events.pool(c.id, p.metadata.name);
      // The same reports and priced machines as the API's (views/cluster-views.ts): the
      // Karpenter version and warmup attribution included.
      const cv = views.of(c);
      const thrashing = await cv.thrashing(now);
      clusterFigures(
        {
          clusterId: c.id,
          state: c.state,
          prices: deps.prices,
          now,
          connected: c.connected,
          lastSeen: c.lastSeen,
          thrashing,
          spotPolicies: policies,
          basis: cv.basis(now),
          warmCost: out.warmCost?.(c.id),
          // The same views as GET …/consolidation and …/pending.
          ...clusterExplanations(c, deps.hub, cv.prices(now), now),
        },
        figures,
      );
    }
    // Gauges hold exactly this scrape's series: a pool or workload that went away disappears.
    for (const [name, samples] of figures) {
      const g = gauges.get(name);
      if (!g) continue;
      g.reset();
      for (const s of samples) g.set(s.value, s.labels);
    }
  });
  return out;
}

/** The stored spot policies that still validate (a stored row that no longer does is skipped). */
export async function storedSpotPolicies(store: Store, clusterId: string): Promise<readonly SpotPolicy[]> {
  const out: SpotPolicy[] = [];
  for (const r of await store.listPolicies(clusterId, "spot")) {
    try {
      out.push(parseSpotPolicy(r.value));
    } catch {
      // invalid: the API's policy set skips it too
    }
  }
  return out;
}
