// One PriceProvider over all sources: kwok for KWOK types, live when it knows the price, the
// static table otherwise, and a spot estimate (factor × on-demand) last.
import type { CapacityType } from "../objects/karpenter.ts";
import { KwokPriceProvider } from "./kwok.ts";
import type { PriceProvider, PriceQuote } from "./types.ts";

/** Spot ≈ 35 % of on-demand: the middle of the 60–70 % discounts AWS advertises for spot. */
export const DEFAULT_SPOT_ESTIMATE_FACTOR = 0.35;

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
  /** Spot is estimated as this factor × the on-demand price. */
  readonly #spotFactor: number;

  constructor(opts: CompositeOptions) {
    const factor = opts.spotEstimateFactor ?? DEFAULT_SPOT_ESTIMATE_FACTOR;
    if (!Number.isFinite(factor) || factor <= 0 || factor > 1) {
      throw new RangeError(`spot estimate factor must be in (0, 1], got ${String(factor)}`);
    }
    this.#spotFactor = factor;
    this.#kwok = opts.kwok ?? new KwokPriceProvider();
    this.#chain = [opts.live, opts.static].filter((p): p is PriceProvider => p !== undefined);
  }

  price(
    instanceType: string,
    capacityType: CapacityType,
    zone?: string,
    region?: string,
  ): PriceQuote | undefined {
    if (this.#kwok.knows(instanceType)) return this.#kwok.price(instanceType, capacityType, zone);
    const known = this.#first((p) => p.price(instanceType, capacityType, zone, region));
    if (known || capacityType !== "spot") return known;
    // The estimate's on-demand basis is the best the chain has (live, else static).
    const od = this.#first((p) => p.price(instanceType, "on-demand", zone, region));
    if (!od) return undefined;
    return { usdPerHour: od.usdPerHour * this.#spotFactor, source: "estimate", asOf: od.asOf };
  }

  /** The first answer of the chain's providers, asked in order. */
  #first(ask: (p: PriceProvider) => PriceQuote | undefined): PriceQuote | undefined {
    for (const p of this.#chain) {
      const q = ask(p);
      if (q) return q;
    }
    return undefined;
  }
}
