// Composition of the price sources: static table + KWOK always, live AWS prices per region when
// enabled. `startPricing` is what a composition root calls (one line); `createPricing` is the
// pure assembly it and the tests share.
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import type { Registry } from "../shared/metrics.ts";
import type { OnDemandFetcher, SpotFetcher } from "./aws.ts";
import { awsFetchers, type AwsClientOptions } from "./aws-clients.ts";
import { CompositePriceProvider } from "./composite.ts";
import { KwokPriceProvider, type KwokOfferingPrices } from "./kwok.ts";
import { RegionalLivePrices } from "./regional.ts";
import type { LiveSourceStatus, LiveState } from "./live.ts";
import { loadStaticPriceTable, StaticPriceProvider, type StaticPriceTable } from "./static.ts";
import type { PriceProvider } from "./types.ts";

export interface PricingOptions {
  clock: Clock;
  log?: Logger;
  /** A region's live fetchers; absent: the static table, KWOK and spot estimates only. */
  fetchersFor?: (region: string) => { onDemand: OnDemandFetcher; spot: SpotFetcher };
  /** Regions priced live; empty or absent: the regions of the nodes being priced. */
  regions?: readonly string[];
  refreshMs?: number;
  retryMs?: number;
  maxAgeMs?: number;
  quietNoCredentials?: boolean;
  /** Defaults to the shipped table. */
  staticTable?: StaticPriceTable;
  /** Offerings from a custom KWOK instance-types file. */
  kwokOfferings?: KwokOfferingPrices;
  spotEstimateFactor?: number;
}

export interface Pricing {
  provider: PriceProvider;
  /** Present when live prices are enabled; its `status()` says per region what is served. */
  live?: RegionalLivePrices;
  /** Keeps live prices fresh until `signal` aborts (returns at once without live prices). */
  run(signal: AbortSignal): Promise<void>;
}

export function createPricing(opts: PricingOptions): Pricing {
  const table = opts.staticTable ?? loadStaticPriceTable();
  const only = opts.regions?.length === 1 ? opts.regions[0] : undefined;
  const staticProvider = new StaticPriceProvider(table, only ? { defaultRegion: only } : {});
  const kwok = new KwokPriceProvider(opts.kwokOfferings ? { offerings: opts.kwokOfferings } : {});
  const live = opts.fetchersFor
    ? new RegionalLivePrices({
        clock: opts.clock,
        log: opts.log ?? silentLogger,
        fetchersFor: opts.fetchersFor,
        ...(opts.regions ? { regions: opts.regions } : {}),
        ...(opts.refreshMs !== undefined ? { refreshMs: opts.refreshMs } : {}),
        ...(opts.retryMs !== undefined ? { retryMs: opts.retryMs } : {}),
        ...(opts.maxAgeMs !== undefined ? { maxAgeMs: opts.maxAgeMs } : {}),
        ...(opts.quietNoCredentials !== undefined ? { quietNoCredentials: opts.quietNoCredentials } : {}),
      })
    : undefined;
  const provider = new CompositePriceProvider({
    kwok,
    static: staticProvider,
    ...(live ? { live } : {}),
    ...(opts.spotEstimateFactor !== undefined ? { spotEstimateFactor: opts.spotEstimateFactor } : {}),
  });
  return {
    provider,
    ...(live ? { live } : {}),
    run: (signal) => (live ? live.run(signal) : Promise.resolve()),
  };
}

/** The pricing settings of WaveConfig (src/config/config.ts). */
export interface PricingSettings {
  pricingSource: "auto" | "aws" | "static";
  pricingRegions: readonly string[];
  pricingRefreshMs: number;
  pricingMaxAgeMs: number;
}

/**
 * Builds the price sources from the config and starts keeping live prices fresh in the
 * background until `signal` aborts. Returns at once: no AWS call, credential lookup or SDK load
 * happens on the caller's path, and lookups answer from the table until live prices arrive.
 */
export function startPricing(
  config: PricingSettings,
  deps: {
    clock: Clock;
    log: Logger;
    signal: AbortSignal;
    /** The embedded simulated cluster: `auto` keeps to the table (nothing is billed). */
    simulated?: boolean;
    /** Endpoint/credential overrides for the AWS clients (tests). */
    aws?: AwsClientOptions;
    /** Where the live prices' state and age are exported (core's /metrics). */
    metrics?: Registry;
  },
): Pricing {
  const liveOn =
    config.pricingSource === "aws" || (config.pricingSource === "auto" && deps.simulated !== true);
  const pricing = createPricing({
    clock: deps.clock,
    log: deps.log,
    ...(liveOn
      ? {
          fetchersFor: awsFetchers(deps.aws),
          regions: config.pricingRegions,
          refreshMs: config.pricingRefreshMs,
          maxAgeMs: config.pricingMaxAgeMs,
          quietNoCredentials: config.pricingSource === "auto",
        }
      : {}),
  });
  deps.log.info("pricing", {
    component: "pricing",
    source: config.pricingSource,
    live: liveOn,
    ...(liveOn
      ? { regions: config.pricingRegions.length > 0 ? config.pricingRegions : "from the nodes" }
      : {}),
  });
  if (deps.metrics && pricing.live) exportLiveMetrics(deps.metrics, pricing.live, deps.clock);
  void pricing.run(deps.signal);
  return pricing;
}

const STATES: readonly LiveState[] = ["pending", "ok", "failing", "no-credentials", "stale"];

/** Every region's two sources, flat. */
function sources(live: RegionalLivePrices): { region: string; source: string; st: LiveSourceStatus }[] {
  return live.status().flatMap((s) => [
    { region: s.region, source: "on-demand", st: s.onDemand },
    { region: s.region, source: "spot", st: s.spot },
  ]);
}

/** Per region and source: which state the live prices are in, and how old they are. */
function exportLiveMetrics(metrics: Registry, live: RegionalLivePrices, clock: Clock): void {
  metrics.gauge({
    name: "wave_pricing_live_state",
    help: "1 for the state live AWS prices are in per region and source (ok, pending, failing, no-credentials, stale); the table answers unless ok or failing with earlier prices",
    labelNames: ["region", "source", "state"],
    collect: (g) => {
      for (const { region, source, st } of sources(live))
        for (const state of STATES) g.set(st.state === state ? 1 : 0, { region, source, state });
    },
  });
  metrics.gauge({
    name: "wave_pricing_live_age_seconds",
    help: "Age of the live AWS prices in memory per region and source",
    labelNames: ["region", "source"],
    collect: (g) => {
      for (const { region, source, st } of sources(live))
        if (st.asOf !== undefined) g.set((clock.now() - Date.parse(st.asOf)) / 1000, { region, source });
    },
  });
}
