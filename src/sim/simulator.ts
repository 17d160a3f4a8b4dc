// A simulated Karpenter cluster behind the in-memory apiserver: the deployment controller,
// kube-scheduler, Karpenter (batching, cheapest-offering launch, consolidation, spot
// interruption) and kubelets, each a reconcile pass over what the apiserver holds. Wave reads
// it through the same KubeClient port it uses for real clusters, so Wave runs unchanged.
import type { MemoryKube } from "../kube/memory/memory.ts";
import { copyJson } from "../kube/memory/copy.ts";
import type { Deployment, Event, Node, Pod, PodDisruptionBudget, Taint } from "../objects/kube.ts";
import {
  CAPACITY_TYPE_LABEL,
  DISRUPTED_TAINT,
  DO_NOT_DISRUPT_ANNOTATION,
  INSTANCE_TYPE_LABEL,
  NODE_INITIALIZED_LABEL,
  NODE_POOL_LABEL,
  NODE_REGISTERED_LABEL,
  TERMINATION_FINALIZER,
  TOPOLOGY_ZONE_LABEL,
  type NodeClaim,
  type NodePool,
} from "../objects/karpenter.ts";
import { parseDuration } from "../karpenter/duration.ts";
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import { isActivePod, isDaemonSetPod } from "../karpenter/room.ts";
import { parseResources, podRequests as computeRequests, type Resources } from "../karpenter/resources.ts";
import { podMatchesNodeLabels, untoleratedTaints, matchesRequirement } from "../karpenter/scheduling.ts";
import { offeringLabels, type Offering } from "./catalog.ts";
import { PodStartModel, podUid } from "./pod-start.ts";
import { isPrepullPod } from "../objects/wave.ts";
import { seeded, suffix } from "../shared/random.ts";
import { bindingBudget, budgetsNow } from "../karpenter/budgets.ts";
import { pdbStatus } from "../kube/pdb.ts";
import { labelSelectorMatcher } from "../kube/selectors.ts";

export interface SimulatorOptions {
  kube: MemoryKube;
  clock: Clock;
  offerings: readonly Offering[];
  random: () => number;
  /** Mutating admission for pod creations (Wave's spot placement logic). */
  admit?: (pod: Pod) => Promise<Pod>;
  /** Launch → Node registered (KWOK's nodeRegistrationDelay). */
  bootDelayMs?: number;
  /** The same per NodePool (a replay's recorded boots), else bootDelayMs. */
  poolBootMs?: Readonly<Record<string, number>>;
  /**
   * Per NodePool, how long a pod on a node without its image waits for the pull (default 0): its
   * first pods on a new node, a rollout's new image; not on a node that ran it or Wave pre-pulled it.
   */
  poolPullMs?: Readonly<Record<string, number>>;
  batchIdleMs?: number;
  batchMaxMs?: number;
  /** Expected spot interruptions per spot node per hour. */
  spotInterruptionRate?: number;
  /**
   * How long a consolidation decision must stay valid before it is carried out (Karpenter's
   * consolidationTTL: it re-checks a command after 15 s, for empty and underutilized nodes alike).
   */
  consolidationValidationMs?: number;
  /** Drift replacements per pool at most one per this period (Karpenter's budgets pace drift). */
  driftIntervalMs?: number;
  /**
   * Common random numbers for what-if comparisons: each spot node's interruption time is drawn at
   * its launch from this seed and the launch's pool, time and order, not from the shared stream —
   * two replays that launch the same node at the same moment see it interrupted at the same
   * moment, whatever else (a warm node, a pod's name) drew from the stream in between. Without
   * it, interruptions are drawn per tick from `random`.
   */
  interruptionSeed?: number;
  log?: Logger;
}

const EVENT_NS = "default";
const TERMINATION_DRAIN_MS = 2000;

interface Launch {
  offering: Offering;
  launchedAt: number;
  /** When it would have launched had Karpenter acted continuously (PodStartModel.launchAt). */
  continuousAt: number;
  bootMs: number;
  pool: string;
  nodeName: string;
}

type DisruptReason = "Empty" | "Underutilized" | "Drifted" | "Interrupted";
type DisruptionReason = Exclude<DisruptReason, "Interrupted">;

/**
 * The interruption messages Karpenter's AWS provider acts on (from EventBridge via SQS), with how
 * often each ends a spot node here: mostly spot reclaims, now and then an instance state change.
 */
const INTERRUPTIONS: readonly { reason: string; message: string; share: number }[] = [
  { reason: "SpotInterrupted", message: "Spot interruption warning was triggered", share: 0.8 },
  { reason: "InstanceStopping", message: "Instance is stopping", share: 0.1 },
  { reason: "InstanceTerminating", message: "Instance is terminating", share: 0.1 },
];

const SPOT_INTERRUPTED = { reason: "SpotInterrupted", message: "Spot interruption warning was triggered" };

/** Event reasons of the interruptions above (a replay counts them). */
export const INTERRUPTION_REASONS: ReadonlySet<string> = new Set(INTERRUPTIONS.map((i) => i.reason));

const poolHashes = new WeakMap<NodePool, string>();

/**
 * The hash Karpenter stamps on a NodeClaim from its NodePool's template; a change means drift.
 * Once per stored version of the pool (a write replaces the object; disruption asks every tick).
 */
export function nodePoolHash(pool: NodePool): string {
  let h = poolHashes.get(pool);
  if (h === undefined) {
    h = fnv(JSON.stringify(pool.spec.template));
    poolHashes.set(pool, h);
  }
  return h;
}

/** Allocatable after kubelet/system reservations (EKS's formula, simplified). */
function allocatable(o: Offering): { cpuMilli: number; memoryBytes: number; pods: number } {
  const r = o.type.reserved;
  if (r) {
    return {
      cpuMilli: o.type.vcpu * 1000 - r.cpuMilli,
      memoryBytes: o.type.memoryBytes - r.memoryBytes,
      pods: o.type.maxPods,
    };
  }
  const cpuMilli =
    o.type.vcpu * 1000 - (60 + 10 * Math.min(o.type.vcpu, 4) + 2.5 * Math.max(0, o.type.vcpu - 4));
  const memoryBytes = o.type.memoryBytes - (255 + 11 * o.type.maxPods) * 2 ** 20 - 100 * 2 ** 20;
  return { cpuMilli: Math.floor(cpuMilli), memoryBytes, pods: o.type.maxPods };
}

const key = (p: Pod): string => `${p.metadata.namespace ?? ""}/${p.metadata.name ?? ""}`;
/** Same length, same items (by identity) in the same order. */
const sameItems = (a: readonly unknown[], b: readonly unknown[]): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i]);
/** Whether `pods` are the pods keyed `keys`, in that order. */
const sameKeys = (keys: readonly string[], pods: readonly Pod[]): boolean =>
  keys.length === pods.length && pods.every((p, i) => keys[i] === key(p));
const iso = (ms: number): string => new Date(ms).toISOString();
const free = (alloc: Resources, used: Resources): Resources => ({
  cpu: (alloc.cpu ?? 0) - (used.cpu ?? 0),
  memory: (alloc.memory ?? 0) - (used.memory ?? 0),
  pods: (alloc.pods ?? 0) - (used.pods ?? 0),
});
const fits = (req: Resources, room: Resources): boolean =>
  (req.cpu ?? 0) <= (room.cpu ?? 0) &&
  (req.memory ?? 0) <= (room.memory ?? 0) &&
  (room.pods ?? 0) >= 1 &&
  Object.entries(req).every(
    ([k, v]: [string, number]) => k === "cpu" || k === "memory" || k === "pods" || v <= (room[k] ?? 0),
  );

export class Simulator {
  readonly name = "simulator";
  readonly #o: Required<Omit<SimulatorOptions, "admit" | "interruptionSeed" | "poolBootMs" | "poolPullMs">> &
    Pick<SimulatorOptions, "admit" | "interruptionSeed">;
  /** When each pod would have started on a continuously acting cluster (its stamps). */
  readonly #starts: PodStartModel;
  readonly #launches = new Map<string, Launch>();
  /** Pending-pod batch, as Karpenter's provisioner batches (idle / max windows). */
  #batch: { start: number; last: number; size: number } | undefined;
  /** Last time each node's pod set changed (consolidateAfter counts from there). */
  readonly #nodeChanged = new Map<string, { at: number; pods: readonly string[] }>();
  readonly #terminating = new Map<string, number>();
  /** Nodes a consolidation decision holds, and since when (validated after consolidationValidationMs). */
  readonly #candidates = new Map<string, number>();
  /** When each pool last had a drifted node replaced. */
  readonly #lastDrift = new Map<string, number>();
  /**
   * Every NodeClaim and Node name this simulator has handed out: random names are drawn again
   * until new (as generateName retries). A day at a high interruption rate launches thousands of
   * nodes; a name reused while its namesake still exists (or is still draining) was a 500.
   */
  readonly #names = new Set<string>();
  /**
   * Underutilized checks of the last disruption pass, by node: valid while no node and no node's
   * pod set changed (objects are replaced on write, never changed, so identity says "unchanged").
   * The check is O(nodes²) a pass and most passes of a long replay move nothing.
   */
  readonly #movable = new Map<string, boolean>();
  #lastNodes: readonly Node[] = [];
  /** With interruptionSeed: each spot NodeClaim's interruption time and kind, drawn at launch. */
  readonly #interruptAt = new Map<string, { at: number; pick: number }>();
  #launchOrdinal = { at: NaN, n: 0 };
  /** Bumped whenever #terminating changes (passes that filter nodes by it key their memos on it). */
  #terminatingVersion = 0;
  /**
   * Per pass, the inputs (peeked arrays, by identity, and versions) of its last run when that run
   * wrote nothing: the same inputs again would write nothing again, so the pass is skipped.
   */
  readonly #idle = new Map<string, readonly unknown[]>();
  /** What the disruption pass derives from the stored objects, while they are the same arrays. */
  #disruptionMemo: { inputs: readonly unknown[]; view: DisruptionView } | undefined;
  #inFlightMemo: { pods: readonly Pod[]; claims: readonly NodeClaim[]; answer: InFlight } | undefined;
  #waitingMemo: { pods: readonly Pod[]; claims: readonly NodeClaim[]; waiting: readonly Pod[] } | undefined;
  /** The provisioner's last batch that found no NodePool for any pod, and the Events it sent. */
  #unplaceable: { inputs: readonly unknown[]; failed: { pod: Pod; message: string }[] } | undefined;
  #ticks = 0;
  /**
   * Karpenter's event recorder drops an Event it published about the same object with the same
   * values within the event's dedupe timeout; after it, client-go's correlator adds to the Event
   * still stored (count + 1). Per dedupe key: when last published, and the stored Event's name.
   */
  readonly #published = new Map<string, { at: number; name: string; namespace: string; count: number }>();
  /** Budgets change at most once a minute: allowed disruptions per pool version, reason and size. */
  #budgetMemo = { minute: NaN, allowed: new WeakMap<NodePool, Map<string, number>>() };

  constructor(opts: SimulatorOptions) {
    this.#o = {
      bootDelayMs: 3000,
      batchIdleMs: 1000,
      batchMaxMs: 10000,
      spotInterruptionRate: 0.02,
      consolidationValidationMs: 15_000,
      driftIntervalMs: 60_000,
      log: silentLogger,
      ...opts,
    };
    this.#starts = new PodStartModel({
      bootMs: this.#o.bootDelayMs,
      ...(opts.poolBootMs ? { poolBootMs: opts.poolBootMs } : {}),
      ...(opts.poolPullMs ? { poolPullMs: opts.poolPullMs } : {}),
    });
  }

  get ticks(): number {
    return this.#ticks;
  }

  /**
   * Nothing in flight: no node booting, no provisioning batch open, no node draining or held for
   * consolidation, no pod waiting for a node. A replay may then step the clock further at once.
   */
  quiet(): boolean {
    if (this.#launches.size > 0 || this.#batch || this.#terminating.size > 0 || this.#candidates.size > 0)
      return false;
    return !this.#podsInFlight().unscheduled;
  }

  /**
   * What the pods wait for: `unscheduled`, some pod has no node yet; `dueNow`, some pod waits for
   * a controller now — bound but not started (its kubelet), or unscheduled and not nominated to a
   * launching NodeClaim (the scheduler, the provisioner). Once per version of the pods and claims
   * (a replay asks every step).
   */
  #podsInFlight(): InFlight {
    const { kube } = this.#o;
    const pods = kube.peek("Pod");
    const claims = kube.peek("NodeClaim");
    const memo = this.#inFlightMemo;
    if (memo && memo.pods === pods && memo.claims === claims) return memo.answer;
    const answer: InFlight = { unscheduled: false, dueNow: false, bound: [] };
    let nominated: ReadonlySet<string> | undefined;
    for (const p of pods) {
      if (!isActivePod(p)) continue;
      if (p.spec.nodeName) {
        if (p.status?.phase === "Pending") answer.bound.push(podUid(p));
        continue;
      }
      answer.unscheduled = true;
      nominated ??= nominatedPods(claims);
      if (!nominated.has(key(p))) answer.dueNow = true;
    }
    this.#inFlightMemo = { pods, claims, answer };
    return answer;
  }

  /**
   * When a controller next has something to do by itself, for a replay whose last tick changed
   * nothing: a node finishing its boot or its drain, a consolidation decision's validation, the
   * provisioning batch's window. `now` while a pod waits for provisioning or for its kubelet;
   * Infinity when nothing is in flight. Spot interruptions are drawn over the elapsed time (the
   * tick's dtMs), so they need no tick of their own; consolidateAfter expiries are not included
   * (the replay caps its jumps, as for quiet()).
   */
  nextDue(): number {
    const { clock } = this.#o;
    const now = clock.now();
    let due = Infinity;
    for (const l of this.#launches.values()) due = Math.min(due, l.launchedAt + l.bootMs);
    due = Math.min(due, this.#starts.nextPullEnd());
    for (const since of this.#terminating.values()) due = Math.min(due, since + TERMINATION_DRAIN_MS);
    for (const since of this.#candidates.values())
      due = Math.min(due, since + this.#o.consolidationValidationMs);
    if (this.#batch)
      due = Math.min(due, this.#batch.last + this.#o.batchIdleMs, this.#batch.start + this.#o.batchMaxMs);
    const inFlight = this.#podsInFlight();
    if (inFlight.dueNow || inFlight.bound.some((uid) => !this.#starts.isPulling(uid))) return now;
    return Math.max(now, due);
  }

  /** Runs every controller once. */
  async tick(dtMs = 1000): Promise<void> {
    this.#ticks++;
    await this.reconcileDeployments();
    await this.reconcileKubelets();
    await this.reconcileScheduler();
    await this.reconcileProvisioner();
    await this.reconcileDisruptionBudgets();
    await this.reconcileDisruption(dtMs);
    await this.reconcileTermination();
  }

  /**
   * Runs a pass unless its inputs are those of its last run and that run wrote nothing (a pass is
   * a function of what it reads: the same reads would write nothing again). Most passes of a long
   * replay see nothing new.
   */
  async #unlessIdle(pass: string, inputs: readonly unknown[], run: () => Promise<void>): Promise<void> {
    const seen = this.#idle.get(pass);
    if (seen !== undefined && sameItems(seen, inputs)) return;
    const before = this.#o.kube.resourceVersion;
    await run();
    if (this.#o.kube.resourceVersion === before) this.#idle.set(pass, inputs);
    else this.#idle.delete(pass);
  }

  /** Ticks every `stepMs` of the clock until `signal` aborts. */
  async run(signal: AbortSignal, stepMs = 1000): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.tick(stepMs);
      } catch (err) {
        this.#o.log.warn("simulator tick failed", { err });
      }
      await this.#o.clock.sleep(stepMs, signal).catch(() => undefined);
    }
  }

  // ---- deployment + replicaset controller ----

  async reconcileDeployments(): Promise<void> {
    const { kube } = this.#o;
    const deployments = kube.peek("Deployment");
    const all = kube.peek("Pod");
    await this.#unlessIdle("deployments", [deployments, all], () =>
      this.#reconcileDeployments(deployments, all),
    );
  }

  async #reconcileDeployments(deployments: readonly Deployment[], all: readonly Pod[]): Promise<void> {
    const { kube } = this.#o;
    // The live pods of each namespace/ReplicaSet, grouped once (not a pass over every pod per
    // Deployment, twice, every tick).
    const byReplicaSet = new Map<string, Pod[]>();
    for (const p of all) {
      if (p.metadata.deletionTimestamp !== undefined) continue;
      for (const o of p.metadata.ownerReferences ?? []) {
        if (o.kind !== "ReplicaSet") continue;
        const k = `${p.metadata.namespace ?? ""}/${o.name}`;
        const list = byReplicaSet.get(k);
        if (list) list.push(p);
        else byReplicaSet.set(k, [p]);
      }
    }
    const replicaSetsOf = new Map<string, string[]>();
    for (const k of byReplicaSet.keys()) {
      const [ns = "", rs = ""] = k.split("/", 2);
      const list = replicaSetsOf.get(ns);
      if (list) list.push(rs);
      else replicaSetsOf.set(ns, [rs]);
    }
    for (const d of deployments) {
      const ns = d.metadata.namespace ?? "default";
      const rsName = `${d.metadata.name ?? ""}-${templateHash(d)}`;
      const mine = (byReplicaSet.get(`${ns}/${rsName}`) ?? []).filter(isActivePod);
      const want = d.spec.replicas ?? 1;
      if (mine.length < want) {
        const rs = await this.#ensureReplicaSet(d, rsName);
        for (let i = mine.length; i < want; i++) await this.#createPod(d, rs.name, rs.uid);
      } else if (mine.length > want) {
        // The ReplicaSet controller's order: unscheduled first, then lower deletion cost, then newest.
        const cost = (p: Pod): number =>
          Number(p.metadata.annotations?.["controller.kubernetes.io/pod-deletion-cost"] ?? 0);
        const victims = [...mine].sort(
          (a, b) =>
            Number(Boolean(a.spec.nodeName)) - Number(Boolean(b.spec.nodeName)) ||
            cost(a) - cost(b) ||
            (b.metadata.creationTimestamp ?? "").localeCompare(a.metadata.creationTimestamp ?? ""),
        );
        for (const p of victims.slice(0, mine.length - want)) await this.#deletePod(p);
      }
      // Pods of an older template (a rollout) are replaced once the new ones exist.
      const prefix = `${d.metadata.name ?? ""}-`;
      const stale = (replicaSetsOf.get(ns) ?? [])
        .filter((rs) => rs.startsWith(prefix) && rs !== rsName)
        .flatMap((rs) => byReplicaSet.get(`${ns}/${rs}`) ?? []);
      for (const p of stale.slice(0, Math.max(1, Math.ceil(want / 4)))) await this.#deletePod(p);
      const ready = mine.filter((p) => p.status?.phase === "Running").length;
      if (d.status?.readyReplicas !== ready || d.status.replicas !== mine.length) {
        await kube.patch(
          "Deployment",
          d.metadata.name ?? "",
          { status: { replicas: mine.length, readyReplicas: ready } },
          { namespace: ns },
        );
      }
    }
  }

  async #ensureReplicaSet(d: Deployment, name: string): Promise<{ name: string; uid: string }> {
    const { kube } = this.#o;
    const ns = d.metadata.namespace ?? "default";
    try {
      const rs = await kube.get("ReplicaSet", name, ns);
      return { name, uid: rs.metadata.uid ?? "" };
    } catch {
      const rs = await kube.create(
        "ReplicaSet",
        {
          metadata: {
            name,
            namespace: ns,
            labels: { ...d.spec.template.metadata?.labels, "pod-template-hash": templateHash(d) },
            ownerReferences: [
              {
                apiVersion: "apps/v1",
                kind: "Deployment",
                name: d.metadata.name ?? "",
                uid: d.metadata.uid ?? "",
                controller: true,
              },
            ],
          },
          spec: { replicas: d.spec.replicas ?? 1, selector: d.spec.selector, template: d.spec.template },
        },
        { namespace: ns },
      );
      return { name, uid: rs.metadata.uid ?? "" };
    }
  }

  async #createPod(d: Deployment, rsName: string, rsUid: string): Promise<void> {
    const ns = d.metadata.namespace ?? "default";
    let pod: Pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        generateName: `${rsName}-`,
        namespace: ns,
        labels: { ...d.spec.template.metadata?.labels, "pod-template-hash": templateHash(d) },
        annotations: { ...d.spec.template.metadata?.annotations },
        ownerReferences: [
          { apiVersion: "apps/v1", kind: "ReplicaSet", name: rsName, uid: rsUid, controller: true },
        ],
      },
      spec: copyJson(d.spec.template.spec),
      status: { phase: "Pending" },
    };
    if (this.#o.admit) pod = await this.#o.admit(pod);
    await this.#o.kube.create("Pod", pod, { namespace: ns });
  }

  async #deletePod(p: Pod): Promise<void> {
    await this.#o.kube
      .delete("Pod", p.metadata.name ?? "", { namespace: p.metadata.namespace ?? "default" })
      .catch(() => undefined);
  }

  // ---- kubelets: nodes register and become Ready, bound pods start ----

  async reconcileKubelets(): Promise<void> {
    const { kube, clock } = this.#o;
    const now = clock.now();
    for (const [claimName, l] of this.#launches) {
      if (now - l.launchedAt < l.bootMs) continue;
      this.#launches.delete(claimName);
      const claim = await kube.get("NodeClaim", claimName).catch(() => undefined);
      if (!claim || claim.metadata.deletionTimestamp) continue;
      await kube.create("Node", this.#nodeFor(claim, l));
      this.#starts.registered(l.nodeName, l.pool, l.continuousAt, now, this.#ticks);
      await kube.patch("NodeClaim", claimName, {
        metadata: { labels: { [NODE_REGISTERED_LABEL]: "true", [NODE_INITIALIZED_LABEL]: "true" } },
        status: {
          nodeName: l.nodeName,
          conditions: conditions(claim, now, [
            ["Registered", "True"],
            ["Initialized", "True"],
            ["Ready", "True"],
          ]),
        },
      });
    }
    const pods = kube.peek("Pod");
    // A pull in flight ends with time, not with a change: the pass runs again while one is.
    const pulling = this.#starts.pulling ? now : 0;
    await this.#unlessIdle("kubelets", [pods, pulling], () => this.#startPods(pods, now));
  }

  /**
   * Kubelets start the pods bound to their node once their images are there, stamped when a
   * continuously acting cluster would have started them (PodStartModel). Wave's pre-pull pods end
   * as the real ones do (the image pulled, the container refused), and the node lists the image.
   */
  async #startPods(pods: readonly Pod[], now: number): Promise<void> {
    const { kube } = this.#o;
    // Pods gone (or deleted) while pulling wait no more.
    if (this.#starts.pulling)
      this.#starts.keepPulling(
        new Set(pods.filter((p) => p.spec.nodeName && !p.metadata.deletionTimestamp).map(podUid)),
      );
    for (const p of pods) {
      const node = p.spec.nodeName;
      // Wave's pull pods are created bound and without a status (the apiserver's default phase).
      const phase = p.status?.phase ?? (isPrepullPod(p) ? "Pending" : undefined);
      if (!node || phase !== "Pending" || p.metadata.deletionTimestamp) continue;
      const at = this.#starts.startAt(p, node, now);
      if (at === undefined) continue;
      const ns = p.metadata.namespace ?? "default";
      if (isPrepullPod(p)) {
        await kube.patch("Pod", p.metadata.name ?? "", { status: prepullEnded(p, at) }, { namespace: ns });
        const images = this.#starts.imagesOn(node, now).map((i) => ({ names: [i], sizeBytes: 0 }));
        await kube.patch("Node", node, { status: { images } }).catch(() => undefined);
        continue;
      }
      await kube.patch(
        "Pod",
        p.metadata.name ?? "",
        {
          status: {
            phase: "Running",
            startTime: iso(at),
            conditions: [
              { type: "PodScheduled", status: "True", lastTransitionTime: iso(at) },
              { type: "Ready", status: "True", lastTransitionTime: iso(at) },
            ],
          },
        },
        { namespace: ns },
      );
    }
  }

  #nodeFor(claim: NodeClaim, l: Launch): Node {
    const alloc = allocatable(l.offering);
    const now = this.#o.clock.now();
    return {
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name: l.nodeName,
        labels: {
          ...claim.metadata.labels,
          "kubernetes.io/hostname": l.nodeName,
          [NODE_REGISTERED_LABEL]: "true",
          [NODE_INITIALIZED_LABEL]: "true",
        },
        annotations: { "karpenter.sh/nodeclaim": claim.metadata.name ?? "" },
      },
      spec: { providerID: claim.status?.providerID ?? "", taints: claim.spec.taints ?? [] },
      status: {
        capacity: {
          cpu: String(l.offering.type.vcpu),
          memory: `${l.offering.type.memoryBytes / 2 ** 20}Mi`,
          pods: String(l.offering.type.maxPods),
          ...(l.offering.type.gpus ? { "nvidia.com/gpu": String(l.offering.type.gpus) } : {}),
        },
        allocatable: {
          cpu: `${alloc.cpuMilli}m`,
          memory: `${Math.floor(alloc.memoryBytes / 2 ** 20)}Mi`,
          pods: String(alloc.pods),
          ...(l.offering.type.gpus ? { "nvidia.com/gpu": String(l.offering.type.gpus) } : {}),
        },
        conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", lastTransitionTime: iso(now) }],
        nodeInfo: { kubeletVersion: "v1.34.0-eks-sim" },
      },
    };
  }

  // ---- kube-scheduler: bind pending pods to the fullest node that fits ----

  async reconcileScheduler(): Promise<void> {
    const { kube } = this.#o;
    const inputs = [
      kube.peek("Node"),
      kube.peek("Pod"),
      kube.peek("PriorityClass"),
      this.#terminatingVersion,
    ];
    await this.#unlessIdle("scheduler", inputs, () => this.#schedule());
  }

  async #schedule(): Promise<void> {
    const { kube } = this.#o;
    const nodes = kube
      .peek("Node")
      .filter((n) => !n.metadata.deletionTimestamp && !this.#terminating.has(n.metadata.name ?? ""));
    const pods = kube.peek("Pod");
    const unbound = pods.filter((p) => !p.spec.nodeName && isActivePod(p));
    // Most passes have no pod to place: the room and the groupings below are for pending pods.
    if (unbound.length === 0) return;
    const room = this.#roomByNode(nodes, pods);
    const classes = new Map(kube.peek("PriorityClass").map((c) => [c.metadata.name ?? "", c.value]));
    const priorityOf = (p: Pod): number =>
      p.spec.priority ?? classes.get(p.spec.priorityClassName ?? "") ?? 0;
    // kube-scheduler's queue (PrioritySort): higher priority first, then the pod waiting longest.
    // In name order, a pod whose launched node another pod took lost every node after it too,
    // and Karpenter launched for it again and again.
    const pending = unbound
      .map((p) => ({ p, prio: priorityOf(p), at: Date.parse(p.metadata.creationTimestamp ?? "") || 0 }))
      .sort((a, b) => b.prio - a.prio || a.at - b.at)
      .map((x) => x.p);
    const evicted = new Set<string>();
    // Preemption looks at each node's pods for every pod nothing fits: group them once.
    const podsOn = new Map<string, Pod[]>();
    for (const p of pods) {
      if (!p.spec.nodeName || !isActivePod(p)) continue;
      const list = podsOn.get(p.spec.nodeName);
      if (list) list.push(p);
      else podsOn.set(p.spec.nodeName, [p]);
    }
    for (const p of pending) {
      const req = podRequests(p);
      const candidates = nodes
        .filter((n) => {
          const r = room.get(n.metadata.name ?? "");
          return (
            r !== undefined &&
            fits(req, r) &&
            untoleratedTaints(n.spec?.taints, p.spec.tolerations).length === 0 &&
            podMatchesNodeLabels(p, n.metadata.labels ?? {}, n.metadata.name ?? "")
          );
        })
        // Preferred node affinity first (kube-scheduler's NodeAffinity score: a pod preferring spot
        // goes to a spot node with room, not onto the on-demand node launched for other pods),
        // then the fullest node.
        .sort(
          (a, b) =>
            preferredScore(p, b) - preferredScore(p, a) ||
            (room.get(a.metadata.name ?? "")?.cpu ?? 0) - (room.get(b.metadata.name ?? "")?.cpu ?? 0),
        );
      const ns = p.metadata.namespace ?? "default";
      const node = candidates[0] ?? (await this.#preempt(p, priorityOf, nodes, podsOn, room, evicted, req));
      if (!node) {
        if (!p.status?.conditions?.some((c) => c.type === "PodScheduled" && c.reason === "Unschedulable")) {
          await kube.patch(
            "Pod",
            p.metadata.name ?? "",
            {
              status: {
                conditions: [
                  {
                    type: "PodScheduled",
                    status: "False",
                    reason: "Unschedulable",
                    message: `0/${nodes.length} nodes are available`,
                  },
                ],
              },
            },
            { namespace: ns },
          );
        }
        continue;
      }
      const name = node.metadata.name ?? "";
      await kube.patch("Pod", p.metadata.name ?? "", { spec: { nodeName: name } }, { namespace: ns });
      this.#starts.bind(p, name, this.#o.clock.now(), this.#ticks);
      const r = room.get(name);
      if (r) room.set(name, free(r, { ...req, pods: 1 }));
    }
  }

  /**
   * kube-scheduler's preemption, simplified: the first node where evicting lower-priority pods
   * (lowest first) makes room. This is how real pods displace Wave's negative-priority warmup pods.
   */
  async #preempt(
    p: Pod,
    priorityOf: (p: Pod) => number,
    nodes: readonly Node[],
    podsOn: ReadonlyMap<string, readonly Pod[]>,
    room: Map<string, Resources>,
    evicted: Set<string>,
    req: Resources,
  ): Promise<Node | undefined> {
    const mine = priorityOf(p);
    for (const n of nodes) {
      const name = n.metadata.name ?? "";
      const r = room.get(name);
      if (
        !r ||
        untoleratedTaints(n.spec?.taints, p.spec.tolerations).length > 0 ||
        !podMatchesNodeLabels(p, n.metadata.labels ?? {}, name)
      )
        continue;
      const lower = (podsOn.get(name) ?? [])
        .filter((q) => !evicted.has(key(q)) && priorityOf(q) < mine)
        .sort((a, b) => priorityOf(a) - priorityOf(b));
      let trial = r;
      const victims: Pod[] = [];
      for (const q of lower) {
        if (fits(req, trial)) break;
        trial = add(trial, { ...podRequests(q), pods: 1 });
        victims.push(q);
      }
      if (victims.length === 0 || !fits(req, trial)) continue;
      for (const q of victims) {
        evicted.add(key(q));
        await this.#event("Pod", q, "Preempted", "Normal", `Preempted by pod ${key(p)} on node ${name}`);
        await this.#deletePod(q);
      }
      room.set(name, trial);
      return n;
    }
    return undefined;
  }

  #roomByNode(nodes: readonly Node[], pods: readonly Pod[]): Map<string, Resources> {
    const used = new Map<string, Resources>();
    for (const p of pods) {
      if (!p.spec.nodeName || !isActivePod(p)) continue;
      const req = podRequests(p);
      const u = used.get(p.spec.nodeName) ?? { cpu: 0, memory: 0, pods: 0 };
      for (const [k, v] of Object.entries(req)) u[k] = (u[k] ?? 0) + v;
      u.pods = (u.pods ?? 0) + 1;
      used.set(p.spec.nodeName, u);
    }
    const out = new Map<string, Resources>();
    for (const n of nodes) {
      const alloc = amountsOf(n);
      const u = used.get(n.metadata.name ?? "") ?? {};
      const r: Resources = { ...alloc };
      for (const [k, v] of Object.entries(u)) r[k] = (r[k] ?? 0) - v;
      out.set(n.metadata.name ?? "", r);
    }
    return out;
  }

  // ---- Karpenter provisioner: batch unschedulable pods, launch the cheapest offering ----

  async reconcileProvisioner(): Promise<void> {
    const { kube, clock } = this.#o;
    const now = clock.now();
    const pods = kube.peek("Pod");
    const claims = kube.peek("NodeClaim");
    const waiting = this.#waiting(pods, claims);
    if (waiting.length === 0) {
      this.#batch = undefined;
      return;
    }
    if (!this.#batch) this.#batch = { start: now, last: now, size: waiting.length };
    else if (waiting.length !== this.#batch.size)
      this.#batch = { ...this.#batch, last: now, size: waiting.length };
    const idle = now - this.#batch.last >= this.#o.batchIdleMs;
    const full = now - this.#batch.start >= this.#o.batchMaxMs;
    if (!idle && !full) return;
    const continuousAt = this.#starts.launchAt(
      now,
      this.#batch.start,
      waiting,
      this.#o.batchIdleMs,
      this.#o.batchMaxMs,
    );
    this.#batch = undefined;

    // The same pods, claims and pools as a batch that found no pool for any pod: the same again
    // (only the Events, each still deduplicated by its own clock).
    const inputs = [pods, claims, kube.peek("NodePool")];
    if (this.#unplaceable && sameItems(this.#unplaceable.inputs, inputs)) {
      for (const { pod, message } of this.#unplaceable.failed) await this.#failedScheduling(pod, message);
      return;
    }
    const failed: { pod: Pod; message: string }[] = [];
    const pools = [...kube.peek("NodePool")].sort((a, b) => (b.spec.weight ?? 0) - (a.spec.weight ?? 0));
    // First-fit decreasing onto new NodeClaims, one pool at a time.
    const sorted = [...waiting].sort((a, b) => (podRequests(b).cpu ?? 0) - (podRequests(a).cpu ?? 0));
    const bins: { pool: NodePool; pods: Pod[]; used: Resources; options: Offering[] }[] = [];
    for (const pod of sorted) {
      const req = { ...podRequests(pod), pods: 1 };
      // Each pod goes to the highest-weight pool that can take it, as Karpenter's scheduler does.
      const optionsIn = (p: NodePool): Offering[] =>
        this.#o.offerings.filter(
          (o) => poolAllows(p, o) && offeringAllows(o, pod) && fits(req, offeringRoom(o)),
        );
      const pool = pools.find(
        (p) => podFitsPool(pod, p) && !this.#overLimits(p, claims) && optionsIn(p).length > 0,
      );
      if (!pool) {
        // Karpenter's words: one error per NodePool, joined as its multierr does (v1.6–v1.15).
        const why = pools.map((p) =>
          this.#overLimits(p, claims) && podFitsPool(pod, p)
            ? `all available instance types exceed limits for nodepool (NodePool=${p.metadata.name ?? ""})`
            : poolRejection(pod, p, req),
        );
        const message = `Failed to schedule pod, ${why.join("; ")}`;
        failed.push({ pod, message });
        await this.#failedScheduling(pod, message);
        continue;
      }
      const bin = bins.find((b) => {
        if (b.pool !== pool) return false;
        const total = add(b.used, req);
        return b.options.some((o) => fits(total, offeringRoom(o)) && offeringAllows(o, pod));
      });
      if (bin) {
        bin.used = add(bin.used, req);
        bin.options = bin.options.filter((o) => fits(bin.used, offeringRoom(o)) && offeringAllows(o, pod));
        bin.pods.push(pod);
        continue;
      }
      bins.push({ pool, pods: [pod], used: req, options: optionsIn(pool) });
    }
    this.#unplaceable = bins.length === 0 ? { inputs, failed } : undefined;
    for (const bin of bins) await this.#launch(bin.pool, bin.pods, bin.options, continuousAt);
  }

  /** Karpenter's FailedScheduling Event for a pod no NodePool can take (5 min dedupe). */
  async #failedScheduling(pod: Pod, message: string): Promise<void> {
    await this.#event("Pod", pod, "FailedScheduling", "Warning", message, {
      dedupeMs: 5 * 60_000,
      dedupeKey: `FailedScheduling/${key(pod)}`,
    });
  }

  /**
   * Pods waiting for provisioning: unschedulable and not nominated to a NodeClaim still launching
   * (once its node is up, a pod that did not get onto it — another pod took the room — is
   * provisioned for again, as Karpenter does). Once per version of the pods and claims.
   */
  #waiting(pods: readonly Pod[], claims: readonly NodeClaim[]): readonly Pod[] {
    const memo = this.#waitingMemo;
    if (memo && memo.pods === pods && memo.claims === claims) return memo.waiting;
    const nominated = nominatedPods(claims);
    const waiting = pods.filter(
      (p) =>
        !p.spec.nodeName &&
        isActivePod(p) &&
        !nominated.has(key(p)) &&
        p.status?.conditions?.some((c) => c.type === "PodScheduled" && c.reason === "Unschedulable"),
    );
    this.#waitingMemo = { pods, claims, waiting };
    return waiting;
  }

  #overLimits(pool: NodePool, claims: readonly NodeClaim[]): boolean {
    const cpuLimit = pool.spec.limits?.cpu;
    if (cpuLimit === undefined) return false;
    const used = claims
      .filter(
        (c) => c.metadata.labels?.[NODE_POOL_LABEL] === pool.metadata.name && !c.metadata.deletionTimestamp,
      )
      .reduce((s, c) => s + Number(c.status?.capacity?.cpu ?? 0), 0);
    return used >= Number(cpuLimit);
  }

  /** A name never handed out before: random draws first, then a counter (a constant PRNG still ends). */
  #fresh(draw: () => string): string {
    for (let attempt = 0; attempt < 100; attempt++) {
      const name = draw();
      if (!this.#names.has(name)) {
        this.#names.add(name);
        return name;
      }
    }
    const base = draw();
    let n = this.#names.size;
    while (this.#names.has(`${base}-${n}`)) n++;
    this.#names.add(`${base}-${n}`);
    return `${base}-${n}`;
  }

  async #launch(pool: NodePool, pods: Pod[], options: Offering[], continuousAt: number): Promise<void> {
    const { kube, clock } = this.#o;
    const now = clock.now();
    const poolName = pool.metadata.name ?? "";
    // With common random numbers, the launch's own draws (keyed by its pool, time and order): two
    // replays launching alike get the same names and offering whatever else drew in between.
    if (this.#launchOrdinal.at !== now) this.#launchOrdinal = { at: now, n: 0 };
    const ordinal = this.#launchOrdinal.n++;
    const seed = this.#o.interruptionSeed;
    const random =
      seed === undefined ? this.#o.random : seeded(fnv1a(`${seed}|launch|${poolName}|${now}|${ordinal}`));
    const o = cheapest(options, random);
    const name = this.#fresh(() => `${poolName}-${suffix(random)}`);
    const instanceId = `i-0${Math.floor(random() * 16 ** 12)
      .toString(16)
      .padStart(16, "0")}`;
    const alloc = allocatable(o);
    const labels = {
      ...pool.spec.template.metadata?.labels,
      ...offeringLabels(o),
      [NODE_POOL_LABEL]: poolName,
    };
    const claim: NodeClaim = {
      apiVersion: "karpenter.sh/v1",
      kind: "NodeClaim",
      metadata: {
        name,
        labels,
        annotations: {
          "wave.sh/sim-nominated": pods.map(key).join(","),
          "karpenter.sh/nodepool-hash": nodePoolHash(pool),
        },
        finalizers: [TERMINATION_FINALIZER],
        ownerReferences: [
          {
            apiVersion: "karpenter.sh/v1",
            kind: "NodePool",
            name: poolName,
            uid: pool.metadata.uid ?? "",
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: {
        requirements: [
          { key: INSTANCE_TYPE_LABEL, operator: "In", values: [o.type.name] },
          { key: CAPACITY_TYPE_LABEL, operator: "In", values: [o.capacityType] },
          { key: TOPOLOGY_ZONE_LABEL, operator: "In", values: [o.zone] },
          { key: NODE_POOL_LABEL, operator: "In", values: [poolName] },
        ],
        nodeClassRef: pool.spec.template.spec.nodeClassRef ?? {
          group: "karpenter.k8s.aws",
          kind: "EC2NodeClass",
          name: "default",
        },
        ...(pool.spec.template.spec.taints ? { taints: pool.spec.template.spec.taints } : {}),
        resources: {
          requests: {
            cpu: `${sumOf(pods, "cpu")}m`,
            memory: `${Math.ceil(sumOf(pods, "memory") / 2 ** 20)}Mi`,
            pods: String(pods.length),
          },
        },
      },
    };
    const created = await kube.create("NodeClaim", claim);
    await kube.patch("NodeClaim", name, {
      status: {
        providerID: o.type.provider === "kwok" ? `kwok://${name}` : `aws:///${o.zone}/${instanceId}`,
        imageID: "ami-0sim",
        capacity: {
          cpu: String(o.type.vcpu),
          memory: `${o.type.memoryBytes / 2 ** 20}Mi`,
          pods: String(o.type.maxPods),
        },
        allocatable: {
          cpu: `${alloc.cpuMilli}m`,
          memory: `${Math.floor(alloc.memoryBytes / 2 ** 20)}Mi`,
          pods: String(alloc.pods),
        },
        conditions: conditions(created, now, [
          ["Launched", "True"],
          ["Registered", "Unknown"],
          ["Initialized", "Unknown"],
          ["Ready", "Unknown"],
        ]),
      },
    });
    const nodeName = this.#fresh(
      () =>
        `ip-10-${Math.floor(random() * 250)}-${Math.floor(random() * 250)}-${Math.floor(random() * 250)}.ec2.internal`,
    );
    this.#launches.set(name, {
      offering: o,
      launchedAt: now,
      continuousAt,
      bootMs: this.#starts.bootMs(poolName),
      pool: poolName,
      nodeName,
    });
    if (this.#o.interruptionSeed !== undefined && o.capacityType === "spot") {
      const draw = seeded(fnv1a(`${this.#o.interruptionSeed}|${poolName}|${now}|${ordinal}`));
      const rate = this.#o.spotInterruptionRate;
      const at = rate > 0 ? now - (Math.log(1 - draw()) / rate) * 3_600_000 : Infinity;
      this.#interruptAt.set(name, { at, pick: draw() });
    }
    for (const p of pods)
      await this.#event("Pod", p, "Nominated", "Normal", `Pod should schedule on: nodeclaim/${name}`);
    this.#o.log.debug("launched nodeclaim", {
      name,
      instanceType: o.type.name,
      capacityType: o.capacityType,
      pods: pods.length,
    });
  }

  // ---- Karpenter disruption: empty / underutilized consolidation, spot interruptions ----

  async reconcileDisruption(dtMs: number): Promise<void> {
    const { clock, random } = this.#o;
    const now = clock.now();
    const view = this.#disruptionView();
    const { nodes, pools, hashes, nodesPerPool, mineOf } = view;
    const claimOf = (n: Node): NodeClaim | undefined => view.claimByNode.get(n.metadata.name ?? "");
    const room = (): Map<string, Resources> => (view.room ??= this.#roomByNode(nodes, view.pods));
    // A NodePool budget at 0 for the reason blocks the disruption; Karpenter says so on the
    // NodePool (1 min dedupe) when a disruption method found a candidate there.
    const budgetBlocks = async (pool: NodePool, reason: DisruptionReason): Promise<boolean> => {
      if (this.#allowedAt(pool, reason, nodesPerPool.get(poolName0(pool)) ?? 0, now) > 0) return false;
      await this.#event(
        "NodePool",
        pool,
        "DisruptionBlocked",
        "Normal",
        `No allowed disruptions for disruption reason ${reason} due to blocking budget`,
        { dedupeMs: 60_000 },
      );
      return true;
    };
    const disruptedPools = new Set<string>();
    const stillCandidates = new Set<string>();
    // A candidate is disrupted only once it has stayed one for the validation period.
    const validated = (name: string): boolean => {
      stillCandidates.add(name);
      const since = this.#candidates.get(name);
      if (since === undefined) this.#candidates.set(name, now);
      return now - (since ?? now) >= this.#o.consolidationValidationMs;
    };

    // A view seen by the last pass has nothing new to note (same nodes, same pods on them).
    if (!view.noted) {
      view.noted = true;
      let placementChanged =
        nodes.length !== this.#lastNodes.length || nodes.some((n, i) => n !== this.#lastNodes[i]);
      this.#lastNodes = nodes;
      for (const n of nodes) {
        const name = n.metadata.name ?? "";
        const mine = mineOf.get(name) ?? [];
        // The pods' keys in order (peek answers in key order): compared, not joined, every pass.
        const prev = this.#nodeChanged.get(name);
        if (!prev || !sameKeys(prev.pods, mine)) {
          this.#nodeChanged.set(name, { at: now, pods: mine.map(key) });
          placementChanged = true;
        }
      }
      if (placementChanged) this.#movable.clear();
    }

    for (const n of nodes) {
      const name = n.metadata.name ?? "";
      const mine = mineOf.get(name) ?? [];
      const since = this.#nodeChanged.get(name)?.at ?? now;
      const claim = claimOf(n);
      if (!claim) continue;

      const drawn = this.#interruptAt.get(claim.metadata.name ?? "");
      const interrupted =
        n.metadata.labels?.[CAPACITY_TYPE_LABEL] === "spot" &&
        (this.#o.interruptionSeed === undefined
          ? random() < (this.#o.spotInterruptionRate * dtMs) / 3_600_000
          : drawn !== undefined && now >= drawn.at);
      if (interrupted) {
        const pick = drawn?.pick ?? random();
        this.#interruptAt.delete(claim.metadata.name ?? "");
        let acc = 0;
        const kind = INTERRUPTIONS.find((i) => (acc += i.share) > pick) ?? SPOT_INTERRUPTED;
        await this.#event("Node", n, kind.reason, "Warning", kind.message);
        await this.#disrupt(claim, n, "Interrupted", mine);
        continue;
      }
      const pool = pools.get(n.metadata.labels?.[NODE_POOL_LABEL] ?? "");
      if (!pool) continue;
      // One disruption per pool per pass; other candidates keep their validation clock.
      const busy = disruptedPools.has(pool.metadata.name ?? "");
      const blockedBy = view.blocked(n, claim, mine);
      if (blockedBy) {
        // NewCandidate's DisruptionBlocked, on the Node and its NodeClaim (2 min dedupe).
        await this.#event("Node", n, "DisruptionBlocked", "Normal", blockedBy, { dedupeMs: 2 * 60_000 });
        await this.#event("NodeClaim", claim, "DisruptionBlocked", "Normal", blockedBy, {
          dedupeMs: 2 * 60_000,
        });
        continue;
      }
      const policy = pool.spec.disruption?.consolidationPolicy ?? "WhenEmptyOrUnderutilized";
      const unconsolidatable =
        pool.spec.disruption?.consolidateAfter === "Never"
          ? `NodePool "${poolName0(pool)}" has consolidation disabled`
          : policy === "WhenEmpty" && mine.length > 0
            ? `NodePool "${poolName0(pool)}" has consolidation policy WhenEmpty, but node is not empty`
            : undefined;
      if (unconsolidatable) {
        await this.#event("Node", n, "Unconsolidatable", "Normal", unconsolidatable, {
          dedupeMs: 15 * 60_000,
        });
        await this.#event("NodeClaim", claim, "Unconsolidatable", "Normal", unconsolidatable, {
          dedupeMs: 15 * 60_000,
        });
      }
      // Drift: the pool's template changed since launch; replaced one at a time, paced.
      const poolName = pool.metadata.name ?? "";
      const stamped = claim.metadata.annotations?.["karpenter.sh/nodepool-hash"];
      if (stamped !== undefined && stamped !== hashes.get(poolName)) {
        if (await budgetBlocks(pool, "Drifted")) continue;
        if (busy || now - (this.#lastDrift.get(poolName) ?? -Infinity) < this.#o.driftIntervalMs) continue;
        this.#lastDrift.set(poolName, now);
        disruptedPools.add(poolName);
        await this.#disrupt(claim, n, "Drifted", mine);
        continue;
      }
      const after = safeDuration(pool.spec.disruption?.consolidateAfter ?? "0s");
      if (after === null || now - since < after) continue;
      if (mine.length === 0) {
        if (await budgetBlocks(pool, "Empty")) continue;
        if (!validated(name) || busy) continue;
        disruptedPools.add(pool.metadata.name ?? "");
        await this.#disrupt(claim, n, "Empty", mine);
        continue;
      }
      if (policy === "WhenEmpty") continue;
      if (await budgetBlocks(pool, "Underutilized")) continue;
      // Underutilized: every pod fits on the other nodes' free room.
      // What the trial moves take, over the real room (a copy per node was most of a tick).
      const trial = new Map<string, Resources>();
      const roomOf = (o: Node): Resources =>
        trial.get(o.metadata.name ?? "") ?? room().get(o.metadata.name ?? "") ?? {};
      // Reused only while no disruption of this pass changed what the other nodes are.
      const known = disruptedPools.size === 0 ? this.#movable.get(name) : undefined;
      const others =
        known === undefined
          ? nodes.filter((o) => o !== n && !disruptedPools.has(o.metadata.labels?.[NODE_POOL_LABEL] ?? "~"))
          : [];
      const movable =
        known ??
        mine.every((p) => {
          const req = { ...podRequests(p), pods: 1 };
          const target = others.find(
            (o) =>
              fits(req, roomOf(o)) &&
              untoleratedTaints(o.spec?.taints, p.spec.tolerations).length === 0 &&
              podMatchesNodeLabels(p, o.metadata.labels ?? {}, o.metadata.name ?? ""),
          );
          if (!target) return false;
          trial.set(target.metadata.name ?? "", free(roomOf(target), req));
          return true;
        });
      if (disruptedPools.size === 0) this.#movable.set(name, movable);
      if (movable && validated(name) && !busy) {
        disruptedPools.add(pool.metadata.name ?? "");
        await this.#disrupt(claim, n, "Underutilized", mine);
      }
    }
    for (const name of this.#candidates.keys()) if (!stillCandidates.has(name)) this.#candidates.delete(name);
  }

  /** The disruption pass's groupings of the stored objects, rebuilt only when one of them changed. */
  #disruptionView(): DisruptionView {
    const { kube } = this.#o;
    const inputs = [
      kube.peek("Node"),
      kube.peek("Pod"),
      kube.peek("NodePool"),
      kube.peek("NodeClaim"),
      kube.peek("PodDisruptionBudget"),
      this.#terminatingVersion,
    ] as const;
    if (this.#disruptionMemo && sameItems(this.#disruptionMemo.inputs, inputs))
      return this.#disruptionMemo.view;
    const [allNodes, allPods, allPools, allClaims, allPdbs] = inputs;
    const nodes = allNodes.filter(
      (n) => !n.metadata.deletionTimestamp && !this.#terminating.has(n.metadata.name ?? ""),
    );
    const pods = allPods.filter(isActivePod);
    const pools = new Map(allPools.map((p) => [p.metadata.name ?? "", p]));
    const podsOn = new Map<string, Pod[]>();
    for (const p of pods) {
      if (!p.spec.nodeName) continue;
      const list = podsOn.get(p.spec.nodeName);
      if (list) list.push(p);
      else podsOn.set(p.spec.nodeName, [p]);
    }
    const pdbs = allPdbs.map((b) => ({ b, match: labelSelectorMatcher(b.spec.selector) }));
    const pdbsOf = (p: Pod): PodDisruptionBudget[] =>
      pdbs.length === 0
        ? []
        : pdbs
            .filter(
              ({ b, match }) => b.metadata.namespace === p.metadata.namespace && match(p.metadata.labels),
            )
            .map(({ b }) => b);
    const nodesPerPool = new Map<string, number>();
    const mineOf = new Map<string, Pod[]>();
    for (const n of nodes) {
      const pn = n.metadata.labels?.[NODE_POOL_LABEL] ?? "";
      nodesPerPool.set(pn, (nodesPerPool.get(pn) ?? 0) + 1);
      const name = n.metadata.name ?? "";
      mineOf.set(
        name,
        (podsOn.get(name) ?? []).filter((p) => !isDaemonSetPod(p)),
      );
    }
    const blockedBy = new Map<Node, string | undefined>();
    const view: DisruptionView = {
      nodes,
      pods,
      pools,
      claimByNode: new Map(allClaims.map((c) => [c.status?.nodeName ?? "", c])),
      hashes: new Map([...pools].map(([k, p]) => [k, nodePoolHash(p)])),
      podsOn,
      nodesPerPool,
      mineOf,
      room: undefined,
      noted: false,
      blocked: (n, claim, mine) => {
        if (!blockedBy.has(n)) blockedBy.set(n, blockedMessage(n, claim, mine, pdbsOf));
        return blockedBy.get(n);
      },
    };
    this.#disruptionMemo = { inputs, view };
    return view;
  }

  async #disrupt(claim: NodeClaim, node: Node, reason: DisruptReason, pods: readonly Pod[]): Promise<void> {
    const { kube, clock } = this.#o;
    const now = clock.now();
    const name = claim.metadata.name ?? "";
    const taint: Taint = { key: DISRUPTED_TAINT, effect: "NoSchedule" };
    await kube.patch("Node", node.metadata.name ?? "", {
      spec: { taints: [...(node.spec?.taints ?? []), taint] },
    });
    await kube.patch("NodeClaim", name, {
      status: {
        conditions: conditions(claim, now, [
          ["DisruptionReason", "True", reason],
          ...(reason === "Interrupted"
            ? []
            : reason === "Drifted"
              ? ([["Drifted", "True"]] as const)
              : ([["Consolidatable", "True"]] as const)),
        ]),
      },
    });
    const message =
      reason === "Interrupted"
        ? "Disrupting NodeClaim: Interrupted"
        : `Disrupting Node: ${reason}/${reason === "Drifted" ? "Replace" : "Delete"}`;
    await this.#event("Node", node, "DisruptionTerminating", "Normal", message);
    await this.#event("NodeClaim", claim, "DisruptionTerminating", "Normal", message);
    for (const p of pods) {
      await this.#event("Pod", p, "Evicted", "Normal", "Evicted pod: Disrupting");
      await this.#deletePod(p);
    }
    await kube.delete("NodeClaim", name);
    this.#terminating.set(node.metadata.name ?? "", now);
    this.#terminatingVersion++;
  }

  /** Finishes terminations: after the drain, the Node goes and the finalizer is released. */
  async reconcileTermination(): Promise<void> {
    const { kube, clock } = this.#o;
    const now = clock.now();
    for (const [nodeName, since] of this.#terminating) {
      if (now - since < TERMINATION_DRAIN_MS) continue;
      this.#terminating.delete(nodeName);
      this.#terminatingVersion++;
      this.#nodeChanged.delete(nodeName);
      for (const p of kube.peek("Pod").filter((q) => q.spec.nodeName === nodeName)) await this.#deletePod(p);
      await kube.delete("Node", nodeName).catch(() => undefined);
      this.#starts.forgetNode(nodeName);
    }
    for (const c of kube.peek("NodeClaim")) {
      if (!c.metadata.deletionTimestamp) continue;
      const nodeName = c.status?.nodeName;
      if (nodeName && this.#terminating.has(nodeName)) continue;
      if (!nodeName) this.#launches.delete(c.metadata.name ?? "");
      await kube.patch("NodeClaim", c.metadata.name ?? "", {
        status: { conditions: conditions(c, now, [["InstanceTerminating", "True"]]) },
      });
      await kube.patch("NodeClaim", c.metadata.name ?? "", {
        metadata: { finalizers: (c.metadata.finalizers ?? []).filter((f) => f !== TERMINATION_FINALIZER) },
      });
    }
  }

  async #event(
    kind: string,
    obj: { metadata: { name?: string; namespace?: string; uid?: string } },
    reason: string,
    type: "Normal" | "Warning",
    message: string,
    dedupe?: { dedupeMs: number; dedupeKey?: string },
  ): Promise<void> {
    const nowMs = this.#o.clock.now();
    const now = iso(nowMs);
    let dedupeKey: string | undefined;
    if (dedupe) {
      dedupeKey = dedupe.dedupeKey ?? `${kind}/${obj.metadata.name ?? ""}/${reason}/${message}`;
      const last = this.#published.get(dedupeKey);
      if (last && nowMs - last.at < dedupe.dedupeMs) return;
      if (last) {
        // The correlator: the same Event again adds to the stored one (gone after the TTL: a new one).
        const stored = await this.#o.kube
          .patch(
            "Event",
            last.name,
            { count: last.count + 1, lastTimestamp: now, message },
            { namespace: last.namespace },
          )
          .catch(() => undefined);
        if (stored) {
          this.#published.set(dedupeKey, { ...last, at: nowMs, count: last.count + 1 });
          return;
        }
      }
    }
    const ev: Event = {
      apiVersion: "v1",
      kind: "Event",
      metadata: {
        generateName: `${obj.metadata.name ?? "x"}.`,
        namespace: obj.metadata.namespace ?? EVENT_NS,
      },
      involvedObject: {
        kind,
        name: obj.metadata.name ?? "",
        ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
        ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}),
      },
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: "karpenter" },
      reportingComponent: "karpenter",
    };
    const created = await this.#o.kube.create("Event", ev, { namespace: ev.metadata.namespace ?? EVENT_NS });
    if (dedupeKey !== undefined) {
      if (this.#published.size > 20_000) this.#published.clear();
      this.#published.set(dedupeKey, {
        at: nowMs,
        name: created.metadata.name ?? "",
        namespace: created.metadata.namespace ?? EVENT_NS,
        count: 1,
      });
    }
  }

  /** Nodes of the pool Karpenter may disrupt now for the reason (its budgets; Infinity: none binds). */
  #allowedAt(pool: NodePool, reason: DisruptionReason, poolNodes: number, now: number): number {
    const minute = Math.floor(now / 60_000);
    if (this.#budgetMemo.minute !== minute) this.#budgetMemo = { minute, allowed: new WeakMap() };
    let byKey = this.#budgetMemo.allowed.get(pool);
    if (!byKey) {
      byKey = new Map();
      this.#budgetMemo.allowed.set(pool, byKey);
    }
    const k = `${reason}|${poolNodes}`;
    let allowed = byKey.get(k);
    if (allowed === undefined) {
      allowed = bindingBudget(budgetsNow(pool, reason, poolNodes, now))?.allowed ?? Infinity;
      byKey.set(k, allowed);
    }
    return allowed;
  }

  // ---- kube-controller-manager's disruption controller: PodDisruptionBudget status ----

  async reconcileDisruptionBudgets(): Promise<void> {
    const { kube } = this.#o;
    const budgets = kube.peek("PodDisruptionBudget");
    if (budgets.length === 0) return;
    const pods = kube.peek("Pod");
    const inputs = [budgets, pods, kube.peek("ReplicaSet")];
    await this.#unlessIdle("disruption-budgets", inputs, () => this.#budgetStatus(budgets, pods));
  }

  async #budgetStatus(budgets: readonly PodDisruptionBudget[], pods: readonly Pod[]): Promise<void> {
    const { kube } = this.#o;
    for (const b of budgets) {
      const ns = b.metadata.namespace ?? "default";
      const match = labelSelectorMatcher(b.spec.selector);
      const mine = pods.filter(
        (p) =>
          p.metadata.namespace === ns &&
          p.metadata.deletionTimestamp === undefined &&
          isActivePod(p) &&
          match(p.metadata.labels),
      );
      const status = pdbStatus(b, mine, (o) => {
        const rs = kube
          .peek("ReplicaSet")
          .find((r) => r.metadata.namespace === ns && r.metadata.name === o.name);
        return rs ? (rs.spec.replicas ?? 1) : undefined;
      });
      const cur = b.status;
      if (
        cur?.disruptionsAllowed === status.disruptionsAllowed &&
        cur.currentHealthy === status.currentHealthy &&
        cur.desiredHealthy === status.desiredHealthy &&
        cur.expectedPods === status.expectedPods
      )
        continue;
      await kube.patch("PodDisruptionBudget", b.metadata.name ?? "", { status }, { namespace: ns });
    }
  }
}

interface InFlight {
  unscheduled: boolean;
  /** Some unscheduled pod waits for the scheduler or the provisioner now. */
  dueNow: boolean;
  /** Pods bound and not started: due now unless pulling their image (PodStartModel). */
  bound: string[];
}

/** What the disruption pass reads, grouped once per version of the stored objects. */
interface DisruptionView {
  /** Nodes neither deleted nor terminating, in key order. */
  nodes: readonly Node[];
  /** Active pods. */
  pods: readonly Pod[];
  pools: ReadonlyMap<string, NodePool>;
  claimByNode: ReadonlyMap<string, NodeClaim>;
  hashes: ReadonlyMap<string, string>;
  podsOn: ReadonlyMap<string, readonly Pod[]>;
  nodesPerPool: ReadonlyMap<string, number>;
  /** Each node's pods other than DaemonSet pods (what disruption would move). */
  mineOf: ReadonlyMap<string, readonly Pod[]>;
  /** The nodes' free room, once asked for. */
  room: Map<string, Resources> | undefined;
  /** Whether a pass already noted these nodes' pod sets (#nodeChanged, #movable). */
  noted: boolean;
  /** Why the node may not be disrupted (blockedMessage), once per view. */
  blocked: (n: Node, claim: NodeClaim, mine: readonly Pod[]) => string | undefined;
}

// ---- pure helpers ----

const nominatedMemo = new WeakMap<readonly NodeClaim[], ReadonlySet<string>>();

/** Pods ("namespace/name") nominated to a NodeClaim still launching; once per peeked claims array. */
function nominatedPods(claims: readonly NodeClaim[]): ReadonlySet<string> {
  let set = nominatedMemo.get(claims);
  if (set === undefined) {
    set = new Set(
      claims
        .filter((c) => !c.status?.nodeName && !c.metadata.deletionTimestamp)
        .flatMap((c) => (c.metadata.annotations?.["wave.sh/sim-nominated"] ?? "").split(",")),
    );
    nominatedMemo.set(claims, set);
  }
  return set;
}

/**
 * A pod's requests, computed once per stored version: the simulator reads uncopied snapshots
 * (`MemoryKube.peek`), and a write replaces the object, so the cache can never go stale.
 */
const requestsCache = new WeakMap<Pod, Resources>();
function podRequests(p: Pod): Readonly<Resources> {
  let r = requestsCache.get(p);
  if (r === undefined) {
    r = computeRequests(p);
    requestsCache.set(p, r);
  }
  return r;
}

/** A 32-bit FNV-1a hash: a seed from a launch's identity. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

const durations = new Map<string, number | null>();

/**
 * A NodePool with a malformed consolidateAfter is never consolidated (Karpenter rejects it).
 * Parsed once per text (disruption asks for every node every pass).
 */
function safeDuration(text: string): number | null {
  let ms = durations.get(text);
  if (ms === undefined) {
    try {
      ms = parseDuration(text);
    } catch {
      ms = null;
    }
    if (durations.size < 1000) durations.set(text, ms);
  }
  return ms;
}

const templateHashes = new WeakMap<Deployment, string>();

/** The pod-template-hash of a Deployment's template, once per stored version of it. */
function templateHash(d: Deployment): string {
  let h = templateHashes.get(d);
  if (h === undefined) {
    h = fnv(JSON.stringify(d.spec.template));
    templateHashes.set(d, h);
  }
  return h;
}

function fnv(text: string): string {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return (h >>> 0).toString(36).slice(0, 10);
}

function conditions(
  obj: NodeClaim,
  now: number,
  set: readonly (readonly [string, "True" | "False" | "Unknown", string?])[],
): NonNullable<NonNullable<NodeClaim["status"]>["conditions"]> {
  const out = [...(obj.status?.conditions ?? [])];
  for (const [type, status, reason] of set) {
    const i = out.findIndex((c) => c.type === type);
    const prev = out[i];
    const next = {
      type,
      status,
      reason: reason ?? (status === "True" ? type : "AwaitingReconciliation"),
      message: "",
      lastTransitionTime: prev && prev.status === status ? (prev.lastTransitionTime ?? iso(now)) : iso(now),
    };
    if (i >= 0) out[i] = next;
    else out.push(next);
  }
  return out;
}

const amountsCache = new WeakMap<Node, Resources>();
function amountsOf(n: Node): Readonly<Resources> {
  let r = amountsCache.get(n);
  if (r === undefined) {
    r = { pods: 110, ...parseResources(n.status?.allocatable) };
    amountsCache.set(n, r);
  }
  return r;
}

function offeringRoom(o: Offering): Resources {
  const a = allocatable(o);
  return {
    cpu: a.cpuMilli,
    memory: a.memoryBytes,
    pods: a.pods,
    ...(o.type.gpus ? { "nvidia.com/gpu": o.type.gpus } : {}),
  };
}

function add(a: Resources, b: Resources): Resources {
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) + v;
  return out;
}

function sumOf(pods: readonly Pod[], res: "cpu" | "memory"): number {
  return pods.reduce((s, p) => s + (podRequests(p)[res] ?? 0), 0);
}

/**
 * Per stored NodePool version (a write replaces the object, so this never goes stale), whether
 * each offering satisfies it: the provisioner asks for every offering per pending pod.
 */
const allowsCache = new WeakMap<NodePool, WeakMap<Offering, boolean>>();

/** Whether an offering satisfies the NodePool's requirements (its template's node selector). */
export function poolAllows(pool: NodePool, o: Offering): boolean {
  let byOffering = allowsCache.get(pool);
  if (byOffering === undefined) {
    byOffering = new WeakMap();
    allowsCache.set(pool, byOffering);
  }
  let allowed = byOffering.get(o);
  if (allowed === undefined) {
    const labels = { ...offeringLabels(o), [NODE_POOL_LABEL]: pool.metadata.name ?? "" };
    allowed = (pool.spec.template.spec.requirements ?? []).every((r) => matchesRequirement(r, labels));
    byOffering.set(o, allowed);
  }
  return allowed;
}

/** The pod's own constraints (selector, required affinity) on an offering's labels. */
function offeringAllows(o: Offering, pod: Pod): boolean {
  const labels = offeringLabels(o);
  const selector = pod.spec.nodeSelector ?? {};
  for (const [k, v] of Object.entries(selector)) if (k in labels && labels[k] !== v) return false;
  const terms =
    pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms?.length) return preferredCapacityOk(pod, o);
  const ok = terms.some((t) =>
    (t.matchExpressions ?? []).every((r) => !(r.key in labels) || matchesRequirement(r, labels)),
  );
  return ok && preferredCapacityOk(pod, o);
}

/** Karpenter treats preferred affinity as required first; we honour preferred capacity type. */
function preferredCapacityOk(pod: Pod, o: Offering): boolean {
  const pref = pod.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
  const want = pref.flatMap((p) =>
    (p.preference.matchExpressions ?? []).filter((r) => r.key === CAPACITY_TYPE_LABEL),
  );
  return want.every((r) => matchesRequirement(r, { [CAPACITY_TYPE_LABEL]: o.capacityType }));
}

/** Sum of the weights of the pod's preferred node-affinity terms the node matches (scored, never filtered). */
function preferredScore(pod: Pod, node: Node): number {
  const labels = node.metadata.labels ?? {};
  const terms = pod.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
  return terms
    .filter((t) => (t.preference.matchExpressions ?? []).every((r) => matchesRequirement(r, labels)))
    .reduce((sum, t) => sum + t.weight, 0);
}

function podFitsPool(pod: Pod, pool: NodePool): boolean {
  if (untoleratedTaints(pool.spec.template.spec.taints, pod.spec.tolerations).length > 0) return false;
  // The labels every node of the pool carries: a pod selecting another value (or a label the pool
  // cannot give its nodes) is not for this pool, as Karpenter's scheduler decides.
  const labels: Record<string, string> = {
    ...pool.spec.template.metadata?.labels,
    [NODE_POOL_LABEL]: pool.metadata.name ?? "",
  };
  const reqs = pool.spec.template.spec.requirements ?? [];
  for (const [k, v] of Object.entries(pod.spec.nodeSelector ?? {})) {
    if (k in labels) {
      if (labels[k] !== v) return false;
    } else if (reqs.some((r) => r.key === k)) {
      if (!reqs.filter((r) => r.key === k).every((r) => matchesRequirement(r, { [k]: v }))) return false;
    } else if (!k.includes("kubernetes.io/") && !k.startsWith("karpenter.")) return false;
  }
  const terms =
    pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms?.length) return true;
  return terms.some((t) =>
    (t.matchExpressions ?? []).every((e) => !(e.key in labels) || matchesRequirement(e, labels)),
  );
}

function cheapest(options: readonly Offering[], random: () => number): Offering {
  const min = Math.min(...options.map((o) => o.usdPerHour));
  const best = options.filter((o) => o.usdPerHour <= min * 1.0001);
  // Ties (same type in several zones) spread across zones, as Karpenter's price-capacity choice does.
  return best[Math.floor(random() * best.length)] ?? (options[0] as Offering);
}

const poolName0 = (p: NodePool): string => p.metadata.name ?? "";

const doNotDisrupt = (o: { metadata: { annotations?: Record<string, string> } }): boolean =>
  o.metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION] === "true";

/**
 * Why Karpenter (v1.8–v1.15) would not make the node a disruption candidate, as its
 * DisruptionBlocked Event says it (ValidateNodeDisruptable, then ValidatePodsDisruptable):
 * a do-not-disrupt Node or NodeClaim, a do-not-disrupt pod, a PDB allowing no disruption.
 */
export function blockedMessage(
  n: Node,
  claim: NodeClaim,
  pods: readonly Pod[],
  pdbsOf: (p: Pod) => readonly PodDisruptionBudget[],
): string | undefined {
  if (doNotDisrupt(n) || doNotDisrupt(claim))
    return `Disruption is blocked through the "${DO_NOT_DISRUPT_ANNOTATION}" annotation`;
  const pinned = pods.find(doNotDisrupt);
  if (pinned) return `Pod has "${DO_NOT_DISRUPT_ANNOTATION}" annotation (Pod=${key(pinned)})`;
  for (const p of pods) {
    const budgets = pdbsOf(p);
    const keys = budgets.map((b) => `${b.metadata.namespace ?? ""}/${b.metadata.name ?? ""}`);
    if (budgets.length > 1)
      return `Eviction does not support multiple PDBs (PodDisruptionBudget(s)=[${keys.join(" ")}])`;
    if (budgets[0] && (budgets[0].status?.disruptionsAllowed ?? 0) === 0)
      return `Pdb prevents pod evictions (PodDisruptionBudget=[${keys[0] ?? ""}])`;
  }
  return undefined;
}

const WELL_KNOWN_PREFIXES = ["kubernetes.io/", "karpenter.sh/", "karpenter.k8s.aws/", "karpenter.kwok.sh/"];
const wellKnown = (k: string): boolean =>
  WELL_KNOWN_PREFIXES.some((p) => k.startsWith(p) || k.includes(`.${p}`)) ||
  k.startsWith("topology.kubernetes.io/");

/**
 * The part of Karpenter's FailedScheduling message for one NodePool that cannot take the pod, in
 * its words: the taints it does not tolerate, a requirement key that conflicts or that the pool
 * does not define, or no instance type with the resources.
 */
export function poolRejection(pod: Pod, pool: NodePool, req: Resources): string {
  const untolerated = untoleratedTaints(pool.spec.template.spec.taints, pod.spec.tolerations);
  if (untolerated.length > 0)
    return untolerated
      .map((t) => `did not tolerate taint (taint=${t.key}${t.value ? `=${t.value}` : ""}:${t.effect})`)
      .join("; ");
  const labels: Record<string, string> = {
    ...pool.spec.template.metadata?.labels,
    [NODE_POOL_LABEL]: poolName0(pool),
  };
  const reqs = pool.spec.template.spec.requirements ?? [];
  const wanted: [string, string[]][] = Object.entries(pod.spec.nodeSelector ?? {}).map(([k, v]) => [k, [v]]);
  for (const t of pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
    ?.nodeSelectorTerms ?? [])
    for (const e of t.matchExpressions ?? []) if (e.operator === "In") wanted.push([e.key, e.values ?? []]);
  for (const [k, values] of wanted) {
    const have =
      k in labels ? [labels[k] ?? ""] : reqs.find((r) => r.key === k && r.operator === "In")?.values;
    if (have) {
      if (!values.some((v) => have.includes(v)))
        return `incompatible requirements, key ${k}, ${k} In [${values.join(" ")}] not in ${k} In [${have.join(" ")}]`;
    } else if (!wellKnown(k)) return `incompatible requirements, label "${k}" does not have known values`;
  }
  {
    const requirements = reqs.map((r) => `${r.key} ${r.operator} [${(r.values ?? []).join(" ")}]`).join(", ");
    const resources = JSON.stringify(
      Object.fromEntries(
        Object.entries(req).map(([k, v]) => [
          k,
          k === "cpu" ? `${v}m` : k === "memory" ? `${Math.ceil(v / 2 ** 20)}Mi` : String(v),
        ]),
      ),
    );
    // Karpenter's instance-type filter words it by which criteria failed; the simulator's catalog
    // check is one: requirements and resources together.
    return `no instance type met the scheduling requirements or had enough resources, requirements=${requirements}, resources=${resources}`;
  }
}

/**
 * A pre-pull pod's end as the kubelet reports it: the image pulled, its container refused to
 * start (Wave's command does not exist: src/warmup/manifests.ts), the pod failed.
 */
function prepullEnded(p: Pod, at: number): NonNullable<Pod["status"]> {
  return {
    phase: "Failed",
    startTime: iso(at),
    containerStatuses: [
      {
        name: p.spec.containers[0]?.name ?? "pull",
        ready: false,
        image: p.spec.containers[0]?.image ?? "",
        state: { terminated: { exitCode: 128, reason: "StartError", finishedAt: iso(at) } },
      },
    ],
  };
}
