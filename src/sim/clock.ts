// The simulator's clock: real time minus a lag. The embedded default starts with a lag (the
// cluster "began" some minutes ago) and fast-forwards it away, so a newcomer's first screen
// already has history — churn, disruptions, lifecycle — yet every timestamp stays honest.
import type { Clock } from "../shared/clock.ts";

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

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.#base.sleep(ms, signal);
  }
}
