// The Spot placement page (pure): per workload the policy, target vs actual on-demand/spot split,
// its pods with capacity type and node, what spot saves against all-on-demand, and warnings a
// user would want before trusting the numbers. Reads core's state as the agent forwards it, the
// stored policies, and the repair's actions and the webhook's late answers as stored from the
// Events the agent forwards (the webhook's Prometheus counters live on its /metrics, not here).
import type {
  SpotPodDto,
  SpotProgressDto,
  SpotRepairDto,
  SpotViewDto,
  SpotWorkloadDto,
} from "../dashboard/dto.ts";
import type { LateAnswerTotal, SpotRepair } from "../core/store/store.ts";
import { CPU, parseResources, podRequests } from "../karpenter/resources.ts";
import { CAPACITY_TYPE_LABEL, type NodePool } from "../objects/karpenter.ts";
import type { Node, Pod } from "../objects/kube.ts";
import type { PriceProvider } from "../pricing/types.ts";
import { machinePrice } from "../dashboard/figures/price.ts";
import { machineOf } from "../dashboard/machines.ts";
import { podShareOfNode } from "../dashboard/figures/savings.ts";
import { poolOfPod } from "../karpenter/pool-of-pod.ts";
import { isDaemonSetPod } from "../karpenter/room.ts";
import { podPlacement } from "../karpenter/labels.ts";
import { ASSIGNMENT_LABEL, NOTE_ANNOTATION, isWavePod } from "../objects/wave.ts";
import { ON_DEMAND, SPOT } from "../webhook/constants.ts";
import { onDemandTarget } from "../policy/on-demand-target.ts";
import { workloadKey, type SpotPolicy, type WorkloadRef } from "../policy/spot.ts";
import { resolveWorkload } from "../webhook/workload.ts";
import { DEFAULT_REPAIR_TIMING } from "../webhook/repair-plan.ts";

/** The repair's action (its Event's `action`) when it moved a pod to Prefer's on-demand fallback. */
export const FALLBACK_ACTION = "Fallback";

/** Most pods listed per workload (counts always cover every pod). */
export const MAX_PODS_LISTED = 500;
/** Newest repairs listed per workload (the counts cover the whole range). */
export const MAX_REPAIRS_LISTED = 20;

export interface SpotViewInput {
  clusterId: string;
  state: { nodePools(): readonly NodePool[]; nodes(): readonly Node[]; pods(): readonly Pod[] };
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
}

type Repairs = SpotWorkloadDto["repairs"];

/** Per workload key: how many repairs of each action, and the newest few. */
export function repairsByWorkload(rows: readonly SpotRepair[]): Map<string, Repairs> {
  const out = new Map<string, Repairs>();
  for (const r of rows) {
    let w = out.get(r.workload);
    if (!w) out.set(r.workload, (w = { total: 0, byAction: {}, recent: [] }));
    w.total++;
    const action = r.action || "other";
    w.byAction[action] = (w.byAction[action] ?? 0) + 1;
    const dto: SpotRepairDto = { at: r.at, action: r.action, pod: r.pod, type: r.type, message: r.message };
    w.recent.unshift(dto);
    if (w.recent.length > MAX_REPAIRS_LISTED) w.recent.pop();
  }
  return out;
}

/**
 * The repair's progress on a workload with a policy (issue 28): what is left to move, the
 * evictions done since the policy last changed, and when it may evict next — the last action plus
 * the repair's cooldown, or the retry a refused eviction announced; before any action, the policy
 * change plus the repair's grace. Pure; `rows` are the workload's repair rows, oldest first.
 */
export function spotProgress(o: {
  policy: SpotPolicy;
  actualOnDemand: number;
  targetOnDemand: number;
  rows: readonly SpotRepair[];
  since: number;
  now: number;
}): SpotProgressDto {
  const mode = o.policy.repair === false ? "off" : o.policy.repair === "dry-run" ? "dry-run" : "on";
  const mine = o.rows.filter((r) => r.at >= o.since);
  const toMove = Math.abs(o.actualOnDemand - o.targetOnDemand);
  const done = mine.filter((r) => r.action === "Evict").length;
  const planned = mine.filter((r) => r.action === "PlanEvict").length;
  let nextAt: number | null = null;
  if (mode === "on" && toMove > 0) {
    const last = mine.findLast(
      (r) => r.action === "Evict" || r.action === "EvictBlocked" || r.action === "Fallback",
    );
    const retry =
      last?.action === "EvictBlocked" ? /will retry in (\d+) s/.exec(last.message)?.[1] : undefined;
    const after = last
      ? last.at + (retry !== undefined ? Number(retry) * 1000 : DEFAULT_REPAIR_TIMING.cooldownMs)
      : o.since + DEFAULT_REPAIR_TIMING.graceMs;
    nextAt = Math.max(o.now, after);
  }
  return { mode, toMove, done, planned, nextAt };
}

const isLive = (p: Pod): boolean =>
  p.metadata.deletionTimestamp === undefined &&
  p.status?.phase !== "Succeeded" &&
  p.status?.phase !== "Failed";

/** Whether the pod's own spec pins karpenter.sh/capacity-type (not through Wave's assignment). */
export function pinsCapacityType(p: Pod): boolean {
  if (p.metadata.labels?.[ASSIGNMENT_LABEL] !== undefined) return false;
  if (p.spec.nodeSelector?.[CAPACITY_TYPE_LABEL] !== undefined) return true;
  const terms =
    p.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  return terms.some((t) => (t.matchExpressions ?? []).some((e) => e.key === CAPACITY_TYPE_LABEL));
}

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

export function buildSpotView(input: SpotViewInput): SpotViewDto {
  const { state, prices } = input;
  const pools = state.nodePools();
  const nodes = state.nodes();
  const nodesByName = new Map(nodes.map((n) => [n.metadata.name ?? "", n]));
  const policyByKey = new Map(input.policies.map((p) => [workloadKey(p.workload), p]));
  const acc = new Map<string, Acc>();
  for (const p of input.policies) acc.set(workloadKey(p.workload), { ref: p.workload, policy: p, pods: [] });

  for (const pod of state.pods()) {
    if (!isLive(pod) || isWavePod(pod) || isDaemonSetPod(pod)) continue;
    const r = resolveWorkload(pod, pod.metadata.namespace ?? "");
    if (!r.managed) continue;
    // The webhook applies the first candidate with a policy (a Deployment before its ReplicaSet).
    const ref = r.candidates.find((c) => policyByKey.has(workloadKey(c))) ?? r.candidates[0];
    if (!ref) continue;
    const key = workloadKey(ref);
    let a = acc.get(key);
    if (!a) {
      a = { ref, policy: undefined, pods: [] };
      acc.set(key, a);
    }
    a.pods.push(pod);
  }

  // A node's hourly price, and its price had it been on-demand (for "saved against on-demand").
  const priceMemo = new Map<string, { now: number | null; onDemand: number | null; source: string }>();
  const nodePrice = (n: Node): { now: number | null; onDemand: number | null } => {
    const name = n.metadata.name ?? "";
    let hit = priceMemo.get(name);
    if (!hit) {
      // Priced as the overview prices the machine (figures/price.ts).
      const m = machineOf(undefined, n);
      const q = machinePrice(prices, m);
      const od = (m.capacityType ?? ON_DEMAND) === ON_DEMAND ? q : machinePrice(prices, m, "on-demand");
      hit = { now: q?.usdPerHour ?? null, onDemand: od?.usdPerHour ?? null, source: q?.source ?? "unknown" };
      priceMemo.set(name, hit);
    }
    return hit;
  };
  /** The pod's share of its node, as the savings history counts it (scope "workloads"). */
  const share = (p: Pod, n: Node): number =>
    podShareOfNode(
      podRequests(p)[CPU] ?? 0,
      parseResources(n.status?.allocatable ?? n.status?.capacity)[CPU] ?? 0,
    );

  const repairs = repairsByWorkload(input.repairs ?? []);
  const rowsByWorkload = new Map<string, SpotRepair[]>();
  for (const r of input.repairs ?? []) {
    let rows = rowsByWorkload.get(r.workload);
    if (!rows) rowsByWorkload.set(r.workload, (rows = []));
    rows.push(r);
  }
  const workloads: SpotWorkloadDto[] = [];
  const late = new Map<string, number>();
  for (const l of input.lateAnswers ?? []) late.set(l.workload, (late.get(l.workload) ?? 0) + l.count);
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
  for (const [key, a] of acc) {
    const actual = { onDemand: 0, spot: 0, pending: 0 };
    let cost = 0;
    let saved = 0;
    let onDemandNow = 0;
    let pinned = 0;
    /** Pools whose spot-assigned pods are not on spot, and which offer no spot. */
    const noSpot = new Set<string>();
    const perPod: Record<"onDemand" | "spot", number[]> = { onDemand: [], spot: [] };
    const poolNames = new Set<string>();
    const items: SpotPodDto[] = [];
    for (const p of a.pods) {
      const node = nodesByName.get(p.spec.nodeName ?? "");
      const ct = node?.metadata.labels?.[CAPACITY_TYPE_LABEL] ?? null;
      const assigned = p.metadata.labels?.[ASSIGNMENT_LABEL] ?? null;
      const pool = poolOfPod(p, pools, nodesByName);
      if (pool !== undefined) poolNames.add(pool);
      if (pinsCapacityType(p)) pinned++;
      let podCost: number | null = null;
      const placed = podPlacement(p.spec.nodeName, node);
      if (placed === "pending") actual.pending++;
      else if (placed === SPOT) actual.spot++;
      else actual.onDemand++;
      if (placed !== SPOT && placed !== "pending" && assigned === SPOT) onDemandNow++;
      if (node && ct !== null) {
        const pr = nodePrice(node);
        const s = share(p, node);
        if (pr.now !== null) {
          podCost = pr.now * s;
          cost += podCost;
          (ct === SPOT ? perPod.spot : perPod.onDemand).push(podCost);
          if (ct === SPOT && pr.onDemand !== null) {
            saved += (pr.onDemand - pr.now) * s;
            perPod.onDemand.push(pr.onDemand * s);
          }
        }
      }
      // Require's spot pods can only run in a pool that offers spot: one that waits (or runs
      // elsewhere) in a pool without spot cannot be placed. Its on-demand pods may use any pool.
      if (assigned === SPOT && ct !== SPOT && pool !== undefined) {
        const poolObj = pools.find((x) => x.metadata.name === pool);
        if (poolObj !== undefined && !poolOffersSpot(poolObj)) noSpot.add(pool);
      }
      if (items.length < MAX_PODS_LISTED && (a.policy !== undefined || input.expand === key))
        items.push({
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
    const total = a.pods.length;
    const policy = a.policy;
    const target =
      policy === undefined
        ? null
        : { onDemand: onDemandTarget(policy, total), spot: total - onDemandTarget(policy, total) };
    const warnings: SpotWorkloadDto["warnings"] = [];
    if (policy && total === 0)
      warnings.push({
        kind: "workload-not-found",
        message: `no live pod of ${key} in the cluster: the workload may not exist (check the name and namespace)`,
      });
    if (policy?.strategy === "Require" && noSpot.size > 0)
      warnings.push({
        kind: "require-without-spot",
        message: `Require, but NodePool ${[...noSpot].sort().join(", ")} offers no spot: its spot pods cannot schedule`,
      });
    if (pinned > 0)
      warnings.push({
        kind: "pinned-by-workload",
        message: `${pinned} pod(s) pin ${CAPACITY_TYPE_LABEL} in their own spec: Wave leaves them as they are`,
      });
    if (onDemandNow > 0)
      warnings.push({
        kind: "fallback",
        message: `${onDemandNow} pod(s) assigned spot run on on-demand (Prefer's fallback: no spot capacity)`,
      });
    const workloadRepairs = repairs.get(key) ?? { total: 0, byAction: {}, recent: [] };
    // One count of fallbacks: the repair's Fallback actions over the range, the same rows the
    // self-heal column lists (a pod it moved may well be back on spot by now).
    const fallbacks = workloadRepairs.byAction[FALLBACK_ACTION] ?? 0;
    const avg = (xs: number[]): number | null =>
      xs.length === 0 ? null : xs.reduce((x, y) => x + y, 0) / xs.length;
    workloads.push({
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
      actual,
      fallbacks,
      onDemandNow,
      costPerHour: cost,
      savedPerHour: saved,
      podCostPerHour: { onDemand: avg(perPod.onDemand), spot: avg(perPod.spot) },
      nodePools: [...poolNames].sort(),
      warnings,
      items,
      repairs: workloadRepairs,
      progress:
        policy === undefined || target === null
          ? null
          : spotProgress({
              policy,
              actualOnDemand: actual.onDemand,
              targetOnDemand: target.onDemand,
              rows: rowsByWorkload.get(key) ?? [],
              since: input.policySince?.get(key) ?? input.from ?? 0,
              now: input.now,
            }),
      lateAnswers: late.get(key) ?? 0,
    });
    totals.repairs += workloadRepairs.total;
    // The totals are the managed workloads' (those with a policy): the others are listed for
    // reference but Wave does not place their pods.
    if (policy === undefined) continue;
    totals.workloads++;
    totals.pods += total;
    totals.onDemand += actual.onDemand;
    totals.spot += actual.spot;
    totals.savedPerHour += saved;
    totals.fallbacks += fallbacks;
    totals.onDemandNow += onDemandNow;
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
