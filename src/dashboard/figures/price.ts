// The one price of a machine: every figure that prices a node, a NodeClaim or a node a warmup
// would launch asks here, so a node costs the same on every page, in /metrics and in the history.
import type { Node } from "../../objects/kube.ts";
import type { CapacityType, NodeClaim } from "../../objects/karpenter.ts";
import { capacityTypeOf, instanceTypeOf, regionOf, zoneOf } from "../../karpenter/labels.ts";
import { providerIDOf } from "../../karpenter/node.ts";
import { zoneOfProviderID, type PriceProvider, type PriceQuote } from "../../pricing/types.ts";

/** Where a machine runs, as far as its price depends on it. */
export interface Placement {
  zone?: string | undefined;
  region?: string | undefined;
}

/** What a price lookup needs to know of a machine (a Machine row has all of it). */
export interface Priced extends Placement {
  instanceType?: string | undefined;
  capacityType?: CapacityType | undefined;
}

/** A Node's or NodeClaim's placement: its zone label, else the zone its EC2 providerID names. */
export function placementOf(o: Node | NodeClaim): Placement {
  const zone = zoneOf(o) ?? zoneOfProviderID(providerIDOf(o));
  const region = regionOf(o);
  return { ...(zone ? { zone } : {}), ...(region ? { region } : {}) };
}

/**
 * The hourly price of one machine in its own capacity type (on-demand when unlabelled), or in
 * `as` (the on-demand basis savings compare against). Undefined when no provider knows it.
 */
export function machinePrice(prices: PriceProvider, m: Priced, as?: CapacityType): PriceQuote | undefined {
  if (!m.instanceType) return undefined;
  return prices.price(m.instanceType, as ?? m.capacityType ?? "on-demand", m.zone, m.region);
}

/** A Node's (or NodeClaim's) price from its labels; `fallback` when it has no capacity-type label. */
export function nodePrice(
  prices: PriceProvider,
  o: Node | NodeClaim,
  fallback: CapacityType = "on-demand",
): PriceQuote | undefined {
  return machinePrice(prices, {
    instanceType: instanceTypeOf(o),
    capacityType: capacityTypeOf(o) ?? fallback,
    ...placementOf(o),
  });
}

/**
 * The price of a machine not launched yet: the cheapest quote for the type among the places it
 * could land (Karpenter launches the cheapest offering that fits; on-demand prices are per
 * region anyway). With no place known, the lookup without one (a provider with one region
 * answers it; others do not).
 */
export function offeringPrice(
  prices: PriceProvider,
  instanceType: string,
  capacityType: CapacityType,
  places: readonly Placement[],
): PriceQuote | undefined {
  const seen = new Set<string>();
  let best: PriceQuote | undefined;
  for (const p of places) {
    const key = `${p.zone ?? ""}\u0000${p.region ?? ""}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const q = prices.price(instanceType, capacityType, p.zone, p.region);
    if (q && (best === undefined || q.usdPerHour < best.usdPerHour)) best = q;
  }
  return best ?? prices.price(instanceType, capacityType);
}

/**
 * The warmup controller's and the Warmup page's price lookup (warmup/fit/limits.ts `PriceOf`):
 * a node by its labels; a type about to launch by `offeringPrice` over the places the pool's
 * nodes or zone requirement allow, else over the cluster's own places (`clusterPlaces`, e.g. its
 * nodes' zones) — never a lookup with no place at all while the cluster has one.
 */
export function priceLookup(
  prices: PriceProvider,
  clusterPlaces: () => readonly Placement[],
): (what: Node | string, capacityType: CapacityType, places?: readonly Placement[]) => number | undefined {
  return (what, capacityType, places) =>
    typeof what === "string"
      ? offeringPrice(prices, what, capacityType, places?.length ? places : clusterPlaces())?.usdPerHour
      : nodePrice(prices, what, capacityType)?.usdPerHour;
}

/** The distinct places of some nodes (a cluster's, a pool's). */
export function placesOf(nodes: readonly (Node | NodeClaim)[]): Placement[] {
  const out = new Map<string, Placement>();
  for (const n of nodes) {
    const p = placementOf(n);
    if (p.zone !== undefined || p.region !== undefined) out.set(`${p.zone ?? ""}\u0000${p.region ?? ""}`, p);
  }
  return [...out.values()];
}
