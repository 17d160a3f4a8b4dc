// The OIDC provider's issuer and signing keys for bearer JWTs, fetched with a remembered failure
// (issue 42: while the provider's key endpoint was down, every JWT-shaped bearer made one
// outbound fetch and got 500). After a failed fetch no request fetches again until a backoff
// (1 s doubling to 60 s) has passed; meanwhile bearers get 503 with Retry-After, or are checked
// against the keys fetched last, if any.
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { AuthUnavailable } from "./identity.ts";
import type { Jwk } from "./jwt.ts";

const REFRESH_MS = 60_000;
const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 60_000;

/** What the provider's discovery gives (openid-client's serverMetadata()). */
export interface ProviderMetadata {
  issuer: string;
  jwks_uri?: string | undefined;
}

export class ProviderKeys {
  readonly #metadata: () => Promise<ProviderMetadata>;
  readonly #clock: Clock;
  readonly #log: Logger | undefined;
  #jwks: { keys: Jwk[]; at: number } | undefined;
  #issuer: string | undefined;
  #retryAt = 0;
  #backoffMs = 0;

  constructor(metadata: () => Promise<ProviderMetadata>, clock: Clock, log?: Logger) {
    this.#metadata = metadata;
    this.#clock = clock;
    this.#log = log;
  }

  /** The provider's issuer (discovered once). */
  async issuer(): Promise<string> {
    this.#issuer ??= (await this.#guard(() => this.#metadata())).issuer;
    return this.#issuer;
  }

  /** The provider's keys; `refresh` asks for a fresh copy (at most once a minute). */
  async keys(refresh: boolean): Promise<Jwk[]> {
    const now = this.#clock.now();
    const held = this.#jwks;
    if (held && (!refresh || now - held.at < REFRESH_MS)) return held.keys;
    if (held && now < this.#retryAt) return held.keys;
    return this.#guard(async () => {
      const uri = (await this.#metadata()).jwks_uri;
      if (!uri) throw new Error("the provider publishes no jwks_uri");
      const res = await fetch(uri, { signal: AbortSignal.timeout(10_000) });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const body = (await res.json()) as { keys?: unknown };
      const keys = Array.isArray(body.keys) ? (body.keys as Jwk[]) : [];
      this.#jwks = { keys, at: now };
      return keys;
    }, held?.keys);
  }

  /** Runs `fetch` unless a failure's backoff holds; a failure starts or doubles it. */
  async #guard<T>(fetch: () => Promise<T>, fallback?: T): Promise<T> {
    const now = this.#clock.now();
    if (now < this.#retryAt) {
      if (fallback !== undefined) return fallback;
      throw new AuthUnavailable("the sign-in provider is unreachable; try again later", this.#retryAt - now);
    }
    try {
      const v = await fetch();
      this.#backoffMs = 0;
      return v;
    } catch (err) {
      this.#backoffMs = Math.min(BACKOFF_MAX_MS, Math.max(BACKOFF_MIN_MS, this.#backoffMs * 2));
      this.#retryAt = now + this.#backoffMs;
      this.#log?.warn("the sign-in provider's keys could not be fetched", {
        error: (err as Error).message,
        retryInMs: this.#backoffMs,
      });
      if (fallback !== undefined) return fallback;
      throw new AuthUnavailable("the sign-in provider is unreachable; try again later", this.#backoffMs);
    }
  }
}
