// Cold starts (issue 38): pods that waited for a new node — their node was created after them —
// and how long each took from creation to Ready. Core derives them from its own state as pods
// become Ready (the state ingest writes, or the embedded cluster's prehistory) and stores them; a
// warmup hit's time saved is measured against their median (dashboard/figures/time-saved.ts).
import type { ColdStart, Store } from "../store/store.ts";
import type { ClusterState, StateChange } from "../../state/cluster.ts";
import type { Pod } from "../../objects/kube.ts";
import { NODE_POOL_LABEL } from "../../objects/karpenter.ts";
import { isWavePod, MIRROR_POD_ANNOTATION } from "../../objects/wave.ts";
import { isDaemonSetPod } from "../../karpenter/room.ts";
import { readyAt, startSeconds } from "../../karpenter/pod-start.ts";
import type { Logger } from "../../shared/log.ts";

const parse = (s: string | undefined): number => (s === undefined ? NaN : Date.parse(s));

/**
 * The cold start a pod's change shows, if any: the pod is Ready now and was not before, it is
 * workload (not Wave's, not a DaemonSet's, not a static pod), and its node — of a NodePool — was
 * created after the pod (whole seconds, as creationTimestamp has them).
 */
export function coldStartOf(
  clusterId: string,
  change: StateChange,
  nodeOf: (
    name: string,
  ) => { metadata: { labels?: Record<string, string>; creationTimestamp?: string } } | undefined,
): ColdStart | undefined {
  if (change.kind !== "Pod" || change.type === "delete") return undefined;
  const pod: Pod = change.object;
  const at = readyAt(pod);
  if (at === undefined) return undefined;
  if (change.previous !== undefined && readyAt(change.previous) === at) return undefined;
  if (
    isWavePod(pod) ||
    isDaemonSetPod(pod) ||
    pod.metadata.annotations?.[MIRROR_POD_ANNOTATION] !== undefined
  )
    return undefined;
  const node = nodeOf(pod.spec.nodeName ?? "");
  const pool = node?.metadata.labels?.[NODE_POOL_LABEL];
  const seconds = startSeconds(pod);
  if (node === undefined || pool === undefined || seconds === undefined) return undefined;
  if (!(parse(node.metadata.creationTimestamp) > parse(pod.metadata.creationTimestamp))) return undefined;
  return {
    clusterId,
    pool,
    pod: `${pod.metadata.namespace ?? ""}/${pod.metadata.name ?? ""}`,
    node: pod.spec.nodeName ?? "",
    at,
    seconds,
  };
}

/** Most cold starts held for the next write; beyond it the oldest go (logged). */
const MAX_PENDING = 10_000;

/**
 * Watches each cluster's state for cold starts and writes them to the store. `flush()` writes
 * what is queued (the relay calls it before measuring a hit against them).
 */
export class ColdStartRecorder {
  readonly #store: Pick<Store, "writeColdStarts">;
  readonly #log: Logger;
  readonly #attached = new WeakSet<ClusterState>();
  #pending: ColdStart[] = [];
  #writing: Promise<void> | undefined;
  #scheduled = false;

  constructor(o: { store: Pick<Store, "writeColdStarts">; log: Logger }) {
    this.#store = o.store;
    this.#log = o.log;
  }

  /** Follows one cluster's state (once per state). */
  attach(clusterId: string, state: ClusterState): void {
    if (this.#attached.has(state)) return;
    this.#attached.add(state);
    state.subscribe(
      (c) => {
        const row = coldStartOf(clusterId, c, (name) => state.node(name));
        if (row === undefined) return;
        this.#pending.push(row);
        if (this.#pending.length > MAX_PENDING) {
          this.#pending.splice(0, this.#pending.length - MAX_PENDING);
          this.#log.warn("cold starts dropped: the store is behind", { cluster: clusterId });
        }
        // One write per turn of the event loop, however many pods became Ready in it.
        if (!this.#scheduled) {
          this.#scheduled = true;
          setImmediate(() => {
            this.#scheduled = false;
            void this.flush();
          });
        }
      },
      ["Pod"],
    );
  }

  /** Writes the queue (joining a write under way, then writing what came meanwhile). */
  async flush(): Promise<void> {
    while (this.#writing) await this.#writing;
    if (this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    this.#writing = this.#store.writeColdStarts(batch).then(
      () => undefined,
      (err: unknown) => {
        // Kept for the next flush (a new start of the same pod is the same row: no double count).
        this.#pending = [...batch, ...this.#pending].slice(-MAX_PENDING);
        this.#log.warn("writing cold starts failed; will retry", { rows: batch.length, err });
      },
    );
    try {
      await this.#writing;
    } finally {
      this.#writing = undefined;
    }
  }
}
