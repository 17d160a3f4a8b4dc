// Composition of the price sources for `wave start`: static table + KWOK always, live AWS prices
// when the composition root hands over fetchers (it does when AWS credentials resolve).
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import type { OnDemandFetcher, SpotFetcher } from "./aws.ts";
import { CompositePriceProvider } from "./composite.ts";
import { KwokPriceProvider, type KwokOfferingPrices } from "./kwok.ts";
import { LivePriceProvider } from "./live.ts";
import { loadStaticPriceTable, StaticPriceProvider, type StaticPriceTable } from "./static.ts";
import type { PriceProvider } from "./types.ts";

export interface PricingOptions {
  clock: Clock;
  log?: Logger;
  /** The cluster's AWS region: default region for lookups and the live provider's region. */
  region?: string;
  /** Live sources; omit both when there are no AWS credentials. */
  onDemand?: OnDemandFetcher;
  spot?: SpotFetcher;
  /** Defaults to the shipped table. */
  staticTable?: StaticPriceTable;
  /** Offerings from a custom KWOK instance-types file. */
  kwokOfferings?: KwokOfferingPrices;
  spotEstimateFactor?: number;
}

export interface Pricing {
  provider: PriceProvider;
  /** Present when live sources were given; its `status` feeds health/diagnostics. */
  live?: LivePriceProvider;
  /** Keeps live prices fresh until `signal` aborts (returns at once without live sources). */
  run(signal: AbortSignal): Promise<void>;
}

export function createPricing(opts: PricingOptions): Pricing {
  const table = opts.staticTable ?? loadStaticPriceTable();
  const staticProvider = new StaticPriceProvider(table, opts.region ? { defaultRegion: opts.region } : {});
  const kwok = new KwokPriceProvider(opts.kwokOfferings ? { offerings: opts.kwokOfferings } : {});
  let live: LivePriceProvider | undefined;
  if (opts.region && (opts.onDemand || opts.spot)) {
    live = new LivePriceProvider({
      region: opts.region,
      clock: opts.clock,
      log: opts.log ?? silentLogger,
      ...(opts.onDemand ? { onDemand: opts.onDemand } : {}),
      ...(opts.spot ? { spot: opts.spot } : {}),
    });
  }
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

/**
 * AWS SDK fetchers for `region`, or undefined when no credentials resolve (then Wave prices from
 * the static table and estimates spot). I/O: only the composition root calls this.
 */
export async function awsFetchers(
  region: string,
): Promise<{ onDemand: OnDemandFetcher; spot: SpotFetcher } | undefined> {
  // Imported here, not at the top: the AWS SDK clients cost ~90 MiB of resident memory, which a
  // process without live pricing (the rig, any non-AWS cluster) should not carry.
  const [{ EC2Client }, { PricingClient }, { pricingApiFetcher, spotPriceHistoryFetcher }] =
    await Promise.all([import("@aws-sdk/client-ec2"), import("@aws-sdk/client-pricing"), import("./aws.ts")]);
  // The Pricing API answers from us-east-1 for every region.
  const pricing = new PricingClient({ region: "us-east-1" });
  try {
    await pricing.config.credentials();
  } catch {
    pricing.destroy();
    return undefined;
  }
  return {
    onDemand: pricingApiFetcher(pricing),
    spot: spotPriceHistoryFetcher(new EC2Client({ region })),
  };
}
