// Realized savings (B6): what capacity cost as it ran against the same capacity all on-demand,
// per NodePool and per workload, accumulated over recorded history rather than "now" only.
//
// - Rates (pure over state + prices): a machine counts when both its own price and the
//   on-demand price of the same instance type and place are known (like for like, as the
//   overview's spotSavingsPerHour). A workload is charged the share of each node its pods
//   request: pod CPU request / node allocatable CPU (capped at 1), so the node's idle part stays
//   with the pool, not with a workload.
// - Rows: each history step turns the rates into dollars over that step (rate × step / 1 h);
//   the store keeps them, and any range is the sum of its buckets, so $ saved over a week is
//   exactly the sum of the minutes recorded in it (gaps, when nothing was recorded, add nothing).
import type { SavingsRow, SavingsTotal } from "../../core/store/store.ts";
import { CPU } from "../../karpenter/resources.ts";
import type { PriceProvider } from "../../pricing/types.ts";
import type { ClusterState } from "../../state/cluster.ts";
import { resolveWorkload } from "../../webhook/workload.ts";
import { machineIndex } from "../machine-index.ts";
import { machinePrice } from "./price.ts";

const HOUR = 3_600_000;

export interface CostPair {
  /** $/h as the capacity runs (its own capacity type's price). */
  actualPerHour: number;
  /** $/h of the same capacity on-demand. */
  onDemandPerHour: number;
}

export interface WorkloadRate extends CostPair {
  namespace: string;
  kind: string;
  name: string;
  /** Pods counted (bound, non-terminal, on a priced node). */
  pods: number;
}

export interface SavingsRates {
  pools: Map<string, CostPair>;
  /** Keyed namespace/Kind/name (workloadName). */
  workloads: Map<string, WorkloadRate>;
}

export const workloadName = (w: { namespace: string; kind: string; name: string }): string =>
  `${w.namespace}/${w.kind}/${w.name}`;

/**
 * A pod's share of its node, which its workload's savings (scope "workloads") are counted by: its
 * CPU request over the node's allocatable CPU, at most 1. The Spot page and the savings history
 * both use it, so a workload's $/h is the same on both.
 */
export function podShareOfNode(requestedCpu: number, allocatableCpu: number): number {
  return allocatableCpu > 0 ? Math.min(1, requestedCpu / allocatableCpu) : 0;
}

/** The current savings rates of one cluster. Pure over the state's machine index and prices. */
export function savingsRates(state: ClusterState, prices: PriceProvider): SavingsRates {
  const pools = new Map<string, CostPair>();
  const workloads = new Map<string, WorkloadRate>();
  for (const { machine: m } of machineIndex(state).rows()) {
    if (!m.instanceType) continue;
    const ct = m.capacityType ?? "on-demand";
    const own = machinePrice(prices, m);
    const od = ct === "on-demand" ? own : machinePrice(prices, m, "on-demand");
    if (!own || !od) continue;
    const p = pools.get(m.nodePool) ?? { actualPerHour: 0, onDemandPerHour: 0 };
    p.actualPerHour += own.usdPerHour;
    p.onDemandPerHour += od.usdPerHour;
    pools.set(m.nodePool, p);
    if (m.node === undefined) continue;
    const allocCpu = m.allocatable[CPU] ?? 0;
    if (allocCpu <= 0) continue;
    for (const pod of state.podsOnNode(m.node)) {
      const ns = pod.metadata.namespace ?? "default";
      const owner = resolveWorkload(pod, ns);
      if (!owner.managed) continue;
      // The Deployment when the ReplicaSet is one of its revisions, else the controller itself.
      const ref = owner.candidates[0];
      if (!ref) continue;
      const cpu = state.podRequests(ns, pod.metadata.name ?? "")?.[CPU] ?? 0;
      const share = podShareOfNode(cpu, allocCpu);
      const key = workloadName(ref);
      let w = workloads.get(key);
      if (!w) {
        w = {
          namespace: ref.namespace,
          kind: ref.kind,
          name: ref.name,
          pods: 0,
          actualPerHour: 0,
          onDemandPerHour: 0,
        };
        workloads.set(key, w);
      }
      w.pods++;
      w.actualPerHour += share * own.usdPerHour;
      w.onDemandPerHour += share * od.usdPerHour;
    }
  }
  return { pools, workloads };
}

export interface SavingsRowOptions {
  clusterId: string;
  /** Bucket start (aligned to stepMs). */
  ts: number;
  stepMs: number;
  /**
   * Most workloads recorded per bucket, those saving most first (default 500): a cluster with
   * thousands of small workloads keeps its history bounded; pools are always all recorded.
   */
  maxWorkloads?: number;
}

/** One history bucket of savings rows: each rate × the bucket's length. */
export function savingsRows(rates: SavingsRates, o: SavingsRowOptions): SavingsRow[] {
  const hours = o.stepMs / HOUR;
  const row = (scope: "pool" | "workload", name: string, c: CostPair): SavingsRow => ({
    clusterId: o.clusterId,
    scope,
    name,
    ts: o.ts,
    stepMs: o.stepMs,
    actualUsd: c.actualPerHour * hours,
    onDemandUsd: c.onDemandPerHour * hours,
  });
  const rows = [...rates.pools].map(([name, c]) => row("pool", name, c));
  const workloads = [...rates.workloads]
    .filter(([, w]) => w.onDemandPerHour > w.actualPerHour)
    .sort(([ka, a], [kb, b]) => saved(b) - saved(a) || ka.localeCompare(kb))
    .slice(0, o.maxWorkloads ?? 500);
  for (const [name, w] of workloads) rows.push(row("workload", name, w));
  return rows;
}

const saved = (c: CostPair): number => c.onDemandPerHour - c.actualPerHour;

export interface SavingsLine {
  name: string;
  actualUsd: number;
  onDemandUsd: number;
  savedUsd: number;
  /** savedUsd / onDemandUsd; 0 when nothing was recorded. */
  savedShare: number;
}

export interface SavingsReport {
  from: number;
  to: number;
  total: SavingsLine;
  pools: SavingsLine[];
  workloads: SavingsLine[];
}

function line(name: string, actualUsd: number, onDemandUsd: number): SavingsLine {
  const savedUsd = onDemandUsd - actualUsd;
  return { name, actualUsd, onDemandUsd, savedUsd, savedShare: onDemandUsd > 0 ? savedUsd / onDemandUsd : 0 };
}

/** The store's sums over [from, to) as the API's report: biggest savings first; the total is the pools'. */
export function savingsReport(totals: readonly SavingsTotal[], from: number, to: number): SavingsReport {
  const pools = totals.filter((t) => t.scope === "pool").map((t) => line(t.name, t.actualUsd, t.onDemandUsd));
  const workloads = totals
    .filter((t) => t.scope === "workload")
    .map((t) => line(t.name, t.actualUsd, t.onDemandUsd));
  const bySaved = (a: SavingsLine, b: SavingsLine): number =>
    b.savedUsd - a.savedUsd || a.name.localeCompare(b.name);
  const actual = pools.reduce((s, p) => s + p.actualUsd, 0);
  const od = pools.reduce((s, p) => s + p.onDemandUsd, 0);
  return {
    from,
    to,
    total: line("total", actual, od),
    pools: pools.sort(bySaved),
    workloads: workloads.sort(bySaved),
  };
}
