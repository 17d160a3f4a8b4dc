// Bearer-token authentication with two roles. Viewers read; admins also change policies.
// Tokens are compared in constant time and never logged.
import { timingSafeEqual, createHash, randomBytes } from "node:crypto";

/** The roles a static token grants (OIDC and proxy identities may also be namespace editors). */
export type TokenRole = "viewer" | "admin";

export interface Tokens {
  admin?: string | undefined;
  viewer?: string | undefined;
}

const digest = (s: string): Buffer => createHash("sha256").update(s).digest();

function same(a: string, b: string): boolean {
  // Hash first so lengths match and timing does not leak the token's length.
  return timingSafeEqual(digest(a), digest(b));
}

/** The role a request's Authorization header grants, or undefined when it grants none. */
export function roleFor(header: string | undefined, tokens: Tokens): TokenRole | undefined {
  if (header === undefined) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m?.[1]) return undefined;
  const token = m[1];
  if (tokens.admin !== undefined && same(token, tokens.admin)) return "admin";
  if (tokens.viewer !== undefined && same(token, tokens.viewer)) return "viewer";
  return undefined;
}

/**
 * A fresh random token (192 bits). Hex, so it never starts with "-": a token that did would be
 * read as a flag by `--viewer-token T` (the CI flake of 2026-12-04).
 */
export const newToken = (): string => randomBytes(24).toString("hex");

/** A short, non-reversible name for a presented token (logs and throttle keys never hold the token). */
export const tokenFingerprint = (header: string | undefined): string =>
  createHash("sha256")
    .update(header ?? "")
    .digest("hex")
    .slice(0, 16);

interface Window {
  since: number;
  count: number;
}

/**
 * Failed logins in a fixed window, counted per client address and per (address, token
 * fingerprint). Only wrong tokens are ever refused: a token that grants a role is checked first
 * and always passes, so behind an ingress, SNAT or a port-forward (one address for everyone) a
 * client sending wrong tokens cannot lock the others out (issue 32). A wrong token is refused
 * (429) once that same token failed `max` times from the address, or once the address failed
 * `max × addressFactor` times with any tokens. Bounded: the oldest keys go first past 10,000.
 */
export class FailureLimiter {
  readonly #max: number;
  readonly #addressMax: number;
  readonly #windowMs: number;
  readonly #clock: { now(): number };
  readonly #byPeer = new Map<string, Window>();
  readonly #byPeerToken = new Map<string, Window>();

  constructor(opts: { max: number; windowMs: number; addressFactor?: number }, clock: { now(): number }) {
    this.#max = opts.max;
    this.#addressMax = opts.max * (opts.addressFactor ?? 5);
    this.#windowMs = opts.windowMs;
    this.#clock = clock;
  }

  #current(map: Map<string, Window>, key: string): Window | undefined {
    const e = map.get(key);
    if (e && this.#clock.now() - e.since >= this.#windowMs) {
      map.delete(key);
      return undefined;
    }
    return e;
  }

  /** The window that refuses this wrong token from this address, if any. */
  #blocking(peer: string, fingerprint: string): Window | undefined {
    const pair = this.#current(this.#byPeerToken, `${peer}\u0000${fingerprint}`);
    if (pair && pair.count >= this.#max) return pair;
    const addr = this.#current(this.#byPeer, peer);
    return addr && addr.count >= this.#addressMax ? addr : undefined;
  }

  /** Whether a wrong token (by its fingerprint) from `peer` is refused now. */
  blocked(peer: string, fingerprint: string): boolean {
    return this.#blocking(peer, fingerprint) !== undefined;
  }

  retryAfterMs(peer: string, fingerprint: string): number {
    const e = this.#blocking(peer, fingerprint);
    return e ? Math.max(0, e.since + this.#windowMs - this.#clock.now()) : 0;
  }

  failed(peer: string, fingerprint: string): void {
    this.#count(this.#byPeer, peer);
    this.#count(this.#byPeerToken, `${peer}\u0000${fingerprint}`);
  }

  #count(map: Map<string, Window>, key: string): void {
    const e = this.#current(map, key);
    if (e) e.count++;
    else {
      if (map.size >= 10_000) {
        const oldest = map.keys().next().value;
        if (oldest !== undefined) map.delete(oldest);
      }
      map.set(key, { since: this.#clock.now(), count: 1 });
    }
  }
}
