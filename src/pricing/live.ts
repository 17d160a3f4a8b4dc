// Live EC2 prices for one region: on-demand from the Pricing API, spot per availability zone from
// DescribeSpotPriceHistory, refreshed every 12 h like Karpenter's AWS provider. Lookups are served
// from memory; a failed refresh keeps the last good prices and retries sooner; prices older than
// the max age are no longer served, so the composite falls back to the table (labelled per node).
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import type { OnDemandFetcher, SpotFetcher } from "./aws.ts";
import { RegionPriceProvider, type PriceQuote, type RegionLookup } from "./types.ts";

export const LIVE_REFRESH_MS = 12 * 60 * 60 * 1000;
export const LIVE_RETRY_MS = 5 * 60 * 1000;
/** Two missed refreshes: past this, a "live" price is no longer live. */
export const LIVE_MAX_AGE_MS = 24 * 60 * 60 * 1000;

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
  /** Prices fetched longer ago than this are not served (the fallback answers instead). */
  maxAgeMs?: number;
  /** Log a missing-credentials state at info, not warn (`--pricing-source auto`: expected off AWS). */
  quietNoCredentials?: boolean;
}

/**
 * - pending: no answer yet;
 * - ok: the last refresh succeeded;
 * - failing: the last refresh failed (prices from an earlier one, if any, are still served);
 * - no-credentials: the standard credential chain resolved nothing;
 * - stale: the prices in memory are older than the max age and no longer served.
 */
export type LiveState = "pending" | "ok" | "failing" | "no-credentials" | "stale";

export interface LiveSourceStatus {
  state: LiveState;
  /** Instance types (on-demand) or type/zone offerings (spot) in memory. */
  prices: number;
  /** When the prices in memory were fetched. */
  asOf?: string;
  /** Error name, HTTP status and first line of the message (never request data or credentials). */
  lastError?: string;
}

export interface LiveStatus {
  region: string;
  onDemand: LiveSourceStatus;
  spot: LiveSourceStatus;
}

/** One line for logs and status: name, HTTP status, first line of the message. No secrets. */
export function describeError(err: unknown): string {
  const e = (typeof err === "object" && err !== null ? err : {}) as {
    name?: unknown;
    message?: unknown;
    $metadata?: { httpStatusCode?: unknown };
  };
  const name = typeof e.name === "string" ? e.name : "Error";
  const code = e.$metadata?.httpStatusCode;
  const status = typeof code === "number" ? ` (HTTP ${code})` : "";
  const message = (typeof e.message === "string" ? e.message : String(err)).split("\n")[0] ?? "";
  return `${name}${status}: ${message.slice(0, 200)}`;
}

export function isCredentialsError(err: unknown): boolean {
  return (err as { name?: unknown } | undefined)?.name === "CredentialsProviderError";
}

/** One source's prices and how its last refresh went. */
class Source<V> {
  prices = new Map<string, V>();
  fetchedAt: number | undefined;
  error: unknown;
  tried = false;
  /** The state last logged, so each change is logged once. */
  logged: string | undefined;

  state(now: number, maxAgeMs: number): LiveState {
    if (this.fetchedAt !== undefined && now - this.fetchedAt > maxAgeMs) return "stale";
    if (this.error !== undefined) return isCredentialsError(this.error) ? "no-credentials" : "failing";
    return this.fetchedAt === undefined ? "pending" : "ok";
  }

  fresh(now: number, maxAgeMs: number): boolean {
    return this.fetchedAt !== undefined && now - this.fetchedAt <= maxAgeMs;
  }

  status(now: number, maxAgeMs: number): LiveSourceStatus {
    return {
      state: this.state(now, maxAgeMs),
      prices: this.prices.size,
      ...(this.fetchedAt !== undefined ? { asOf: new Date(this.fetchedAt).toISOString() } : {}),
      ...(this.error !== undefined ? { lastError: describeError(this.error) } : {}),
    };
  }
}

const NO_CREDENTIALS = "no AWS credentials: prices from the shipped table until they resolve";

export class LivePriceProvider extends RegionPriceProvider {
  readonly region: string;
  readonly #opts: LivePriceOptions;
  readonly #log: Logger;
  readonly #maxAgeMs: number;
  readonly #onDemand = new Source<number>();
  readonly #spot = new Source<number>(); // "type/zone" → USD/h

  constructor(opts: LivePriceOptions) {
    super();
    this.region = opts.region;
    this.#opts = opts;
    this.#maxAgeMs = opts.maxAgeMs ?? LIVE_MAX_AGE_MS;
    this.#log = (opts.log ?? silentLogger).child({ component: "pricing.live", region: opts.region });
  }

  /** True while at least one source serves prices. */
  get available(): boolean {
    const now = this.#opts.clock.now();
    return (
      (this.#onDemand.fresh(now, this.#maxAgeMs) && this.#onDemand.prices.size > 0) ||
      (this.#spot.fresh(now, this.#maxAgeMs) && this.#spot.prices.size > 0)
    );
  }

  get status(): LiveStatus {
    const now = this.#opts.clock.now();
    return {
      region: this.region,
      onDemand: this.#onDemand.status(now, this.#maxAgeMs),
      spot: this.#spot.status(now, this.#maxAgeMs),
    };
  }

  /**
   * Fetches both sources independently; one failing does not discard the other, and an empty
   * answer never replaces good prices (nor does half an answer: a failed page fails the refresh).
   * Resolves true when every configured source succeeded.
   */
  async refresh(signal?: AbortSignal): Promise<boolean> {
    const { onDemand, spot, clock } = this.#opts;
    let ok = true;
    if (onDemand) {
      ok =
        (await this.#refreshOne("on-demand", this.#onDemand, async () => {
          const prices = await onDemand.fetchOnDemand(this.region, signal);
          if (prices.size === 0)
            throw new RegionNotPricedError(
              `the Pricing API has no Linux on-demand prices for ${this.region}`,
            );
          return prices;
        })) && ok;
    }
    if (spot) {
      ok =
        (await this.#refreshOne("spot", this.#spot, async () => {
          const prices = await spot.fetchSpot(new Date(clock.now()), signal);
          if (prices.length === 0)
            throw new RegionNotPricedError(
              `DescribeSpotPriceHistory has no Linux spot prices in ${this.region}`,
            );
          const next = new Map<string, number>();
          for (const p of prices) next.set(`${p.instanceType}/${p.zone}`, p.usdPerHour);
          return next;
        })) && ok;
    }
    return ok;
  }

  async #refreshOne(
    what: "on-demand" | "spot",
    source: Source<number>,
    fetch: () => Promise<Map<string, number>>,
  ): Promise<boolean> {
    source.tried = true;
    try {
      // Stamped with the time the fetch started: the prices are at least that fresh.
      const at = this.#opts.clock.now();
      source.prices = await fetch();
      source.fetchedAt = at;
      source.error = undefined;
      this.#note(what, source, { prices: source.prices.size });
      return true;
    } catch (err) {
      source.error = err;
      this.#note(what, source);
      return false;
    }
  }

  /** Logs a source's state when it changes (and the error when its kind changes), never per retry. */
  #note(what: "on-demand" | "spot", source: Source<number>, fields: Record<string, unknown> = {}): void {
    const state = source.state(this.#opts.clock.now(), this.#maxAgeMs);
    const errorKind = source.error === undefined ? "" : ((source.error as { name?: string }).name ?? "Error");
    const key = `${state}/${errorKind}`;
    if (key === source.logged) return;
    const first = source.logged === undefined;
    source.logged = key;
    const base = { source: what, state, ...fields };
    const error = source.error === undefined ? {} : { error: describeError(source.error) };
    switch (state) {
      case "ok":
        this.#log.info(first ? "live prices loaded" : "live prices recovered", base);
        return;
      case "no-credentials":
        if (this.#opts.quietNoCredentials) this.#log.info(NO_CREDENTIALS, { ...base, ...error });
        else this.#log.warn(NO_CREDENTIALS, { ...base, ...error });
        return;
      case "stale":
        this.#log.warn("live prices older than the max age: falling back to the shipped table", {
          ...base,
          ...error,
          asOf: new Date(source.fetchedAt ?? 0).toISOString(),
        });
        return;
      case "failing":
        this.#log.warn(
          source.fetchedAt === undefined
            ? "live prices unavailable: prices from the shipped table meanwhile"
            : "live price refresh failed: keeping the previous prices",
          { ...base, ...error },
        );
        return;
      case "pending":
        return;
    }
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

  protected get defaultRegion(): string {
    return this.region;
  }

  protected priceIn({ instanceType, capacityType, zone, region }: RegionLookup): PriceQuote | undefined {
    if (region !== this.region) return undefined;
    const now = this.#opts.clock.now();
    if (capacityType === "spot") {
      // Spot prices differ per zone; without one there is no honest single answer.
      const s = this.#spot;
      if (zone === undefined || !s.fresh(now, this.#maxAgeMs)) return undefined;
      const usd = s.prices.get(`${instanceType}/${zone}`);
      return usd === undefined ? undefined : quote(usd, s.fetchedAt);
    }
    // Reserved capacity (ODCRs, capacity blocks aside) is billed at the on-demand rate.
    const od = this.#onDemand;
    if (!od.fresh(now, this.#maxAgeMs)) return undefined;
    const usd = od.prices.get(instanceType);
    return usd === undefined ? undefined : quote(usd, od.fetchedAt);
  }
}

function quote(usdPerHour: number, fetchedAt: number | undefined): PriceQuote {
  return { usdPerHour, source: "live", asOf: new Date(fetchedAt ?? 0).toISOString() };
}

/** The region answered, but with nothing (an unknown or unsupported region, or a wrong filter). */
export class RegionNotPricedError extends Error {
  override name = "RegionNotPriced";
}
