// Trimming: the agent forwards only the fields Wave reads (cost, placement, warmup fit, lifecycle),
// which keeps a 150k-pod snapshot small. Pure functions; the output is still the wire shape of
// src/objects/kube.ts, so core code reads it exactly like an apiserver object.
import type {
  Affinity,
  Condition,
  Container,
  Event,
  ObjectMeta,
  Node,
  Pod,
  PodDisruptionBudget,
  Toleration,
} from "../objects/kube.ts";
import { DO_NOT_DISRUPT_ANNOTATION } from "../objects/karpenter.ts";
import { MIRROR_POD_ANNOTATION } from "../objects/wave.ts";
import type { NodeClaim, NodeOverlay, NodePool } from "../objects/karpenter.ts";
import type { WireObject } from "../wire/wire.ts";
import type { SpotPolicyResource, WarmupPolicyResource } from "../objects/policy-crds.ts";

/**
 * Annotations Wave acts on; every other annotation (often large) is dropped. Wave's own
 * (`wave.sh/…`: the warm-node owner mark, warmup deadlines, pre-pulled images, the spot note) are
 * few and short, and core's views read them: kept by prefix so a new one cannot be lost again.
 */
const KEPT_ANNOTATIONS = new Set<string>([DO_NOT_DISRUPT_ANNOTATION, MIRROR_POD_ANNOTATION]);
const WAVE_PREFIX = "wave.sh/";
const keptAnnotation = (key: string): boolean => KEPT_ANNOTATIONS.has(key) || key.startsWith(WAVE_PREFIX);

const KEPT_POD_CONDITIONS = new Set(["PodScheduled", "Ready"]);
const KEPT_NODE_CONDITIONS = new Set(["Ready"]);

/** Components whose Events Wave records: Karpenter's, and Wave's spot repair (src/webhook/events.ts). */
const KARPENTER_COMPONENTS = /^(karpenter|wave-spot-repair$)/;
const KARPENTER_KINDS = new Set(["NodeClaim", "NodePool"]);
const KARPENTER_REASONS = new Set([
  "DisruptionBlocked",
  "DisruptionLaunching",
  "DisruptionWaitingReadiness",
  "DisruptionTerminating",
  "Unconsolidatable",
  "Nominated",
  "NoCompatibleInstanceTypes",
  "InsufficientCapacityError",
  "NodeClassNotReady",
  "Disrupted",
  "FailedDraining",
  "TerminationGracePeriodExpiring",
  "SpotInterrupted",
  "SpotRebalanceRecommendation",
  "InstanceTerminating",
  "InstanceStopping",
  "InstanceUnhealthy",
  // v1.15 node repair and reboot (NodeRepair gate): why repair waits, and a reboot's outcome.
  "NodeRepairBlocked",
  "RebootObserved",
  "RebootFailed",
  // Wave's spot self-heal (the webhook's repair loop records what it changed).
  "WaveSpotRepair",
]);

export function trimMeta(meta: ObjectMeta, opts: { labels: boolean }): ObjectMeta {
  const out: ObjectMeta = {};
  if (meta.name !== undefined) out.name = meta.name;
  if (meta.namespace !== undefined) out.namespace = meta.namespace;
  if (meta.uid !== undefined) out.uid = meta.uid;
  if (meta.resourceVersion !== undefined) out.resourceVersion = meta.resourceVersion;
  if (meta.creationTimestamp !== undefined) out.creationTimestamp = meta.creationTimestamp;
  if (meta.deletionTimestamp !== undefined) out.deletionTimestamp = meta.deletionTimestamp;
  if (opts.labels && meta.labels && Object.keys(meta.labels).length > 0) out.labels = { ...meta.labels };
  const ann = Object.entries(meta.annotations ?? {}).filter(([k]) => keptAnnotation(k));
  if (ann.length > 0) out.annotations = Object.fromEntries(ann);
  const owners = meta.ownerReferences?.map((o) => {
    const r: NonNullable<ObjectMeta["ownerReferences"]>[number] = {
      apiVersion: o.apiVersion,
      kind: o.kind,
      name: o.name,
      uid: o.uid,
    };
    if (o.controller !== undefined) r.controller = o.controller;
    return r;
  });
  if (owners && owners.length > 0) out.ownerReferences = owners;
  if (meta.finalizers && meta.finalizers.length > 0) out.finalizers = [...meta.finalizers];
  return out;
}

function trimConditions(
  conds: Condition[] | undefined,
  keep?: Set<string>,
  withMessage = false,
): Condition[] | undefined {
  if (!conds) return undefined;
  const out = conds
    .filter((c) => !keep || keep.has(c.type))
    .map((c) => {
      const r: Condition = { type: c.type, status: c.status };
      if (c.reason !== undefined) r.reason = c.reason;
      if (withMessage && c.message !== undefined) r.message = c.message;
      if (c.lastTransitionTime !== undefined) r.lastTransitionTime = c.lastTransitionTime;
      return r;
    });
  return out.length > 0 ? out : undefined;
}

function trimContainer(c: Container): Container {
  const out: Container = { name: c.name };
  // The image lets warmup pre-pull; requests and limits drive cost and fit.
  if (c.image !== undefined) out.image = c.image;
  // An init container with restartPolicy Always is a sidecar: its requests add to the pod's.
  if (c.restartPolicy !== undefined) out.restartPolicy = c.restartPolicy;
  const req = c.resources?.requests;
  const lim = c.resources?.limits;
  if (req || lim) {
    out.resources = {};
    if (req) out.resources.requests = { ...req };
    if (lim) out.resources.limits = { ...lim };
  }
  return out;
}

function trimAffinity(a: Affinity | undefined): Affinity | undefined {
  // Only node affinity decides which nodes fit; pod (anti-)affinity terms are large and unused.
  return a?.nodeAffinity ? { nodeAffinity: a.nodeAffinity } : undefined;
}

function trimTolerations(t: Toleration[] | undefined): Toleration[] | undefined {
  return t && t.length > 0 ? t.map((x) => ({ ...x })) : undefined;
}

export function trimPod(pod: Pod): Pod {
  const s = pod.spec;
  const spec: Pod["spec"] = { containers: s.containers.map(trimContainer) };
  if (s.nodeName !== undefined) spec.nodeName = s.nodeName;
  if (s.nodeSelector) spec.nodeSelector = { ...s.nodeSelector };
  const affinity = trimAffinity(s.affinity);
  if (affinity) spec.affinity = affinity;
  const tolerations = trimTolerations(s.tolerations);
  if (tolerations) spec.tolerations = tolerations;
  if (s.initContainers && s.initContainers.length > 0)
    spec.initContainers = s.initContainers.map(trimContainer);
  if (s.priority !== undefined) spec.priority = s.priority;
  if (s.priorityClassName !== undefined) spec.priorityClassName = s.priorityClassName;
  if (s.schedulerName !== undefined) spec.schedulerName = s.schedulerName;
  if (s.overhead) spec.overhead = { ...s.overhead };
  // Pod-level resources (PodLevelResources) override the containers' sum.
  if (s.resources) spec.resources = structuredClone(s.resources);
  const out: Pod = { metadata: trimMeta(pod.metadata, { labels: true }), spec };
  const st = pod.status;
  if (st) {
    const status: NonNullable<Pod["status"]> = {};
    if (st.phase !== undefined) status.phase = st.phase;
    if (st.startTime !== undefined) status.startTime = st.startTime;
    if (st.nominatedNodeName !== undefined) status.nominatedNodeName = st.nominatedNodeName;
    const conditions = trimConditions(st.conditions, KEPT_POD_CONDITIONS);
    if (conditions) status.conditions = conditions;
    out.status = status;
  }
  return out;
}

export function trimNode(node: Node): Node {
  const out: Node = { metadata: trimMeta(node.metadata, { labels: true }) };
  if (node.spec) {
    const spec: NonNullable<Node["spec"]> = {};
    if (node.spec.providerID !== undefined) spec.providerID = node.spec.providerID;
    if (node.spec.unschedulable !== undefined) spec.unschedulable = node.spec.unschedulable;
    if (node.spec.taints && node.spec.taints.length > 0)
      spec.taints = node.spec.taints.map((t) => ({ ...t }));
    out.spec = spec;
  }
  const st = node.status;
  if (st) {
    // status.images is the largest part of a Node and Wave never reads it.
    const status: NonNullable<Node["status"]> = {};
    if (st.capacity) status.capacity = { ...st.capacity };
    if (st.allocatable) status.allocatable = { ...st.allocatable };
    const conditions = trimConditions(st.conditions, KEPT_NODE_CONDITIONS);
    if (conditions) status.conditions = conditions;
    if (st.nodeInfo?.kubeletVersion !== undefined)
      status.nodeInfo = { kubeletVersion: st.nodeInfo.kubeletVersion };
    out.status = status;
  }
  return out;
}

export function trimNodePool(np: NodePool): NodePool {
  // NodePools are few and small, and Wave reads most of their spec: keep spec and status whole.
  const out: NodePool = { metadata: trimMeta(np.metadata, { labels: true }), spec: np.spec };
  if (np.status) {
    const status: NonNullable<NodePool["status"]> = {};
    if (np.status.resources) status.resources = { ...np.status.resources };
    if (np.status.nodes !== undefined) status.nodes = np.status.nodes;
    const conditions = trimConditions(np.status.conditions);
    if (conditions) status.conditions = conditions;
    out.status = status;
  }
  return out;
}

export function trimNodeClaim(nc: NodeClaim): NodeClaim {
  const out: NodeClaim = { metadata: trimMeta(nc.metadata, { labels: true }), spec: nc.spec };
  const st = nc.status;
  if (st) {
    const status: NonNullable<NodeClaim["status"]> = {};
    if (st.providerID !== undefined) status.providerID = st.providerID;
    if (st.nodeName !== undefined) status.nodeName = st.nodeName;
    if (st.capacity) status.capacity = { ...st.capacity };
    if (st.allocatable) status.allocatable = { ...st.allocatable };
    // Consolidation's clock: consolidateAfter counts from the node's last pod event.
    if (st.lastPodEventTime !== undefined) status.lastPodEventTime = st.lastPodEventTime;
    // Every condition is kept, with its message (DisruptionReason may carry the reason there):
    // lifecycle derivation reads their transitions.
    const conditions = trimConditions(st.conditions, undefined, true);
    if (conditions) status.conditions = conditions;
    out.status = status;
  }
  return out;
}

/**
 * A PodDisruptionBudget as consolidation reads it (docs/consolidation.md): its selector, its
 * minAvailable/maxUnavailable (the fix patches them) and how many disruptions it allows now.
 */
export function trimPodDisruptionBudget(pdb: PodDisruptionBudget): PodDisruptionBudget {
  const spec: PodDisruptionBudget["spec"] = {};
  if (pdb.spec.selector !== undefined) spec.selector = pdb.spec.selector;
  if (pdb.spec.minAvailable !== undefined) spec.minAvailable = pdb.spec.minAvailable;
  if (pdb.spec.maxUnavailable !== undefined) spec.maxUnavailable = pdb.spec.maxUnavailable;
  const out: PodDisruptionBudget = { metadata: trimMeta(pdb.metadata, { labels: false }), spec };
  const st = pdb.status;
  if (st) {
    const status: NonNullable<PodDisruptionBudget["status"]> = {};
    if (st.disruptionsAllowed !== undefined) status.disruptionsAllowed = st.disruptionsAllowed;
    if (st.currentHealthy !== undefined) status.currentHealthy = st.currentHealthy;
    if (st.desiredHealthy !== undefined) status.desiredHealthy = st.desiredHealthy;
    if (st.expectedPods !== undefined) status.expectedPods = st.expectedPods;
    out.status = status;
  }
  return out;
}

/** Whether an Event is about Karpenter's work or Wave's spot repairs (the only Events forwarded). */
export function isKarpenterEvent(ev: Event): boolean {
  const component = ev.reportingComponent ?? ev.source?.component ?? "";
  return (
    KARPENTER_COMPONENTS.test(component) ||
    KARPENTER_KINDS.has(ev.involvedObject.kind ?? "") ||
    KARPENTER_REASONS.has(ev.reason ?? "")
  );
}

export function trimEvent(ev: Event): Event | undefined {
  if (!isKarpenterEvent(ev)) return undefined;
  const io = ev.involvedObject;
  const involvedObject: Event["involvedObject"] = {};
  if (io.kind !== undefined) involvedObject.kind = io.kind;
  if (io.namespace !== undefined) involvedObject.namespace = io.namespace;
  if (io.name !== undefined) involvedObject.name = io.name;
  if (io.uid !== undefined) involvedObject.uid = io.uid;
  const out: Event = { metadata: trimMeta(ev.metadata, { labels: false }), involvedObject };
  if (ev.reason !== undefined) out.reason = ev.reason;
  if (ev.message !== undefined) out.message = ev.message;
  if (ev.type !== undefined) out.type = ev.type;
  if (ev.count !== undefined) out.count = ev.count;
  if (ev.firstTimestamp !== undefined) out.firstTimestamp = ev.firstTimestamp;
  if (ev.lastTimestamp !== undefined) out.lastTimestamp = ev.lastTimestamp;
  if (ev.eventTime !== undefined) out.eventTime = ev.eventTime;
  if (ev.reportingComponent !== undefined) out.reportingComponent = ev.reportingComponent;
  // The spot page counts repairs per action (Evict, EvictBlocked, Fallback).
  if (ev.action !== undefined) out.action = ev.action;
  if (ev.source?.component !== undefined) out.source = { component: ev.source.component };
  return out;
}

/** Trims any forwarded object; undefined means "not forwarded" (an unrelated Event). */
export function trim(obj: WireObject): WireObject | undefined {
  switch (obj.kind) {
    case "Node":
      return { kind: "Node", object: trimNode(obj.object) };
    case "Pod":
      return { kind: "Pod", object: trimPod(obj.object) };
    case "NodePool":
      return { kind: "NodePool", object: trimNodePool(obj.object) };
    case "NodeClaim":
      return { kind: "NodeClaim", object: trimNodeClaim(obj.object) };
    case "Event": {
      const ev = trimEvent(obj.object);
      return ev ? { kind: "Event", object: ev } : undefined;
    }
    case "SpotPolicy":
      return { kind: "SpotPolicy", object: trimPolicy(obj.object) };
    case "WarmupPolicy":
      return { kind: "WarmupPolicy", object: trimPolicy(obj.object) };
    case "PodDisruptionBudget":
      return { kind: "PodDisruptionBudget", object: trimPodDisruptionBudget(obj.object) };
    case "NodeOverlay":
      return { kind: "NodeOverlay", object: trimNodeOverlay(obj.object) };
  }
}

/**
 * A NodeOverlay as Wave prices with it (src/karpenter/overlay.ts): its requirements, price change
 * and weight, the names of the resources it adds (a same-weight conflict is decided by them) and
 * Karpenter's ValidationSucceeded condition.
 */
export function trimNodeOverlay(o: NodeOverlay): NodeOverlay {
  const meta: ObjectMeta = trimMeta(o.metadata, { labels: false });
  if (o.metadata.generation !== undefined) meta.generation = o.metadata.generation;
  const { requirements, priceAdjustment, price, capacity, weight } = o.spec;
  const spec: NodeOverlay["spec"] = {};
  if (requirements !== undefined) spec.requirements = requirements;
  if (priceAdjustment !== undefined) spec.priceAdjustment = priceAdjustment;
  if (price !== undefined) spec.price = price;
  if (capacity !== undefined) spec.capacity = Object.fromEntries(Object.keys(capacity).map((k) => [k, ""]));
  if (weight !== undefined) spec.weight = weight;
  const out: NodeOverlay = { metadata: meta, spec };
  const conditions = o.status?.conditions?.filter((c) => c.type === "ValidationSucceeded");
  if (conditions && conditions.length > 0) {
    out.status = {
      conditions: conditions.map(({ type, status, reason }) => ({
        type,
        status,
        ...(reason ? { reason } : {}),
      })),
    };
  }
  return out;
}

/**
 * A policy CR keeps its spec and status whole (small, and what core shows), Wave's annotations
 * (who changed it through Wave) and who manages it: each field manager with its operation and
 * time, without the field sets (core shows "changed by <manager>"; conflicts are the agent's).
 */
export function trimPolicy<T extends SpotPolicyResource | WarmupPolicyResource>(cr: T): T {
  const meta: ObjectMeta = trimMeta(cr.metadata, { labels: true });
  if (cr.metadata.generation !== undefined) meta.generation = cr.metadata.generation;
  if (cr.metadata.creationTimestamp !== undefined) meta.creationTimestamp = cr.metadata.creationTimestamp;
  const managers = cr.metadata.managedFields?.map(({ manager, operation, time, subresource }) => ({
    manager,
    operation,
    ...(time === undefined ? {} : { time }),
    ...(subresource === undefined ? {} : { subresource }),
  }));
  if (managers && managers.length > 0) meta.managedFields = managers;
  return { ...cr, metadata: meta };
}
