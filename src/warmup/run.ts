// Drives a WarmupController the way controller-runtime drives a reconciler: each pool is
// reconciled when its requeue time comes, failures back off per pool, and a periodic full pass
// picks up new pools and orphans. Meant to run only while this replica leads (see leader.ts).
import type { Clock } from "../shared/clock.ts";
import { backoffCeiling } from "../shared/backoff.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import type { ReconcileResult } from "./controller.ts";

/** The part of WarmupController the loop needs. */
export interface Reconciler {
  readonly name: string;
  start(): Promise<Map<string, ReconcileResult>>;
  reconcileAll(): Promise<Map<string, ReconcileResult>>;
  reconcile(pool: string): Promise<ReconcileResult>;
}

export interface RunOptions {
  clock: Clock;
  signal: AbortSignal;
  log?: Logger;
  /** Full pass (new pools, orphans) at least this often, ms. */
  resyncMs?: number;
  /**
   * Optional event source (e.g. core's state subscription): calling `poke(pool)` reconciles that
   * pool now instead of at its requeue time, so a hit releases its node promptly. Returns an
   * unsubscribe function.
   */
  triggers?: (poke: (pool: string) => void) => () => void;
  /**
   * A poked pool is reconciled at most this often (ms of the clock; default 0): pokes in between
   * fold into one pass, as controller-runtime's rate limiter does. On the simulator's fast-forward
   * a burst of changes would otherwise cost a pass each.
   */
  pokeIntervalMs?: number;
}

/** Why a nap ends early (a poke), as the abort reason. */
const POKED = new Error("poked");

export async function runController(c: Reconciler, opts: RunOptions): Promise<void> {
  const { clock, signal } = opts;
  const log = (opts.log ?? silentLogger).child({ controller: c.name });
  const resyncMs = opts.resyncMs ?? 60_000;
  const due = new Map<string, number>();
  const lastRun = new Map<string, number>();
  const pokeIntervalMs = opts.pokeIntervalMs ?? 0;
  const failures = new Map<string, number>();
  const retryIn = (key: string): number => {
    const n = failures.get(key) ?? 0;
    failures.set(key, n + 1);
    return backoffCeiling(n, { initialMs: 1_000, maxMs: 300_000 });
  };
  // start() (PriorityClass, adoption) until it has succeeded once, then plain full passes.
  let started = false;
  const aborted = (): boolean => signal.aborted;
  const full = async (): Promise<number> => {
    try {
      const results = await (started ? c.reconcileAll() : c.start());
      started = true;
      const now = clock.now();
      for (const [pool, r] of results) due.set(pool, now + r.requeueAfter);
      failures.delete("");
      return now + resyncMs;
    } catch (err) {
      log.error("full reconcile failed", { error: err });
      return clock.now() + retryIn("");
    }
  };
  // One controller per nap, aborted by a poke or by `signal` (linked once: a composite
  // AbortSignal.any per nap cost a tenth of a fast-forward's CPU in its listeners).
  let nap = new AbortController();
  const stop = (): void => nap.abort(signal.reason);
  signal.addEventListener("abort", stop, { once: true });
  const unsubscribe = opts.triggers?.((pool) => {
    const at = Math.max(clock.now(), (lastRun.get(pool) ?? -Infinity) + pokeIntervalMs);
    if (at < (due.get(pool) ?? Infinity)) due.set(pool, at);
    // A reason of our own: the default one is a DOMException with a stack, once per poke.
    if (!nap.signal.aborted) nap.abort(POKED);
  });
  let nextFull = await full();
  while (!aborted()) {
    if (clock.now() >= nextFull) {
      nextFull = await full();
      continue;
    }
    for (const [pool, at] of [...due.entries()].sort((a, b) => a[1] - b[1])) {
      if (aborted() || at > clock.now()) continue;
      try {
        lastRun.set(pool, clock.now());
        const r = await c.reconcile(pool);
        failures.delete(pool);
        due.set(pool, clock.now() + r.requeueAfter);
      } catch (err) {
        const wait = retryIn(pool);
        log.warn("reconcile failed", { pool, error: err, retryInMs: wait });
        due.set(pool, clock.now() + wait);
      }
    }
    const wake = Math.min(nextFull, ...due.values());
    if (wake <= clock.now()) continue; // poked while reconciling
    try {
      await clock.sleep(wake - clock.now(), nap.signal);
    } catch {
      if (aborted()) break;
      nap = new AbortController();
    }
  }
  unsubscribe?.();
  signal.removeEventListener("abort", stop);
}
