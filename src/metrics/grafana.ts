// Wave's Grafana dashboard as code (@grafana/grafana-foundation-sdk, ADR 0008). The panels are
// data: each names its PromQL, so the e2e test evaluates every one of them on a real Prometheus
// and `npm run grafana:generate` writes deploy/grafana/wave.json (checked in; a unit test fails
// when it differs from this file's output). Variables: datasource, cluster, nodepool.
import {
  DashboardBuilder,
  DatasourceVariableBuilder,
  QueryVariableBuilder,
  RowBuilder,
  VariableRefresh,
  VariableSort,
  type Dashboard,
} from "@grafana/grafana-foundation-sdk/dashboard";
import { DataqueryBuilder } from "@grafana/grafana-foundation-sdk/prometheus";
import { PanelBuilder as StatPanel } from "@grafana/grafana-foundation-sdk/stat";
import { PanelBuilder as TablePanel } from "@grafana/grafana-foundation-sdk/table";
import { PanelBuilder as TimeseriesPanel } from "@grafana/grafana-foundation-sdk/timeseries";

/** The spot placement webhook's own series (its /metrics), queried directly by two panels. */
export const WEBHOOK_FALLBACKS = "wave_spot_fallbacks_total";
export const WEBHOOK_LATE_ANSWERS = "wave_spot_late_answers_total";

export interface PanelQuery {
  expr: string;
  legend?: string;
  /** Table panels ask for one instant value per series. */
  instant?: boolean;
}

export interface PanelSpec {
  title: string;
  description: string;
  kind: "stat" | "timeseries" | "table";
  unit: string;
  queries: PanelQuery[];
  /** Half (12) or a third (8) of the row, or a quarter (6) for stats. */
  width: number;
}

export interface RowSpec {
  title: string;
  panels: PanelSpec[];
}

const C = 'cluster=~"$cluster"';
const CP = `${C}, nodepool=~"$nodepool"`;
const RATE = "$__rate_interval";
const RANGE = "$__range";

export const ROWS: readonly RowSpec[] = [
  {
    title: "Overview",
    panels: [
      {
        title: "Cost per hour",
        description:
          "What the selected pools' nodes cost per hour, at the prices Wave uses (see price sources).",
        kind: "stat",
        unit: "currencyUSD",
        width: 6,
        queries: [{ expr: `sum(wave_nodepool_cost_per_hour_dollars{${CP}})` }],
      },
      {
        title: "Nodes",
        description: "Nodes (and launched NodeClaims not yet registered) in the selected pools.",
        kind: "stat",
        unit: "none",
        width: 6,
        queries: [{ expr: `sum(wave_nodes{${CP}})` }],
      },
      {
        title: "Spot ratio",
        description: "Spot share of the cluster by nodes, vCPU and cost.",
        kind: "stat",
        unit: "percentunit",
        width: 6,
        queries: [{ expr: `avg by (basis) (wave_spot_ratio{${C}})`, legend: "{{basis}}" }],
      },
      {
        title: "Realized savings (range)",
        description:
          "Dollars saved over the dashboard's time range against the same capacity all on-demand, as recorded each history step.",
        kind: "stat",
        unit: "currencyUSD",
        width: 6,
        queries: [{ expr: `sum(increase(wave_realized_savings_dollars_total{${CP}}[${RANGE}]))` }],
      },
    ],
  },
  {
    title: "Cost and savings",
    panels: [
      {
        title: "Cost per hour by pool and capacity type",
        description:
          "Karpenter's own dashboards have no cost panel: this is it, per NodePool and capacity type.",
        kind: "timeseries",
        unit: "currencyUSD",
        width: 12,
        queries: [
          {
            expr: `sum by (nodepool, capacity_type) (wave_nodepool_cost_per_hour_dollars{${CP}})`,
            legend: "{{nodepool}} {{capacity_type}}",
          },
        ],
      },
      {
        title: "Cost per hour by price source",
        description:
          "live: AWS APIs; static: shipped table; kwok: the KWOK provider; estimate: derived; unknown: unpriced.",
        kind: "timeseries",
        unit: "currencyUSD",
        width: 12,
        queries: [
          {
            expr: `sum by (price_source) (wave_nodepool_cost_per_hour_dollars{${CP}})`,
            legend: "{{price_source}}",
          },
        ],
      },
      {
        title: "Spot savings per hour by pool",
        description: "On-demand equivalent minus actual cost per hour, now.",
        kind: "timeseries",
        unit: "currencyUSD",
        width: 12,
        queries: [
          {
            expr: `sum by (nodepool) (wave_nodepool_spot_savings_per_hour_dollars{${CP}})`,
            legend: "{{nodepool}}",
          },
        ],
      },
      {
        title: "Realized savings by pool",
        description: "Dollars saved per hour, as recorded, by pool.",
        kind: "timeseries",
        unit: "currencyUSD",
        width: 12,
        queries: [
          {
            expr: `sum by (nodepool) (rate(wave_realized_savings_dollars_total{${CP}}[${RATE}])) * 3600`,
            legend: "{{nodepool}}",
          },
        ],
      },
      {
        title: "Realized savings by workload (range)",
        description:
          "Dollars each workload saved over the time range: its requested share of spot nodes against on-demand (top 20).",
        kind: "table",
        unit: "currencyUSD",
        width: 24,
        queries: [
          {
            expr: `topk(20, sum by (namespace, workload_kind, workload) (increase(wave_workload_realized_savings_dollars_total{${C}}[${RANGE}])))`,
            instant: true,
          },
        ],
      },
    ],
  },
  {
    title: "Nodes",
    panels: [
      {
        title: "Nodes by pool and capacity type",
        description: "Node count per NodePool and capacity type.",
        kind: "timeseries",
        unit: "none",
        width: 8,
        queries: [
          {
            expr: `sum by (nodepool, capacity_type) (wave_nodes{${CP}})`,
            legend: "{{nodepool}} {{capacity_type}}",
          },
        ],
      },
      {
        title: "Nodes by instance type",
        description: "Node count per instance type.",
        kind: "timeseries",
        unit: "none",
        width: 8,
        queries: [{ expr: `sum by (instance_type) (wave_nodes{${CP}})`, legend: "{{instance_type}}" }],
      },
      {
        title: "CPU requested / allocatable",
        description: "Share of allocatable CPU that pods request, per pool.",
        kind: "timeseries",
        unit: "percentunit",
        width: 8,
        queries: [
          {
            expr: `sum by (nodepool) (wave_nodepool_resource_requested{${CP}, resource_type="cpu"}) / sum by (nodepool) (wave_nodepool_resource_allocatable{${CP}, resource_type="cpu"})`,
            legend: "{{nodepool}}",
          },
        ],
      },
    ],
  },
  {
    title: "Disruptions, lifecycle and thrashing",
    panels: [
      {
        title: "Disruptions by reason",
        description: "NodeClaims Karpenter disrupted, per reason.",
        kind: "timeseries",
        unit: "none",
        width: 12,
        queries: [
          {
            expr: `sum by (reason) (increase(wave_disruptions_total{${CP}}[${RATE}]))`,
            legend: "{{reason}}",
          },
        ],
      },
      {
        title: "Lifecycle latencies (p90)",
        description:
          "90th percentile of the time between NodeClaim phases: launch → registered → initialized.",
        kind: "timeseries",
        unit: "s",
        width: 12,
        queries: [
          {
            expr: `histogram_quantile(0.9, sum by (le, transition) (rate(wave_nodeclaim_phase_duration_seconds_bucket{${CP}, transition!="lifetime"}[${RATE}])))`,
            legend: "{{transition}}",
          },
        ],
      },
      {
        title: "Thrashing score by pool",
        description: "Churn score of each pool over the detector's window (docs/thrashing.md).",
        kind: "timeseries",
        unit: "none",
        width: 12,
        queries: [
          { expr: `max by (nodepool) (wave_nodepool_thrashing_score{${CP}})`, legend: "{{nodepool}}" },
        ],
      },
      {
        title: "Thrashing pools",
        description: "Pools flagged as thrashing now.",
        kind: "stat",
        unit: "none",
        width: 12,
        queries: [{ expr: `sum(wave_nodepool_thrashing{${CP}})` }],
      },
    ],
  },
  {
    title: "Consolidation blockers",
    panels: [
      {
        title: "Blocked consolidation cost by pool and reason",
        description:
          "What consolidating the nodes Karpenter may not disrupt would save per hour, by pool and blocker (a node under two reasons counts under both; docs/consolidation.md).",
        kind: "timeseries",
        unit: "currencyUSD",
        width: 12,
        queries: [
          {
            expr: `sum by (nodepool, reason) (wave_consolidation_blocked_cost_per_hour_dollars{${CP}})`,
            legend: "{{nodepool}} {{reason}}",
          },
        ],
      },
      {
        title: "Blocked nodes by reason",
        description: "Nodes Karpenter may not disrupt now, per blocker.",
        kind: "timeseries",
        unit: "none",
        width: 12,
        queries: [
          { expr: `sum by (reason) (wave_consolidation_blocked_nodes{${CP}})`, legend: "{{reason}}" },
        ],
      },
    ],
  },
  {
    title: "Warmup",
    panels: [
      {
        title: "Warm nodes",
        description: "Nodes Wave holds warm, per pool.",
        kind: "timeseries",
        unit: "none",
        width: 8,
        queries: [{ expr: `sum by (nodepool) (wave_warmup_warm_nodes{${CP}})`, legend: "{{nodepool}}" }],
      },
      {
        title: "Warmup hits, misses and expiries",
        description: "Warm nodes used by a real pod (hit), released unused (miss), of which expired (ttl).",
        kind: "timeseries",
        unit: "none",
        width: 8,
        queries: [
          { expr: `sum(increase(wave_warmup_hits_total{${CP}}[${RATE}]))`, legend: "hits" },
          { expr: `sum(increase(wave_warmup_misses_total{${CP}}[${RATE}]))`, legend: "misses" },
          {
            expr: `sum(increase(wave_warmup_misses_total{${CP}, reason="ttl"}[${RATE}]))`,
            legend: "expiries",
          },
        ],
      },
      {
        title: "Warmup time saved",
        description: "Pod start-up time saved by warm nodes over the range (each hit's stored saving).",
        kind: "stat",
        unit: "s",
        width: 4,
        queries: [
          {
            expr: `sum(increase(wave_warmup_time_saved_seconds_total{${CP}}[${RANGE}]))`,
            legend: "time saved",
          },
        ],
      },
      {
        title: "Warm cost (24 h)",
        description:
          "What the warm nodes cost over the last 24 h, per pool and in total: each from the launch its warmup caused to its first real pod, TTL expiry or release (the Overview's and the Warmup page's figure); and per hour now.",
        kind: "stat",
        unit: "currencyUSD",
        width: 4,
        queries: [
          { expr: `sum by (nodepool) (wave_warmup_warm_cost_dollars{${CP}})`, legend: "{{nodepool}}" },
          { expr: `sum(wave_warmup_warm_cost_dollars{${CP}})`, legend: "total" },
          { expr: `sum(wave_warmup_cost_per_hour_dollars{${CP}})`, legend: "per hour now" },
        ],
      },
    ],
  },
  {
    title: "Spot placement",
    panels: [
      {
        title: "On-demand pods: target vs actual, per workload",
        description:
          "Per workload with a spot policy: the on-demand pods its policy wants and those running on on-demand.",
        kind: "table",
        unit: "none",
        width: 12,
        queries: [
          {
            expr: `sum by (namespace, workload_kind, workload) (wave_spot_placement_target_on_demand_pods{${C}})`,
            instant: true,
          },
          {
            expr: `sum by (namespace, workload_kind, workload) (wave_spot_placement_pods{${C}, capacity_type="on-demand"})`,
            instant: true,
          },
        ],
      },
      {
        title: "Spot pods per workload",
        description: "Live pods of each policy workload by node capacity type (pending: not bound yet).",
        kind: "timeseries",
        unit: "none",
        width: 12,
        queries: [
          {
            expr: `sum by (namespace, workload, capacity_type) (wave_spot_placement_pods{${C}})`,
            legend: "{{namespace}}/{{workload}} {{capacity_type}}",
          },
        ],
      },
      {
        title: "Self-heal actions",
        description: "Spot placement repairs (WaveSpotRepair Events), per namespace.",
        kind: "timeseries",
        unit: "none",
        width: 12,
        queries: [
          {
            expr: `sum by (namespace) (increase(wave_spot_repair_events_total{${C}}[${RATE}]))`,
            legend: "{{namespace}}",
          },
        ],
      },
      {
        title: "Webhook fallbacks and late answers",
        description:
          "Admissions the webhook answered with its fallback, or after its deadline (the webhook's own /metrics).",
        kind: "timeseries",
        unit: "none",
        width: 12,
        queries: [
          { expr: `sum(increase(${WEBHOOK_FALLBACKS}[${RATE}]))`, legend: "fallbacks" },
          { expr: `sum(increase(${WEBHOOK_LATE_ANSWERS}[${RATE}]))`, legend: "late answers" },
        ],
      },
    ],
  },
];

const DATASOURCE = { type: "prometheus", uid: "${datasource}" };

function target(q: PanelQuery, refId: string): DataqueryBuilder {
  const t = new DataqueryBuilder().expr(q.expr).refId(refId).datasource(DATASOURCE);
  if (q.legend) t.legendFormat(q.legend);
  if (q.instant) t.instant().format("table" as never);
  return t;
}

function panel(p: PanelSpec, id: number): StatPanel | TimeseriesPanel | TablePanel {
  const b =
    p.kind === "stat" ? new StatPanel() : p.kind === "table" ? new TablePanel() : new TimeseriesPanel();
  b.id(id)
    .title(p.title)
    .description(p.description)
    .unit(p.unit)
    .datasource(DATASOURCE)
    .span(p.width)
    .height(8);
  p.queries.forEach((q, i) => b.withTarget(target(q, String.fromCharCode(65 + i))));
  return b;
}

// The v1 dashboard model on purpose: it is what Grafana's dashboard sidecar and file provisioning
// load on every Grafana version users run today (dashboardv2 needs Grafana 12's new API).
/* eslint-disable @typescript-eslint/no-deprecated */
export function waveDashboard(): Dashboard {
  const d = new DashboardBuilder("Wave — Karpenter cost, spot, warmup")
    .uid("wave-karpenter")
    .tags(["wave", "karpenter", "kubernetes"])
    .description(
      "Wave's dashboard figures from core's /metrics: cost, spot, savings, nodes, disruptions, warmup, spot placement.",
    )
    .editable()
    .refresh("30s")
    .time({ from: "now-6h", to: "now" })
    .timezone("browser")
    .withVariable(new DatasourceVariableBuilder("datasource").label("Data source").type("prometheus"))
    .withVariable(
      new QueryVariableBuilder("cluster")
        .label("Cluster")
        .datasource(DATASOURCE)
        .query("label_values(wave_cluster_connected, cluster)")
        .definition("label_values(wave_cluster_connected, cluster)")
        .refresh(VariableRefresh.OnTimeRangeChanged)
        .sort(VariableSort.AlphabeticalAsc)
        .multi(true)
        .includeAll(true)
        .allValue(".*"),
    )
    .withVariable(
      new QueryVariableBuilder("nodepool")
        .label("NodePool")
        .datasource(DATASOURCE)
        .query('label_values(wave_nodes{cluster=~"$cluster"}, nodepool)')
        .definition('label_values(wave_nodes{cluster=~"$cluster"}, nodepool)')
        .refresh(VariableRefresh.OnTimeRangeChanged)
        .sort(VariableSort.AlphabeticalAsc)
        .multi(true)
        .includeAll(true)
        .allValue(".*"),
    );
  let id = 1;
  for (const row of ROWS) {
    d.withRow(new RowBuilder(row.title).id(id++));
    for (const p of row.panels) d.withPanel(panel(p, id++));
  }
  return d.build();
}
/* eslint-enable @typescript-eslint/no-deprecated */

/** Where the generated dashboard is checked in, relative to the repository root. */
export const DASHBOARD_FILES = [
  "deploy/grafana/wave.json",
  "deploy/helm/wave/files/grafana-dashboard.json",
] as const;

/** The dashboard file's text: stable key order and a trailing newline. */
export function dashboardJson(): string {
  return `${JSON.stringify(waveDashboard(), null, 2)}\n`;
}

/** Every panel query with Grafana's variables replaced, for evaluating on a real Prometheus. */
export function resolvedQueries(vars: {
  cluster: string;
  nodepool?: string;
  rateInterval: string;
  range: string;
}) {
  return ROWS.flatMap((r) =>
    r.panels.map((p) => ({
      panel: p.title,
      queries: p.queries.map((q) =>
        q.expr
          .replaceAll("$__rate_interval", vars.rateInterval)
          .replaceAll("$__range", vars.range)
          .replaceAll("$cluster", vars.cluster)
          .replaceAll("$nodepool", vars.nodepool ?? ".*"),
      ),
    })),
  );
}
