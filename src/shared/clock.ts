// An injectable clock: controllers and detectors take one so tests never sleep.

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms` of this clock's time. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason as Error);
        return;
      }
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason as Error);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

interface Sleeper {
  at: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** A manual clock for tests: time moves only when `advance` is called. */
export class FakeClock implements Clock {
  #now: number;
  #sleepers: Sleeper[] = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason as Error);
        return;
      }
      const sleeper: Sleeper = { at: this.#now + Math.max(0, ms), resolve, reject };
      this.#sleepers.push(sleeper);
      signal?.addEventListener(
        "abort",
        () => {
          this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
          reject(signal.reason as Error);
        },
        { once: true },
      );
    });
  }

  /** Number of pending sleeps (lets tests wait until code under test is parked). */
  get pending(): number {
    return this.#sleepers.length;
  }

  /** Moves time forward and wakes every sleeper that is due, in order. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      const due = this.#sleepers.filter((s) => s.at <= target).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.#sleepers = this.#sleepers.filter((s) => s !== due);
      this.#now = Math.max(this.#now, due.at);
      due.resolve();
      // Let the woken code run (and maybe sleep again) before the next one.
      await flushMicrotasks();
    }
    this.#now = target;
    await flushMicrotasks();
  }
}

export async function flushMicrotasks(rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Runs `step`, then again every `intervalMs` of `clock`'s time, until `signal` aborts. */
export async function repeatUntilAborted(
  clock: Clock,
  signal: AbortSignal,
  intervalMs: number,
  step: () => Promise<void>,
): Promise<void> {
  while (!signal.aborted) {
    await step();
    try {
      await clock.sleep(intervalMs, signal);
    } catch {
      return;
    }
  }
}
