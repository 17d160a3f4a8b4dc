// Exponential backoff with "full jitter" (delay = random × min(cap, initial × factor^attempt)):
// spreads reconnecting clients evenly so a restarted apiserver is not hit in lockstep.

export interface BackoffOptions {
  /** Ceiling of the first delay, ms. */
  initialMs: number;
  /** Largest ceiling, ms. */
  maxMs: number;
  /** Growth per attempt (default 2). */
  factor?: number;
  /** Uniform [0, 1) source; inject a fixed one in tests (default Math.random). */
  random?: () => number;
  /** "full" (default) draws in [0, ceiling); "none" returns the ceiling itself. */
  jitter?: "full" | "none";
}

/** The ceiling for a 0-based attempt, without jitter. */
export function backoffCeiling(attempt: number, opts: BackoffOptions): number {
  const factor = opts.factor ?? 2;
  // factor ** attempt overflows to Infinity for huge attempts, which min() then caps.
  return Math.min(opts.maxMs, opts.initialMs * factor ** Math.max(0, attempt));
}

export class Backoff {
  readonly #opts: BackoffOptions;
  #attempt = 0;

  constructor(opts: BackoffOptions) {
    if (!(opts.initialMs > 0) || !(opts.maxMs >= opts.initialMs)) {
      throw new Error(`invalid backoff: initialMs ${opts.initialMs} must be > 0 and ≤ maxMs ${opts.maxMs}`);
    }
    if ((opts.factor ?? 2) < 1) throw new Error(`invalid backoff: factor ${opts.factor ?? 2} must be ≥ 1`);
    this.#opts = opts;
  }

  /** Attempts since the last reset. */
  get attempt(): number {
    return this.#attempt;
  }

  /** The next delay in ms (integer), advancing the attempt count. */
  next(): number {
    const ceiling = backoffCeiling(this.#attempt, this.#opts);
    this.#attempt++;
    if (this.#opts.jitter === "none") return Math.round(ceiling);
    const r = (this.#opts.random ?? Math.random)();
    const unit = Math.min(Math.max(r, 0), 1);
    return Math.floor(unit * ceiling);
  }

  /** Back to the first attempt (call after a healthy period). */
  reset(): void {
    this.#attempt = 0;
  }
}
