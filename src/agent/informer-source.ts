// The agent's real source: one hardened informer per kind Wave streams, cut into a snapshot
// plus an ordered change stream. Objects are trimmed here, so only what Wave needs leaves the
// cluster; Events that are not Karpenter's are dropped at the source.
import { Informer } from "../kube/informer/informer.ts";
import type { KubeClient } from "../kube/port.ts";
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import type { AgentSource, SourceChange, SourceStream } from "./source.ts";
import { trim } from "./trim.ts";
import { WIRE_KINDS, type WireKind, type WireObject } from "./wire.ts";

export interface InformerSourceOptions {
  client: KubeClient;
  clock?: Clock;
  log?: Logger;
  /** Informers' periodic resync (0 = off). */
  resyncMs?: number;
}

export class InformerSource implements AgentSource {
  readonly #o: InformerSourceOptions;
  readonly informers = new Map<WireKind, Informer<WireKind>>();

  constructor(opts: InformerSourceOptions) {
    this.#o = opts;
  }

  async open(signal: AbortSignal): Promise<SourceStream> {
    const queue: SourceChange[] = [];
    let wake: (() => void) | undefined;
    let synced = false;
    const push = (c: SourceChange): void => {
      if (!synced) return; // before the cut, the snapshot below carries the state
      queue.push(c);
      wake?.();
    };
    const wire = (kind: WireKind, object: unknown): WireObject | undefined =>
      trim({ kind, object } as WireObject);
    for (const kind of WIRE_KINDS) {
      const inf = new Informer({
        client: this.#o.client,
        kind,
        ...(this.#o.clock ? { clock: this.#o.clock } : {}),
        ...(this.#o.log ? { log: this.#o.log.child({ informer: kind }) } : {}),
        ...(this.#o.resyncMs ? { resyncMs: this.#o.resyncMs } : {}),
      });
      inf.on("add", (o) => {
        const w = wire(kind, o);
        if (w) push({ type: "upsert", object: w });
      });
      inf.on("update", (o, old) => {
        if (o === old) return; // resync: nothing changed
        const w = wire(kind, o);
        if (w) push({ type: "upsert", object: w });
      });
      inf.on("delete", (o) => {
        const w = wire(kind, o);
        if (w) push({ type: "delete", object: w });
      });
      this.informers.set(kind, inf);
      inf.start(signal);
    }
    await Promise.all([...this.informers.values()].map((i) => i.synced));
    // The cut: everything cached now is the snapshot; later events are changes.
    const objects: WireObject[] = [];
    for (const [kind, inf] of this.informers) {
      for (const o of inf.list()) {
        const w = wire(kind, o);
        if (w) objects.push(w);
      }
    }
    synced = true;
    async function* changes(): AsyncGenerator<SourceChange> {
      while (!signal.aborted) {
        const next = queue.shift();
        if (next) {
          yield next;
          continue;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          signal.addEventListener("abort", () => resolve(), { once: true });
        });
        wake = undefined;
      }
    }
    return { objects, changes: changes() };
  }
}
