// Warm cost (issue 38): what Wave's warm capacity cost over a range, per pool — each warm node
// priced from when Wave's warmup caused it (its launch, never before the warmup began: `since`)
// to its first real pod, its TTL expiry or its release; never its earlier life. Live warm nodes
// count up to now. The one computation of the figure: the Warmup page, the Overview and
// /metrics (through core's warmup window, src/core/warmup/stats-store.ts) all call it.
import type { LifecycleEvent, StoredWarmupEvent } from "../core/store/store.ts";
import { NODE_POOL_LABEL, type CapacityType } from "../objects/karpenter.ts";
import type { Node } from "../objects/kube.ts";
import type { PriceProvider } from "../pricing/types.ts";
import { machinePrice } from "../dashboard/figures/price.ts";
import type { PriceOf } from "../warmup/fit/limits.ts";
import {
  parseTime,
  CREATED_AT_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_VALUE,
} from "../objects/wave.ts";

export const isWaveWarm = (o: { metadata: { annotations?: Record<string, string> } }): boolean =>
  o.metadata.annotations?.[DO_NOT_DISRUPT_OWNER_ANNOTATION] === DO_NOT_DISRUPT_OWNER_VALUE;

/** Most warmup events (and cold starts) one read takes: a week of a busy cluster's. */
export const WARM_EVENTS_LIMIT = 100_000;
/** How far before a range its launches are read: a warm node released in it may have launched before. */
export const LAUNCH_LOOKBACK_MS = 24 * 3_600_000;

export type Launch = { at: number; instanceType?: string; capacityType?: string; zone?: string };

/**
 * Each node's first Launched/Registered lifecycle row: when (and as what) it was launched. A
 * claim's Launched row names no node (Karpenter sets the node name at registration), so a node's
 * rows are its claim's: found through any row of that claim that names the node.
 */
export function launches(lifecycle: readonly LifecycleEvent[]): Map<string, Launch> {
  const claim = (l: LifecycleEvent): string => `${l.nodeClaimUid}\u0000${l.nodeClaim}`;
  const nodeOfClaim = new Map<string, string>();
  for (const l of lifecycle) if (l.nodeName !== undefined) nodeOfClaim.set(claim(l), l.nodeName);
  const out = new Map<string, Launch>();
  for (const l of lifecycle) {
    const nodeName = l.nodeName ?? nodeOfClaim.get(claim(l));
    if (nodeName === undefined || (l.phase !== "Launched" && l.phase !== "Registered")) continue;
    const cur = out.get(nodeName);
    if (cur === undefined || l.at < cur.at)
      out.set(nodeName, {
        at: l.at,
        ...(l.instanceType ? { instanceType: l.instanceType } : {}),
        ...(l.capacityType ? { capacityType: l.capacityType } : {}),
        ...(l.zone ? { zone: l.zone } : {}),
      });
  }
  return out;
}

export interface WarmCostInput {
  /** The controller's events in [from, to) (any pools; others than hits and misses are skipped). */
  events: readonly StoredWarmupEvent[];
  /** Each node's launch (`launches` of the lifecycle rows of [from − a day, to)). */
  launchedAt: ReadonlyMap<string, Launch>;
  /** The cluster's nodes now: Wave's live warm nodes, and the prices of nodes still there. */
  nodes: readonly Node[];
  priceOf: PriceOf;
  prices: PriceProvider;
  now: number;
  from: number;
  to: number;
}

/** Warm cost in dollars over [from, to), per pool (pools without a warm node are absent). */
export function warmCostByPool(input: WarmCostInput): Map<string, number> {
  const { from, to, now, launchedAt } = input;
  // Per pool, each warm node's span; a later event of one node replaces an earlier one's.
  const spans = new Map<string, Map<string, { start: number; end: number }>>();
  const set = (pool: string, node: string, span: { start: number; end: number }): void => {
    const m = spans.get(pool) ?? new Map<string, { start: number; end: number }>();
    m.set(node, span);
    spans.set(pool, m);
  };
  const startOf = (node: string, since: number | undefined): number | undefined => {
    const launched = launchedAt.get(node)?.at;
    if (launched === undefined) return since;
    return since === undefined ? launched : Math.max(launched, since);
  };
  for (const e of input.events) {
    if ((e.type !== "hit" && e.type !== "miss") || e.node === undefined) continue;
    const start = startOf(e.node, e.since);
    if (start !== undefined) set(e.pool, e.node, { start, end: e.at });
  }
  for (const n of input.nodes) {
    if (!isWaveWarm(n)) continue;
    const nodeName = n.metadata.name ?? "";
    const since = parseTime(n.metadata.annotations?.[CREATED_AT_ANNOTATION]);
    const start = startOf(nodeName, since) ?? parseTime(n.metadata.creationTimestamp);
    if (start !== undefined) set(n.metadata.labels?.[NODE_POOL_LABEL] ?? "", nodeName, { start, end: now });
  }
  const nodesByName = new Map(input.nodes.map((n) => [n.metadata.name ?? "", n]));
  const out = new Map<string, number>();
  for (const [pool, nodes] of spans) {
    let usd = 0;
    for (const [nodeName, span] of nodes) {
      const a = Math.max(span.start, from);
      const b = Math.min(span.end, to);
      if (b <= a) continue;
      usd += ((warmNodePrice(nodeName, nodesByName, input) ?? 0) * (b - a)) / 3_600_000;
    }
    out.set(pool, usd);
  }
  return out;
}

/** A warm node's hourly price: the live node's, else what its launch row says it was. */
function warmNodePrice(
  nodeName: string,
  nodesByName: ReadonlyMap<string, Node>,
  input: WarmCostInput,
): number | undefined {
  const live = nodesByName.get(nodeName);
  if (live) return input.priceOf(live, "on-demand");
  const l = input.launchedAt.get(nodeName);
  return machinePrice(input.prices, {
    instanceType: l?.instanceType,
    capacityType: l?.capacityType as CapacityType | undefined,
    zone: l?.zone,
  })?.usdPerHour;
}
