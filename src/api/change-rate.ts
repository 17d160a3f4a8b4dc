// Changes per identity (issue 42: one namespace editor made ~19 audited changes a second, and the
// audit, never pruned, grew without bound). Every changing request (a route needing more than the
// viewer role, any method but GET/HEAD) takes a token from its caller's bucket: `burst` at once,
// then `perMinute`; beyond that 429 with Retry-After. Viewers' requests and reads are not counted.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Clock } from "../shared/clock.ts";
import type { Identity } from "./identity.ts";

export interface ChangeRate {
  /** Changes one identity may make at once. */
  burst: number;
  /** Sustained changes per minute per identity. */
  perMinute: number;
}

export const DEFAULT_CHANGE_RATE: ChangeRate = Object.freeze({ burst: 100, perMinute: 120 });

/** Buckets of identities idle this long are full again and dropped. */
const IDLE_MS = 10 * 60_000;

export class ChangeLimiter {
  readonly #rate: ChangeRate;
  readonly #clock: Clock;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(rate: ChangeRate, clock: Clock) {
    this.#rate = rate;
    this.#clock = clock;
  }

  /** Takes one change for `who`: 0 when allowed, else the milliseconds until the next one is. */
  take(who: string): number {
    const now = this.#clock.now();
    if (this.#buckets.size > 10_000)
      for (const [k, b] of this.#buckets) if (now - b.at > IDLE_MS) this.#buckets.delete(k);
    const perMs = this.#rate.perMinute / 60_000;
    const b = this.#buckets.get(who) ?? { tokens: this.#rate.burst, at: now };
    b.tokens = Math.min(this.#rate.burst, b.tokens + (now - b.at) * perMs);
    b.at = now;
    this.#buckets.set(who, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - b.tokens) / perMs);
  }
}

/** A change beyond its caller's rate (change-rate.ts): answered 429 here, true. */
export async function throttled(
  changes: ChangeLimiter,
  req: FastifyRequest,
  reply: FastifyReply,
  identity: Identity,
): Promise<boolean> {
  if (req.method === "GET" || req.method === "HEAD") return false;
  const waitMs = changes.take(`${identity.source}:${identity.subject}`);
  if (waitMs === 0) return false;
  await reply
    .code(429)
    .header("retry-after", String(Math.ceil(waitMs / 1000)))
    .send({ error: "too_many_requests", message: `${identity.subject}: too many changes; try again later` });
  return true;
}
