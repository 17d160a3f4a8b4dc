// Where the agent's objects come from. The real source adapts the hardened informers
// (src/kube/informer); tests and the benchmark use MemorySource.
import type { SnapshotPages } from "./outbox.ts";
import { objectKey } from "../wire/wire.ts";
import type { WireObject } from "../wire/wire.ts";

export type SourceChange =
  | { type: "upsert"; object: WireObject }
  | { type: "delete"; object: WireObject }
  /** The source lost track (e.g. an informer relisted): this is the complete new state. */
  | { type: "replace"; objects: WireObject[] };

export interface SourceStream {
  /**
   * Lists everything that exists now, page by page: read anew for every snapshot (the first one
   * and each resync), so the agent keeps no copy of the cluster (ADR 0021). Changes already in a
   * listing may also come through `changes` after it: applied again they change nothing.
   */
  list(): SnapshotPages;
  /** Every change after the stream opened, in order; ends when the signal aborts. */
  changes: AsyncIterable<SourceChange>;
  /**
   * The source trimmed every object already (trim.ts; Events not forwarded are left out), so the
   * agent sends them as they are instead of trimming again.
   */
  trimmed?: boolean;
  /** Objects the source knows of now (`wave_agent_objects`). */
  count?: () => number;
}

export interface AgentSource {
  /** Opens the source: resolves once it can list the cluster and follow its changes. */
  open(signal: AbortSignal): Promise<SourceStream>;
}

/** Listing pages of an in-memory list (the agent reads them lazily as a snapshot streams). */
const PAGE = 500;
function* pagesOf(objects: Iterable<WireObject>): Generator<WireObject[]> {
  let page: WireObject[] = [];
  for (const o of objects) {
    page.push(o);
    if (page.length >= PAGE) {
      yield page;
      page = [];
    }
  }
  if (page.length > 0) yield page;
}

const memoryKey = (o: WireObject): string => `${o.kind}\u0000${objectKey(o.object)}`;

/**
 * An in-memory source, the stand-in for an apiserver: `push` changes, they apply to its list and
 * reach the agent in order. Given a function instead of a list, that function is the listing
 * (regenerated for every snapshot, nothing kept: the benchmark's synthetic cluster) and changes
 * are passed on without being applied to it.
 */
export class MemorySource implements AgentSource {
  readonly #objects: Map<string, WireObject> | undefined;
  readonly #generate: (() => Iterable<WireObject>) | undefined;
  #queue: SourceChange[] = [];
  #wake: (() => void) | undefined;
  #opened = false;

  constructor(initial: WireObject[] | (() => Iterable<WireObject>) = []) {
    if (typeof initial === "function") this.#generate = initial;
    else this.#objects = new Map(initial.map((o) => [memoryKey(o), o]));
  }

  push(...changes: SourceChange[]): void {
    const objects = this.#objects;
    if (objects)
      for (const c of changes) {
        if (c.type === "replace") {
          objects.clear();
          for (const o of c.objects) objects.set(memoryKey(o), o);
        } else if (c.type === "upsert") objects.set(memoryKey(c.object), c.object);
        else objects.delete(memoryKey(c.object));
      }
    this.#queue.push(...changes);
    this.#wake?.();
  }

  open(signal: AbortSignal): Promise<SourceStream> {
    if (this.#opened) return Promise.reject(new Error("MemorySource can only be opened once"));
    this.#opened = true;
    const objects = this.#objects;
    const generate = this.#generate;
    return Promise.resolve({
      list: () => pagesOf(objects ? [...objects.values()] : (generate?.() ?? [])),
      changes: this.#drain(signal),
      ...(objects ? { count: () => objects.size } : {}),
    });
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
