// AgentSource over the hardened informers (src/kube/informer): one informer per forwarded kind,
// their initial lists as the snapshot, and every later add/update/delete as a change. Objects are
// trimmed as they arrive (the informers' transform), so the caches never hold whole Pods, Nodes
// or Events — only what Wave forwards; Events not about Karpenter are not kept at all.
import type { KubeClient } from "../kube/port.ts";
import { Informer } from "../kube/informer/informer.ts";
import type { InformerOptions } from "../kube/informer/informer.ts";
import type { KindTypes } from "../kube/kinds.ts";
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import type { AgentSource, SourceChange, SourceStream } from "./source.ts";
import { trim } from "./trim.ts";
import { WIRE_KINDS } from "../wire/wire.ts";
import type { ClusterState } from "../state/cluster.ts";
import { FOLLOWED_KINDS } from "../state/follow.ts";
import type { WireKind, WireObject } from "../wire/wire.ts";

export interface InformerSourceOptions {
  client: KubeClient;
  clock?: Clock;
  log?: Logger;
  /** Extra informer settings per kind (e.g. an Event field selector on large clusters). */
  informer?: Partial<Record<WireKind, Partial<InformerOptions<WireKind>>>>;
  /**
   * A state the same informers also write (the kinds `followCluster` follows), for the warmup
   * controller beside the agent (ADR 0014): no second set of watches.
   */
  state?: ClusterState;
}

const wire = <K extends WireKind>(kind: K, object: KindTypes[K]): WireObject =>
  ({ kind, object }) as WireObject;

/** trim.ts for one kind, as an informer transform. */
const trimmer =
  <K extends WireKind>(kind: K) =>
  (object: KindTypes[K]): KindTypes[K] | undefined =>
    trim(wire(kind, object))?.object as KindTypes[K] | undefined;

export class InformerSource implements AgentSource {
  readonly #o: InformerSourceOptions;
  readonly informers: Informer<WireKind>[] = [];
  /** Resolves once every informer's first list is in (and in `state`). */
  readonly synced: Promise<void>;
  #synced!: () => void;

  constructor(opts: InformerSourceOptions) {
    this.#o = opts;
    this.synced = new Promise((r) => (this.#synced = r));
  }

  async open(signal: AbortSignal): Promise<SourceStream> {
    const queue: SourceChange[] = [];
    let wake: (() => void) | undefined;
    const push = (c: SourceChange): void => {
      queue.push(c);
      wake?.();
    };
    for (const kind of WIRE_KINDS) {
      const inf = new Informer<WireKind>({
        client: this.#o.client,
        kind,
        ...(this.#o.clock ? { clock: this.#o.clock } : {}),
        ...(this.#o.log ? { log: this.#o.log.child({ informer: kind }) } : {}),
        ...this.#o.informer?.[kind],
        transform: trimmer(kind),
      });
      inf.on("add", (obj) => push({ type: "upsert", object: wire(kind, obj) }));
      inf.on("update", (obj, old) => {
        // Periodic resyncs re-deliver unchanged objects: nothing to send.
        if (obj === old) return;
        push({ type: "upsert", object: wire(kind, obj) });
      });
      inf.on("delete", (obj) => push({ type: "delete", object: wire(kind, obj) }));
      const state = this.#o.state;
      if (state && (FOLLOWED_KINDS as readonly string[]).includes(kind)) {
        const k = kind as (typeof FOLLOWED_KINDS)[number];
        inf.on("add", (obj) => state.apply(k, "add", obj as never));
        inf.on("update", (obj, old) => {
          if (obj !== old) state.apply(k, "update", obj as never);
        });
        inf.on("delete", (obj) => state.apply(k, "delete", obj as never));
      }
      this.informers.push(inf);
    }
    for (const inf of this.informers) inf.start(signal);
    await Promise.all(this.informers.map((i) => i.synced));
    this.#synced();
    // Listeners run synchronously inside the informers, so right here the caches and the queue
    // agree: the caches are the snapshot and everything queued so far is already in them.
    const objects = this.informers.flatMap((inf) => inf.list().map((o) => wire(inf.kind, o)));
    queue.length = 0;
    async function* changes(): AsyncGenerator<SourceChange> {
      while (!signal.aborted) {
        const next = queue.shift();
        if (next) {
          yield next;
          continue;
        }
        await new Promise<void>((resolve) => {
          const done = (): void => {
            wake = undefined;
            signal.removeEventListener("abort", done);
            resolve();
          };
          wake = done;
          signal.addEventListener("abort", done, { once: true });
        });
      }
    }
    return { objects, changes: changes(), trimmed: true };
  }
}
