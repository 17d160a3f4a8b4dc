// The cluster state: one in-memory model of Nodes, NodeClaims, NodePools, Pods and DaemonSets
// (the analogue of Karpenter's state.Cluster), plus Wave's policy resources (SpotPolicy,
// WarmupPolicy: issue 31), kept as they are for the readers that turn them into policies. The informer layer writes it through `apply`;
// everyone else reads. Every write is O(size of the object): indexes keep per-node requests,
// pool membership, providerID links and pending pods current, so nothing scans all objects.
import type { KindTypes } from "../kube/kinds.ts";
import type { Container, DaemonSet, Node, Pod, PodDisruptionBudget } from "../objects/kube.ts";
import { capacityTypeOf, nodePoolOf } from "../karpenter/labels.ts";
import {
  nodeClaimPhase,
  nodeClaimState,
  type NodeClaimPhase,
  type NodeClaimState,
} from "../karpenter/lifecycle.ts";
import { isReady, providerIDOf } from "../karpenter/node.ts";
import { QuantityError } from "../karpenter/quantity.ts";
import { limitStatus, type LimitStatus } from "../karpenter/requirements.ts";
import {
  addInto,
  CPU,
  isTerminalPod,
  MEMORY,
  parseResources,
  PODS,
  podRequests,
  withoutZeros,
  type Resources,
} from "../karpenter/resources.ts";
import type { CapacityType, NodeClaim, NodeOverlay, NodePool } from "../objects/karpenter.ts";
import { orderByWeight } from "../karpenter/overlay.ts";
import { namespacedKey } from "../objects/keys.ts";
import type { SpotPolicyResource, WarmupPolicyResource } from "../objects/policy-crds.ts";

export const STATE_KINDS = [
  "Node",
  "NodeClaim",
  "NodePool",
  "Pod",
  "DaemonSet",
  "SpotPolicy",
  "WarmupPolicy",
  "PodDisruptionBudget",
  "NodeOverlay",
] as const;
export type StateKind = (typeof STATE_KINDS)[number];
export type ApplyType = "add" | "update" | "delete";

/** One change to the state, as delivered to listeners. */
export type StateChange = {
  [K in StateKind]: {
    kind: K;
    type: ApplyType;
    /** name, or namespace/name for namespaced kinds. */
    key: string;
    /** The new object; for "delete", the object's last state. */
    object: KindTypes[K];
    /** The stored object before this change (absent for "add"). */
    previous?: KindTypes[K];
  };
}[StateKind];

export type Listener = (change: StateChange) => void;

export interface Usage {
  requested: number;
  allocatable: number;
}

export interface NodeUsage {
  node: string;
  /** Requests of every non-terminal pod bound to the node (DaemonSet pods included). */
  requested: Resources;
  /** The DaemonSet pods' share of `requested`. */
  daemonSetRequested: Resources;
  allocatable: Resources;
  cpuMillis: Usage;
  memoryBytes: Usage;
  /** Non-terminal pods bound to the node vs the node's pod capacity. */
  pods: Usage;
}

export interface PoolSummary {
  name: string;
  /** The NodePool object exists (a pool can outlive its nodes and vice versa). */
  exists: boolean;
  nodes: number;
  readyNodes: number;
  nodesByCapacityType: Record<CapacityType | "unknown", number>;
  /** Sum of node sizes (see nodeSize): vCPU in millicores, memory in bytes. */
  cpuMillis: number;
  memoryBytes: number;
  allocatable: Resources;
  requested: Resources;
  nodeClaims: number;
  nodeClaimsByPhase: Record<NodeClaimPhase, number>;
  /** What Karpenter counts against limits: the pool's NodeClaims' capacity. */
  usage: Resources;
  limits: LimitStatus[];
}

export interface DaemonSetInfo {
  key: string;
  daemonSet: DaemonSet;
  /** Requests of one pod from the template: the overhead it adds to every node it runs on. */
  requests: Resources;
}

export interface ClusterStateOptions {
  /** Called when a listener throws; the other listeners still run. */
  onListenerError?: (err: unknown, change: StateChange) => void;
  /** Called when an object carries an unparsable quantity; it is kept, counted as requesting nothing. */
  onBadObject?: (kind: StateKind, key: string, err: Error) => void;
}

/** Requests of pods whose containers are one shared, frozen array (the agent's projection, projection.ts). */
const requestsOfShared = new WeakMap<readonly Container[], Resources>();

/**
 * A pod's requests; one object for every pod whose containers are the same frozen array and which
 * adds nothing to them (a workload's bound pods in the agent's projection): 150k pods, ~10 MiB.
 * Entries' requests are only read (added into a node's sums, copied out).
 */
function sharedPodRequests(pod: Pod): Resources {
  const s = pod.spec;
  const cs = s.containers;
  if (!Object.isFrozen(cs) || s.initContainers?.length || s.overhead || s.resources) return podRequests(pod);
  let r = requestsOfShared.get(cs);
  if (r === undefined) requestsOfShared.set(cs, (r = Object.freeze(podRequests(pod))));
  return r;
}

/** A pod counts toward its node's requests (bound and not terminal). */
const COUNTED = 1;
/** …and toward its node's DaemonSet share. */
const DAEMON = 2;

/**
 * A stored pod and what its node's sums got from it. Three fields (one per 150k pods is 3.4 MiB
 * less than six): its node is the pod's own `spec.nodeName`, pending is the `#pending` set.
 */
interface PodEntry {
  pod: Pod;
  requests: Resources;
  /** COUNTED | DAEMON, as added to its node's sums. */
  counted: number;
}

/** The node a stored pod is bound to (stored pods are never changed in place). */
const boundNode = (pod: Pod): string | undefined => pod.spec.nodeName || undefined;

interface NodeAgg {
  requested: Resources;
  daemonSetRequested: Resources;
  podCount: number;
  /** Every pod bound to the node, terminal ones included. */
  pods: Set<string>;
}

interface NodeEntry {
  node: Node;
  allocatable: Resources;
  size: Resources;
  pool: string | undefined;
  providerID: string | undefined;
}

interface NodeClaimEntry {
  nodeClaim: NodeClaim;
  capacity: Resources;
  pool: string | undefined;
  providerID: string | undefined;
  nodeName: string | undefined;
}

const CAPACITY_KEYS = ["spot", "on-demand", "reserved", "unknown"] as const;
const PHASES: readonly NodeClaimPhase[] = [
  "Pending",
  "Launched",
  "Registered",
  "Initialized",
  "Disrupting",
  "Terminating",
];

/** The key the state stores an object of `kind` under ("namespace/name" for Pods, else the name). */
export function stateKey(kind: StateKind, obj: { metadata: { name?: string; namespace?: string } }): string {
  return keyOf(kind, obj);
}

function keyOf(kind: StateKind, obj: { metadata: { name?: string; namespace?: string } }): string {
  const name = obj.metadata.name;
  if (!name) throw new Error(`${kind} without metadata.name cannot be stored`);
  if (kind === "Pod" || kind === "DaemonSet" || kind === "SpotPolicy" || kind === "PodDisruptionBudget") {
    const ns = obj.metadata.namespace;
    if (!ns) throw new Error(`${kind} ${name} without metadata.namespace cannot be stored`);
    return namespacedKey(ns, name);
  }
  return name;
}

function isDaemonPod(pod: Pod): boolean {
  return (pod.metadata.ownerReferences ?? []).some((o) => o.controller === true && o.kind === "DaemonSet");
}

/** A pod waiting for the scheduler: not bound, not finished, not being deleted. */
function isPendingPod(pod: Pod): boolean {
  return !pod.spec.nodeName && !isTerminalPod(pod) && pod.metadata.deletionTimestamp === undefined;
}

/** kube-scheduler marked the pod PodScheduled=False/Unschedulable: no node fits it. */
export function isUnschedulable(pod: Pod): boolean {
  return (pod.status?.conditions ?? []).some(
    (c) => c.type === "PodScheduled" && c.status === "False" && c.reason === "Unschedulable",
  );
}

/**
 * A node's size per resource: the larger of capacity and allocatable. On real nodes that is
 * capacity; KWOK nodes echo the claim's requests as capacity (often below allocatable).
 */
export function nodeSize(capacity: Resources, allocatable: Resources): Resources {
  const out: Resources = { ...capacity };
  for (const [k, v] of Object.entries(allocatable)) out[k] = Math.max(out[k] ?? 0, v);
  return out;
}

function addToIndex(index: Map<string, Set<string>>, key: string | undefined, member: string): void {
  if (key === undefined) return;
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(member);
}

function removeFromIndex(index: Map<string, Set<string>>, key: string | undefined, member: string): void {
  if (key === undefined) return;
  const set = index.get(key);
  if (!set) return;
  set.delete(member);
  if (set.size === 0) index.delete(key);
}

/** A 1:1 link that only the current owner may remove (two objects may briefly claim one id). */
function unlink(index: Map<string, string>, key: string | undefined, owner: string): void {
  if (key !== undefined && index.get(key) === owner) index.delete(key);
}

/** Per kind, object key → its slot in a batch's queue. */
function queueIndex(): Record<StateKind, Map<string, number>> {
  return {
    Node: new Map(),
    NodeClaim: new Map(),
    NodePool: new Map(),
    Pod: new Map(),
    DaemonSet: new Map(),
    SpotPolicy: new Map(),
    WarmupPolicy: new Map(),
    PodDisruptionBudget: new Map(),
    NodeOverlay: new Map(),
  };
}

export class ClusterState {
  readonly #nodes = new Map<string, NodeEntry>();
  readonly #nodeClaims = new Map<string, NodeClaimEntry>();
  readonly #nodePools = new Map<string, NodePool>();
  readonly #pods = new Map<string, PodEntry>();
  readonly #daemonSets = new Map<string, DaemonSetInfo>();
  readonly #spotPolicies = new Map<string, SpotPolicyResource>();
  readonly #warmupPolicies = new Map<string, WarmupPolicyResource>();
  readonly #pdbs = new Map<string, PodDisruptionBudget>();
  readonly #overlays = new Map<string, NodeOverlay>();
  /** The overlays in Karpenter's order, until one changes: one array per change for the price memo. */
  #overlaysOrdered: readonly NodeOverlay[] | undefined;

  readonly #nodeAgg = new Map<string, NodeAgg>();
  readonly #pending = new Set<string>();
  readonly #nodesByPool = new Map<string, Set<string>>();
  readonly #nodeClaimsByPool = new Map<string, Set<string>>();
  readonly #nodeByProviderID = new Map<string, string>();
  readonly #nodeClaimByProviderID = new Map<string, string>();
  readonly #nodeClaimByNodeName = new Map<string, string>();
  readonly #badObjects = new Map<string, string>();

  readonly #listeners = new Set<{ fn: Listener; kinds: ReadonlySet<StateKind> | undefined }>();
  /** Indexes readers keep over this state (see `derived`): they live and die with it. */
  readonly #derived = new Map<object | symbol, unknown>();
  readonly #opts: ClusterStateOptions;
  #version = 0;
  #batchDepth = 0;
  /**
   * A batch's changes in delivery order; a slot is emptied when a later change to the same object
   * merges with it (the merged change goes to the end). Indexed per kind by the object's key, the
   * string the kind's map already holds: no second key per change.
   */
  #queued: (StateChange | undefined)[] = [];
  #queuedAt = queueIndex();

  constructor(opts: ClusterStateOptions = {}) {
    this.#opts = opts;
  }

  // ---- writing ------------------------------------------------------------------------------

  /**
   * Applies one informer event. "add" of a known object is an update; "delete" of an unknown one
   * is a no-op. An update with an unchanged resourceVersion (a resync) is stored silently.
   * Returns the change this write made (undefined: none) — the notification listeners get, before
   * a batch coalesces it: the writer's own view of each step, with the object it replaced.
   */
  apply<K extends StateKind>(
    kind: K,
    type: ApplyType,
    obj: KindTypes[K],
  ): Extract<StateChange, { kind: K }> | undefined {
    return this.#applyAt(kind, keyOf(kind, obj), type, obj);
  }

  #applyAt<K extends StateKind>(
    kind: K,
    key: string,
    type: ApplyType,
    obj: KindTypes[K],
  ): Extract<StateChange, { kind: K }> | undefined {
    type Change = Extract<StateChange, { kind: K }>;
    const previous = this.#get(kind, key);
    let change: Change;
    if (type === "delete") {
      if (previous === undefined) return undefined;
      this.#remove(kind, key);
      change = { kind, type: "delete", key, object: obj, previous } as Change;
    } else {
      this.#put(kind, key, obj);
      if (previous === undefined) {
        change = { kind, type: "add", key, object: obj } as Change;
      } else {
        const rvBefore = previous.metadata.resourceVersion;
        if (rvBefore !== undefined && rvBefore === obj.metadata.resourceVersion) return undefined;
        change = { kind, type: "update", key, object: obj, previous } as Change;
      }
    }
    this.#emit(change);
    return change;
  }

  /**
   * Makes `objects` the complete set of one kind (a relist or a snapshot): adds and updates
   * them, deletes what is absent. Listeners get the differences as one coalesced batch; the
   * writer gets them back one per object (as `apply` returns them), deletions last.
   */
  replaceAll<K extends StateKind>(
    kind: K,
    objects: readonly KindTypes[K][],
  ): Extract<StateChange, { kind: K }>[] {
    const changes: Extract<StateChange, { kind: K }>[] = [];
    this.batch(() => {
      // Into an empty kind nothing can be absent: no set of the keys to keep (150k pods' worth
      // on a first snapshot).
      const keep = this.#count(kind) === 0 ? undefined : new Set<string>();
      for (const obj of objects) {
        const key = keyOf(kind, obj);
        keep?.add(key);
        const c = this.#applyAt(kind, key, "add", obj);
        if (c) changes.push(c);
      }
      // Every kept key is stored now, so equal sizes mean nothing else is.
      if (keep !== undefined && this.#count(kind) !== keep.size) changes.push(...this.retainOnly(kind, keep));
    });
    return changes;
  }

  /** Objects of `kind` held now. */
  count(kind: StateKind): number {
    return this.#count(kind);
  }

  /**
   * Deletes every object of `kind` whose key (stateKey) is not in `keep`: the end of a relist
   * applied object by object (core's streamed snapshot). Returns the deletions.
   */
  retainOnly<K extends StateKind>(kind: K, keep: ReadonlySet<string>): Extract<StateChange, { kind: K }>[] {
    const changes: Extract<StateChange, { kind: K }>[] = [];
    this.batch(() => {
      for (const key of [...this.#keys(kind)]) {
        if (keep.has(key)) continue;
        const obj = this.#get(kind, key);
        const c = obj && this.#applyAt(kind, key, "delete", obj);
        if (c) changes.push(c);
      }
    });
    return changes;
  }

  /**
   * Runs `fn` and delivers its changes afterwards, coalesced per object: add+update → add,
   * update+delete → delete, add+delete → nothing.
   */
  batch(fn: () => void): void {
    this.#batchDepth++;
    try {
      fn();
    } finally {
      this.#batchDepth--;
      if (this.#batchDepth === 0) {
        const queued = this.#queued;
        this.#queued = [];
        this.#queuedAt = queueIndex();
        for (const change of queued) if (change) this.#deliver(change);
      }
    }
  }

  // ---- notifications ------------------------------------------------------------------------

  /** Calls `listener` after every change (to the given kinds only, if any). Returns unsubscribe. */
  subscribe(listener: Listener, kinds?: readonly StateKind[]): () => void {
    const entry = { fn: listener, kinds: kinds ? new Set(kinds) : undefined };
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  /** Typed listener for one kind: `on("Pod", (c) => c.object.spec…)`. Returns unsubscribe. */
  on<K extends StateKind>(
    kind: K,
    listener: (change: Extract<StateChange, { kind: K }>) => void,
  ): () => void {
    return this.subscribe(
      (c) => {
        listener(c as Extract<StateChange, { kind: K }>);
      },
      [kind],
    );
  }

  /**
   * The index `key` names, built by `create` on first use and kept with this state (the
   * dashboard's machine index, its Karpenter-version tracker). `create` subscribes to the state
   * itself; nothing outside the state holds on to it, so it goes when the state goes.
   */
  derived<T>(key: object | symbol, create: () => T): T {
    if (this.#derived.has(key)) return this.#derived.get(key) as T;
    const made = create();
    this.#derived.set(key, made);
    return made;
  }

  /** Increments on every delivered change: a cheap "did anything change since" for pollers. */
  get version(): number {
    return this.#version;
  }

  // ---- reading ------------------------------------------------------------------------------

  node(name: string): Node | undefined {
    return this.#nodes.get(name)?.node;
  }
  nodeClaim(name: string): NodeClaim | undefined {
    return this.#nodeClaims.get(name)?.nodeClaim;
  }
  nodePool(name: string): NodePool | undefined {
    return this.#nodePools.get(name);
  }
  pod(namespace: string, name: string): Pod | undefined {
    return this.#pods.get(`${namespace}/${name}`)?.pod;
  }

  nodes(): Node[] {
    return Array.from(this.#nodes.values(), (e) => e.node);
  }
  nodeClaims(): NodeClaim[] {
    return Array.from(this.#nodeClaims.values(), (e) => e.nodeClaim);
  }
  nodePools(): NodePool[] {
    return [...this.#nodePools.values()];
  }
  pods(): Pod[] {
    return Array.from(this.#pods.values(), (e) => e.pod);
  }
  /** PodDisruptionBudgets (the agent streams them: consolidation blockers, docs/consolidation.md). */
  podDisruptionBudgets(): PodDisruptionBudget[] {
    return [...this.#pdbs.values()];
  }
  daemonSets(): DaemonSetInfo[] {
    return Array.from(this.#daemonSets.values(), (d) => ({ ...d, requests: { ...d.requests } }));
  }
  spotPolicy(namespace: string, name: string): SpotPolicyResource | undefined {
    return this.#spotPolicies.get(`${namespace}/${name}`);
  }
  /** Every SpotPolicy, or those of one namespace. */
  spotPolicies(namespace?: string): SpotPolicyResource[] {
    const all = [...this.#spotPolicies.values()];
    return namespace === undefined ? all : all.filter((p) => p.metadata.namespace === namespace);
  }
  warmupPolicy(name: string): WarmupPolicyResource | undefined {
    return this.#warmupPolicies.get(name);
  }
  warmupPolicies(): WarmupPolicyResource[] {
    return [...this.#warmupPolicies.values()];
  }
  /** The NodeOverlays (Karpenter v1.8+) in Karpenter's priority order: the same array until one changes. */
  nodeOverlays(): readonly NodeOverlay[] {
    this.#overlaysOrdered ??= orderByWeight([...this.#overlays.values()]);
    return this.#overlaysOrdered;
  }

  counts(): { nodes: number; nodeClaims: number; nodePools: number; pods: number; pendingPods: number } {
    return {
      nodes: this.#nodes.size,
      nodeClaims: this.#nodeClaims.size,
      nodePools: this.#nodePools.size,
      pods: this.#pods.size,
      pendingPods: this.#pending.size,
    };
  }

  /** Pods bound to the node; terminal (Succeeded/Failed) ones only when asked. */
  podsOnNode(name: string, opts: { includeTerminal?: boolean } = {}): Pod[] {
    const out: Pod[] = [];
    for (const key of this.#nodeAgg.get(name)?.pods ?? []) {
      const e = this.#pods.get(key);
      if (e && (e.counted !== 0 || opts.includeTerminal === true)) out.push(e.pod);
    }
    return out;
  }

  /** Unbound, non-terminal pods not being deleted; `unschedulableOnly` keeps those the scheduler gave up on. */
  pendingPods(opts: { unschedulableOnly?: boolean } = {}): Pod[] {
    const out: Pod[] = [];
    for (const key of this.#pending) {
      const e = this.#pods.get(key);
      if (e && (opts.unschedulableOnly !== true || isUnschedulable(e.pod))) out.push(e.pod);
    }
    return out;
  }

  /** Effective requests of a stored pod (see podRequests), or undefined if unknown. */
  podRequests(namespace: string, name: string): Resources | undefined {
    const e = this.#pods.get(`${namespace}/${name}`);
    return e ? { ...e.requests } : undefined;
  }

  /** Requests vs allocatable on a node; undefined if neither the node nor pods bound to it are known. */
  nodeUsage(name: string): NodeUsage | undefined {
    const entry = this.#nodes.get(name);
    const agg = this.#nodeAgg.get(name);
    if (!entry && !agg) return undefined;
    const requested = withoutZeros(agg?.requested ?? {});
    const allocatable = { ...(entry?.allocatable ?? {}) };
    return {
      node: name,
      requested,
      daemonSetRequested: withoutZeros(agg?.daemonSetRequested ?? {}),
      allocatable,
      cpuMillis: { requested: requested[CPU] ?? 0, allocatable: allocatable[CPU] ?? 0 },
      memoryBytes: { requested: requested[MEMORY] ?? 0, allocatable: allocatable[MEMORY] ?? 0 },
      pods: { requested: agg?.podCount ?? 0, allocatable: allocatable[PODS] ?? 0 },
    };
  }

  /** The node a claim launched: by providerID, else by status.nodeName. */
  nodeForNodeClaim(name: string): Node | undefined {
    const nc = this.#nodeClaims.get(name);
    return nc ? this.#linkedNode(nc) : undefined;
  }

  /** A claim's lifecycle state, taking its node's disruption taint into account. */
  nodeClaimState(name: string): NodeClaimState | undefined {
    const nc = this.#nodeClaims.get(name);
    return nc ? nodeClaimState(nc.nodeClaim, this.#linkedNode(nc)) : undefined;
  }

  /** The claim behind a node: by providerID, else by the claim's status.nodeName. */
  nodeClaimForNode(name: string): NodeClaim | undefined {
    const node = this.#nodes.get(name);
    const byID =
      node?.providerID === undefined ? undefined : this.#nodeClaimByProviderID.get(node.providerID);
    const claim = byID ?? this.#nodeClaimByNodeName.get(name);
    return claim === undefined ? undefined : this.#nodeClaims.get(claim)?.nodeClaim;
  }

  nodesInPool(pool: string): Node[] {
    return this.#members(this.#nodesByPool.get(pool), (n) => this.#nodes.get(n)?.node);
  }
  nodeClaimsInPool(pool: string): NodeClaim[] {
    return this.#members(this.#nodeClaimsByPool.get(pool), (n) => this.#nodeClaims.get(n)?.nodeClaim);
  }

  /** Names of every pool known from a NodePool, a Node label or a NodeClaim label, sorted. */
  poolNames(): string[] {
    const names = new Set<string>([
      ...this.#nodePools.keys(),
      ...this.#nodesByPool.keys(),
      ...this.#nodeClaimsByPool.keys(),
    ]);
    return [...names].sort();
  }

  /** Counts, sizes, requests and limit usage of one pool (O(nodes and claims in the pool)). */
  poolSummary(pool: string): PoolSummary {
    const byCt = Object.fromEntries(CAPACITY_KEYS.map((k) => [k, 0])) as PoolSummary["nodesByCapacityType"];
    const byPhase = Object.fromEntries(PHASES.map((p) => [p, 0])) as PoolSummary["nodeClaimsByPhase"];
    const allocatable: Resources = {};
    const requested: Resources = {};
    const size: Resources = {};
    let ready = 0;
    const nodeNames = this.#nodesByPool.get(pool) ?? new Set<string>();
    for (const name of nodeNames) {
      const e = this.#nodes.get(name);
      if (!e) continue;
      byCt[capacityTypeOf(e.node) ?? "unknown"]++;
      if (isReady(e.node)) ready++;
      addInto(size, e.size);
      addInto(allocatable, e.allocatable);
      const agg = this.#nodeAgg.get(name);
      if (agg) addInto(requested, agg.requested);
    }
    const usage: Resources = {};
    const claimNames = this.#nodeClaimsByPool.get(pool) ?? new Set<string>();
    for (const name of claimNames) {
      const e = this.#nodeClaims.get(name);
      if (!e) continue;
      byPhase[nodeClaimPhase(e.nodeClaim, this.#linkedNode(e))]++;
      addInto(usage, e.capacity);
    }
    const np = this.#nodePools.get(pool);
    let limits: LimitStatus[] = [];
    try {
      limits = limitStatus(np?.spec.limits, usage);
    } catch (err) {
      if (!(err instanceof QuantityError)) throw err;
      this.#bad("NodePool", pool, err);
    }
    return {
      name: pool,
      exists: np !== undefined,
      nodes: nodeNames.size,
      readyNodes: ready,
      nodesByCapacityType: byCt,
      cpuMillis: size[CPU] ?? 0,
      memoryBytes: size[MEMORY] ?? 0,
      allocatable: withoutZeros(allocatable),
      requested: withoutZeros(requested),
      nodeClaims: claimNames.size,
      nodeClaimsByPhase: byPhase,
      usage: withoutZeros(usage),
      limits,
    };
  }

  poolSummaries(): PoolSummary[] {
    return this.poolNames().map((p) => this.poolSummary(p));
  }

  /** Objects stored with an unparsable quantity ("Kind key" → error), so the problem stays visible. */
  badObjects(): Map<string, string> {
    return new Map(this.#badObjects);
  }

  // ---- internals ----------------------------------------------------------------------------

  #linkedNode(nc: NodeClaimEntry): Node | undefined {
    const byID = nc.providerID === undefined ? undefined : this.#nodeByProviderID.get(nc.providerID);
    const nodeName = byID ?? nc.nodeName;
    return nodeName === undefined ? undefined : this.#nodes.get(nodeName)?.node;
  }

  #members<T>(set: Set<string> | undefined, get: (name: string) => T | undefined): T[] {
    const out: T[] = [];
    for (const name of set ?? []) {
      const v = get(name);
      if (v !== undefined) out.push(v);
    }
    return out;
  }

  #get<K extends StateKind>(kind: K, key: string): KindTypes[K] | undefined {
    switch (kind) {
      case "Node":
        return this.#nodes.get(key)?.node as KindTypes[K] | undefined;
      case "NodeClaim":
        return this.#nodeClaims.get(key)?.nodeClaim as KindTypes[K] | undefined;
      case "NodePool":
        return this.#nodePools.get(key) as KindTypes[K] | undefined;
      case "Pod":
        return this.#pods.get(key)?.pod as KindTypes[K] | undefined;
      case "DaemonSet":
        return this.#daemonSets.get(key)?.daemonSet as KindTypes[K] | undefined;
      case "SpotPolicy":
        return this.#spotPolicies.get(key) as KindTypes[K] | undefined;
      case "WarmupPolicy":
        return this.#warmupPolicies.get(key) as KindTypes[K] | undefined;
      case "PodDisruptionBudget":
        return this.#pdbs.get(key) as KindTypes[K] | undefined;
      case "NodeOverlay":
        return this.#overlays.get(key) as KindTypes[K] | undefined;
    }
    throw new Error(`cluster state does not track kind ${String(kind)}`);
  }

  #count(kind: StateKind): number {
    switch (kind) {
      case "Node":
        return this.#nodes.size;
      case "NodeClaim":
        return this.#nodeClaims.size;
      case "NodePool":
        return this.#nodePools.size;
      case "Pod":
        return this.#pods.size;
      case "DaemonSet":
        return this.#daemonSets.size;
      case "SpotPolicy":
        return this.#spotPolicies.size;
      case "WarmupPolicy":
        return this.#warmupPolicies.size;
      case "PodDisruptionBudget":
        return this.#pdbs.size;
      case "NodeOverlay":
        return this.#overlays.size;
    }
  }

  #keys(kind: StateKind): IterableIterator<string> {
    switch (kind) {
      case "Node":
        return this.#nodes.keys();
      case "NodeClaim":
        return this.#nodeClaims.keys();
      case "NodePool":
        return this.#nodePools.keys();
      case "Pod":
        return this.#pods.keys();
      case "DaemonSet":
        return this.#daemonSets.keys();
      case "SpotPolicy":
        return this.#spotPolicies.keys();
      case "WarmupPolicy":
        return this.#warmupPolicies.keys();
      case "PodDisruptionBudget":
        return this.#pdbs.keys();
      case "NodeOverlay":
        return this.#overlays.keys();
    }
  }

  #put(kind: StateKind, key: string, obj: KindTypes[StateKind]): void {
    switch (kind) {
      case "Node":
        this.#putNode(key, obj as Node);
        return;
      case "NodeClaim":
        this.#putNodeClaim(key, obj as NodeClaim);
        return;
      case "NodePool":
        this.#nodePools.set(key, obj as NodePool);
        return;
      case "Pod":
        this.#putPod(key, obj as Pod);
        return;
      case "DaemonSet": {
        const ds = obj as DaemonSet;
        this.#daemonSets.set(key, {
          key,
          daemonSet: ds,
          requests: this.#parse("DaemonSet", key, () =>
            podRequests({ metadata: {}, spec: ds.spec.template.spec }),
          ),
        });
        return;
      }
      case "SpotPolicy":
        this.#spotPolicies.set(key, obj as SpotPolicyResource);
        return;
      case "WarmupPolicy":
        this.#warmupPolicies.set(key, obj as WarmupPolicyResource);
        return;
      case "PodDisruptionBudget":
        this.#pdbs.set(key, obj as PodDisruptionBudget);
        return;
      case "NodeOverlay":
        this.#overlays.set(key, obj as NodeOverlay);
        this.#overlaysOrdered = undefined;
        return;
    }
  }

  #remove(kind: StateKind, key: string): void {
    this.#badObjects.delete(`${kind} ${key}`);
    switch (kind) {
      case "Node":
        this.#unindexNode(key);
        this.#nodes.delete(key);
        this.#dropAggIfEmpty(key);
        return;
      case "NodeClaim":
        this.#unindexNodeClaim(key);
        this.#nodeClaims.delete(key);
        return;
      case "NodePool":
        this.#nodePools.delete(key);
        return;
      case "Pod":
        this.#unaccountPod(key);
        this.#pods.delete(key);
        return;
      case "DaemonSet":
        this.#daemonSets.delete(key);
        return;
      case "SpotPolicy":
        this.#spotPolicies.delete(key);
        return;
      case "WarmupPolicy":
        this.#warmupPolicies.delete(key);
        return;
      case "PodDisruptionBudget":
        this.#pdbs.delete(key);
        return;
      case "NodeOverlay":
        this.#overlays.delete(key);
        this.#overlaysOrdered = undefined;
        return;
    }
  }

  #parse(kind: StateKind, key: string, fn: () => Resources): Resources {
    try {
      const r = fn();
      this.#badObjects.delete(`${kind} ${key}`);
      return r;
    } catch (err) {
      if (!(err instanceof QuantityError)) throw err;
      this.#bad(kind, key, err);
      return {};
    }
  }

  #bad(kind: StateKind, key: string, err: Error): void {
    this.#badObjects.set(`${kind} ${key}`, err.message);
    this.#opts.onBadObject?.(kind, key, err);
  }

  #putNode(key: string, node: Node): void {
    this.#unindexNode(key);
    let allocatable: Resources = {};
    const size = this.#parse("Node", key, () => {
      allocatable = parseResources(node.status?.allocatable);
      return nodeSize(parseResources(node.status?.capacity), allocatable);
    });
    const entry: NodeEntry = {
      node,
      allocatable,
      size,
      pool: nodePoolOf(node),
      providerID: providerIDOf(node),
    };
    this.#nodes.set(key, entry);
    addToIndex(this.#nodesByPool, entry.pool, key);
    if (entry.providerID !== undefined) this.#nodeByProviderID.set(entry.providerID, key);
  }

  #unindexNode(key: string): void {
    const old = this.#nodes.get(key);
    if (!old) return;
    removeFromIndex(this.#nodesByPool, old.pool, key);
    unlink(this.#nodeByProviderID, old.providerID, key);
  }

  #putNodeClaim(key: string, nc: NodeClaim): void {
    this.#unindexNodeClaim(key);
    const entry: NodeClaimEntry = {
      nodeClaim: nc,
      capacity: this.#parse("NodeClaim", key, () => parseResources(nc.status?.capacity)),
      pool: nodePoolOf(nc),
      providerID: providerIDOf(nc),
      nodeName: nc.status?.nodeName || undefined,
    };
    this.#nodeClaims.set(key, entry);
    addToIndex(this.#nodeClaimsByPool, entry.pool, key);
    if (entry.providerID !== undefined) this.#nodeClaimByProviderID.set(entry.providerID, key);
    if (entry.nodeName !== undefined) this.#nodeClaimByNodeName.set(entry.nodeName, key);
  }

  #unindexNodeClaim(key: string): void {
    const old = this.#nodeClaims.get(key);
    if (!old) return;
    removeFromIndex(this.#nodeClaimsByPool, old.pool, key);
    unlink(this.#nodeClaimByProviderID, old.providerID, key);
    unlink(this.#nodeClaimByNodeName, old.nodeName, key);
  }

  #agg(node: string): NodeAgg {
    let agg = this.#nodeAgg.get(node);
    if (!agg) {
      agg = { requested: {}, daemonSetRequested: {}, podCount: 0, pods: new Set() };
      this.#nodeAgg.set(node, agg);
    }
    return agg;
  }

  #dropAggIfEmpty(node: string): void {
    const agg = this.#nodeAgg.get(node);
    if (agg && agg.pods.size === 0 && !this.#nodes.has(node)) this.#nodeAgg.delete(node);
  }

  #putPod(key: string, pod: Pod): void {
    this.#unaccountPod(key);
    const node = boundNode(pod);
    const counted = node === undefined || isTerminalPod(pod) ? 0 : COUNTED | (isDaemonPod(pod) ? DAEMON : 0);
    const entry: PodEntry = {
      pod,
      requests: this.#parse("Pod", key, () => sharedPodRequests(pod)),
      counted,
    };
    this.#pods.set(key, entry);
    if (isPendingPod(pod)) this.#pending.add(key);
    if (node === undefined) return;
    const agg = this.#agg(node);
    agg.pods.add(key);
    if (counted !== 0) {
      addInto(agg.requested, entry.requests);
      if ((counted & DAEMON) !== 0) addInto(agg.daemonSetRequested, entry.requests);
      agg.podCount++;
    }
  }

  #unaccountPod(key: string): void {
    const old = this.#pods.get(key);
    if (!old) return;
    this.#pending.delete(key);
    const node = boundNode(old.pod);
    if (node === undefined) return;
    const agg = this.#nodeAgg.get(node);
    if (!agg) return;
    agg.pods.delete(key);
    if (old.counted !== 0) {
      addInto(agg.requested, old.requests, -1);
      if ((old.counted & DAEMON) !== 0) addInto(agg.daemonSetRequested, old.requests, -1);
      agg.podCount--;
    }
    this.#dropAggIfEmpty(node);
  }

  #emit(change: StateChange): void {
    if (this.#batchDepth > 0) {
      const at = this.#queuedAt[change.kind];
      const i = at.get(change.key);
      if (i === undefined) {
        at.set(change.key, this.#queued.push(change) - 1);
        return;
      }
      const before = this.#queued[i] as StateChange;
      this.#queued[i] = undefined;
      at.delete(change.key);
      if (before.type === "add" && change.type === "delete") return;
      // The first change's `previous` is the state listeners last saw.
      const type: ApplyType =
        before.type === "add"
          ? "add"
          : before.type === "delete" && change.type === "add"
            ? "update"
            : change.type;
      const merged = { kind: change.kind, type, key: change.key, object: change.object } as StateChange;
      if (before.previous !== undefined) merged.previous = before.previous;
      at.set(change.key, this.#queued.push(merged) - 1);
      return;
    }
    this.#deliver(change);
  }

  #deliver(change: StateChange): void {
    this.#version++;
    if (this.#listeners.size === 0) return;
    for (const l of [...this.#listeners]) {
      if (l.kinds && !l.kinds.has(change.kind)) continue;
      try {
        l.fn(change);
      } catch (err) {
        this.#opts.onListenerError?.(err, change);
      }
    }
  }
}

/**
 * Informer handlers that write one kind into the state: pass to the informer for `kind`
 * (shape of src/kube/informer's InformerHandlers).
 */
export function stateHandlers<K extends StateKind>(
  state: ClusterState,
  kind: K,
): {
  add: (obj: KindTypes[K]) => void;
  update: (obj: KindTypes[K]) => void;
  delete: (obj: KindTypes[K]) => void;
} {
  return {
    add: (obj) => {
      state.apply(kind, "add", obj);
    },
    update: (obj) => {
      state.apply(kind, "update", obj);
    },
    delete: (obj) => {
      state.apply(kind, "delete", obj);
    },
  };
}
