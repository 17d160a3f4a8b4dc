// One PriceProvider over all sources: kwok for KWOK types, live when it knows the price, the
// static table otherwise, and a spot estimate (factor × on-demand) last.
import type { CapacityType } from "../objects/karpenter.ts";
import { KwokPriceProvider } from "./kwok.ts";
import type { PriceProvider, PriceQuote } from "./types.ts";

/** Spot ≈ 35 % of on-demand: the middle of the 60–70 % discounts AWS advertises for spot. */
export const DEFAULT_SPOT_ESTIMATE_FACTOR = 0.35;

/** Estimates spot as `factor` × the on-demand price another provider knows. */
export class SpotEstimateProvider implements PriceProvider {
  readonly factor: number;
  readonly #base: PriceProvider;

  constructor(base: PriceProvider, factor = DEFAULT_SPOT_ESTIMATE_FACTOR) {
    if (!Number.isFinite(factor) || factor <= 0 || factor > 1) {
      throw new RangeError(`spot estimate factor must be in (0, 1], got ${String(factor)}`);
    }
    this.factor = factor;
    this.#base = base;
  }

  price(
    instanceType: string,
    capacityType: CapacityType,
    zone?: string,
    region?: string,
  ): PriceQuote | undefined {
    if (capacityType !== "spot") return undefined;
    const od = this.#base.price(instanceType, "on-demand", zone, region);
    if (!od) return undefined;
    return { usdPerHour: od.usdPerHour * this.factor, source: "estimate", asOf: od.asOf };
  }
}

export interface CompositeOptions {
  kwok?: KwokPriceProvider;
  /** Live AWS prices (omit when there are no credentials). */
  live?: PriceProvider;
  /** The shipped static table. */
  static?: PriceProvider;
  spotEstimateFactor?: number;
}

export class CompositePriceProvider implements PriceProvider {
  readonly #kwok: KwokPriceProvider;
  readonly #chain: PriceProvider[];
  readonly #estimate: SpotEstimateProvider;

  constructor(opts: CompositeOptions) {
    this.#kwok = opts.kwok ?? new KwokPriceProvider();
    this.#chain = [opts.live, opts.static].filter((p): p is PriceProvider => p !== undefined);
    // The estimate's on-demand basis is the best the chain has (live, else static).
    const onDemandChain: PriceProvider = {
      price: (it, ct, zone, region) => this.#first(it, ct, zone, region),
    };
    this.#estimate = new SpotEstimateProvider(onDemandChain, opts.spotEstimateFactor);
  }

  #first(
    instanceType: string,
    capacityType: CapacityType,
    zone?: string,
    region?: string,
  ): PriceQuote | undefined {
    for (const p of this.#chain) {
      const q = p.price(instanceType, capacityType, zone, region);
      if (q) return q;
    }
    return undefined;
  }

  price(
    instanceType: string,
    capacityType: CapacityType,
    zone?: string,
    region?: string,
  ): PriceQuote | undefined {
    if (this.#kwok.knows(instanceType)) return this.#kwok.price(instanceType, capacityType, zone);
    return (
      this.#first(instanceType, capacityType, zone, region) ??
      this.#estimate.price(instanceType, capacityType, zone, region)
    );
  }
}
