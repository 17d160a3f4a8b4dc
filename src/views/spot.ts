// The Spot placement page (pure): per workload the policy, target vs actual on-demand/spot split,
// its pods with capacity type and node, what spot saves against all-on-demand, and warnings a
// user would want before trusting the numbers. Reads core's state as the agent forwards it, the
// stored policies, and the repair's actions and the webhook's late answers as stored from the
// Events the agent forwards (the webhook's Prometheus counters live on its /metrics, not here).
import type { SpotPodDto, SpotViewDto, SpotWorkloadDto } from "../dashboard/dto.ts";
import type { LateAnswerTotal, SpotRepair } from "../core/store/store.ts";
import { CPU, parseResources, podRequests } from "../karpenter/resources.ts";
import { CAPACITY_TYPE_LABEL, type NodeOverlay, type NodePool } from "../objects/karpenter.ts";
import type { Node, Pod, PodDisruptionBudget } from "../objects/kube.ts";
import type { PriceProvider } from "../pricing/types.ts";
import { clusterPrices, machinePrice } from "../dashboard/figures/price.ts";
import { machineOf } from "../dashboard/machines.ts";
import { podShareOfNode } from "../dashboard/figures/savings.ts";
import { poolOfPod } from "../karpenter/pool-of-pod.ts";
import { isDaemonSetPod } from "../karpenter/room.ts";
import { podPlacement } from "../karpenter/labels.ts";
import { ASSIGNMENT_LABEL, NOTE_ANNOTATION, isWavePod } from "../objects/wave.ts";
import { ON_DEMAND, SPOT } from "../webhook/constants.ts";
import { onDemandTarget } from "../policy/on-demand-target.ts";
import { workloadKey, type SpotPolicy, type WorkloadRef } from "../policy/spot.ts";
import type { PolicyConflict } from "../policy/in-force.ts";
import { resolveWorkload } from "../webhook/workload.ts";
import { pinsCapacityType } from "./spot-blocker.ts";
import { FALLBACK_ACTION, repairsByWorkload, spotProgress, type Repairs } from "./spot-repair.ts";

export { pinsCapacityType };

/** Most pods listed per workload (counts always cover every pod). */
export const MAX_PODS_LISTED = 500;

export interface SpotViewInput {
  clusterId: string;
  state: {
    nodePools(): readonly NodePool[];
    nodes(): readonly Node[];
    pods(): readonly Pod[];
    /** What may refuse the repair's evictions (the Spot page names it, spot-blocker.ts). */
    podDisruptionBudgets?(): readonly PodDisruptionBudget[];
    /** Karpenter's NodeOverlays in its order: nodes priced as Karpenter sees them. */
    nodeOverlays?(): readonly NodeOverlay[];
  };
  policies: readonly SpotPolicy[];
  prices: PriceProvider;
  now: number;
  /** List pods of this workload key even without a policy (the page's expanded row). */
  expand?: string | undefined;
  /** The spot repair's actions in [from, to) (store rows, oldest first). */
  repairs?: readonly SpotRepair[];
  /** The webhook's late answers per workload over [from, to) (store sums). */
  lateAnswers?: readonly LateAnswerTotal[];
  from?: number;
  to?: number;
  /** When each policy last changed (workload key → epoch ms): progress counts from there. */
  policySince?: ReadonlyMap<string, number>;
  /** SpotPolicies not in force: another one on their workload decides (src/policy/in-force.ts). */
  conflicts?: readonly PolicyConflict[];
}

const isLive = (p: Pod): boolean =>
  p.metadata.deletionTimestamp === undefined &&
  p.status?.phase !== "Succeeded" &&
  p.status?.phase !== "Failed";

/** Whether a pool can launch spot capacity (Karpenter v1 defaults to on-demand without a requirement). */
export function poolOffersSpot(pool: NodePool): boolean {
  const reqs = (pool.spec.template.spec.requirements ?? []).filter((r) => r.key === CAPACITY_TYPE_LABEL);
  if (reqs.length === 0) return false;
  return reqs.every((r) =>
    r.operator === "In"
      ? (r.values ?? []).includes(SPOT)
      : r.operator === "NotIn"
        ? !(r.values ?? []).includes(SPOT)
        : r.operator !== "DoesNotExist",
  );
}

interface Acc {
  ref: WorkloadRef;
  policy: SpotPolicy | undefined;
  pods: Pod[];
}

/**
 * Live pods per workload key, resolved as the webhook resolves them (the first candidate with a
 * policy: a Deployment before its ReplicaSet); every policy's workload is listed, pods or not.
 */
function podsByWorkload(pods: readonly Pod[], policies: readonly SpotPolicy[]): Map<string, Acc> {
  const policyByKey = new Map(policies.map((p) => [workloadKey(p.workload), p]));
  const acc = new Map<string, Acc>();
  for (const p of policies) acc.set(workloadKey(p.workload), { ref: p.workload, policy: p, pods: [] });
  for (const pod of pods) {
    if (!isLive(pod) || isWavePod(pod) || isDaemonSetPod(pod)) continue;
    const r = resolveWorkload(pod, pod.metadata.namespace ?? "");
    if (!r.managed) continue;
    const ref = r.candidates.find((c) => policyByKey.has(workloadKey(c))) ?? r.candidates[0];
    if (!ref) continue;
    const key = workloadKey(ref);
    let a = acc.get(key);
    if (!a) acc.set(key, (a = { ref, policy: undefined, pods: [] }));
    a.pods.push(pod);
  }
  return acc;
}

type NodePrices = (n: Node) => { now: number | null; onDemand: number | null };

/** A node's hourly price, and its price had it been on-demand ("saved against on-demand"), per node once. */
function nodePricer(prices: PriceProvider): NodePrices {
  const memo = new Map<string, { now: number | null; onDemand: number | null }>();
  return (n) => {
    const name = n.metadata.name ?? "";
    let hit = memo.get(name);
    if (!hit) {
      // Priced as the overview prices the machine (figures/price.ts).
      const m = machineOf(undefined, n);
      const q = machinePrice(prices, m);
      const od = (m.capacityType ?? ON_DEMAND) === ON_DEMAND ? q : machinePrice(prices, m, "on-demand");
      hit = { now: q?.usdPerHour ?? null, onDemand: od?.usdPerHour ?? null };
      memo.set(name, hit);
    }
    return hit;
  };
}

/** The pod's share of its node, as the savings history counts it (scope "workloads"). */
const shareOfNode = (p: Pod, n: Node): number =>
  podShareOfNode(
    podRequests(p)[CPU] ?? 0,
    parseResources(n.status?.allocatable ?? n.status?.capacity)[CPU] ?? 0,
  );

/** What one page needs for each workload's row, built once per page. */
interface RowContext {
  input: SpotViewInput;
  pools: readonly NodePool[];
  nodesByName: ReadonlyMap<string, Node>;
  pdbs: readonly PodDisruptionBudget[];
  nodePrice: NodePrices;
  repairs: ReadonlyMap<string, Repairs>;
  rowsByWorkload: ReadonlyMap<string, SpotRepair[]>;
  late: ReadonlyMap<string, number>;
}

/** One workload's pods: where they run, what they cost and save against on-demand, and their notes. */
function podFigures(key: string, a: Acc, ctx: RowContext) {
  const f = {
    actual: { onDemand: 0, spot: 0, pending: 0 },
    cost: 0,
    saved: 0,
    onDemandNow: 0,
    pinned: 0,
    /** Pools whose spot-assigned pods are not on spot, and which offer no spot. */
    noSpot: new Set<string>(),
    perPod: { onDemand: [] as number[], spot: [] as number[] },
    poolNames: new Set<string>(),
    items: [] as SpotPodDto[],
  };
  for (const p of a.pods) {
    const node = ctx.nodesByName.get(p.spec.nodeName ?? "");
    const ct = node?.metadata.labels?.[CAPACITY_TYPE_LABEL] ?? null;
    const assigned = p.metadata.labels?.[ASSIGNMENT_LABEL] ?? null;
    const pool = poolOfPod(p, ctx.pools, ctx.nodesByName);
    if (pool !== undefined) f.poolNames.add(pool);
    if (pinsCapacityType(p)) f.pinned++;
    let podCost: number | null = null;
    const placed = podPlacement(p.spec.nodeName, node);
    if (placed === "pending") f.actual.pending++;
    else if (placed === SPOT) f.actual.spot++;
    else f.actual.onDemand++;
    if (placed !== SPOT && placed !== "pending" && assigned === SPOT) f.onDemandNow++;
    const pr = node && ct !== null ? ctx.nodePrice(node) : undefined;
    if (node && pr?.now != null) {
      const s = shareOfNode(p, node);
      podCost = pr.now * s;
      f.cost += podCost;
      (ct === SPOT ? f.perPod.spot : f.perPod.onDemand).push(podCost);
      if (ct === SPOT && pr.onDemand !== null) {
        f.saved += (pr.onDemand - pr.now) * s;
        f.perPod.onDemand.push(pr.onDemand * s);
      }
    }
    // Require's spot pods can only run in a pool that offers spot: one that waits (or runs
    // elsewhere) in a pool without spot cannot be placed. Its on-demand pods may use any pool.
    if (assigned === SPOT && ct !== SPOT && pool !== undefined) {
      const poolObj = ctx.pools.find((x) => x.metadata.name === pool);
      if (poolObj !== undefined && !poolOffersSpot(poolObj)) f.noSpot.add(pool);
    }
    if (f.items.length < MAX_PODS_LISTED && (a.policy !== undefined || ctx.input.expand === key))
      f.items.push({
        namespace: p.metadata.namespace ?? "",
        name: p.metadata.name ?? "",
        node: p.spec.nodeName ?? null,
        capacityType: ct,
        assigned,
        phase: p.status?.phase ?? null,
        note: p.metadata.annotations?.[NOTE_ANNOTATION] ?? null,
        costPerHour: podCost,
      });
  }
  return f;
}

/** The warnings a user would want before trusting a workload's numbers. */
function spotWarnings(
  key: string,
  policy: SpotPolicy | undefined,
  total: number,
  f: ReturnType<typeof podFigures>,
  conflicts: readonly PolicyConflict[],
): SpotWorkloadDto["warnings"] {
  const warnings: SpotWorkloadDto["warnings"] = [];
  const mine = conflicts.filter((c) => c.target === key);
  if (mine.length > 0)
    warnings.push({
      kind: "policy-conflict",
      message:
        `${mine.length + 1} SpotPolicies target this workload: ${mine[0]?.winner ?? ""}, created first, decides; ` +
        `${mine.map((c) => c.key).join(", ")} ${mine.length === 1 ? "is" : "are"} not in force (delete one)`,
    });
  if (policy && total === 0)
    warnings.push({
      kind: "workload-not-found",
      message: `no live pod of ${key} in the cluster: the workload may not exist (check the name and namespace)`,
    });
  if (policy?.strategy === "Require" && f.noSpot.size > 0)
    warnings.push({
      kind: "require-without-spot",
      message: `Require, but NodePool ${[...f.noSpot].sort().join(", ")} offers no spot: its spot pods cannot schedule`,
    });
  if (f.pinned > 0)
    warnings.push({
      kind: "pinned-by-workload",
      message: `${f.pinned} pod(s) pin ${CAPACITY_TYPE_LABEL} in their own spec: Wave leaves them as they are`,
    });
  if (f.onDemandNow > 0)
    warnings.push({
      kind: "fallback",
      message: `${f.onDemandNow} pod(s) assigned spot run on on-demand (Prefer's fallback: no spot capacity)`,
    });
  return warnings;
}

const avg = (xs: number[]): number | null =>
  xs.length === 0 ? null : xs.reduce((x, y) => x + y, 0) / xs.length;

/** One workload's row: its policy, target vs actual, cost and savings, pods, warnings and repair. */
function workloadRow(key: string, a: Acc, ctx: RowContext): SpotWorkloadDto {
  const f = podFigures(key, a, ctx);
  const total = a.pods.length;
  const policy = a.policy;
  const target =
    policy === undefined
      ? null
      : { onDemand: onDemandTarget(policy, total), spot: total - onDemandTarget(policy, total) };
  const workloadRepairs = ctx.repairs.get(key) ?? { total: 0, byAction: {}, recent: [] };
  return {
    workload: { ...a.ref },
    policy:
      policy === undefined
        ? null
        : {
            threshold: policy.threshold,
            strategy: policy.strategy,
            ...(policy.percentAboveBase === undefined ? {} : { percentAboveBase: policy.percentAboveBase }),
            ...(policy.repair === undefined ? {} : { repair: policy.repair }),
          },
    pods: total,
    target,
    actual: f.actual,
    // One count of fallbacks: the repair's Fallback actions over the range, the same rows the
    // self-heal column lists (a pod it moved may well be back on spot by now).
    fallbacks: workloadRepairs.byAction[FALLBACK_ACTION] ?? 0,
    onDemandNow: f.onDemandNow,
    costPerHour: f.cost,
    savedPerHour: f.saved,
    podCostPerHour: { onDemand: avg(f.perPod.onDemand), spot: avg(f.perPod.spot) },
    nodePools: [...f.poolNames].sort(),
    warnings: spotWarnings(key, policy, total, f, ctx.input.conflicts ?? []),
    items: f.items,
    repairs: workloadRepairs,
    progress:
      policy === undefined || target === null
        ? null
        : spotProgress({
            policy,
            actualOnDemand: f.actual.onDemand,
            targetOnDemand: target.onDemand,
            rows: ctx.rowsByWorkload.get(key) ?? [],
            since: ctx.input.policySince?.get(key) ?? ctx.input.from ?? 0,
            now: ctx.input.now,
            world: { pods: a.pods, nodesByName: ctx.nodesByName, pools: ctx.pools, pdbs: ctx.pdbs },
          }),
    lateAnswers: ctx.late.get(key) ?? 0,
  };
}

export function buildSpotView(input: SpotViewInput): SpotViewDto {
  const { state } = input;
  const nodes = state.nodes();
  const rowsByWorkload = new Map<string, SpotRepair[]>();
  for (const r of input.repairs ?? []) {
    let rows = rowsByWorkload.get(r.workload);
    if (!rows) rowsByWorkload.set(r.workload, (rows = []));
    rows.push(r);
  }
  const late = new Map<string, number>();
  for (const l of input.lateAnswers ?? []) late.set(l.workload, (late.get(l.workload) ?? 0) + l.count);
  const ctx: RowContext = {
    input,
    pools: state.nodePools(),
    nodesByName: new Map(nodes.map((n) => [n.metadata.name ?? "", n])),
    pdbs: state.podDisruptionBudgets?.() ?? [],
    nodePrice: nodePricer(clusterPrices(input.prices, state.nodeOverlays?.() ?? [])),
    repairs: repairsByWorkload(input.repairs ?? []),
    rowsByWorkload,
    late,
  };
  const totals = {
    pods: 0,
    onDemand: 0,
    spot: 0,
    savedPerHour: 0,
    fallbacks: 0,
    onDemandNow: 0,
    workloads: 0,
    repairs: 0,
    lateAnswers: [...late.values()].reduce((x, y) => x + y, 0),
  };
  const workloads: SpotWorkloadDto[] = [];
  for (const [key, a] of podsByWorkload(state.pods(), input.policies)) {
    const row = workloadRow(key, a, ctx);
    workloads.push(row);
    totals.repairs += row.repairs.total;
    // The totals are the managed workloads' (those with a policy): the others are listed for
    // reference but Wave does not place their pods.
    if (row.policy === null) continue;
    totals.workloads++;
    totals.pods += row.pods;
    totals.onDemand += row.actual.onDemand;
    totals.spot += row.actual.spot;
    totals.savedPerHour += row.savedPerHour;
    totals.fallbacks += row.fallbacks;
    totals.onDemandNow += row.onDemandNow;
  }
  // Workloads with a policy first, then by key.
  workloads.sort(
    (x, y) =>
      Number(y.policy !== null) - Number(x.policy !== null) ||
      workloadKey(x.workload).localeCompare(workloadKey(y.workload)),
  );
  return {
    clusterId: input.clusterId,
    at: input.now,
    from: input.from ?? input.now,
    to: input.to ?? input.now,
    workloads,
    totals,
  };
}
