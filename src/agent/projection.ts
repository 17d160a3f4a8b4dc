// The projection the agent keeps for the warmup controller beside it (ADR 0014, ADR 0021): the
// agent forwards every object to core without keeping it, and keeps in its ClusterState only what
// warmup reads — NodePools, Nodes (without their image lists), NodeClaims whole; a pending pod
// whole (its requests and scheduling constraints decide which pool and warm node fit it); a bound
// pod reduced to what warmup asks of the pods on a node (are they real workload, since when,
// what do they request: src/warmup/controller.ts, src/warmup/fit). Pure functions.
import type { Container, Pod } from "../objects/kube.ts";
import type { FOLLOWED_KINDS } from "../state/follow.ts";
import type { KindTypes } from "../kube/kinds.ts";

const WAVE_PREFIX = "wave.sh/";

function requestsOnly(c: Container): Container {
  const out: Container = { name: c.name };
  // An init container with restartPolicy Always is a sidecar: its requests add to the pod's.
  if (c.restartPolicy !== undefined) out.restartPolicy = c.restartPolicy;
  if (c.resources?.requests) out.resources = { requests: c.resources.requests };
  return out;
}

/** A pod bound to a node as warmup reads it; a pod not bound yet (pending) stays whole. */
export function projectPod(pod: Pod): Pod {
  const s = pod.spec;
  if (s.nodeName === undefined || s.nodeName === "") return pod;
  const m = pod.metadata;
  const metadata: Pod["metadata"] = {};
  if (m.name !== undefined) metadata.name = m.name;
  if (m.namespace !== undefined) metadata.namespace = m.namespace;
  if (m.uid !== undefined) metadata.uid = m.uid;
  if (m.resourceVersion !== undefined) metadata.resourceVersion = m.resourceVersion;
  if (m.creationTimestamp !== undefined) metadata.creationTimestamp = m.creationTimestamp;
  if (m.deletionTimestamp !== undefined) metadata.deletionTimestamp = m.deletionTimestamp;
  // Wave's own marks (a warmup or pre-pull pod); the other labels are the workload's.
  const labels = Object.entries(m.labels ?? {}).filter(([k]) => k.startsWith(WAVE_PREFIX));
  if (labels.length > 0) metadata.labels = Object.fromEntries(labels);
  // trim.ts kept only the annotations Wave acts on (the mirror-pod mark among them).
  if (m.annotations) metadata.annotations = m.annotations;
  // A DaemonSet's pods are not workload that used a warm node.
  const owners = m.ownerReferences?.filter((o) => o.controller === true);
  if (owners && owners.length > 0) metadata.ownerReferences = owners;
  const spec: Pod["spec"] = { nodeName: s.nodeName, containers: s.containers.map(requestsOnly) };
  if (s.initContainers && s.initContainers.length > 0) spec.initContainers = s.initContainers.map(requestsOnly);
  if (s.overhead) spec.overhead = s.overhead;
  if (s.resources) spec.resources = s.resources;
  const out: Pod = { metadata, spec };
  if (pod.status?.phase !== undefined) out.status = { phase: pod.status.phase };
  return out;
}

type FollowedKind = (typeof FOLLOWED_KINDS)[number];

/** What the agent's ClusterState keeps of a (trimmed) object of a followed kind. */
export function project<K extends FollowedKind>(kind: K, obj: KindTypes[K]): KindTypes[K] {
  return (kind === "Pod" ? projectPod(obj as Pod) : obj) as KindTypes[K];
}
