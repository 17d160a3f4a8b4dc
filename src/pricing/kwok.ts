// Prices of the Karpenter KWOK provider's simulated instance types, exact for the local rig.
//
// Verified against sigs.k8s.io/karpenter v1.8.2 (see docs/pricing.md): kwok/tools/gen_instance_types.go
// generates kwok/cloudprovider/instance_types.json, which the provider embeds and whose offering
// `Price` is what Karpenter uses. Names are {c|s|m}-{N}x-{amd64|arm64}-{linux|windows} with
// 2/4/8 GiB of memory per vCPU; price = 0.025 × vCPU + 0.001 × memoryBytes / 1e9 on-demand and
// 0.7 × that for spot, in every zone test-zone-a..d. A cluster may run the provider with its own
// instance-types file (--instance-types-file-path); pass it here and its prices win.
import { CAPACITY_TYPE_LABEL, TOPOLOGY_ZONE_LABEL, type CapacityType } from "../objects/karpenter.ts";
import type { PriceProvider, PriceQuote } from "./types.ts";

export const KWOK_SPOT_FACTOR = 0.7;
export const KWOK_ZONES = ["test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d"] as const;
/** The Karpenter release the formula was checked against, and when. */
export const KWOK_FORMULA_VERIFIED = { karpenter: "v1.8.2", on: "2026-12-02" } as const;

const GIB = 2 ** 30;
const MEMORY_GIB_PER_VCPU = { c: 2, s: 4, m: 8 } as const;
const KWOK_NAME = /^([csm])-([1-9]\d*)x-(amd64|arm64)-(linux|windows)$/;

export interface KwokInstanceType {
  name: string;
  family: "c" | "s" | "m";
  vcpu: number;
  memoryBytes: number;
  arch: "amd64" | "arm64";
  os: "linux" | "windows";
}

/** Parses a generated KWOK instance type name; anything else gives undefined. */
export function parseKwokInstanceType(name: string): KwokInstanceType | undefined {
  const m = KWOK_NAME.exec(name);
  if (!m) return undefined;
  const family = m[1] as KwokInstanceType["family"];
  const vcpu = Number(m[2]);
  return {
    name,
    family,
    vcpu,
    memoryBytes: vcpu * MEMORY_GIB_PER_VCPU[family] * GIB,
    arch: m[3] as KwokInstanceType["arch"],
    os: m[4] as KwokInstanceType["os"],
  };
}

export function isKwokInstanceType(name: string): boolean {
  return KWOK_NAME.test(name);
}

/** The generator's priceFromResources: CPU and memory only. */
export function kwokOnDemandPrice(vcpu: number, memoryBytes: number): number {
  return 0.025 * vcpu + (0.001 * memoryBytes) / 1e9;
}

export function kwokPrice(type: KwokInstanceType, capacityType: CapacityType): number {
  const od = kwokOnDemandPrice(type.vcpu, type.memoryBytes);
  return capacityType === "spot" ? od * KWOK_SPOT_FACTOR : od;
}

/** Offering prices by instance type → capacity type → zone, from an instance-types file. */
export type KwokOfferingPrices = Map<string, Map<string, Map<string, number>>>;

export class KwokInstanceTypesError extends Error {
  constructor(why: string) {
    super(`KWOK instance types: ${why}`);
    this.name = "KwokInstanceTypesError";
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Reads the provider's instance-types JSON (the embedded file's format: an array of
 * { name, offerings: [{ Price, Requirements: [{ key, values }] }] }) into offering prices.
 */
export function parseKwokInstanceTypes(json: unknown): KwokOfferingPrices {
  if (!Array.isArray(json)) throw new KwokInstanceTypesError("expected a JSON array of instance types");
  const out: KwokOfferingPrices = new Map();
  json.forEach((it: unknown, i) => {
    if (!isRecord(it) || typeof it.name !== "string" || it.name === "") {
      throw new KwokInstanceTypesError(`[${i}]: missing name`);
    }
    if (!Array.isArray(it.offerings))
      throw new KwokInstanceTypesError(`${it.name}: offerings must be an array`);
    const byCt = new Map<string, Map<string, number>>();
    it.offerings.forEach((off: unknown, j) => {
      const at = `${String(it.name)}.offerings[${j}]`;
      if (!isRecord(off)) throw new KwokInstanceTypesError(`${at}: not an object`);
      const price = off.Price ?? off.price;
      if (typeof price !== "number" || !Number.isFinite(price) || price < 0) {
        throw new KwokInstanceTypesError(`${at}: Price must be a non-negative number`);
      }
      const reqs = off.Requirements ?? off.requirements;
      if (!Array.isArray(reqs)) throw new KwokInstanceTypesError(`${at}: Requirements must be an array`);
      const values = (key: string): string[] => {
        const r = (reqs as unknown[]).find((x) => isRecord(x) && x.key === key);
        return isRecord(r) && Array.isArray(r.values) ? r.values.filter((v) => typeof v === "string") : [];
      };
      const cts = values(CAPACITY_TYPE_LABEL);
      const zones = values(TOPOLOGY_ZONE_LABEL);
      if (cts.length === 0 || zones.length === 0) {
        throw new KwokInstanceTypesError(`${at}: needs capacity-type and zone requirements`);
      }
      for (const ct of cts) {
        let byZone = byCt.get(ct);
        if (!byZone) byCt.set(ct, (byZone = new Map<string, number>()));
        for (const zone of zones) byZone.set(zone, price);
      }
    });
    out.set(it.name, byCt);
  });
  return out;
}

export interface KwokPriceOptions {
  /** Offering prices from a custom instance-types file; they override the formula. */
  offerings?: KwokOfferingPrices;
  /** asOf for prices from `offerings` (e.g. the file's date). */
  offeringsAsOf?: string;
}

export class KwokPriceProvider implements PriceProvider {
  readonly #offerings: KwokOfferingPrices | undefined;
  readonly #offeringsAsOf: string;

  constructor(opts: KwokPriceOptions = {}) {
    this.#offerings = opts.offerings;
    this.#offeringsAsOf = opts.offeringsAsOf ?? KWOK_FORMULA_VERIFIED.on;
  }

  /** Whether this provider prices the type (a generated name, or one in the custom file). */
  knows(instanceType: string): boolean {
    return isKwokInstanceType(instanceType) || (this.#offerings?.has(instanceType) ?? false);
  }

  price(instanceType: string, capacityType: CapacityType, zone?: string): PriceQuote | undefined {
    // KWOK has no reserved offerings; a reserved node would be billed like on-demand.
    const ct = capacityType === "reserved" ? "on-demand" : capacityType;
    const byCt = this.#offerings?.get(instanceType);
    if (byCt) {
      const byZone = byCt.get(ct);
      // Offerings are per zone; with no zone take the lowest, which is what Karpenter launches.
      const usd = zone !== undefined ? byZone?.get(zone) : byZone && Math.min(...byZone.values());
      return usd === undefined || !Number.isFinite(usd)
        ? undefined
        : { usdPerHour: usd, source: "kwok", asOf: this.#offeringsAsOf };
    }
    const parsed = parseKwokInstanceType(instanceType);
    if (!parsed) return undefined;
    return { usdPerHour: kwokPrice(parsed, ct), source: "kwok", asOf: KWOK_FORMULA_VERIFIED.on };
  }
}
