// Thin adapters from the AWS SDK v3 clients to the two small fetch interfaces the live provider
// needs. Each takes anything with the SDK's `send`, so tests replay recorded responses.
import { GetProductsCommand, type GetProductsCommandOutput } from "@aws-sdk/client-pricing";
import {
  DescribeSpotPriceHistoryCommand,
  type DescribeSpotPriceHistoryCommandOutput,
} from "@aws-sdk/client-ec2";
import { collectOnDemand, onDemandFilters } from "./pricelist.ts";

export interface SpotPrice {
  instanceType: string;
  zone: string;
  usdPerHour: number;
  /** When AWS last changed this price (ms since epoch). */
  timestamp: number;
}

export interface OnDemandFetcher {
  /** Linux on-demand USD/hour by instance type for one region. */
  fetchOnDemand(region: string, signal?: AbortSignal): Promise<Map<string, number>>;
}

export interface SpotFetcher {
  /** The current spot price of every (instance type, zone) in the client's region. */
  fetchSpot(now: Date, signal?: AbortSignal, instanceTypes?: string[]): Promise<SpotPrice[]>;
}

/** The slice of PricingClient used here. */
export interface PricingSend {
  send(
    command: GetProductsCommand,
    options?: { abortSignal?: AbortSignal },
  ): Promise<GetProductsCommandOutput>;
}

/** The slice of EC2Client used here. */
export interface Ec2Send {
  send(
    command: DescribeSpotPriceHistoryCommand,
    options?: { abortSignal?: AbortSignal },
  ): Promise<DescribeSpotPriceHistoryCommandOutput>;
}

// A runaway NextToken loop would otherwise page forever; a region has a few thousand products.
const MAX_PAGES = 500;

export function pricingApiFetcher(client: PricingSend): OnDemandFetcher {
  return {
    async fetchOnDemand(region, signal) {
      const prices = new Map<string, number>();
      let token: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        const out = await client.send(
          new GetProductsCommand({
            ServiceCode: "AmazonEC2",
            Filters: onDemandFilters(region),
            FormatVersion: "aws_v1",
            MaxResults: 100,
            ...(token ? { NextToken: token } : {}),
          }),
          signal ? { abortSignal: signal } : undefined,
        );
        collectOnDemand((out.PriceList ?? []) as unknown[], prices);
        token = out.NextToken;
        if (!token) return prices;
      }
      throw new Error(`Pricing API GetProducts for ${region}: more than ${MAX_PAGES} pages`);
    },
  };
}

/** Spot product descriptions for Linux (EC2-Classic and VPC spellings). */
const LINUX_SPOT = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"];

export function spotPriceHistoryFetcher(client: Ec2Send): SpotFetcher {
  return {
    async fetchSpot(now, signal, instanceTypes) {
      // StartTime = now makes AWS return, per type and zone, the price in force now.
      const latest = new Map<string, SpotPrice>();
      let token: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        const out = await client.send(
          new DescribeSpotPriceHistoryCommand({
            StartTime: now,
            ProductDescriptions: LINUX_SPOT,
            MaxResults: 1000,
            ...(instanceTypes?.length ? { InstanceTypes: instanceTypes as never[] } : {}),
            ...(token ? { NextToken: token } : {}),
          }),
          signal ? { abortSignal: signal } : undefined,
        );
        for (const h of out.SpotPriceHistory ?? []) {
          const usd = Number(h.SpotPrice);
          if (!h.InstanceType || !h.AvailabilityZone || !Number.isFinite(usd) || usd <= 0) continue;
          const ts = h.Timestamp ? new Date(h.Timestamp).getTime() : 0;
          const key = `${h.InstanceType}/${h.AvailabilityZone}`;
          const prev = latest.get(key);
          if (!prev || ts > prev.timestamp) {
            latest.set(key, {
              instanceType: h.InstanceType,
              zone: h.AvailabilityZone,
              usdPerHour: usd,
              timestamp: ts,
            });
          }
        }
        token = out.NextToken;
        if (!token) return [...latest.values()];
      }
      throw new Error(`DescribeSpotPriceHistory: more than ${MAX_PAGES} pages`);
    },
  };
}
