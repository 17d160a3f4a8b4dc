// The projection the agent keeps for the warmup controller beside it (ADR 0014, ADR 0021): the
// agent forwards every object to core without keeping it, and keeps in its ClusterState only what
// warmup reads — NodePools, Nodes (without their image lists), NodeClaims whole; a pending pod
// whole (its requests and scheduling constraints decide which pool and warm node fit it); a bound
// pod reduced to what warmup reads of a pool's pods (src/warmup/controller.ts, src/warmup/fit,
// src/warmup/prepull.ts). The warmup controller's unit suite reads its state through it
// (src/warmup/testing/kube.ts). Pure functions.
import type { Container, Pod } from "../objects/kube.ts";
import type { KindTypes } from "../kube/kinds.ts";
import type { StateKind } from "./cluster.ts";

const WAVE_PREFIX = "wave.sh/";

/**
 * Shares equal values between pods: the workload's container requests, its namespace, the node's
 * name, the phase are the same for many pods, and one copy each is what keeps 300,000 bound pods
 * small. Bounded: past `max` distinct values it starts over (values already shared stay valid).
 */
export class Interner {
  readonly #max: number;
  #values = new Map<string, unknown>();

  constructor(max = 20_000) {
    this.#max = max;
  }

  get size(): number {
    return this.#values.size;
  }

  /** The one copy of `value` (keyed by `key`); frozen, as every pod holding it shares it. */
  share<T>(key: string, value: T): T {
    const got = this.#values.get(key);
    if (got !== undefined) return got as T;
    if (this.#values.size >= this.#max) this.#values = new Map();
    this.#values.set(key, Object.freeze(value));
    return value;
  }

  string(s: string): string {
    return this.share(s, s);
  }
}

const shared = new Interner();

/** Containers as warmup reads them: images (pre-pull) and requests (fit), shared. */
function imagesAndRequests(cs: readonly Container[], intern: Interner): Container[] {
  const out = cs.map((c) => {
    const r: Container = { name: c.name };
    if (c.image !== undefined) r.image = c.image;
    // An init container with restartPolicy Always is a sidecar: its requests add to the pod's.
    if (c.restartPolicy !== undefined) r.restartPolicy = c.restartPolicy;
    if (c.resources?.requests) r.resources = { requests: c.resources.requests };
    return r;
  });
  return intern.share(`c\u0000${JSON.stringify(out)}`, out);
}

/** A value shared by every pod that has an equal one (a workload's pods do). */
const shareJson = <T>(intern: Interner, tag: string, value: T): T =>
  intern.share(`${tag}\u0000${JSON.stringify(value)}`, value);

/**
 * A pod bound to a node as warmup reads it: is it real workload (not Wave's, not a DaemonSet's,
 * not a mirror), since when, in which phase, what does it request — and, as its pool's workload
 * may be the largest pod a warm node is made for, its images (pre-pull) and node constraints
 * (copied to the warmup pod, checked against nodes). Its other labels, limits, priority, uid and
 * conditions are not kept; what many pods have alike (containers, constraints) is shared. A pod
 * not bound yet (pending) stays whole.
 */
export function projectPod(pod: Pod, intern: Interner = shared): Pod {
  const s = pod.spec;
  if (s.nodeName === undefined || s.nodeName === "") return pod;
  const m = pod.metadata;
  const metadata: Pod["metadata"] = {};
  if (m.name !== undefined) metadata.name = m.name;
  if (m.namespace !== undefined) metadata.namespace = intern.string(m.namespace);
  // The state tells an update from a resync by it.
  if (m.resourceVersion !== undefined) metadata.resourceVersion = m.resourceVersion;
  if (m.creationTimestamp !== undefined) metadata.creationTimestamp = m.creationTimestamp;
  if (m.deletionTimestamp !== undefined) metadata.deletionTimestamp = m.deletionTimestamp;
  // Wave's own marks (a warmup or pre-pull pod); the other labels are the workload's.
  const labels = Object.entries(m.labels ?? {}).filter(([k]) => k.startsWith(WAVE_PREFIX));
  if (labels.length > 0) metadata.labels = Object.fromEntries(labels);
  // trim.ts kept only the annotations Wave acts on (the mirror-pod mark among them).
  if (m.annotations && Object.keys(m.annotations).length > 0) metadata.annotations = m.annotations;
  // A DaemonSet's pods are not workload that used a warm node; no other owner is read.
  const ds = m.ownerReferences?.filter((o) => o.kind === "DaemonSet" && o.controller === true);
  if (ds && ds.length > 0) metadata.ownerReferences = ds;
  // Built from `{}` (V8 gives it four in-object slots), not from a literal of two properties
  // that a third then moves out to a separate property array (+40 B per pod).
  const spec = {} as Pod["spec"];
  spec.nodeName = intern.string(s.nodeName);
  spec.containers = imagesAndRequests(s.containers, intern);
  if (s.initContainers && s.initContainers.length > 0)
    spec.initContainers = imagesAndRequests(s.initContainers, intern);
  if (s.nodeSelector) spec.nodeSelector = shareJson(intern, "s", s.nodeSelector);
  if (s.affinity) spec.affinity = shareJson(intern, "a", s.affinity);
  if (s.tolerations) spec.tolerations = shareJson(intern, "t", s.tolerations);
  if (s.overhead) spec.overhead = s.overhead;
  if (s.resources) spec.resources = s.resources;
  const out = {} as Pod;
  out.metadata = metadata;
  out.spec = spec;
  const phase = pod.status?.phase;
  if (phase !== undefined) out.status = intern.share(`p\u0000${phase}`, { phase });
  return out;
}

/** What the agent's ClusterState keeps of a (trimmed) object: pods projected, the rest whole. */
export function project<K extends StateKind>(kind: K, obj: KindTypes[K]): KindTypes[K] {
  return (kind === "Pod" ? projectPod(obj as Pod) : obj) as KindTypes[K];
}
