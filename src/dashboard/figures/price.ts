// The one price of a machine: every figure that prices a node, a NodeClaim or a node a warmup
// would launch asks here, so a node costs the same on every page, in /metrics and in the history.
import type { Node } from "../../objects/kube.ts";
import {
  CAPACITY_TYPE_LABEL,
  HOSTNAME_LABEL,
  TOPOLOGY_ZONE_LABEL,
  type CapacityType,
  type NodeClaim,
  type NodeOverlay,
} from "../../objects/karpenter.ts";
import { capacityTypeOf, instanceTypeOf, regionOf, zoneOf } from "../../karpenter/labels.ts";
import { providerIDOf } from "../../karpenter/node.ts";
import { adjustedPrice, winningOverlay } from "../../karpenter/overlay.ts";
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
  /**
   * The labels naming its offering (a Node's or NodeClaim's: nodepool, instance type, capacity
   * type, zone, the pool's and the type's labels): which NodeOverlay prices it. Without them, the
   * list price.
   */
  labels?: Readonly<Record<string, string>> | undefined;
}

/** A cluster's prices: the list prices and the cluster's NodeOverlays in Karpenter's order. */
export interface ClusterPrices extends PriceProvider {
  readonly overlays: readonly NodeOverlay[];
  /** The list prices under the overlays (never overlaid twice). */
  readonly list: PriceProvider;
}

const withOverlays = new WeakMap<PriceProvider, WeakMap<readonly NodeOverlay[], ClusterPrices>>();

/**
 * `prices` as one cluster's Karpenter sees them: its NodeOverlays (`ClusterState.nodeOverlays()`,
 * already in Karpenter's order) applied by `machinePrice`. The same object while neither changes.
 */
export function clusterPrices(prices: PriceProvider, overlays: readonly NodeOverlay[]): PriceProvider {
  const base = (prices as Partial<ClusterPrices>).list ?? prices;
  if (overlays.length === 0) return base;
  let per = withOverlays.get(base);
  if (!per) withOverlays.set(base, (per = new WeakMap()));
  let out = per.get(overlays);
  if (!out) {
    out = { price: (type, ct, zone, region) => base.price(type, ct, zone, region), overlays, list: base };
    per.set(overlays, out);
  }
  return out;
}

const overlaysOf = (prices: PriceProvider): readonly NodeOverlay[] | undefined =>
  (prices as Partial<ClusterPrices>).overlays;

/** A node's labels as an offering's: without its hostname (no instance type or offering has one). */
function offeringLabels(
  labels: Readonly<Record<string, string>>,
  ct: CapacityType,
): Readonly<Record<string, string>> {
  if (labels[CAPACITY_TYPE_LABEL] === ct && !Object.hasOwn(labels, HOSTNAME_LABEL)) return labels;
  const { [HOSTNAME_LABEL]: _host, ...rest } = labels;
  return { ...rest, [CAPACITY_TYPE_LABEL]: ct };
}

type Won = { name: string; change: string } | null;
/**
 * The overlay that prices an offering, per overlay set, labels object and capacity type: matched
 * once per node version (the state keeps a node's labels object) and overlay version, not on every
 * price read — views price each node several times per request.
 */
const winners = new WeakMap<readonly NodeOverlay[], WeakMap<object, Map<CapacityType, Won>>>();
function winnerOf(
  overlays: readonly NodeOverlay[],
  labels: Readonly<Record<string, string>>,
  ct: CapacityType,
): Won {
  let byLabels = winners.get(overlays);
  if (!byLabels) winners.set(overlays, (byLabels = new WeakMap()));
  let byCt = byLabels.get(labels);
  if (!byCt) byLabels.set(labels, (byCt = new Map<CapacityType, Won>()));
  let won = byCt.get(ct);
  if (won === undefined) {
    const w = winningOverlay(overlays, offeringLabels(labels, ct));
    won = w ? { name: w.overlay.metadata.name ?? "", change: w.change } : null;
    byCt.set(ct, won);
  }
  return won;
}

/** Which source priced it: "overlay <name> <change>" when a NodeOverlay did, else the list's source. */
export function priceSourceOf(q: PriceQuote | undefined): string {
  if (!q) return "unknown";
  return q.overlay ? `overlay ${q.overlay.name} ${q.overlay.change}` : q.source;
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
  const ct = as ?? m.capacityType ?? "on-demand";
  const list = prices.price(m.instanceType, ct, m.zone, m.region);
  const overlays = overlaysOf(prices);
  if (!list || !overlays || !m.labels) return list;
  // Karpenter decides on the offering's overlaid price (src/karpenter/overlay.ts).
  const won = winnerOf(overlays, m.labels, ct);
  if (!won) return list;
  return {
    ...list,
    usdPerHour: adjustedPrice(list.usdPerHour, won.change),
    overlay: { name: won.name, change: won.change, listUsdPerHour: list.usdPerHour },
  };
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
    labels: o.metadata.labels,
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
  /** The offering's labels but its zone (e.g. a pool node's of that type): which NodeOverlay prices it. */
  labels?: Readonly<Record<string, string>>,
): PriceQuote | undefined {
  const seen = new Set<string>();
  let best: PriceQuote | undefined;
  for (const p of places) {
    const key = `${p.zone ?? ""}\u0000${p.region ?? ""}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const at = labels && p.zone !== undefined ? { ...labels, [TOPOLOGY_ZONE_LABEL]: p.zone } : labels;
    const q = machinePrice(prices, { instanceType, capacityType, ...p, labels: at });
    if (q && (best === undefined || q.usdPerHour < best.usdPerHour)) best = q;
  }
  return best ?? machinePrice(prices, { instanceType, capacityType, labels });
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
): (
  what: Node | string,
  capacityType: CapacityType,
  places?: readonly Placement[],
  labels?: Readonly<Record<string, string>>,
) => number | undefined {
  return (what, capacityType, places, labels) =>
    typeof what === "string"
      ? offeringPrice(prices, what, capacityType, places?.length ? places : clusterPlaces(), labels)
          ?.usdPerHour
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
