// Dead-agent detection. An agent whose node vanished or whose network partitioned never closes its
// TCP connection, so its stream — and its cluster's "connected" flag and history — would stay open
// forever. Core pings every agent connection and drops the one that stops answering; the stream's
// end then marks the cluster disconnected and history records a gap.
import type { Clock } from "../../shared/clock.ts";

export interface PeerCheck {
  /** Time between pings. */
  intervalMs: number;
  /** How long an unanswered ping may stay out before the connection counts as dead. */
  timeoutMs: number;
}

export const DEFAULT_PEER_CHECK: PeerCheck = { intervalMs: 20_000, timeoutMs: 20_000 };

/** What `watchPeer` needs of an HTTP/2 session. */
export interface Pingable {
  readonly destroyed: boolean;
  ping(callback: (err: Error | null) => void): boolean;
  destroy(): void;
}

/**
 * Pings `session` every `check.intervalMs` until `signal` aborts; destroys it when a ping errors
 * or stays unanswered for `check.timeoutMs`. Resolves when it stops.
 */
export async function watchPeer(
  session: Pingable,
  check: PeerCheck,
  clock: Clock,
  signal: AbortSignal,
  onDead: (why: string) => void,
): Promise<void> {
  // A function, not a condition: both flags change while this awaits.
  const gone = (): boolean => signal.aborted || session.destroyed;
  while (!gone()) {
    if (!(await pause(clock, check.intervalMs, signal)) || gone()) return;
    const waiting = new AbortController();
    const stop = (): void => waiting.abort();
    signal.addEventListener("abort", stop, { once: true });
    try {
      const answer = new Promise<string | undefined>((resolve) => {
        try {
          // false = too many pings outstanding already: the earlier ones are still being timed.
          if (!session.ping((err) => resolve(err ? `ping failed: ${err.message}` : undefined)))
            resolve(undefined);
        } catch (err) {
          resolve(`ping failed: ${(err as Error).message}`);
        }
      });
      const late = pause(clock, check.timeoutMs, waiting.signal).then((due) =>
        due ? `no answer to a ping for ${String(check.timeoutMs)} ms` : undefined,
      );
      const why = await Promise.race([answer, late]);
      if (why !== undefined && !gone()) {
        onDead(why);
        session.destroy();
        return;
      }
    } finally {
      signal.removeEventListener("abort", stop);
      waiting.abort();
    }
  }
}

/** Sleeps; false when aborted first. */
function pause(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  return clock.sleep(ms, signal).then(
    () => true,
    () => false,
  );
}
