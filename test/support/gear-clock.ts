// Real time, pinned to start at a chosen moment (the living scenario's demand follows the time of
// day), that a test can gear up: at speed k, k ms of this clock pass per real ms. Sleeps wake in
// small real slices, so a change of gear takes effect at once. A whole `wave start` runs on it.
import { realClock, type Clock } from "../../src/shared/clock.ts";

export class GearClock implements Clock {
  #base: number;
  #real = Date.now();
  #speed = 1;

  constructor(startAt: number) {
    this.#base = startAt;
  }

  now(): number {
    return this.#base + (Date.now() - this.#real) * this.#speed;
  }

  gear(speed: number): void {
    this.#base = this.now();
    this.#real = Date.now();
    this.#speed = speed;
  }

  /** Runs `ms` of this clock at `speed`, then back to real time. */
  async run(ms: number, speed: number): Promise<void> {
    const until = this.now() + ms;
    this.gear(speed);
    while (this.now() < until) await new Promise((r) => setTimeout(r, 100));
    this.gear(1);
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    const until = this.now() + ms;
    for (;;) {
      const left = until - this.now();
      if (left <= 0) return;
      await realClock.sleep(Math.max(1, Math.min(left / this.#speed, 200)), signal);
    }
  }
}
