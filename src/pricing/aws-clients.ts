// The real AWS SDK v3 clients behind the live fetchers. Credentials come from the SDK's standard
// chain (environment, IRSA web identity token, EKS Pod Identity / container credentials, instance
// profile); nothing here reads or logs them. The SDK is imported on first use: the clients cost
// ~90 MiB of resident memory, which a process that never prices an AWS node should not carry.
import type { PricingClientConfig } from "@aws-sdk/client-pricing";
import type { OnDemandFetcher, SpotFetcher } from "./aws.ts";

/** The Pricing API answers from us-east-1 for every commercial region. */
export const PRICING_API_REGION = "us-east-1";

export interface AwsClientOptions {
  /**
   * Send every request here instead of AWS's endpoints (tests point it at a local server).
   * The SDK's own AWS_ENDPOINT_URL_PRICING / AWS_ENDPOINT_URL_EC2 variables work as well.
   */
  endpoint?: string;
  /** Replaces the standard chain (tests). */
  credentials?: PricingClientConfig["credentials"];
  /** SDK attempts per request, throttling and 5xx retried with backoff (default 3). */
  maxAttempts?: number;
  /** Bound on one HTTP request, so a hung endpoint never stalls the refresh loop. */
  requestTimeoutMs?: number;
}

const REQUEST_TIMEOUT_MS = 30_000;

type Fetchers = { onDemand: OnDemandFetcher; spot: SpotFetcher };

/**
 * fetchersFor(region) for RegionalLivePrices: one Pricing API client shared by all regions and an
 * EC2 client per region, all created on the first fetch.
 */
export function awsFetchers(opts: AwsClientOptions = {}): (region: string) => Fetchers {
  const common = {
    ...(opts.endpoint !== undefined ? { endpoint: opts.endpoint } : {}),
    ...(opts.credentials !== undefined ? { credentials: opts.credentials } : {}),
    ...(opts.maxAttempts !== undefined ? { maxAttempts: opts.maxAttempts } : {}),
    requestHandler: {
      requestTimeout: opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS,
      connectionTimeout: 5_000,
      throwOnRequestTimeout: true,
    },
  };
  let pricing: Promise<OnDemandFetcher> | undefined;
  const pricingFetcher = (): Promise<OnDemandFetcher> =>
    (pricing ??= (async () => {
      const [{ PricingClient }, { pricingApiFetcher }] = await Promise.all([
        import("@aws-sdk/client-pricing"),
        import("./aws.ts"),
      ]);
      return pricingApiFetcher(new PricingClient({ region: PRICING_API_REGION, ...common }));
    })());
  return (region) => {
    let spot: Promise<SpotFetcher> | undefined;
    const spotFetcher = (): Promise<SpotFetcher> =>
      (spot ??= (async () => {
        const [{ EC2Client }, { spotPriceHistoryFetcher }] = await Promise.all([
          import("@aws-sdk/client-ec2"),
          import("./aws.ts"),
        ]);
        return spotPriceHistoryFetcher(new EC2Client({ region, ...common }));
      })());
    return {
      onDemand: { fetchOnDemand: async (r, signal) => (await pricingFetcher()).fetchOnDemand(r, signal) },
      spot: {
        fetchSpot: async (now, signal, types) => (await spotFetcher()).fetchSpot(now, signal, types),
      },
    };
  };
}
