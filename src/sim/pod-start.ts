// When a pod would have started on a cluster whose controllers act continuously, though the
// simulator acts in ticks (a fast-forward's 150 s steps, a replay at the recorded period): each
// step of a pod's start is timed from the steps before it — Karpenter's batch window after the pod
// became unschedulable, the pool's node boot from that launch, the bind once the node is ready,
// the image pull on a node that lacks the image, the kubelet's start — never later than the tick
// that carried it out. The simulator stamps pods (startTime, Ready) with these times; a 1 s tick
// stamps what it did. Images: a node has the images of the pods it ran and those Wave's pre-pull
// pulled; a pod needing another one waits for the pool's pull duration (parallel pulls).
import type { Pod } from "../objects/kube.ts";
import { isPrepullPod, isWavePod } from "../objects/wave.ts";

/** The kubelet's sync after a bind (a 1 s tick starts a bound pod on the next one). */
export const KUBELET_START_MS = 1000;

export interface PodStartTiming {
  /** Launch → node registered and Ready, per NodePool (else `bootMs`). */
  poolBootMs?: Readonly<Record<string, number>>;
  bootMs: number;
  /** How long a pod on a node without its image waits for the pull, per NodePool (default 0). */
  poolPullMs?: Readonly<Record<string, number>>;
}

const uidOf = (p: Pod): string => p.metadata.uid ?? `${p.metadata.namespace ?? ""}/${p.metadata.name ?? ""}`;
const parse = (t: string | undefined): number | undefined => {
  const v = t === undefined ? NaN : Date.parse(t);
  return Number.isNaN(v) ? undefined : v;
};

/** The images a pod's containers run (init containers first). */
export function podImages(p: Pod): string[] {
  return [...(p.spec.initContainers ?? []), ...p.spec.containers]
    .map((c) => c.image ?? "")
    .filter((i) => i !== "");
}

export class PodStartModel {
  readonly #t: PodStartTiming;
  /**
   * Per node: when it became Ready had the controllers acted continuously, and the tick it
   * registered in (by ordinal: the embedded cluster's clock moves on within a tick).
   */
  readonly #nodes = new Map<string, { ready: number; tick: number; pool: string }>();
  /** Per pod bound by the scheduler: when it would have been bound. */
  readonly #bound = new Map<string, number>();
  /** Per node: each image and when it is (or will be) on the node. */
  readonly #images = new Map<string, Map<string, number>>();
  /** Pods bound and waiting for their image: when the pull ends. */
  readonly #pulling = new Map<string, number>();

  constructor(t: PodStartTiming) {
    this.#t = t;
  }

  bootMs(pool: string): number {
    return this.#t.poolBootMs?.[pool] ?? this.#t.bootMs;
  }

  pullMs(pool: string): number {
    return this.#t.poolPullMs?.[pool] ?? 0;
  }

  /**
   * When a batch launched at `now` would have launched: the batch window (`idleMs` after its
   * newest pod became unschedulable, at most `maxMs` after its first) from when the batch opened
   * (not before: at the tick before, nothing could be launched), never after `now`.
   */
  launchAt(now: number, batchStart: number, pods: readonly Pod[], idleMs: number, maxMs: number): number {
    let newest = batchStart;
    for (const p of pods) newest = Math.max(newest, parse(p.metadata.creationTimestamp) ?? batchStart);
    return Math.min(now, newest + idleMs, batchStart + maxMs);
  }

  /** A node registered at `now`, in tick `tick`, from a launch at `launchedAt` (continuous time). */
  registered(node: string, pool: string, launchedAt: number, now: number, tick: number): void {
    this.#nodes.set(node, { ready: Math.min(now, launchedAt + this.bootMs(pool)), tick, pool });
  }

  forgetNode(node: string): void {
    this.#nodes.delete(node);
    this.#images.delete(node);
  }

  /**
   * The scheduler binds `pod` to `node` at `now`: on a node that registered this tick, as soon as
   * both the pod and the node were there; otherwise now (what freed the room happened at a tick).
   */
  bind(pod: Pod, node: string, now: number, tick: number): void {
    const n = this.#nodes.get(node);
    const created = parse(pod.metadata.creationTimestamp) ?? now;
    const from = n !== undefined && n.tick === tick ? n.ready : now;
    this.#bound.set(uidOf(pod), Math.min(now, Math.max(created, from)));
  }

  /**
   * When the kubelet of `node` starts `pod` (bound, pending), or undefined while its image is
   * still being pulled. Wave's warmup pods need no pull (the pause image every node has).
   */
  startAt(pod: Pod, node: string, now: number): number | undefined {
    const uid = uidOf(pod);
    const bound = Math.min(now, this.#bound.get(uid) ?? parse(pod.metadata.creationTimestamp) ?? now);
    let ready = bound;
    if (!isWavePod(pod) || isPrepullPod(pod)) {
      const pull = this.pullMs(this.#nodes.get(node)?.pool ?? "");
      let images = this.#images.get(node);
      if (!images) this.#images.set(node, (images = new Map<string, number>()));
      for (const img of podImages(pod)) {
        let at = images.get(img);
        if (at === undefined) images.set(img, (at = bound + pull));
        ready = Math.max(ready, at);
      }
    }
    // A pull ends, then the kubelet starts the container: not before both.
    if (ready > bound && ready + KUBELET_START_MS > now) {
      this.#pulling.set(uid, ready + KUBELET_START_MS);
      return undefined;
    }
    this.#pulling.delete(uid);
    this.#bound.delete(uid);
    return Math.min(now, ready + KUBELET_START_MS);
  }

  /** Only these pods (pending, by uid) still wait for a pull; the others are gone. */
  keepPulling(pending: ReadonlySet<string>): void {
    for (const uid of this.#pulling.keys())
      if (!pending.has(uid)) {
        this.#pulling.delete(uid);
        this.#bound.delete(uid);
      }
  }

  /** Whether a bound pod is waiting for its pull (not for the kubelet). */
  isPulling(uid: string): boolean {
    return this.#pulling.has(uid);
  }

  /** Some pod is waiting for its pull. */
  get pulling(): boolean {
    return this.#pulling.size > 0;
  }

  /** When the next pull ends (Infinity: none in flight). */
  nextPullEnd(): number {
    let due = Infinity;
    for (const at of this.#pulling.values()) due = Math.min(due, at);
    return due;
  }

  /** The images on `node` by `now`: what its kubelet reports (node.status.images). */
  imagesOn(node: string, now: number): string[] {
    return [...(this.#images.get(node) ?? [])]
      .filter(([, at]) => at <= now)
      .map(([img]) => img)
      .sort();
  }
}

export { uidOf as podUid };
