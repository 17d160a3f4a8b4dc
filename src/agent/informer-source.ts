// AgentSource over the hardened informers (src/kube/informer): one informer per forwarded kind,
// every add/update/delete forwarded as a change, and every snapshot a fresh paged LIST of each
// kind. Objects are trimmed as they arrive (the informers' transform) and none is kept whole (ADR
// 0021): the ClusterState for the warmup controller beside the agent holds its projection
// (projection.ts), the informers of those kinds cache the same projected objects, the others
// stubs (name, namespace, resourceVersion — what a relist's diff compares). Events not about
// Karpenter are not forwarded at all.
import { KubeApiError } from "../kube/port.ts";
import type { KubeClient } from "../kube/port.ts";
import { Informer, stub } from "../kube/informer/informer.ts";
import type { InformerOptions } from "../kube/informer/informer.ts";
import type { KindTypes } from "../kube/kinds.ts";
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import type { AgentSource, SourceChange, SourceStream } from "./source.ts";
import { trim } from "./trim.ts";
import { project } from "../state/projection.ts";
import { WIRE_KINDS, WIRE_POLICY_KINDS } from "../wire/wire.ts";
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
   * A state the same informers also write (the kinds `followCluster` follows, as projection.ts
   * projects them), for the warmup controller beside the agent (ADR 0014): no second set of watches.
   */
  state?: ClusterState;
}

type FollowedKind = (typeof FOLLOWED_KINDS)[number];

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
    // Until the first lists are in, nothing is queued: the first snapshot is a LIST made after them.
    let forwarding = false;
    const push = (c: SourceChange): void => {
      if (!forwarding) return;
      queue.push(c);
      wake?.();
    };
    const state = this.#o.state;
    for (const kind of WIRE_KINDS) {
      // NodeOverlays too: the warmup cost cap prices a node as Karpenter does (src/karpenter/overlay.ts).
      const followed =
        state !== undefined &&
        ((FOLLOWED_KINDS as readonly string[]).includes(kind) || kind === "NodeOverlay");
      // A followed kind's cache holds the projection the state holds (one object for both);
      // every other kind's cache holds stubs.
      const projected = new WeakMap<object, KindTypes[WireKind]>();
      const projectOnce = (obj: KindTypes[WireKind]): KindTypes[WireKind] => {
        let p = projected.get(obj);
        if (p === undefined) {
          p = project(kind as FollowedKind, obj as never);
          projected.set(obj, p);
        }
        return p;
      };
      const inf = new Informer<WireKind>({
        client: this.#o.client,
        kind,
        ...(this.#o.clock ? { clock: this.#o.clock } : {}),
        ...(this.#o.log ? { log: this.#o.log.child({ informer: kind }) } : {}),
        ...this.#o.informer?.[kind],
        transform: trimmer(kind),
        cacheAs: followed ? projectOnce : stub,
      });
      inf.on("add", (obj) => push({ type: "upsert", object: wire(kind, obj) }));
      inf.on("update", (obj, old) => {
        // Periodic resyncs re-deliver unchanged objects: nothing to send.
        if (obj === old) return;
        push({ type: "upsert", object: wire(kind, obj) });
      });
      // After a relist the deleted object is its stub: its kind and key are all core needs.
      inf.on("delete", (obj) => push({ type: "delete", object: wire(kind, obj) }));
      if (state && followed) {
        const k = kind as FollowedKind;
        inf.on("add", (obj) => state.apply(k, "add", projectOnce(obj) as never));
        inf.on("update", (obj, old) => {
          if (obj !== old) state.apply(k, "update", projectOnce(obj) as never);
        });
        inf.on("delete", (obj) => state.apply(k, "delete", obj as never));
      }
      this.informers.push(inf);
    }
    for (const inf of this.informers) inf.start(signal);
    // The policy CRs do not hold up the snapshot: while their CRDs are missing their informers
    // retry with backoff, and once listed their objects reach core as changes.
    await Promise.all(this.informers.filter((i) => !WIRE_POLICY_KINDS.includes(i.kind)).map((i) => i.synced));
    this.#synced();
    forwarding = true;
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
    const informers = this.informers;
    return {
      list: () => this.#list(signal),
      changes: changes(),
      trimmed: true,
      count: () => informers.reduce((n, i) => n + i.size, 0),
    };
  }

  /**
   * A snapshot: a fresh paged LIST of every kind, trimmed page by page (the informers' selectors
   * and transform). Watch events that arrive meanwhile follow it as deltas: one older than the
   * LIST briefly shows an object's earlier state, until the watch delivers the one the LIST had.
   */
  async *#list(signal: AbortSignal): AsyncGenerator<WireObject[]> {
    for (const inf of this.informers) {
      try {
        for await (const page of inf.pages(signal)) yield page.items.map((o) => wire(inf.kind, o));
      } catch (err) {
        // A policy CRD (or Karpenter's NodeOverlay, before v1.8) not installed: nothing of that
        // kind (its informer keeps retrying). NodeOverlays not readable (an agent role from before
        // they were streamed) cost their prices only, never the rest of the snapshot.
        const optional =
          KubeApiError.is(err, 404) || (inf.kind === "NodeOverlay" && KubeApiError.is(err, 403));
        if (!(WIRE_POLICY_KINDS.includes(inf.kind) && optional)) throw err;
      }
    }
  }
}
