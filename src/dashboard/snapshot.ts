// Every dashboard figure in one pure call, for the API: cluster objects + history + prices in,
// plain JSON-ready data out.
import type { Node, Pod } from "../objects/kube.ts";
import type { NodeClaim, NodePool } from "../objects/karpenter.ts";
import type { PriceProvider } from "../pricing/types.ts";
import { costByPool, nodeCosts, spotRatio, spotSavings, totalCost } from "./figures/cost.ts";
import { disruptionsByReason, lifecycleTimeline } from "./figures/disruptions.ts";
import { poolUsageVsLimits } from "./figures/limits.ts";
import { nodeCountByPool } from "./figures/nodes.ts";
import { sumWaste, wasteByNode, wasteByPool } from "./figures/waste.ts";
import type { DisruptionRecord, LifecycleRecord, NodeCountPoint } from "./history.ts";
import { machinesOf } from "./machines.ts";
import { detectThrashingAll, type ThrashingOptions } from "./thrashing/detect.ts";

export interface SnapshotInput {
  nodes: readonly Node[];
  nodeClaims: readonly NodeClaim[];
  nodePools: readonly NodePool[];
  pods: readonly Pod[];
  events?: readonly LifecycleRecord[];
  disruptions?: readonly DisruptionRecord[];
  nodeCounts?: readonly NodeCountPoint[];
  prices: PriceProvider;
  now: number;
  /** History window for disruptions and the timeline (default 24 h). */
  windowMs?: number;
  thrashing?: Partial<ThrashingOptions>;
}

const DAY = 24 * 60 * 60 * 1000;

export function dashboardSnapshot(input: SnapshotInput) {
  const machines = machinesOf(input.nodes, input.nodeClaims);
  const costs = nodeCosts(machines, input.prices);
  const waste = wasteByNode(machines, input.pods, costs);
  const window = { from: input.now - (input.windowMs ?? DAY), to: input.now + 1 };
  const events = input.events ?? [];
  return {
    at: input.now,
    nodes: nodeCountByPool(machines),
    cost: { cluster: totalCost(costs), pools: costByPool(costs), nodes: costs },
    spot: { ratio: spotRatio(machines, costs), savings: spotSavings(machines, input.prices) },
    limits: poolUsageVsLimits(input.nodePools, machines),
    waste: { cluster: sumWaste(waste), pools: wasteByPool(waste), nodes: waste },
    disruptions: disruptionsByReason(input.disruptions ?? [], window),
    timeline: lifecycleTimeline(events, window),
    thrashing: detectThrashingAll({
      pools: input.nodePools,
      events,
      ...(input.disruptions ? { disruptions: input.disruptions } : {}),
      ...(input.nodeCounts ? { nodeCounts: input.nodeCounts } : {}),
      now: input.now,
      ...(input.thrashing ? { options: input.thrashing } : {}),
    }),
    /** Input problems figures worked around (unparsable quantities). */
    problems: machines.flatMap((m) => m.problems),
  };
}

export type DashboardSnapshot = ReturnType<typeof dashboardSnapshot>;
