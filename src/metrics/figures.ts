// The dashboard's figures of one cluster as Prometheus samples: pure over core's per-cluster
// state, prices, thrashing reports and spot policies, computed at scrape time. Names and labels
// follow Karpenter's metrics (nodepool, capacity_type, instance_type, zone, resource_type) plus
// `cluster`. Cardinality is bounded by the catalog and the configuration, never by pods: see
// docs/metrics.md for each metric's bound.
import { CPU, MEMORY } from "../karpenter/resources.ts";
import { podPlacement } from "../karpenter/labels.ts";
import type { PriceProvider } from "../pricing/types.ts";
import type { ClusterState } from "../state/cluster.ts";
import { onDemandTarget } from "../policy/on-demand-target.ts";
import { workloadKey, type SpotPolicy } from "../policy/spot.ts";
import { basisOf, type Basis } from "../dashboard/views.ts";
import { NO_POOL } from "../dashboard/machines.ts";
import { staticNodes } from "../dashboard/figures/static-pool.ts";
import { isFlagged, type ThrashingReport } from "../dashboard/thrashing/detect.ts";
import { workloadIndex, type IndexedPod } from "./workload-index.ts";
import type { ConsolidationViewDto, PendingViewDto } from "../dashboard/dto.ts";

export type Labels = Record<string, string>;
export interface Sample {
  labels: Labels;
  value: number;
}

/** Gauge name → samples. Every gauge below is always present (maybe with no samples). */
export type Figures = Map<GaugeName, Sample[]>;

export const GAUGES = {
  wave_cluster_connected: "1 while an agent streams the cluster to core (0: the figures are frozen).",
  wave_cluster_last_seen_timestamp_seconds: "When core last received a batch from the cluster's agent.",
  wave_pending_pods: "Pods not bound to a node (not terminal, not being deleted).",
  wave_nodes:
    "Nodes (and launched NodeClaims without a Node yet), by pool, capacity type, instance type and zone.",
  wave_nodepool_resource_allocatable:
    "Allocatable resources of a pool's nodes (cpu in cores, memory in bytes).",
  wave_nodepool_resource_requested:
    "Resources requested by non-terminal pods bound to a pool's nodes (cpu in cores, memory in bytes).",
  wave_nodepool_cost_per_hour_dollars:
    "Cost per hour of a pool's nodes, by capacity type and the source of their prices.",
  wave_nodepool_on_demand_cost_per_hour_dollars:
    "What a pool's priced nodes would cost per hour all on-demand (same instance types and zones).",
  wave_nodepool_spot_savings_per_hour_dollars:
    "On-demand equivalent minus actual cost per hour of a pool's nodes whose both prices are known.",
  wave_nodepool_desired_nodes:
    "Nodes a static NodePool (spec.replicas, Karpenter v1.8+) wants; only static pools have this series.",
  wave_nodepool_actual_nodes:
    "Nodes a static NodePool has, not being deleted (what Karpenter counts against its replicas); only static pools.",
  wave_spot_ratio: "Spot share of the cluster by basis: nodes, vcpu or cost (0..1).",
  wave_priced_nodes: "Nodes by the source of their price (unknown: no price).",
  wave_price_age_seconds: "Age of the oldest price in use, by source.",
  wave_nodepool_thrashing_score: "Thrashing (churn) score of a pool over the detector's window.",
  wave_nodepool_thrashing:
    "1 while a pool is flagged as thrashing (severity warning or critical: medium or high; low is not flagged).",
  wave_warmup_warm_nodes: "Nodes Wave holds warm for a pool.",
  wave_warmup_cost_per_hour_dollars: "Cost per hour of the nodes Wave holds warm.",
  wave_warmup_warm_cost_dollars:
    "What Wave's warm nodes cost over the Overview's window (the last 24 h), by pool: each from the launch its warmup caused to its first real pod, TTL expiry or release (the Warmup page's warm cost).",
  wave_spot_placement_pods:
    "Live pods of a workload with a spot policy, by the capacity type of their node (pending: unbound).",
  wave_spot_placement_target_on_demand_pods:
    "How many of the workload's live pods its spot policy wants on on-demand.",
  wave_nodepool_consolidation_blocked_nodes:
    "Nodes of a pool a blocker keeps from a consolidation saving (waits for consolidateAfter and $0 nodes not counted; docs/consolidation.md), each once.",
  wave_nodepool_consolidation_blocked_cost_per_hour_dollars:
    "If the blockers were lifted, what consolidation could save per hour on a pool's blocked nodes, planned together (each spare room used once).",
  wave_consolidation_blocked_nodes:
    "Blocked nodes by pool and reason (a node blocked for two reasons counts under both).",
  wave_consolidation_blocked_cost_per_hour_dollars:
    "If the blockers were lifted, what consolidation could save per hour, by pool and reason (the plan's savings; a node under two reasons counts under both).",
  wave_pending_pods_by_reason:
    "Pending pods by the NodePool and reason Karpenter's last FailedScheduling gave (requirement, taint, limit, resources, …).",
} as const;
export type GaugeName = keyof typeof GAUGES;

export const GAUGE_LABELS: Record<GaugeName, readonly string[]> = {
  wave_cluster_connected: ["cluster"],
  wave_cluster_last_seen_timestamp_seconds: ["cluster"],
  wave_pending_pods: ["cluster"],
  wave_nodes: ["cluster", "nodepool", "capacity_type", "instance_type", "zone"],
  wave_nodepool_resource_allocatable: ["cluster", "nodepool", "resource_type"],
  wave_nodepool_resource_requested: ["cluster", "nodepool", "resource_type"],
  wave_nodepool_cost_per_hour_dollars: ["cluster", "nodepool", "capacity_type", "price_source"],
  wave_nodepool_on_demand_cost_per_hour_dollars: ["cluster", "nodepool"],
  wave_nodepool_spot_savings_per_hour_dollars: ["cluster", "nodepool"],
  wave_nodepool_desired_nodes: ["cluster", "nodepool"],
  wave_nodepool_actual_nodes: ["cluster", "nodepool"],
  wave_spot_ratio: ["cluster", "basis"],
  wave_priced_nodes: ["cluster", "price_source"],
  wave_price_age_seconds: ["cluster", "price_source"],
  wave_nodepool_thrashing_score: ["cluster", "nodepool"],
  wave_nodepool_thrashing: ["cluster", "nodepool"],
  wave_warmup_warm_nodes: ["cluster", "nodepool"],
  wave_warmup_cost_per_hour_dollars: ["cluster", "nodepool"],
  wave_warmup_warm_cost_dollars: ["cluster", "nodepool"],
  wave_spot_placement_pods: ["cluster", "namespace", "workload_kind", "workload", "capacity_type"],
  wave_spot_placement_target_on_demand_pods: ["cluster", "namespace", "workload_kind", "workload"],
  wave_nodepool_consolidation_blocked_nodes: ["cluster", "nodepool"],
  wave_nodepool_consolidation_blocked_cost_per_hour_dollars: ["cluster", "nodepool"],
  wave_consolidation_blocked_nodes: ["cluster", "nodepool", "reason"],
  wave_consolidation_blocked_cost_per_hour_dollars: ["cluster", "nodepool", "reason"],
  wave_pending_pods_by_reason: ["cluster", "nodepool", "reason"],
};

export interface ClusterInput {
  clusterId: string;
  state: ClusterState;
  prices: PriceProvider;
  now: number;
  connected: boolean;
  lastSeen: number | null;
  thrashing: readonly ThrashingReport[];
  spotPolicies: readonly SpotPolicy[];
  /** The state's machines priced once per state change (views' basis); computed here when absent. */
  basis?: Basis | undefined;
  /** The cluster's consolidation view and pending pods (the API's, src/dashboard/consolidation). */
  consolidation?: ConsolidationViewDto;
  pending?: PendingViewDto;
  /** Warm cost per pool over core's warmup window (src/core/warmup/stats-store.ts), in dollars. */
  warmCost?: Readonly<Record<string, number>> | undefined;
}

/** `(none)` (machines no pool owns) is exported as the empty pool name, as Karpenter would. */
const poolLabel = (p: string): string => (p === NO_POOL ? "" : p);

export function emptyFigures(): Figures {
  return new Map(Object.keys(GAUGES).map((k) => [k as GaugeName, []]));
}

/** Adds one cluster's samples to `out`. */
export function clusterFigures(input: ClusterInput, out: Figures = emptyFigures()): Figures {
  const { clusterId: cluster, state, now } = input;
  const push = (name: GaugeName, labels: Labels, value: number): void => {
    out.get(name)?.push({ labels: { cluster, ...labels }, value });
  };
  push("wave_cluster_connected", {}, input.connected ? 1 : 0);
  if (input.lastSeen !== null) push("wave_cluster_last_seen_timestamp_seconds", {}, input.lastSeen / 1000);
  push("wave_pending_pods", {}, state.counts().pendingPods);

  // The same priced machines as the API's overview and pools (views/cluster-views.ts), when given.
  const { index, pools, memo, cost } = input.basis ?? basisOf(state, input.prices);

  // Nodes by pool × capacity type × instance type × zone: the price groups, merged over region.
  const nodes = new Map<string, { labels: Labels; value: number }>();
  const poolCost = new Map<string, { labels: Labels; value: number }>();
  const ages = new Map<string, number>();
  for (const pool of pools.values()) {
    let onDemand = 0;
    let actual = 0;
    for (const g of pool.groups) {
      const ct = g.capacityType ?? "on-demand";
      const labels = {
        nodepool: poolLabel(pool.name),
        capacity_type: ct,
        instance_type: g.instanceType ?? "",
        zone: g.zone ?? "",
      };
      const nk = JSON.stringify(labels);
      const n = nodes.get(nk) ?? { labels, value: 0 };
      n.value += g.nodes;
      nodes.set(nk, n);
      const q = memo.group(g, ct);
      const source = q ? q.source : "unknown";
      const cl = { nodepool: poolLabel(pool.name), capacity_type: ct, price_source: source };
      const ck = JSON.stringify(cl);
      const c = poolCost.get(ck) ?? { labels: cl, value: 0 };
      c.value += q ? q.usdPerHour * g.nodes : 0;
      poolCost.set(ck, c);
      if (q) {
        const asOf = Date.parse(q.asOf);
        if (Number.isFinite(asOf)) ages.set(source, Math.max(ages.get(source) ?? 0, (now - asOf) / 1000));
      }
      const od = ct === "on-demand" ? q : memo.group(g, "on-demand");
      if (q && od) {
        actual += q.usdPerHour * g.nodes;
        onDemand += od.usdPerHour * g.nodes;
      }
    }
    push("wave_nodepool_on_demand_cost_per_hour_dollars", { nodepool: poolLabel(pool.name) }, onDemand);
    push(
      "wave_nodepool_spot_savings_per_hour_dollars",
      { nodepool: poolLabel(pool.name) },
      onDemand - actual,
    );
    push("wave_warmup_warm_nodes", { nodepool: poolLabel(pool.name) }, pool.warmNodes);
  }
  for (const n of nodes.values()) push("wave_nodes", n.labels, n.value);
  for (const c of poolCost.values()) push("wave_nodepool_cost_per_hour_dollars", c.labels, c.value);
  for (const [source, n] of Object.entries(cost.sources))
    push("wave_priced_nodes", { price_source: source }, n);
  for (const [source, age] of ages)
    push("wave_price_age_seconds", { price_source: source }, Math.max(0, age));
  push("wave_spot_ratio", { basis: "nodes" }, cost.spotShare.nodes);
  push("wave_spot_ratio", { basis: "vcpu" }, cost.spotShare.vcpu);
  push("wave_spot_ratio", { basis: "cost" }, cost.spotShare.cost);

  // Warm cost per pool: price each warm node's group.
  for (const pool of pools.values()) {
    let warm = 0;
    for (const g of pool.groups) {
      if (g.warmNodes === 0) continue;
      warm += (memo.group(g, g.capacityType ?? "on-demand")?.usdPerHour ?? 0) * g.warmNodes;
    }
    push("wave_warmup_cost_per_hour_dollars", { nodepool: poolLabel(pool.name) }, warm);
  }
  // Warm cost over the window: every pool the state knows (0 when none warm) and any it lost.
  if (input.warmCost) {
    const names = new Set([
      ...state.nodePools().map((p) => p.metadata.name ?? ""),
      ...Object.keys(input.warmCost),
    ]);
    for (const name of names)
      if (name !== "") push("wave_warmup_warm_cost_dollars", { nodepool: name }, input.warmCost[name] ?? 0);
  }

  // Allocatable and requested per pool, summed over its nodes.
  const usage = new Map<string, { ac: number; am: number; rc: number; rm: number }>();
  for (const { machine: m } of index.rows()) {
    const u = usage.get(m.nodePool) ?? { ac: 0, am: 0, rc: 0, rm: 0 };
    const t = m.node === undefined ? undefined : index.nodeTotals(m.node);
    u.ac += (t?.allocCpu ?? m.allocatable[CPU] ?? 0) / 1000;
    u.am += t?.allocMem ?? m.allocatable[MEMORY] ?? 0;
    u.rc += (t?.reqCpu ?? 0) / 1000;
    u.rm += t?.reqMem ?? 0;
    usage.set(m.nodePool, u);
  }
  for (const [pool, u] of usage) {
    const np = poolLabel(pool);
    push("wave_nodepool_resource_allocatable", { nodepool: np, resource_type: "cpu" }, u.ac);
    push("wave_nodepool_resource_allocatable", { nodepool: np, resource_type: "memory" }, u.am);
    push("wave_nodepool_resource_requested", { nodepool: np, resource_type: "cpu" }, u.rc);
    push("wave_nodepool_resource_requested", { nodepool: np, resource_type: "memory" }, u.rm);
  }

  // Static pools: desired vs actual, the NodePools page's figure.
  for (const p of state.nodePools()) {
    const name = p.metadata.name ?? "";
    const s = staticNodes(p, pools.get(name));
    if (!s || name === "") continue;
    push("wave_nodepool_desired_nodes", { nodepool: name }, s.desired);
    push("wave_nodepool_actual_nodes", { nodepool: name }, s.actual);
  }

  // Thrashing: every pool the state or the detector knows, 0 when calm.
  const reports = new Map(input.thrashing.map((r) => [r.nodePool, r]));
  const poolNames = new Set([...state.nodePools().map((p) => p.metadata.name ?? ""), ...reports.keys()]);
  for (const name of poolNames) {
    if (name === "") continue;
    const r = reports.get(name);
    push("wave_nodepool_thrashing_score", { nodepool: name }, r?.score ?? 0);
    push("wave_nodepool_thrashing", { nodepool: name }, r && isFlagged(r.severity) ? 1 : 0);
  }

  spotPlacement(input, push);

  // Consolidation blockers: the API's own sums (GET …/consolidation), so both show one figure.
  const cv = input.consolidation;
  if (cv) {
    for (const p of cv.byPool) {
      push("wave_nodepool_consolidation_blocked_nodes", { nodepool: p.nodePool }, p.blockedNodes);
      push(
        "wave_nodepool_consolidation_blocked_cost_per_hour_dollars",
        { nodepool: p.nodePool },
        p.blockedCostPerHour,
      );
    }
    for (const r of cv.byPoolReason) {
      const l = { nodepool: r.nodePool, reason: r.reason };
      push("wave_consolidation_blocked_nodes", l, r.blockedNodes);
      push("wave_consolidation_blocked_cost_per_hour_dollars", l, r.blockedCostPerHour);
    }
  }
  for (const r of input.pending?.byPoolReason ?? [])
    push("wave_pending_pods_by_reason", { nodepool: r.nodePool ?? "", reason: r.kind }, r.pods);
  return out;
}

/**
 * Per workload with a spot policy: live pods by node capacity type, and the policy's on-demand
 * target. Reads only the policy workloads' pods, from the workload index the state's change
 * notifications keep current. A pod counts for its most specific policy: its Deployment's when
 * both the Deployment and its ReplicaSet have one (as the webhook resolves it).
 */
function spotPlacement(input: ClusterInput, push: (n: GaugeName, l: Labels, v: number) => void): void {
  if (input.spotPolicies.length === 0) return;
  const { state } = input;
  const index = workloadIndex(state);
  const policies = new Map(input.spotPolicies.map((p) => [workloadKey(p.workload), p]));
  const nodeCt = new Map<string, string>();
  const cache = state.derived(PLACEMENT, () => new Map<string, PlacementEntry>());
  // Which policy governs a pod depends on the whole set: a new set invalidates every entry.
  const signature = [...policies.keys()].join("\u0000");
  for (const [key, policy] of policies) {
    const version = `${index.version(key)}/${signature}`;
    let c = cache.get(key)?.version === version ? cache.get(key)?.counts : undefined;
    if (!c) {
      c = countPlacement(index.podsOf(key), key, policies, state, nodeCt);
      cache.set(key, { version, counts: c });
    }
    const w = {
      namespace: policy.workload.namespace,
      workload_kind: policy.workload.kind,
      workload: policy.workload.name,
    };
    const types = new Set(["spot", "on-demand", "pending", ...Object.keys(c)]);
    for (const ct of types) push("wave_spot_placement_pods", { ...w, capacity_type: ct }, c[ct] ?? 0);
    const live = Object.values(c).reduce((s, n) => s + n, 0);
    push("wave_spot_placement_target_on_demand_pods", w, onDemandTarget(policy, live));
  }
  for (const k of cache.keys()) if (!policies.has(k)) cache.delete(k);
}

/** Per state: each policy workload's counts and the index version they were taken at. */
interface PlacementEntry {
  version: string;
  counts: Record<string, number>;
}
/** The state's placement counts per policy workload (`ClusterState.derived`). */
const PLACEMENT = Symbol("spot placement counts");

function countPlacement(
  pods: readonly IndexedPod[],
  key: string,
  policies: ReadonlyMap<string, SpotPolicy>,
  state: ClusterState,
  nodeCt: Map<string, string>,
): Record<string, number> {
  const c: Record<string, number> = {};
  for (const pod of pods) {
    if (!pod.live) continue;
    // The first candidate with a policy governs the pod.
    if (pod.candidates.find((k) => policies.has(k)) !== key) continue;
    const name = pod.nodeName ?? "";
    const ct = nodeCt.get(name) ?? podPlacement(pod.nodeName, state.node(name));
    nodeCt.set(name, ct);
    c[ct] = (c[ct] ?? 0) + 1;
  }
  return c;
}
