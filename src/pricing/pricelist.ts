// Parsing AWS Pricing API GetProducts results (one JSON document per product) into Linux
// on-demand hourly prices. Shared by the live provider and hack/pricing/update.ts.

/** The GetProducts filters Karpenter's AWS provider and eks-node-viewer use for on-demand. */
export function onDemandFilters(region: string): { Type: "TERM_MATCH"; Field: string; Value: string }[] {
  const terms: [string, string][] = [
    ["regionCode", region],
    ["productFamily", "Compute Instance"],
    ["operatingSystem", "Linux"],
    ["tenancy", "Shared"],
    ["preInstalledSw", "NA"],
    ["capacitystatus", "Used"],
  ];
  return terms.map(([Field, Value]) => ({ Type: "TERM_MATCH", Field, Value }));
}

export interface OnDemandPrice {
  instanceType: string;
  usdPerHour: number;
  /** The term's effectiveDate, when present. */
  effectiveDate?: string;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * One price list item (JSON text: a string, or the SDK's String object). Returns undefined for products
 * that are not plain shared Linux on-demand instance hours (capacity blocks, dedicated, licensed
 * software, zero-priced placeholders), so a caller can feed every item through it.
 * Throws only when the item is not JSON at all.
 */
export function parsePriceListItem(item: unknown): OnDemandPrice | undefined {
  // The SDK's deserializer hands each item over as a String object (smithy's LazyJsonString),
  // not a primitive string: both are JSON text.
  const doc: unknown = typeof item === "string" || item instanceof String ? JSON.parse(String(item)) : item;
  if (!isRecord(doc) || !isRecord(doc.product) || !isRecord(doc.product.attributes)) return undefined;
  const a = doc.product.attributes;
  const it = a.instanceType;
  if (typeof it !== "string" || it === "") return undefined;
  if (a.operatingSystem !== undefined && a.operatingSystem !== "Linux") return undefined;
  if (a.tenancy !== undefined && a.tenancy !== "Shared") return undefined;
  if (a.preInstalledSw !== undefined && a.preInstalledSw !== "NA") return undefined;
  if (a.capacitystatus !== undefined && a.capacitystatus !== "Used") return undefined;
  if (a.marketoption !== undefined && a.marketoption !== "OnDemand") return undefined;
  if (a.operation !== undefined && a.operation !== "RunInstances") return undefined;
  if (!isRecord(doc.terms) || !isRecord(doc.terms.OnDemand)) return undefined;
  let best: OnDemandPrice | undefined;
  for (const term of Object.values(doc.terms.OnDemand)) {
    if (!isRecord(term) || !isRecord(term.priceDimensions)) continue;
    for (const dim of Object.values(term.priceDimensions)) {
      if (!isRecord(dim) || !isRecord(dim.pricePerUnit)) continue;
      if (dim.unit !== undefined && dim.unit !== "Hrs") continue;
      const usd = Number(dim.pricePerUnit.USD);
      if (!Number.isFinite(usd) || usd <= 0) continue;
      if (!best || usd < best.usdPerHour) {
        best = {
          instanceType: it,
          usdPerHour: usd,
          ...(typeof term.effectiveDate === "string" ? { effectiveDate: term.effectiveDate } : {}),
        };
      }
    }
  }
  return best;
}

/**
 * Folds items into instance type → price. Duplicates (AWS lists a few types twice under
 * different usage types) keep the lower price, so the result does not depend on page order.
 */
export function collectOnDemand(
  items: Iterable<unknown>,
  into = new Map<string, number>(),
): Map<string, number> {
  for (const item of items) {
    const p = parsePriceListItem(item);
    if (!p) continue;
    const prev = into.get(p.instanceType);
    if (prev === undefined || p.usdPerHour < prev) into.set(p.instanceType, p.usdPerHour);
  }
  return into;
}
