// Bearer-token authentication with two roles. Viewers read; admins also change policies.
// Tokens are compared in constant time and never logged.
import { timingSafeEqual, createHash, randomBytes } from "node:crypto";

export type Role = "viewer" | "admin";

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
export function roleFor(header: string | undefined, tokens: Tokens): Role | undefined {
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

export const satisfies = (have: Role, need: Role): boolean => need === "viewer" || have === "admin";

/**
 * Failed logins per client address in a fixed window: past `max`, the address is refused (429)
 * until its window ends. Bounded: the oldest addresses go first past 10,000.
 */
export class FailureLimiter {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #clock: { now(): number };
  readonly #byPeer = new Map<string, { since: number; count: number }>();

  constructor(opts: { max: number; windowMs: number }, clock: { now(): number }) {
    this.#max = opts.max;
    this.#windowMs = opts.windowMs;
    this.#clock = clock;
  }

  #current(peer: string): { since: number; count: number } | undefined {
    const e = this.#byPeer.get(peer);
    if (e && this.#clock.now() - e.since >= this.#windowMs) {
      this.#byPeer.delete(peer);
      return undefined;
    }
    return e;
  }

  blocked(peer: string): boolean {
    return (this.#current(peer)?.count ?? 0) >= this.#max;
  }

  retryAfterMs(peer: string): number {
    const e = this.#current(peer);
    return e ? Math.max(0, e.since + this.#windowMs - this.#clock.now()) : 0;
  }

  failed(peer: string): void {
    const e = this.#current(peer);
    if (e) e.count++;
    else {
      if (this.#byPeer.size >= 10_000) {
        const oldest = this.#byPeer.keys().next().value;
        if (oldest !== undefined) this.#byPeer.delete(oldest);
      }
      this.#byPeer.set(peer, { since: this.#clock.now(), count: 1 });
    }
  }
}
