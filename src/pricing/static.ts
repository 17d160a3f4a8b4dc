// The dated on-demand price table shipped in src/pricing/data, and a provider over it.
import { readFileSync } from "node:fs";
import { RegionPriceProvider, type PriceQuote, type RegionLookup } from "./types.ts";

/** How much to trust a region's numbers; hack/pricing/update.ts writes "aws-pricing-api". */
export type Provenance = "aws-pricing-api" | "published" | "assumed" | "approximate";
const PROVENANCES: ReadonlySet<string> = new Set(["aws-pricing-api", "published", "assumed", "approximate"]);

export interface RegionPrices {
  /** Date (YYYY-MM-DD) the prices are as of. */
  asOf: string;
  provenance: Provenance;
  note?: string;
  /** Linux on-demand USD per hour by instance type. */
  onDemand: Record<string, number>;
}

export interface StaticPriceTable {
  schema: 1;
  description?: string;
  generatedAt: string;
  generatedBy?: string;
  regions: Record<string, RegionPrices>;
}

export class PriceTableError extends Error {
  constructor(where: string, why: string) {
    super(`price table ${where}: ${why}`);
    this.name = "PriceTableError";
  }
}

const DATE = /^\d{4}-\d{2}-\d{2}(T[\d:.]+Z)?$/;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Validates parsed JSON as a price table; every problem names its path. */
export function parseStaticPriceTable(json: unknown, where = "(input)"): StaticPriceTable {
  if (!isRecord(json)) throw new PriceTableError(where, "not a JSON object");
  if (json.schema !== 1)
    throw new PriceTableError(where, `unsupported schema ${JSON.stringify(json.schema)}`);
  if (typeof json.generatedAt !== "string" || !DATE.test(json.generatedAt)) {
    throw new PriceTableError(where, "generatedAt must be a YYYY-MM-DD date");
  }
  if (!isRecord(json.regions)) throw new PriceTableError(where, "regions must be an object");
  const regions: Record<string, RegionPrices> = {};
  for (const [region, raw] of Object.entries(json.regions)) {
    const at = `${where} regions.${region}`;
    if (!isRecord(raw)) throw new PriceTableError(at, "not an object");
    if (typeof raw.asOf !== "string" || !DATE.test(raw.asOf))
      throw new PriceTableError(at, "asOf must be a date");
    if (typeof raw.provenance !== "string" || !PROVENANCES.has(raw.provenance)) {
      throw new PriceTableError(at, `unknown provenance ${JSON.stringify(raw.provenance)}`);
    }
    if (!isRecord(raw.onDemand)) throw new PriceTableError(at, "onDemand must be an object");
    const onDemand: Record<string, number> = {};
    for (const [it, price] of Object.entries(raw.onDemand)) {
      if (typeof price !== "number" || !Number.isFinite(price) || price <= 0) {
        throw new PriceTableError(
          `${at}.onDemand.${it}`,
          `price must be a positive number, got ${JSON.stringify(price)}`,
        );
      }
      onDemand[it] = price;
    }
    regions[region] = {
      asOf: raw.asOf,
      provenance: raw.provenance as Provenance,
      ...(typeof raw.note === "string" ? { note: raw.note } : {}),
      onDemand,
    };
  }
  // Key order follows the file so hack/pricing/update.ts rewrites it with minimal diffs.
  return {
    schema: 1,
    ...(typeof json.description === "string" ? { description: json.description } : {}),
    generatedAt: json.generatedAt,
    ...(typeof json.generatedBy === "string" ? { generatedBy: json.generatedBy } : {}),
    regions,
  };
}

export const DEFAULT_TABLE_URL = new URL("./data/ec2-on-demand.json", import.meta.url);

/** Reads and validates a table file (the shipped one by default). */
export function loadStaticPriceTable(file: URL | string = DEFAULT_TABLE_URL): StaticPriceTable {
  const where = String(file);
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new PriceTableError(where, (err as Error).message);
  }
  return parseStaticPriceTable(json, where);
}

export interface StaticPriceOptions {
  /** Region used when a lookup names neither a region nor an AWS zone. */
  defaultRegion?: string;
}

/**
 * On-demand (and reserved, billed at the on-demand rate) prices from the table. It knows no spot
 * prices: the composite provider estimates those when nothing live is available.
 */
export class StaticPriceProvider extends RegionPriceProvider {
  readonly table: StaticPriceTable;
  protected readonly defaultRegion: string | undefined;

  constructor(table: StaticPriceTable, opts: StaticPriceOptions = {}) {
    super();
    this.table = table;
    this.defaultRegion = opts.defaultRegion;
  }

  protected priceIn({ instanceType, capacityType, region }: RegionLookup): PriceQuote | undefined {
    if (capacityType === "spot") return undefined;
    const prices = this.table.regions[region];
    const usdPerHour = prices?.onDemand[instanceType];
    if (prices === undefined || usdPerHour === undefined) return undefined;
    return { usdPerHour, source: "static", asOf: prices.asOf };
  }
}
