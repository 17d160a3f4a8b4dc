// The simulator's clock: real time minus a lag. The embedded default starts with a lag (the
// cluster "began" some minutes ago) and fast-forwards it away, so a newcomer's first screen
// already has history — churn, disruptions, lifecycle — yet every timestamp stays honest.
import { realClock, type Clock } from "../shared/clock.ts";

/** Why a sleeper's real-time wait ends early: the clock jumped (`catchUp`). */
const JUMPED = new Error("the lagging clock jumped");

export class LaggingClock implements Clock {
  readonly #base: Clock;
  #lag: number;
  /** Sleepers waiting on real time while the clock lags: a jump wakes them to look again. */
  readonly #sleepers = new Set<AbortController>();

  constructor(base: Clock, lagMs: number) {
    this.#base = base;
    this.#lag = Math.max(0, lagMs);
  }

  get lag(): number {
    return this.#lag;
  }

  now(): number {
    return this.#base.now() - this.#lag;
  }

  /** Moves this clock `ms` closer to real time (never past it), waking its sleepers. */
  catchUp(ms: number): void {
    this.#lag = Math.max(0, this.#lag - ms);
    if (this.#sleepers.size === 0) return;
    const sleepers = [...this.#sleepers];
    this.#sleepers.clear();
    for (const s of sleepers) s.abort(JUMPED);
  }

  /**
   * Resolves once `ms` of this clock's time has passed. While it fast-forwards that is sooner
   * than `ms` of real time, so loops timed by it (e.g. the history sampler) keep pace with the
   * simulated cluster instead of skipping the minutes it jumps over: a sleeper waits for the real
   * time left or the next jump, whichever comes first. (It used to look every 5 ms: a day's
   * fast-forward spent a tenth of its CPU on those wake-ups and their abort signals.)
   */
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    const until = this.now() + ms;
    for (;;) {
      signal?.throwIfAborted();
      const left = until - this.now();
      if (left <= 0) return;
      if (this.#lag === 0) return this.#base.sleep(left, signal);
      const woken = new AbortController();
      const onAbort = (): void => woken.abort(signal?.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#sleepers.add(woken);
      try {
        await this.#base.sleep(left, woken.signal);
      } catch (err) {
        if (err !== JUMPED) throw err;
      } finally {
        this.#sleepers.delete(woken);
        signal?.removeEventListener("abort", onAbort);
      }
    }
  }
}

/** Default largest fast-forward step: under the informers' 180 s watchdog, so a jump never reads as a stall. */
export const MAX_FAST_FORWARD_STEP_MS = 150_000;

/**
 * How far one fast-forward step jumps, by how far behind real time the cluster still is: coarse
 * far in the past (a day of history in a few hundred steps), finer as it nears now (1/60 of the
 * lag, so the last minutes before the first screen run second by second). Whole seconds.
 */
export function fastForwardStepMs(lagMs: number, maxStepMs = MAX_FAST_FORWARD_STEP_MS): number {
  const step = Math.min(maxStepMs, Math.max(1000, lagMs / 60));
  return Math.min(Math.max(0, lagMs), Math.round(step / 1000) * 1000);
}

/**
 * Real time moved to start at `startAt`: the simulated cluster's "now" pinned to a chosen moment
 * (e.g. a time of day, for tests whose demand follows the day's curve), then running at real pace.
 */
export function pinnedClock(startAt: number, base: Clock = realClock): Clock {
  const offset = startAt - base.now();
  return {
    now: () => base.now() + offset,
    sleep: (ms, signal) => base.sleep(ms, signal),
  };
}
