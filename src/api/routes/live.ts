// Coalesces bursts of changes into at most one call per interval: the first change after a
// quiet interval fires at once, later ones fire on the trailing edge, so the newest state is
// never held back longer than the interval and nothing is lost.
import type { Clock } from "../../shared/clock.ts";

export class Throttle {
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #fire: () => void;
  readonly #abort = new AbortController();
  #last = -Infinity;
  #scheduled = false;

  constructor(clock: Clock, intervalMs: number, fire: () => void) {
    this.#clock = clock;
    this.#intervalMs = intervalMs;
    this.#fire = fire;
  }

  poke(): void {
    if (this.#scheduled || this.#abort.signal.aborted) return;
    const wait = this.#last + this.#intervalMs - this.#clock.now();
    if (wait <= 0) {
      this.#run();
      return;
    }
    this.#scheduled = true;
    this.#clock.sleep(wait, this.#abort.signal).then(
      () => {
        this.#scheduled = false;
        this.#run();
      },
      () => undefined, // stopped
    );
  }

  stop(): void {
    this.#abort.abort();
  }

  #run(): void {
    this.#last = this.#clock.now();
    this.#fire();
  }
}
