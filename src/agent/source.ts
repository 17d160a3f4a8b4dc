// Where the agent's objects come from. The real source adapts the hardened informers
// (src/kube/informer); tests and the benchmark use MemorySource.
import type { WireObject } from "../wire/wire.ts";

export type SourceChange =
  | { type: "upsert"; object: WireObject }
  | { type: "delete"; object: WireObject }
  /** The source lost track (e.g. an informer relisted): this is the complete new state. */
  | { type: "replace"; objects: WireObject[] };

export interface SourceStream {
  /** Everything that exists when the stream opens. */
  objects: WireObject[];
  /** Every change after `objects`, in order; ends when the signal aborts. */
  changes: AsyncIterable<SourceChange>;
  /**
   * The source trimmed every object already (trim.ts; Events not forwarded are left out), so the
   * agent sends them as they are instead of trimming again.
   */
  trimmed?: boolean;
}

export interface AgentSource {
  /**
   * Opens the source: resolves once the initial lists are complete. `objects` and `changes` are
   * cut at one point, so applying the changes to the objects always gives the current state.
   */
  open(signal: AbortSignal): Promise<SourceStream>;
}

/** An in-memory source: `push` changes, they reach the agent in order. */
export class MemorySource implements AgentSource {
  readonly #initial: WireObject[];
  #queue: SourceChange[] = [];
  #wake: (() => void) | undefined;
  #opened = false;

  constructor(initial: WireObject[] = []) {
    this.#initial = initial;
  }

  push(...changes: SourceChange[]): void {
    this.#queue.push(...changes);
    this.#wake?.();
  }

  open(signal: AbortSignal): Promise<SourceStream> {
    if (this.#opened) return Promise.reject(new Error("MemorySource can only be opened once"));
    this.#opened = true;
    return Promise.resolve({ objects: this.#initial, changes: this.#drain(signal) });
  }

  async *#drain(signal: AbortSignal): AsyncGenerator<SourceChange> {
    while (!signal.aborted) {
      const next = this.#queue.shift();
      if (next) {
        yield next;
        continue;
      }
      await new Promise<void>((resolve) => {
        const done = (): void => {
          this.#wake = undefined;
          signal.removeEventListener("abort", done);
          resolve();
        };
        this.#wake = done;
        signal.addEventListener("abort", done, { once: true });
      });
    }
  }
}
