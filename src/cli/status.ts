// `wave status`: the cluster's figures and its policies' target vs actual, from core's API — the
// same DTOs the console reads (overview, consolidation, spot placement, warmup), so every number
// is the one the pages show. Building the status is pure; the shell is four GETs.
import type { ConsolidationViewDto, OverviewDto, SpotViewDto, WarmupViewDto } from "../dashboard/dto.ts";
import { workloadName } from "../policy/spot.ts";
import { outputFormat, render, table } from "./output.ts";
import { call, clusterIdOf } from "./policies.ts";
import type { CommandContext } from "./types.ts";

export interface ClusterStatus {
  clusterId: string;
  at: number;
  nodes: number;
  nodePools: number;
  costPerHour: number;
  costPerMonth: number;
  /** Spot nodes over all nodes (the Overview's spot ratio). */
  spotRatio: number;
  pendingPods: number;
  warmNodes: number;
  blockedNodes: number;
  /** What consolidating the blocked nodes would save per hour (the Consolidation page's figure). */
  blockedCostPerHour: number;
  spot: {
    workload: string;
    policy: string;
    pods: number;
    target: { onDemand: number; spot: number } | null;
    actual: { onDemand: number; spot: number; pending: number };
  }[];
  warmup: { nodePool: string; maxWarmNodes: number; warmNodes: number; state: string }[];
}

/** The status from the four answers (pure). */
export function clusterStatus(
  o: OverviewDto,
  c: Pick<ConsolidationViewDto, "blockedNodes" | "blockedCostPerHour">,
  s: SpotViewDto,
  w: WarmupViewDto,
): ClusterStatus {
  return {
    clusterId: o.clusterId,
    at: o.at,
    nodes: o.nodes,
    nodePools: o.nodePools,
    costPerHour: o.costPerHour,
    costPerMonth: o.costPerMonth,
    spotRatio: o.spotRatio.nodes,
    pendingPods: o.pendingPods,
    warmNodes: o.warmup.warmNodes,
    blockedNodes: c.blockedNodes,
    blockedCostPerHour: c.blockedCostPerHour,
    spot: s.workloads.flatMap((x) =>
      x.policy
        ? [
            {
              workload: workloadName(x.workload),
              policy: `base ${x.policy.threshold} ${x.policy.strategy}${x.policy.percentAboveBase ? ` +${x.policy.percentAboveBase}%` : ""}`,
              pods: x.pods,
              target: x.target,
              actual: x.actual,
            },
          ]
        : [],
    ),
    warmup: w.pools
      .filter((p) => p.policy.enabled)
      .map((p) => ({
        nodePool: p.nodePool,
        maxWarmNodes: p.policy.maxWarmNodes,
        warmNodes: p.warmNodes.length,
        state: p.state,
      })),
  };
}

const usd = (n: number): string => `$${n.toFixed(n >= 100 ? 0 : 2)}`;
const pct = (f: number): string => `${Math.round(f * 100)}%`;
const split = (x: { onDemand: number; spot: number } | null): string =>
  x ? `${x.onDemand} / ${x.spot}` : "-";

/** The table form: the figures, then each policy's target vs actual. */
export function statusTable(st: ClusterStatus): string {
  const figures = table(
    [
      { header: "CLUSTER", value: () => st.clusterId },
      { header: "NODES", value: () => String(st.nodes) },
      { header: "POOLS", value: () => String(st.nodePools) },
      { header: "COST/H", value: () => usd(st.costPerHour) },
      { header: "COST/MONTH", value: () => usd(st.costPerMonth) },
      { header: "SPOT", value: () => pct(st.spotRatio) },
      { header: "PENDING", value: () => String(st.pendingPods) },
      { header: "WARM", value: () => String(st.warmNodes) },
      { header: "BLOCKED", value: () => `${st.blockedNodes} nodes, ${usd(st.blockedCostPerHour)}/h` },
    ],
    [st],
  );
  const spot = table(
    [
      { header: "SPOT POLICY", value: (r: ClusterStatus["spot"][number]) => r.workload },
      { header: "POLICY", value: (r) => r.policy },
      { header: "PODS", value: (r) => String(r.pods) },
      { header: "TARGET OD/SPOT", value: (r) => split(r.target) },
      {
        header: "ACTUAL OD/SPOT",
        value: (r) => split(r.actual) + (r.actual.pending > 0 ? ` (+${r.actual.pending} pending)` : ""),
      },
    ],
    st.spot,
  );
  const warmup = table(
    [
      { header: "WARMUP POLICY", value: (r: ClusterStatus["warmup"][number]) => r.nodePool },
      { header: "MAX-WARM", value: (r) => String(r.maxWarmNodes) },
      { header: "WARM NOW", value: (r) => String(r.warmNodes) },
      { header: "STATE", value: (r) => r.state },
    ],
    st.warmup,
  );
  return [
    figures,
    "",
    st.spot.length > 0 ? spot : "no spot policy",
    "",
    st.warmup.length > 0 ? warmup : "no warmup policy on",
  ].join("\n");
}

export async function statusCommand(ctx: CommandContext): Promise<number> {
  const format = outputFormat(ctx.flags, ctx.io.tty === true);
  const id = encodeURIComponent(await clusterIdOf(ctx));
  const get = <T>(rest: string): Promise<T> =>
    call(ctx, "GET", `/api/v1/clusters/${id}/${rest}`) as Promise<T>;
  const [o, c, s, w] = await Promise.all([
    get<OverviewDto>("overview"),
    get<ConsolidationViewDto>("consolidation"),
    get<SpotViewDto>("spot-placement"),
    get<WarmupViewDto>("warmup"),
  ]);
  const st = clusterStatus(o, c, s, w);
  ctx.io.out(render(format, st, () => statusTable(st)));
  return 0;
}
