// The simulator's clock: real time minus a lag. The embedded default starts with a lag (the
// cluster "began" some minutes ago) and fast-forwards it away, so a newcomer's first screen
// already has history — churn, disruptions, lifecycle — yet every timestamp stays honest.
import type { Clock } from "../shared/clock.ts";

/** How often a sleeper looks at the clock again while it fast-forwards (real milliseconds). */
const FAST_FORWARD_POLL_MS = 5;

export class LaggingClock implements Clock {
  readonly #base: Clock;
  #lag: number;

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

  /** Moves this clock `ms` closer to real time (never past it). */
  catchUp(ms: number): void {
    this.#lag = Math.max(0, this.#lag - ms);
  }

  /**
   * Resolves once `ms` of this clock's time has passed. While it fast-forwards that is sooner
   * than `ms` of real time, so loops timed by it (e.g. the history sampler) keep pace with the
   * simulated cluster instead of skipping the minutes it jumps over.
   */
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    const until = this.now() + ms;
    for (;;) {
      const left = until - this.now();
      if (left <= 0) return;
      await this.#base.sleep(this.#lag > 0 ? Math.min(left, FAST_FORWARD_POLL_MS) : left, signal);
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
