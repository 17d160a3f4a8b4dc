// The spot repair controller (ADR 0006): beside the webhook, one leader per cluster. When a
// workload has fewer (or more) on-demand pods than its target and no admission is coming to fix
// it — a rollout ended, a pod was deleted, a node was interrupted, the threshold changed — it
// evicts one pod at a time through the Eviction API (PodDisruptionBudgets respected), so the
// replacement takes the right slot. Every action is recorded as a `WaveSpotRepair` Event and
// counted on /metrics. It reads pods from the webhook's pod watch, never by polling lists — except
// adoption (issue 28): when a policy appears or changes, and every `rescanMs`, it lists the
// workload's pods that carry none of Wave's labels (they ran before the policy), labels those on a
// spot or on-demand node with the capacity they run on, and from then on repairs them like any
// placed pod. A `repair: "dry-run"` policy is planned and reported, never labelled or evicted.
import { randomUUID } from "node:crypto";
import { Informer } from "../kube/informer/informer.ts";
import type { Node, Pod } from "../objects/kube.ts";
import { KubeApiError, isNotFound, type KubeClient } from "../kube/port.ts";
import { type Clock, repeatUntilAborted } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import type { SlotAllocator } from "./allocator.ts";
import { planEvent, repairEvent } from "./events.ts";
import { adoptSlots, isLivePod, ledgerId, nextCapacity } from "./ledger.ts";
import { adoptionPatch, asAdopted, governedBy, planAdoption, plannedMoves } from "./adopt-plan.ts";
import { ON_DEMAND, revisionOf } from "./constants.ts";
import type { SpotMetrics } from "./metrics.ts";
import type { PodCache } from "./pod-cache.ts";
import { workloadKey, type SpotPolicy, type WorkloadRef } from "../policy/spot.ts";
import type { PolicySource } from "./policy-source.ts";
import {
  DEFAULT_REPAIR_TIMING,
  cooldownOf,
  planRepair,
  type RepairMemory,
  type RepairTiming,
} from "./repair-plan.ts";
import { ASSIGNMENT_LABEL, LEDGER_LABEL } from "../objects/wave.ts";
import { CAPACITY_TYPE_LABEL } from "../objects/karpenter.ts";

export interface SpotRepairOptions {
  kube: KubeClient;
  pods: PodCache;
  policies: Pick<PolicySource, "all">;
  allocator: SlotAllocator;
  clock: Clock;
  logger?: Logger;
  metrics?: SpotMetrics;
  /** This replica's name (Event reportingInstance). */
  identity: string;
  timing?: Partial<RepairTiming>;
  /** How long Prefer's fallback window stays open once spot was seen unavailable. Default 10 min. */
  fallbackWindowMs?: number;
  /**
   * Nodes by name → capacity type: placement counts, and adoption (which labels a running pod by
   * its node's capacity type; without it no pod is adopted).
   */
  nodes?: Pick<NodeCapacity, "of" | "synced">;
  /** Every policy in dry-run (`WAVE_SPOT_REPAIR_DRY_RUN`): plan and report, label and evict nothing. */
  dryRun?: boolean;
  /**
   * Adoption's scans of a workload's unlabelled pods: how often (default 30 s), and how often while
   * some wait for a node (5 s).
   */
  adoption?: { rescanMs?: number; waitingRescanMs?: number };
  /** Slot tokens for adopted pods (tests inject a deterministic one). */
  token?: () => string;
}

/** Per workload: what adoption last found, and the progress of the moves it started. */
export interface AdoptionStatus {
  /** "on", "off" (repair: false: adopted and counted, never evicted) or "dry-run". */
  mode: "on" | "off" | "dry-run";
  /** Pods adopted (labelled) since the policy last changed. */
  adopted: number;
  /** Pods left alone: own spec pins a capacity type, or on a node without one. */
  pinned: number;
  outside: number;
  /** Unscheduled pods without Wave's labels, adopted once they run. */
  waiting: number;
  /** Pods to move as last planned, and evictions done since the policy last changed. */
  toMove: number;
  moved: number;
  /** The next pods the repair would evict, first = next (names). */
  next: string[];
  /** When the next eviction may happen (ms; undefined when nothing is to move). */
  nextAt: number | undefined;
  direction: "shortfall" | "excess" | "none";
  onDemand: number;
  target: number;
  live: number;
  /** The last eviction the repair made or tried for this workload (the SpotPolicy's status). */
  lastRepair?: { at: number; pod: string; action: string };
  /**
   * What holds the move while pods are left to move (issue 43: a stuck workload names its blocker):
   * the repair's reason not to evict (a rollout, a pod starting, the ledger's slots, …) or the
   * PodDisruptionBudget that refused the last eviction; the short waits (grace, cooldown, a pod
   * terminating) are not reported. Undefined when nothing holds it.
   */
  heldBy?: string;
}

interface AdoptionState {
  /** The policy as last scanned (JSON): a new or changed policy is scanned at once. */
  policy: string;
  nextScanAt: number;
  /** Dry-run: the pods adoption would label, as labelled copies (nothing is written). */
  planned: Pod[];
  /** Dry-run: the plan last reported in Events (reported again only when it changes). */
  reported?: string;
  status: AdoptionStatus;
}

/** planRepair's reasons for a short wait that resolves itself: not a blocker. */
const TRANSIENT = ["within the grace period", "cooling down", "a pod is terminating", "balanced"];

const randomToken = (): string => randomUUID().replaceAll("-", "").slice(12, 32);

/** Capacity type of each node (a trimmed Node watch). */
export class NodeCapacity {
  readonly #informer: Informer<"Node">;

  constructor(kube: KubeClient, clock: Clock, logger?: Logger) {
    this.#informer = new Informer({
      client: kube,
      kind: "Node",
      clock,
      log: (logger ?? silentLogger).child({ component: "spot-node-capacity" }),
      transform: (n: Node): Node => ({ metadata: { name: n.metadata.name, labels: n.metadata.labels } }),
    });
  }

  start(signal?: AbortSignal): this {
    this.#informer.start(signal);
    return this;
  }

  stop(): Promise<void> {
    return this.#informer.stop();
  }

  /** Whether every node has been listed once (before that, adoption waits). */
  get synced(): boolean {
    return this.#informer.hasSynced;
  }

  of(name: string | undefined): string {
    if (name === undefined || name === "") return "none";
    return this.#informer.get(name)?.metadata.labels?.[CAPACITY_TYPE_LABEL] ?? "unknown";
  }
}

export class SpotRepair {
  readonly #o: SpotRepairOptions;
  readonly #log: Logger;
  readonly #timing: RepairTiming;
  readonly #memory = new Map<string, RepairMemory>();
  readonly #adoption = new Map<string, AdoptionState>();
  readonly #token: () => string;
  /** Label sets of the placement gauge set by the last pass (removed when they disappear). */
  readonly #gauged = new Map<string, Record<string, string>>();
  /** Actions taken (tests). */
  readonly actions: { workload: string; kind: string; pod: string; outcome: string }[] = [];

  constructor(opts: SpotRepairOptions) {
    this.#o = opts;
    this.#log = (opts.logger ?? silentLogger).child({ component: "spot-repair" });
    this.#timing = { ...DEFAULT_REPAIR_TIMING, ...opts.timing };
    this.#token = opts.token ?? randomToken;
  }

  /**
   * Adoption and move progress per workload key, as this replica sees it (tests, debugging; the
   * Spot placement page's progress is core's `spotProgress`, from the Events).
   */
  status(): Map<string, AdoptionStatus> {
    return new Map([...this.#adoption].map(([k, st]) => [k, { ...st.status }]));
  }

  /** One pass over every policy. Never throws (a failing workload is logged and retried). */
  async tick(): Promise<void> {
    const seen = new Set<string>();
    const counted = new Map<string, { labels: Record<string, string>; n: number }>();
    const all = this.#o.policies.all();
    const keys = new Set(all.map((p) => workloadKey(p.workload)));
    const hasPolicy = (ref: WorkloadRef): boolean => keys.has(workloadKey(ref));
    for (const policy of all) {
      const key = workloadKey(policy.workload);
      seen.add(key);
      // Counted for the gauge only (the what-if's replay has none: a pass over every pod saved).
      if (this.#o.metrics?.pods) this.#count(key, this.#o.pods.view(ledgerId(policy.workload)).pods, counted);
      try {
        await this.#adopt(policy, key, hasPolicy);
        await this.#one(policy, key);
      } catch (err) {
        this.#log.warn("spot repair pass failed", { workload: key, err });
      }
    }
    // A deleted policy: its workload is forgotten, nothing of it is moved.
    for (const k of this.#memory.keys()) if (!seen.has(k)) this.#memory.delete(k);
    for (const k of this.#adoption.keys()) if (!seen.has(k)) this.#adoption.delete(k);
    const gauge = this.#o.metrics?.pods;
    if (gauge) {
      for (const [k, labels] of this.#gauged) if (!counted.has(k)) gauge.remove(labels);
      this.#gauged.clear();
      for (const [k, c] of counted) {
        gauge.set(c.n, c.labels);
        this.#gauged.set(k, c.labels);
      }
    }
  }

  /** Runs a pass every `intervalMs` and whenever a placed pod changes, until `signal` aborts. */
  async run(signal: AbortSignal, intervalMs = 1_000): Promise<void> {
    await repeatUntilAborted(this.#o.clock, signal, intervalMs, () => this.tick());
  }

  #mode(policy: SpotPolicy): AdoptionStatus["mode"] {
    if (policy.repair === false) return "off";
    return policy.repair === "dry-run" || this.#o.dryRun === true ? "dry-run" : "on";
  }

  /**
   * Adoption: when the policy is new or changed (and every `rescanMs`), lists the workload's live
   * pods that carry none of Wave's labels and labels those on a spot or on-demand node with the
   * capacity they run on — the ledger first, so an admission meanwhile counts them. They are then
   * ordinary placed pods: `#one` moves the surplus one eviction at a time. Dry-run only plans.
   */
  async #adopt(policy: SpotPolicy, key: string, hasPolicy: (ref: WorkloadRef) => boolean): Promise<void> {
    const { kube, clock, nodes, allocator } = this.#o;
    const now = clock.now();
    const signature = JSON.stringify(policy);
    const mode = this.#mode(policy);
    let st = this.#adoption.get(key);
    if (st?.policy === signature && now < st.nextScanAt) return;
    if (!nodes?.synced || !this.#o.pods.ready) return; // where pods run is not known yet
    const changed = st?.policy !== signature;
    if (!st || changed) {
      st = {
        policy: signature,
        nextScanAt: 0,
        planned: [],
        status: {
          ...(st?.status ?? emptyStatus(mode)),
          mode,
          adopted: 0,
          moved: 0,
          toMove: 0,
        },
      };
      this.#adoption.set(key, st);
    }
    const w = policy.workload;
    const unplaced: Pod[] = [];
    let cont: string | undefined;
    do {
      const page = await kube.list("Pod", {
        namespace: w.namespace,
        labelSelector: `!${LEDGER_LABEL}`,
        limit: 500,
        ...(cont ? { continue: cont } : {}),
      });
      for (const p of page.items) if (governedBy(p, w, hasPolicy)) unplaced.push(p);
      cont = page.continue;
    } while (cont);
    const plan = planAdoption(unplaced, (n) => nodes.of(n));
    const { rescanMs = 30_000, waitingRescanMs = 5_000 } = this.#o.adoption ?? {};
    st.nextScanAt = now + (plan.waiting.length > 0 ? waitingRescanMs : rescanMs);
    Object.assign(st.status, {
      mode,
      pinned: plan.pinned.length,
      outside: plan.outside.length,
      waiting: plan.waiting.length,
    });
    const id = ledgerId(w);
    if (mode === "dry-run") {
      st.planned = plan.adopt.map((a) => asAdopted(a.pod, a.capacity, id));
      return;
    }
    st.planned = [];
    if (plan.adopt.length === 0) return;
    const slots = plan.adopt.map((a) => ({ ...a, token: this.#token(), revision: revisionOf(a.pod) }));
    await allocator.update(w, policy, (l) => adoptSlots(l, policy, slots, now));
    let adopted = 0;
    for (const s of slots) {
      const name = s.pod.metadata.name ?? "";
      try {
        await kube.patch("Pod", name, adoptionPatch(s.pod, s.capacity, id, s.token), {
          namespace: s.pod.metadata.namespace ?? w.namespace,
          type: "merge",
        });
        adopted++;
      } catch (err) {
        // Gone meanwhile: its slot is freed by the next reconcile (never seen in the watch).
        if (!isNotFound(err)) this.#log.warn("could not adopt a pod", { workload: key, pod: name, err });
      }
    }
    st.status.adopted += adopted;
    const onDemand = slots.filter((s) => s.capacity === ON_DEMAND).length;
    const message =
      `adopted ${adopted} running pod(s) without Wave's labels where they run ` +
      `(${onDemand} on on-demand nodes, ${slots.length - onDemand} on spot)` +
      (plan.pinned.length > 0 ? `; ${plan.pinned.length} pin a capacity type themselves: left alone` : "") +
      (plan.outside.length > 0
        ? `; ${plan.outside.length} on nodes without a capacity type: left alone`
        : "");
    this.#log.info("spot adoption", { workload: key, adopted, onDemand, pinned: plan.pinned.length });
    const first = slots[0]?.pod;
    if (first) await this.#event(first, key, message, "Normal", "Adopt");
  }

  async #one(policy: SpotPolicy, key: string): Promise<void> {
    const { pods, clock, allocator } = this.#o;
    if (!pods.ready) return;
    const id = ledgerId(policy.workload);
    const view = pods.view(id).pods;
    let memory = this.#memory.get(key);
    if (!memory) this.#memory.set(key, (memory = {}));
    const now = clock.now();
    const st = this.#adoption.get(key);
    const mode = this.#mode(policy);
    // What is left to move (adopted pods and dry-run's planned copies included): the UI's progress.
    const moves = plannedMoves(policy, [...view, ...(st?.planned ?? [])]);
    if (st) {
      Object.assign(st.status, {
        mode,
        direction: moves.direction,
        onDemand: moves.onDemand,
        target: moves.target,
        live: moves.live,
        next: moves.pods.map((p) => p.metadata.name ?? ""),
        toMove: Math.max(st.status.toMove, st.status.moved + moves.pods.length),
        nextAt:
          moves.pods.length === 0 || mode !== "on"
            ? undefined
            : Math.max(
                now,
                (memory.lastActionAt ?? 0) + cooldownOf(memory, this.#timing),
                (memory.imbalanceSince ?? now) + this.#timing.graceMs,
              ),
      });
    }
    if (mode === "dry-run") {
      await this.#reportPlan(key, moves, st);
      return;
    }
    // The ledger is only read when the pods say something is off (one GET, often none); its
    // fallback window as last read stands in for it until then.
    const plan = planRepair({
      policy,
      pods: view,
      memory,
      now,
      fallbackUntil: memory.fallbackUntil ?? 0,
      nextCapacity: () => "on-demand",
      timing: this.#timing,
    });
    if (plan.kind === "none") {
      this.#held(st, moves.pods.length > 0, plan.reason, memory);
      return;
    }
    const ledger = await allocator.update(policy.workload, policy);
    memory.fallbackUntil = ledger.fallbackUntil;
    const checked = planRepair({
      policy,
      pods: view,
      memory,
      now,
      fallbackUntil: ledger.fallbackUntil,
      nextCapacity: (revision) => nextCapacity(ledger, policy, revision),
      timing: this.#timing,
    });
    if (checked.kind === "none") {
      this.#held(st, moves.pods.length > 0, checked.reason, memory);
      return;
    }
    memory.lastActionAt = now;
    memory.imbalanceSince = undefined;
    if (st) st.status.heldBy = undefined;
    const pod = checked.pod;
    const podName = pod.metadata.name ?? "";
    if (checked.kind === "fallback") {
      const pending = Math.round(checked.pendingMs / 1000);
      let why: string;
      if (checked.opening) {
        const window =
          policy.fallbackWindowSeconds === undefined
            ? (this.#o.fallbackWindowMs ?? 600_000)
            : policy.fallbackWindowSeconds * 1000;
        const until = now + window;
        await allocator.update(policy.workload, policy, (l) => {
          l.fallbackUntil = until;
        });
        memory.fallbackUntil = until;
        why =
          `spot pod ${podName} unschedulable for ${pending} s: spot capacity looks ` +
          `unavailable, so spot pods get a spot preference (on-demand fallback) until ` +
          `${new Date(until).toISOString()}; evicting ${podName} so its replacement can run`;
      } else
        why =
          `spot pod ${podName} unschedulable for ${pending} s and still requiring spot while the ` +
          `on-demand fallback is open (until ${new Date(ledger.fallbackUntil).toISOString()}); ` +
          `evicting it so its replacement can run`;
      await this.#evict(policy, key, memory, pod, "fallback", why);
      return;
    }
    const why =
      checked.direction === "shortfall"
        ? `${checked.onDemand} of ${checked.live} live pods on-demand, target ${checked.target}: evicting spot ` +
          `pod ${podName} so its replacement takes the free on-demand slot`
        : `${checked.onDemand} of ${checked.live} live pods on-demand, target ${checked.target}: evicting ` +
          `on-demand pod ${podName} so its replacement goes to spot`;
    await this.#evict(policy, key, memory, pod, checked.direction, why);
  }

  /** The status's `heldBy`: the repair's reason not to evict while pods are left to move. */
  #held(st: AdoptionState | undefined, toMove: boolean, reason: string, memory: RepairMemory): void {
    if (!st) return;
    if (!toMove) st.status.heldBy = undefined;
    else if ((memory.refused ?? 0) > 0)
      st.status.heldBy = `the last ${memory.refused === 1 ? "eviction was" : `${String(memory.refused)} evictions were`} refused by a PodDisruptionBudget`;
    else if (!TRANSIENT.some((t) => reason.startsWith(t))) st.status.heldBy = reason;
  }

  /**
   * Evicts `pod` and records it. A refused eviction backs the workload off (planRepair's
   * `cooldownOf`: `memory.refused` grows); any other outcome resets it.
   */
  async #evict(
    policy: SpotPolicy,
    key: string,
    memory: RepairMemory,
    pod: Pod,
    direction: string,
    why: string,
  ): Promise<void> {
    const { kube, metrics } = this.#o;
    const name = pod.metadata.name ?? "";
    const namespace = pod.metadata.namespace ?? policy.workload.namespace;
    let outcome = "evicted";
    let message = why;
    let type: "Normal" | "Warning" = "Normal";
    try {
      await kube.evict(name, namespace, pod.metadata.uid !== undefined ? { uid: pod.metadata.uid } : {});
    } catch (err) {
      if (isNotFound(err)) outcome = "gone";
      else if (KubeApiError.is(err, 429)) {
        outcome = "blocked";
        type = "Warning";
        memory.refused = (memory.refused ?? 0) + 1;
        message = `${why} — blocked by a PodDisruptionBudget, will retry in ${Math.round(cooldownOf(memory, this.#timing) / 1000)} s`;
      } else {
        outcome = "failed";
        type = "Warning";
        message = `${why} — eviction failed: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
    if (outcome !== "blocked") memory.refused = undefined;
    const st = this.#adoption.get(key);
    if (st && outcome === "evicted" && direction !== "fallback") {
      st.status.moved++;
      message += ` (${st.status.moved} of ${Math.max(st.status.toMove, st.status.moved)} moved)`;
    }
    metrics?.repairs.inc({ workload: key, direction, outcome });
    this.actions.push({ workload: key, kind: direction, pod: name, outcome });
    if (st) st.status.lastRepair = { at: this.#o.clock.now(), pod: name, action: `${direction}: ${outcome}` };
    this.#log.info("spot repair", { workload: key, direction, pod: name, outcome });
    if (outcome === "gone") return;
    await this.#event(
      pod,
      key,
      message,
      type,
      outcome === "evicted" ? (direction === "fallback" ? "Fallback" : "Evict") : "EvictBlocked",
    );
  }

  /** A `WaveSpotRepair` Event on `pod` (failures are logged: an Event never stops the repair). */
  async #event(
    pod: Pod,
    key: string,
    message: string,
    type: "Normal" | "Warning",
    action: string,
  ): Promise<void> {
    const { kube, clock, identity } = this.#o;
    try {
      await kube.create(
        "Event",
        repairEvent({ pod, workload: key, message, type, action, instance: identity, now: clock.now() }),
        { namespace: pod.metadata.namespace ?? key.split("/")[0] ?? "" },
      );
    } catch (err) {
      this.#log.warn("could not record the spot repair event", { workload: key, err });
    }
  }

  /**
   * Dry-run: one `PlanEvict` Event per eviction the repair would make, in its order, whenever the
   * plan changes (not every pass). Nothing is labelled or evicted.
   */
  async #reportPlan(
    key: string,
    moves: ReturnType<typeof plannedMoves>,
    st: AdoptionState | undefined,
  ): Promise<void> {
    const signature = `${moves.onDemand}/${moves.target}/${moves.live}:${moves.pods.map((p) => p.metadata.name).join(",")}`;
    if (!st || st.reported === signature) return;
    st.reported = signature;
    const n = moves.pods.length;
    // One line on the workload itself (kubectl describe), then one Event per planned eviction.
    const summary =
      n === 0
        ? `dry-run: nothing to move (${moves.onDemand} of ${moves.live} live pods on-demand, target ${moves.target})`
        : `dry-run: would evict ${n} pod(s), one at a time: ${moves.pods.map((p) => p.metadata.name ?? "").join(", ")} ` +
          `(${moves.onDemand} of ${moves.live} live pods on-demand, target ${moves.target}); nothing evicted`;
    try {
      await this.#o.kube.create("Event", planEvent(key, summary, this.#o.identity, this.#o.clock.now()), {
        namespace: key.split("/")[0] ?? "",
      });
    } catch (err) {
      this.#log.warn("could not record the dry-run plan", { workload: key, err });
    }
    for (const [i, pod] of moves.pods.entries()) {
      const from = moves.direction === "excess" ? "on-demand" : "spot";
      const to = moves.direction === "excess" ? "spot" : "on-demand";
      await this.#event(
        pod,
        key,
        `dry-run: would evict ${from} pod ${pod.metadata.name ?? ""} (${i + 1} of ${n}) so its replacement ` +
          `runs on ${to}: ${moves.onDemand} of ${moves.live} live pods on-demand, target ${moves.target}; nothing evicted`,
        "Normal",
        "PlanEvict",
      );
    }
  }

  /** Live pods by assignment × node capacity type, into `out`. */
  #count(
    key: string,
    pods: readonly Pod[],
    out: Map<string, { labels: Record<string, string>; n: number }>,
  ): void {
    for (const p of pods) {
      if (!isLivePod(p)) continue;
      const assignment = p.metadata.labels?.[ASSIGNMENT_LABEL] ?? "none";
      const node = this.#o.nodes?.of(p.spec.nodeName) ?? (p.spec.nodeName ? "unknown" : "none");
      const labels = { workload: key, assignment, node_capacity_type: node };
      const k = JSON.stringify(labels);
      const c = out.get(k);
      if (c) c.n++;
      else out.set(k, { labels, n: 1 });
    }
  }
}

/** A workload's status before the repair has looked at any of its pods. */
export const emptyStatus = (mode: AdoptionStatus["mode"]): AdoptionStatus => ({
  mode,
  adopted: 0,
  pinned: 0,
  outside: 0,
  waiting: 0,
  toMove: 0,
  moved: 0,
  next: [],
  nextAt: undefined,
  direction: "none",
  onDemand: 0,
  target: 0,
  live: 0,
});
