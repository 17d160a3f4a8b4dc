// Pure steps of hack/pricing/update.ts: pick the families the table ships, merge fetched regions
// into the table, and measure how spot relates to on-demand (to calibrate the spot estimate).
import type { SpotPrice } from "./aws.ts";
import type { RegionPrices, StaticPriceTable } from "./static.ts";

/** The families the shipped table covers (general, compute, memory, burstable, GPU). */
export const TABLE_FAMILIES = [
  "m5", "m6i", "m6g", "m7i", "m7g",
  "c5", "c6i", "c6g", "c7i", "c7g",
  "r5", "r6i", "r6g", "r7i", "r7g",
  "t3", "t3a", "t4g",
  "g5", "g6", "p4d", "p5",
] as const; // prettier-ignore

export const TABLE_REGIONS = [
  "us-east-1", "us-east-2", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1", "ap-northeast-1",
] as const; // prettier-ignore

export function familyOf(instanceType: string): string {
  const dot = instanceType.indexOf(".");
  return dot < 0 ? instanceType : instanceType.slice(0, dot);
}

/** Keeps the listed families (bare-metal sizes included), sorted by name for stable diffs. */
export function selectFamilies(
  prices: ReadonlyMap<string, number>,
  families: readonly string[] = TABLE_FAMILIES,
): Record<string, number> {
  const wanted = new Set(families);
  const out: Record<string, number> = {};
  for (const it of [...prices.keys()].sort()) {
    const usd = prices.get(it);
    if (usd !== undefined && wanted.has(familyOf(it))) out[it] = Math.round(usd * 1e6) / 1e6;
  }
  return out;
}

/**
 * Returns a new table with `region` replaced by freshly fetched prices. Refuses an empty fetch,
 * so a filter or permission problem never wipes a region.
 */
export function mergeRegion(
  table: StaticPriceTable,
  region: string,
  onDemand: Record<string, number>,
  asOf: string,
): StaticPriceTable {
  if (Object.keys(onDemand).length === 0) throw new Error(`no prices fetched for ${region}; table unchanged`);
  const fresh: RegionPrices = {
    asOf,
    provenance: "aws-pricing-api",
    note: "Fetched by hack/pricing/update.ts from the AWS Pricing API (GetProducts: Linux, shared tenancy, no pre-installed software, capacitystatus Used).",
    onDemand,
  };
  const regions: Record<string, RegionPrices> = { ...table.regions, [region]: fresh };
  const sorted = Object.fromEntries(Object.entries(regions).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return { ...table, generatedAt: asOf, regions: sorted };
}

/** Median of spot ÷ on-demand over every (type, zone) both are known for; undefined if none. */
export function medianSpotRatio(
  spot: readonly SpotPrice[],
  onDemand: Readonly<Record<string, number>>,
): number | undefined {
  const ratios = spot
    .map((s) => {
      const od = onDemand[s.instanceType];
      return od ? s.usdPerHour / od : undefined;
    })
    .filter((r): r is number => r !== undefined)
    .sort((a, b) => a - b);
  if (ratios.length === 0) return undefined;
  const mid = Math.floor(ratios.length / 2);
  const hi = ratios[mid] ?? 0;
  return ratios.length % 2 ? hi : ((ratios[mid - 1] ?? hi) + hi) / 2;
}
