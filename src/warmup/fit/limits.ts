// Admission of a new warmup once detection says one is needed (pure): policy switch, warm node
// cap, one launch in flight at a time, cooldown, the NodePool's spec.limits and the cost cap.
import type { Node } from "../../objects/kube.ts";
import {
  CAPACITY_TYPE_LABEL,
  INSTANCE_TYPE_LABEL,
  TOPOLOGY_ZONE_LABEL,
  type CapacityType,
  type NodePool,
} from "../../objects/karpenter.ts";
import type { WarmupPolicy } from "../../policy/warmup.ts";
import { parseResources, type Resources } from "../../karpenter/resources.ts";
import { regionOf, zoneOf } from "../../karpenter/labels.ts";
import { backoffCooldownMs, unusedStreak } from "../backoff.ts";

/** Where a node could land, as far as its price depends on it. */
export interface Place {
  zone?: string | undefined;
  region?: string | undefined;
}

/**
 * Hourly price of a node, or of an instance type in a capacity type launched in one of `places`
 * (the cheapest; none given: wherever the cluster runs); undefined when unknown.
 */
export type PriceOf = (
  what: Node | string,
  capacityType: CapacityType,
  places?: readonly Place[],
  /** The offering's labels (a pool node's of that type, `likelyOffering`): its NodeOverlay price. */
  labels?: Readonly<Record<string, string>>,
) => number | undefined;

export type Refusal =
  "disabled" | "max-warm-nodes" | "in-flight" | "cooldown" | "pool-limit" | "cost-cap" | "price-unknown";

export type Admission = { ok: true } | { ok: false; reason: Refusal; detail: string; retryAfterMs?: number };

export interface AdmissionInput {
  policy: WarmupPolicy;
  now: number;
  pool: NodePool;
  /** Warmup pods of the pool, pending or bound. */
  warmups: number;
  /** Of those, the ones still waiting for a node. */
  pendingWarmups: number;
  lastWarmupAt: number | undefined;
  /** What a new node would add to the pool's usage (see newNodeEstimate). */
  estimate: Resources;
  /** Current hourly price of the pool's warm nodes; undefined if any price is unknown. */
  warmCostPerHour: number | undefined;
  /** Hourly price of the node a warmup would launch; undefined when it cannot be estimated. */
  newNodeCostPerHour: number | undefined;
}

/** Limit headroom per limited resource: spec.limits − status.resources. */
export function limitHeadroom(pool: NodePool): Resources {
  const limits = parseResources(pool.spec.limits);
  const used = parseResources(pool.status?.resources);
  const out: Resources = {};
  for (const [k, v] of Object.entries(limits)) out[k] = v - (used[k] ?? 0);
  return out;
}

/**
 * What a new node would count against the limits: the capacity of a typical node of the pool
 * (Karpenter counts whole-node capacity), or the largest pod's requests when the pool has none.
 */
export function newNodeEstimate(poolNodes: readonly Node[], largest: Resources): Resources {
  const sizes = poolNodes.map((n) => parseResources(n.status?.capacity ?? n.status?.allocatable));
  if (sizes.length === 0) return largest;
  const out: Resources = {};
  for (const r of new Set(sizes.flatMap((s) => Object.keys(s)))) {
    const vals = sizes.map((s) => s[r] ?? 0).sort((a, b) => a - b);
    out[r] = vals[Math.floor((vals.length - 1) / 2)] ?? 0;
  }
  return { ...out, ...Object.fromEntries(Object.entries(largest).filter(([k, v]) => v > (out[k] ?? 0))) };
}

/**
 * Where a new node of the pool may land: the zones its requirements allow, else the places of
 * its nodes (empty when it has neither: the price lookup then uses the cluster's places).
 */
export function poolPlaces(pool: NodePool, poolNodes: readonly Node[]): Place[] {
  const zones = (pool.spec.template.spec.requirements ?? []).find(
    (r) => r.key === TOPOLOGY_ZONE_LABEL && r.operator === "In",
  )?.values;
  if (zones && zones.length > 0) return [...new Set(zones)].sort().map((zone) => ({ zone }));
  const out = new Map<string, Place>();
  for (const n of poolNodes) {
    const zone = zoneOf(n);
    const region = regionOf(n);
    if (zone !== undefined || region !== undefined)
      out.set(`${zone ?? ""}\u0000${region ?? ""}`, { zone, region });
  }
  return [...out.values()];
}

/** The instance type, capacity type and places of the node a warmup would most likely launch. */
export function likelyOffering(
  pool: NodePool,
  poolNodes: readonly Node[],
): {
  instanceType?: string;
  capacityType: CapacityType;
  places: Place[];
  /** A pool node's of that type with the capacity type it would launch as (what NodeOverlays match). */
  labels?: Readonly<Record<string, string>>;
} {
  const counts = new Map<string, number>();
  for (const n of poolNodes) {
    const t = n.metadata.labels?.[INSTANCE_TYPE_LABEL];
    if (t !== undefined) counts.set(t, (counts.get(t) ?? 0) + 1);
  }
  const instanceType = [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0];
  const ct = (pool.spec.template.spec.requirements ?? []).find(
    (r) => r.key === CAPACITY_TYPE_LABEL && r.operator === "In",
  );
  // Karpenter prefers spot when a pool allows it; without a requirement v1 defaults to on-demand.
  const allowed = ct?.values ?? ["on-demand"];
  const capacityType: CapacityType = allowed.includes("spot")
    ? "spot"
    : allowed.includes("on-demand")
      ? "on-demand"
      : "reserved";
  const places = poolPlaces(pool, poolNodes);
  if (instanceType === undefined) return { capacityType, places };
  const like = poolNodes.find((n) => n.metadata.labels?.[INSTANCE_TYPE_LABEL] === instanceType)?.metadata
    .labels;
  const labels = like && { ...like, [CAPACITY_TYPE_LABEL]: capacityType };
  return labels ? { instanceType, capacityType, places, labels } : { instanceType, capacityType, places };
}

/** Sum of warm node prices, undefined if any is unknown. */
export function warmCost(nodes: readonly Node[], priceOf: PriceOf): number | undefined {
  let sum = 0;
  for (const n of nodes) {
    const ct = (n.metadata.labels?.[CAPACITY_TYPE_LABEL] ?? "on-demand") as CapacityType;
    const p = priceOf(n, ct);
    if (p === undefined) return undefined;
    sum += p;
  }
  return sum;
}

export function admit(a: AdmissionInput): Admission {
  const { policy } = a;
  if (!policy.enabled) return { ok: false, reason: "disabled", detail: "warmup is disabled for this pool" };
  if (a.warmups >= policy.maxWarmNodes) {
    return {
      ok: false,
      reason: "max-warm-nodes",
      detail: `${a.warmups} of ${policy.maxWarmNodes} warm nodes in use`,
    };
  }
  if (a.pendingWarmups > 0) {
    return {
      ok: false,
      reason: "in-flight",
      detail: `${a.pendingWarmups} warmup pod(s) still waiting for a node`,
    };
  }
  if (a.lastWarmupAt !== undefined) {
    // Unused warm nodes in a row back the pool off (backoff.ts): Karpenter would consolidate a
    // node nobody uses, so launching the next one at once only makes the two fight.
    const streak = unusedStreak(a.pool);
    const until = a.lastWarmupAt + backoffCooldownMs(policy, streak);
    if (a.now < until) {
      return {
        ok: false,
        reason: "cooldown",
        detail:
          streak > 0
            ? `backing off after ${String(streak)} unused warm node${streak > 1 ? "s" : ""} in a row ` +
              `(cooldown ${String(Math.round(backoffCooldownMs(policy, streak) / 60_000))} min)`
            : "cooling down after the last warmup",
        retryAfterMs: until - a.now,
      };
    }
  }
  const headroom = limitHeadroom(a.pool);
  for (const [r, left] of Object.entries(headroom)) {
    const need = a.estimate[r] ?? 0;
    if (need > 0 && left < need) {
      return {
        ok: false,
        reason: "pool-limit",
        detail: `spec.limits.${r}: ${left} left, a node needs ${need}`,
      };
    }
  }
  const cap = policy.maxCostPerHour;
  if (cap !== null) {
    if (a.warmCostPerHour === undefined) {
      return { ok: false, reason: "price-unknown", detail: "price of a warm node is unknown" };
    }
    // Without an estimate (empty pool) the cap is enforced on what is already warm.
    const next = a.warmCostPerHour + (a.newNodeCostPerHour ?? 0);
    if (next > cap || a.warmCostPerHour >= cap) {
      return {
        ok: false,
        reason: "cost-cap",
        detail: `warm capacity would cost ${next.toFixed(4)}/h, cap ${cap}/h`,
      };
    }
  }
  return { ok: true };
}
