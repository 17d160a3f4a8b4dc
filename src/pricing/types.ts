// What a price lookup answers, and the one interface every price source implements.
import type { CapacityType } from "../objects/karpenter.ts";

/**
 * Where a price came from, best first:
 * - live: fetched from AWS (Pricing API / DescribeSpotPriceHistory) by this process;
 * - static: the table shipped in src/pricing/data (dated; see its provenance);
 * - kwok: the KWOK provider's own price, exact for the local rig;
 * - estimate: derived (spot = factor × on-demand) because nothing better was available.
 */
export type PriceSource = "live" | "static" | "estimate" | "kwok";

export interface PriceQuote {
  usdPerHour: number;
  source: PriceSource;
  /** ISO 8601 date or time the price is as of (fetch time, table date, or the basis's date). */
  asOf: string;
  /**
   * Set when a Karpenter NodeOverlay changed the price (src/dashboard/figures/price.ts
   * `machinePrice`): which overlay, its change as written, and the list price `source` gave.
   */
  overlay?: { name: string; change: string; listUsdPerHour: number };
}

export interface PriceProvider {
  /**
   * The hourly price of one instance, or undefined when this provider does not know it.
   * Synchronous on purpose: providers serve from memory (live ones refresh in the background),
   * so figures stay pure functions over data plus a price lookup.
   * `region` may be omitted when `zone` is an AWS zone name (the region is derived from it).
   */
  price(
    instanceType: string,
    capacityType: CapacityType,
    zone?: string,
    region?: string,
  ): PriceQuote | undefined;
}

/** One lookup of a provider that prices per region, its region resolved. */
export interface RegionLookup {
  instanceType: string;
  capacityType: CapacityType;
  zone: string | undefined;
  region: string;
}

/**
 * A provider whose prices are per region. A lookup's region is the one it names, else its zone's,
 * else the provider's default; with none of them the provider does not know the price.
 */
export abstract class RegionPriceProvider implements PriceProvider {
  protected abstract readonly defaultRegion: string | undefined;

  readonly price: PriceProvider["price"] = (instanceType, capacityType, zone, region) => {
    const r = region ?? regionOfZone(zone) ?? this.defaultRegion;
    return r === undefined ? undefined : this.priceIn({ instanceType, capacityType, zone, region: r });
  };

  protected abstract priceIn(lookup: RegionLookup): PriceQuote | undefined;
}

/** Hours in a month as AWS and the anchors (eks-node-viewer) count them. */
export const HOURS_PER_MONTH = 730;

const AWS_ZONE = /^([a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-\d+)(?:-[a-z]+-\d+)?[a-z]$/;

/**
 * The region of an AWS availability zone: "us-east-1a" → "us-east-1", local zones
 * "us-west-2-lax-1a" → "us-west-2". Zone IDs ("use1-az1") and non-AWS zones give undefined.
 */
export function regionOfZone(zone: string | undefined): string | undefined {
  if (!zone) return undefined;
  return AWS_ZONE.exec(zone)?.[1];
}

const AWS_PROVIDER_ID = /^aws:\/\/\/([a-z0-9-]+)\/[^/]+$/;

/**
 * The availability zone an EC2 provider ID names: "aws:///us-east-1a/i-0abc…" → "us-east-1a"
 * (what Karpenter and the cloud controller set), for nodes that carry no zone label.
 */
export function zoneOfProviderID(providerID: string | undefined): string | undefined {
  const zone = providerID === undefined ? undefined : AWS_PROVIDER_ID.exec(providerID)?.[1];
  return zone !== undefined && regionOfZone(zone) !== undefined ? zone : undefined;
}
