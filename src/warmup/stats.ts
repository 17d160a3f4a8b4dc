// Warmup figures for the dashboard: counters folded from controller events by a pure reducer,
// plus gauges (warm nodes, their hourly cost) computed from current cluster state. Core keeps the
// events in its store and folds a window of them (stats-store.ts), so counters survive restarts.
import type { Node } from "../objects/kube.ts";
import { NODE_POOL_LABEL } from "../objects/karpenter.ts";
import type { PriceOf } from "./fit/limits.ts";
import { warmCost } from "./fit/limits.ts";
import { DO_NOT_DISRUPT_OWNER_ANNOTATION, DO_NOT_DISRUPT_OWNER_VALUE } from "../objects/wave.ts";
import type { MissReason } from "./miss-reason.ts";

export { missReasons, type MissReason } from "./miss-reason.ts";

export type WarmupEvent =
  | { type: "created"; pool: string; at: number; pod: string }
  /**
   * A pending pod of the pool placed on a node Wave's warmup made Karpenter launch, while it was
   * held warm. `pod` (namespace/name) is that pod, `seconds` its own start (pending → running;
   * absent when it did not start within the controller's wait), `since` when the warm time began.
   * `saved` is core's: what it saved against the pool's cold start, set once when stored.
   */
  | {
      type: "hit";
      pool: string;
      at: number;
      node: string;
      pod?: string;
      since?: number;
      seconds?: number;
      saved?: number;
    }
  /** `pod` names the warmup pod when it never got a node (two such misses may share an instant). */
  | {
      type: "miss";
      pool: string;
      at: number;
      node?: string;
      pod?: string;
      reason: MissReason;
      since?: number;
    }
  | { type: "prepull"; pool: string; at: number; node: string; image: string; outcome: "pulled" | "failed" };

export interface PoolCounters {
  created: number;
  hits: number;
  misses: number;
  imagesPulled: number;
  pullFailures: number;
  /** Σ of the hits' stored `saved` (time-saved.ts): the one time saved. */
  timeSavedSeconds: number;
}

export type WarmupCounters = Readonly<Record<string, PoolCounters>>;

const ZERO: PoolCounters = {
  created: 0,
  hits: 0,
  misses: 0,
  imagesPulled: 0,
  pullFailures: 0,
  timeSavedSeconds: 0,
};

export function reduceCounters(state: WarmupCounters, e: WarmupEvent): WarmupCounters {
  const c = { ...(state[e.pool] ?? ZERO) };
  switch (e.type) {
    case "created":
      c.created++;
      break;
    case "hit":
      c.hits++;
      c.timeSavedSeconds += e.saved ?? 0;
      break;
    case "miss":
      c.misses++;
      break;
    case "prepull":
      if (e.outcome === "pulled") c.imagesPulled++;
      else c.pullFailures++;
      break;
  }
  return { ...state, [e.pool]: c };
}

export interface PoolWarmupStats extends PoolCounters {
  pool: string;
  warmNodes: number;
  /** Undefined when a warm node's price is unknown. */
  warmCostPerHour: number | undefined;
  hitRate: number | undefined;
}

/** Nodes Wave is currently holding warm (its own do-not-disrupt annotation). */
export function warmNodesOf(nodes: readonly Node[]): Map<string, Node[]> {
  const out = new Map<string, Node[]>();
  for (const n of nodes) {
    if (n.metadata.annotations?.[DO_NOT_DISRUPT_OWNER_ANNOTATION] !== DO_NOT_DISRUPT_OWNER_VALUE) continue;
    const pool = n.metadata.labels?.[NODE_POOL_LABEL] ?? "";
    out.set(pool, [...(out.get(pool) ?? []), n]);
  }
  return out;
}

export function warmupStats(
  counters: WarmupCounters,
  nodes: readonly Node[],
  priceOf: PriceOf,
): PoolWarmupStats[] {
  const warm = warmNodesOf(nodes);
  const pools = new Set([...Object.keys(counters), ...warm.keys()]);
  return [...pools].sort().map((pool) => {
    const c = counters[pool] ?? ZERO;
    const nodesOfPool = warm.get(pool) ?? [];
    const resolved = c.hits + c.misses;
    return {
      pool,
      ...c,
      warmNodes: nodesOfPool.length,
      warmCostPerHour: warmCost(nodesOfPool, priceOf),
      hitRate: resolved === 0 ? undefined : c.hits / resolved,
    };
  });
}

/** The cluster-wide counts the dashboard's overview shows: the pools' sums. */
export interface WarmupTotals {
  hits: number;
  misses: number;
  /** Σ of the hits' stored `saved` (time-saved.ts). */
  timeSavedSeconds: number;
}

/** Hits, misses and time saved over every pool. */
export function warmupCounts(counters: WarmupCounters): WarmupTotals {
  const t = { hits: 0, misses: 0, timeSavedSeconds: 0 };
  for (const c of Object.values(counters)) {
    t.hits += c.hits;
    t.misses += c.misses;
    t.timeSavedSeconds += c.timeSavedSeconds;
  }
  return t;
}
