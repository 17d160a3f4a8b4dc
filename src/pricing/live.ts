// Live EC2 prices: on-demand from the Pricing API, spot per availability zone from
// DescribeSpotPriceHistory, refreshed every 12 h like Karpenter's AWS provider. Lookups are served
// from memory; a failed refresh keeps the last good prices and retries sooner.
import type { CapacityType } from "../objects/karpenter.ts";
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import type { OnDemandFetcher, SpotFetcher } from "./aws.ts";
import { regionOfZone, type PriceProvider, type PriceQuote } from "./types.ts";

export const LIVE_REFRESH_MS = 12 * 60 * 60 * 1000;
export const LIVE_RETRY_MS = 5 * 60 * 1000;

export interface LivePriceOptions {
  /** The cluster's region: spot prices are per zone of it, on-demand for it. */
  region: string;
  clock: Clock;
  /** Absent when there are no credentials for the Pricing API. */
  onDemand?: OnDemandFetcher;
  /** Absent when there are no EC2 credentials. */
  spot?: SpotFetcher;
  log?: Logger;
  refreshMs?: number;
  retryMs?: number;
}

export interface LiveStatus {
  onDemandTypes: number;
  spotOfferings: number;
  onDemandAsOf?: string;
  spotAsOf?: string;
  lastError?: string;
}

export class LivePriceProvider implements PriceProvider {
  readonly region: string;
  readonly #opts: LivePriceOptions;
  readonly #log: Logger;
  #onDemand = new Map<string, number>();
  #onDemandAsOf: string | undefined;
  #spot = new Map<string, number>(); // "type/zone" → USD/h
  #spotAsOf: string | undefined;
  #lastError: string | undefined;

  constructor(opts: LivePriceOptions) {
    this.region = opts.region;
    this.#opts = opts;
    this.#log = (opts.log ?? silentLogger).child({ component: "pricing.live", region: opts.region });
  }

  /** True once at least one source has delivered prices. */
  get available(): boolean {
    return this.#onDemand.size > 0 || this.#spot.size > 0;
  }

  get status(): LiveStatus {
    return {
      onDemandTypes: this.#onDemand.size,
      spotOfferings: this.#spot.size,
      ...(this.#onDemandAsOf ? { onDemandAsOf: this.#onDemandAsOf } : {}),
      ...(this.#spotAsOf ? { spotAsOf: this.#spotAsOf } : {}),
      ...(this.#lastError ? { lastError: this.#lastError } : {}),
    };
  }

  /**
   * Fetches both sources independently; one failing does not discard the other, and an empty
   * answer never replaces good prices. Resolves true when every configured source succeeded.
   */
  async refresh(signal?: AbortSignal): Promise<boolean> {
    const errors: string[] = [];
    const { onDemand, spot, clock } = this.#opts;
    if (onDemand) {
      try {
        const prices = await onDemand.fetchOnDemand(this.region, signal);
        if (prices.size === 0) throw new Error("Pricing API returned no Linux on-demand prices");
        this.#onDemand = prices;
        this.#onDemandAsOf = new Date(clock.now()).toISOString();
        this.#log.info("on-demand prices refreshed", { types: prices.size });
      } catch (err) {
        errors.push(this.#fail("on-demand", err));
      }
    }
    if (spot) {
      try {
        const now = new Date(clock.now());
        const prices = await spot.fetchSpot(now, signal);
        if (prices.length === 0) throw new Error("DescribeSpotPriceHistory returned no prices");
        const next = new Map<string, number>();
        for (const p of prices) next.set(`${p.instanceType}/${p.zone}`, p.usdPerHour);
        this.#spot = next;
        this.#spotAsOf = now.toISOString();
        this.#log.info("spot prices refreshed", { offerings: next.size });
      } catch (err) {
        errors.push(this.#fail("spot", err));
      }
    }
    this.#lastError = errors.length > 0 ? errors.join("; ") : undefined;
    return errors.length === 0;
  }

  #fail(what: string, err: unknown): string {
    this.#log.warn("price refresh failed; keeping previous prices", { source: what, err });
    return `${what}: ${err instanceof Error ? err.message : String(err)}`;
  }

  /** Refreshes now, then every refreshMs (retryMs after a failure) until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const every = this.#opts.refreshMs ?? LIVE_REFRESH_MS;
    const retry = this.#opts.retryMs ?? LIVE_RETRY_MS;
    while (!signal.aborted) {
      const ok = await this.refresh(signal).catch(() => false);
      try {
        await this.#opts.clock.sleep(ok ? every : retry, signal);
      } catch {
        return; // aborted
      }
    }
  }

  price(
    instanceType: string,
    capacityType: CapacityType,
    zone?: string,
    region?: string,
  ): PriceQuote | undefined {
    const r = region ?? regionOfZone(zone) ?? this.region;
    if (r !== this.region) return undefined;
    if (capacityType === "spot") {
      // Spot prices differ per zone; without one there is no honest single answer.
      if (zone === undefined || this.#spotAsOf === undefined) return undefined;
      const usd = this.#spot.get(`${instanceType}/${zone}`);
      return usd === undefined ? undefined : { usdPerHour: usd, source: "live", asOf: this.#spotAsOf };
    }
    // Reserved capacity (ODCRs, capacity blocks aside) is billed at the on-demand rate.
    const usd = this.#onDemand.get(instanceType);
    return usd === undefined || this.#onDemandAsOf === undefined
      ? undefined
      : { usdPerHour: usd, source: "live", asOf: this.#onDemandAsOf };
  }
}
