// Live prices for every region the cluster's nodes are in (or the regions a flag names): one
// LivePriceProvider per region, started the first time a node of that region is priced. The
// region comes from the node's topology.kubernetes.io/region label, else its zone (label or
// providerID) — see ADR 0011.
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import type { OnDemandFetcher, SpotFetcher } from "./aws.ts";
import { LivePriceProvider, type LiveStatus } from "./live.ts";
import { RegionPriceProvider, type PriceQuote, type RegionLookup } from "./types.ts";

/** Commercial and GovCloud region names the Pricing API and EC2 answer for. */
export const AWS_REGION = /^[a-z]{2}(?:-gov)?-[a-z]+-\d+$/;

/** A label typo or a hostile node label must not start an unbounded number of fetch loops. */
export const MAX_DISCOVERED_REGIONS = 8;

export interface RegionalLiveOptions {
  clock: Clock;
  log?: Logger;
  /** A region's fetchers; called once per region (the AWS clients load on first use). */
  fetchersFor(region: string): { onDemand: OnDemandFetcher; spot: SpotFetcher };
  /** Fixed regions (--pricing-region); empty or absent: the regions of the priced nodes. */
  regions?: readonly string[];
  refreshMs?: number;
  retryMs?: number;
  maxAgeMs?: number;
  maxRegions?: number;
  quietNoCredentials?: boolean;
}

export class RegionalLivePrices extends RegionPriceProvider {
  readonly #opts: RegionalLiveOptions;
  readonly #log: Logger;
  readonly #live = new Map<string, LivePriceProvider>();
  readonly #fixed: boolean;
  /** Lookups without a region or zone use it when exactly one region is configured. */
  protected readonly defaultRegion: string | undefined;
  #signal: AbortSignal | undefined;
  readonly #loops: Promise<void>[] = [];
  #refusedLogged = false;

  constructor(opts: RegionalLiveOptions) {
    super();
    this.#opts = opts;
    this.#log = opts.log ?? silentLogger;
    const fixed = [...new Set(opts.regions ?? [])];
    for (const r of fixed) {
      if (!AWS_REGION.test(r)) throw new RangeError(`not an AWS region name: ${JSON.stringify(r)}`);
    }
    this.#fixed = fixed.length > 0;
    this.defaultRegion = fixed.length === 1 ? fixed[0] : undefined;
    for (const r of fixed) this.#add(r);
  }

  get regions(): string[] {
    return [...this.#live.keys()].sort();
  }

  status(): LiveStatus[] {
    return this.regions.flatMap((r) => {
      const live = this.#live.get(r);
      return live ? [live.status] : [];
    });
  }

  protected priceIn({ instanceType, capacityType, zone, region }: RegionLookup): PriceQuote | undefined {
    const live = this.#live.get(region) ?? this.#discover(region);
    return live?.price(instanceType, capacityType, zone, region);
  }

  /** A node in a region not seen before: start its prices (they answer from the next lookup on). */
  #discover(region: string): LivePriceProvider | undefined {
    if (this.#fixed || !AWS_REGION.test(region)) return undefined;
    if (this.#live.size >= (this.#opts.maxRegions ?? MAX_DISCOVERED_REGIONS)) {
      if (!this.#refusedLogged) {
        this.#refusedLogged = true;
        this.#log.warn("too many regions among the nodes: further regions are priced from the table", {
          component: "pricing.live",
          region,
          regions: this.regions,
        });
      }
      return undefined;
    }
    this.#log.info("pricing a new region live", { component: "pricing.live", region });
    return this.#add(region);
  }

  #add(region: string): LivePriceProvider {
    const o = this.#opts;
    const live = new LivePriceProvider({
      region,
      clock: o.clock,
      log: this.#log,
      ...o.fetchersFor(region),
      ...(o.refreshMs !== undefined ? { refreshMs: o.refreshMs } : {}),
      ...(o.retryMs !== undefined ? { retryMs: o.retryMs } : {}),
      ...(o.maxAgeMs !== undefined ? { maxAgeMs: o.maxAgeMs } : {}),
      ...(o.quietNoCredentials !== undefined ? { quietNoCredentials: o.quietNoCredentials } : {}),
    });
    this.#live.set(region, live);
    if (this.#signal && !this.#signal.aborted) this.#loops.push(live.run(this.#signal));
    return live;
  }

  /**
   * Keeps every region's prices fresh until `signal` aborts; regions found later start their
   * own loop. Never throws; resolves once every loop has ended.
   */
  async run(signal: AbortSignal): Promise<void> {
    this.#signal = signal;
    for (const live of this.#live.values()) this.#loops.push(live.run(signal));
    if (!signal.aborted)
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    await Promise.allSettled(this.#loops);
  }
}
