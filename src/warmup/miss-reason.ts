// Why a warm node went unused, in its own module so that stats.ts (which counts misses) and
// backoff.ts (which backs off after them) import it one way, without a circle through fit/limits.ts.

/**
 * ttl: nobody came in time; node-gone: the warm node disappeared; disabled / pool-deleted: policy
 * or pool went away; invalid: Wave's annotations were unreadable; lost: the warmup pod vanished
 * (deleted by someone) with no real pod on the node.
 */
export const missReasons = ["ttl", "node-gone", "disabled", "pool-deleted", "invalid", "lost"] as const;
export type MissReason = (typeof missReasons)[number];
