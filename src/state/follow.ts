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

/**
 * Wave's policy resources (issue 31). Followed apart from the cluster's kinds: their CRDs may be
 * missing (a chart without them, an old cluster), and a missing CRD must not hold up the rest.
 */
export const POLICY_KINDS = ["SpotPolicy", "WarmupPolicy"] as const satisfies readonly StateKind[];
export type PolicyKind = (typeof POLICY_KINDS)[number];

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
  const informers = FOLLOWED_KINDS.map((kind) => informerInto(state, kind, o));
  for (const inf of informers) inf.start(o.signal);
  await Promise.all(informers.map((i) => i.synced));
  return state;
}

/** An informer (not started) that writes one kind into `state`. */
export function informerInto<K extends StateKind>(
  state: ClusterState,
  kind: K,
  o: { client: KubeClient; clock?: Clock; log?: Logger },
): Informer<K> {
  const transform = slim(kind);
  const inf = new Informer<K>({
    client: o.client,
    kind,
    ...(o.clock ? { clock: o.clock } : {}),
    ...(o.log ? { log: o.log.child({ informer: kind }) } : {}),
    ...(transform ? { transform } : {}),
  });
  const h = stateHandlers(state, kind);
  inf.on("add", (obj) => h.add(obj));
  inf.on("update", (obj, old) => {
    if (obj !== old) h.update(obj);
  });
  inf.on("delete", (obj) => h.delete(obj));
  return inf;
}

/**
 * Starts informers for Wave's policy resources writing into `state`; returns them at once (each
 * one's `synced` tells when its first list is in — never, while its CRD is missing: the informer
 * keeps retrying with backoff and the state holds none of that kind).
 */
export function followPolicies(o: {
  client: KubeClient;
  state: ClusterState;
  signal: AbortSignal;
  clock?: Clock;
  log?: Logger;
}): { SpotPolicy: Informer<"SpotPolicy">; WarmupPolicy: Informer<"WarmupPolicy"> } {
  const out = {
    SpotPolicy: informerInto(o.state, "SpotPolicy", o),
    WarmupPolicy: informerInto(o.state, "WarmupPolicy", o),
  };
  out.SpotPolicy.start(o.signal);
  out.WarmupPolicy.start(o.signal);
  return out;
}

/** What a mirror of the in-memory apiserver holds: the followed kinds and the policies. */
const MIRRORED_KINDS = [...FOLLOWED_KINDS, ...POLICY_KINDS] as const;

/**
 * Applies every later write of an in-memory apiserver to `state` synchronously (the write is in
 * the state when it resolves): the simulator and unit tests, where an informer's delay would only
 * add waits. Returns the remover.
 */
export function mirrorInto(
  kube: MemoryKube,
  state: ClusterState,
  /** What the state keeps of each object (default all of it; the agent's: projection.ts). */
  keep: <K extends StateKind>(kind: K, obj: KindTypes[K]) => KindTypes[K] = (_k, obj) => obj,
): () => void {
  const followed = new Set<string>(MIRRORED_KINDS);
  return kube.observe((kind, type, object) => {
    if (!followed.has(kind)) return;
    const k = kind as (typeof MIRRORED_KINDS)[number];
    state.apply(k, type === "DELETED" ? "delete" : type === "ADDED" ? "add" : "update", keep(k, object));
  });
}

/** A state holding what the in-memory apiserver holds now, and following it from then on. */
export async function mirrorMemoryKube(
  kube: MemoryKube,
  state = new ClusterState(),
): Promise<{ state: ClusterState; stop: () => void }> {
  const stop = mirrorInto(kube, state);
  const lists = await Promise.all(MIRRORED_KINDS.map(async (k) => [k, (await kube.list(k)).items] as const));
  state.batch(() => {
    for (const [k, items] of lists) state.replaceAll(k, items);
  });
  return { state, stop };
}
