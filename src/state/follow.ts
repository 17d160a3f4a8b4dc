// Keeping a ClusterState current from a cluster: the informers of a process that acts on the
// cluster write it, controllers read it (Karpenter's informers → state → controllers).
import { Informer } from "../kube/informer/informer.ts";
import type { KindTypes } from "../kube/kinds.ts";
import type { MemoryKube } from "../kube/memory/memory.ts";
import type { KubeClient } from "../kube/port.ts";
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { ClusterState, stateHandlers, type StateKind } from "./cluster.ts";

/** What warmup reads; DaemonSets are the dashboard's. */
export const FOLLOWED_KINDS = [
  "NodePool",
  "NodeClaim",
  "Node",
  "Pod",
] as const satisfies readonly StateKind[];

/** Drops a Node's image list (most of its size; warmup reads a warm node's images itself). */
function slim<K extends StateKind>(kind: K): ((o: KindTypes[K]) => KindTypes[K]) | undefined {
  if (kind !== "Node") return undefined;
  return (o) => {
    const n = o as KindTypes["Node"];
    if (n.status?.images === undefined) return o;
    const { images: _images, ...status } = n.status;
    return { ...n, status } as KindTypes[K];
  };
}

/**
 * Informers (list + watch, hardened: relist on 410, backoff) for the followed kinds, writing into
 * one state; resolves once every initial list is in. They stop when `signal` aborts.
 */
export async function followCluster(o: {
  client: KubeClient;
  signal: AbortSignal;
  clock?: Clock;
  log?: Logger;
  state?: ClusterState;
}): Promise<ClusterState> {
  const state = o.state ?? new ClusterState();
  const informers = FOLLOWED_KINDS.map((kind) => {
    const transform = slim(kind);
    const inf = new Informer<typeof kind>({
      client: o.client,
      kind,
      ...(o.clock ? { clock: o.clock } : {}),
      ...(o.log ? { log: o.log.child({ informer: kind }) } : {}),
      ...(transform ? { transform } : {}),
    });
    const h = stateHandlers(state, kind);
    inf.on("add", (obj) => h.add(obj as never));
    inf.on("update", (obj, old) => {
      if (obj !== old) h.update(obj);
    });
    inf.on("delete", (obj) => h.delete(obj as never));
    return inf;
  });
  for (const inf of informers) inf.start(o.signal);
  await Promise.all(informers.map((i) => i.synced));
  return state;
}

/**
 * Applies every later write of an in-memory apiserver to `state` synchronously (the write is in
 * the state when it resolves): the simulator and unit tests, where an informer's delay would only
 * add waits. Returns the remover.
 */
export function mirrorInto(kube: MemoryKube, state: ClusterState): () => void {
  const followed = new Set<string>(FOLLOWED_KINDS);
  return kube.observe((kind, type, object) => {
    if (!followed.has(kind)) return;
    const k = kind as (typeof FOLLOWED_KINDS)[number];
    state.apply(k, type === "DELETED" ? "delete" : type === "ADDED" ? "add" : "update", object);
  });
}

/** A state holding what the in-memory apiserver holds now, and following it from then on. */
export async function mirrorMemoryKube(
  kube: MemoryKube,
  state = new ClusterState(),
): Promise<{ state: ClusterState; stop: () => void }> {
  const stop = mirrorInto(kube, state);
  const lists = await Promise.all(FOLLOWED_KINDS.map(async (k) => [k, (await kube.list(k)).items] as const));
  state.batch(() => {
    for (const [k, items] of lists) state.replaceAll(k, items);
  });
  return { state, stop };
}
