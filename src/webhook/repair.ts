// The spot repair controller (ADR 0006): beside the webhook, one leader per cluster. When a
// workload has fewer (or more) on-demand pods than its target and no admission is coming to fix
// it — a rollout ended, a pod was deleted, a node was interrupted, the threshold changed — it
// evicts one pod at a time through the Eviction API (PodDisruptionBudgets respected), so the
// replacement takes the right slot. Every action is recorded as a `WaveSpotRepair` Event and
// counted on /metrics. It reads pods from the webhook's pod watch, never by polling lists.
import { Informer } from "../kube/informer/informer.ts";
import type { Node, Pod } from "../objects/kube.ts";
import { KubeApiError, isNotFound, type KubeClient } from "../kube/port.ts";
import type { Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import type { SlotAllocator } from "./allocator.ts";
import { repairEvent } from "./events.ts";
import { isLivePod, ledgerId, nextCapacity } from "./ledger.ts";
import type { SpotMetrics } from "./metrics.ts";
import type { PodCache } from "./pod-cache.ts";
import { workloadKey, type SpotPolicy } from "./policy.ts";
import type { PolicySource } from "./policy-source.ts";
import {
  DEFAULT_REPAIR_TIMING,
  cooldownOf,
  planRepair,
  type RepairMemory,
  type RepairTiming,
} from "./repair-plan.ts";
import { ASSIGNMENT_LABEL } from "../objects/wave.ts";
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
  /** Nodes by name → capacity type, for placement counts (optional). */
  nodes?: NodeCapacity;
}

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
  /** Label sets of the placement gauge set by the last pass (removed when they disappear). */
  readonly #gauged = new Map<string, Record<string, string>>();
  /** Actions taken (tests). */
  readonly actions: { workload: string; kind: string; pod: string; outcome: string }[] = [];

  constructor(opts: SpotRepairOptions) {
    this.#o = opts;
    this.#log = (opts.logger ?? silentLogger).child({ component: "spot-repair" });
    this.#timing = { ...DEFAULT_REPAIR_TIMING, ...opts.timing };
  }

  /** One pass over every policy. Never throws (a failing workload is logged and retried). */
  async tick(): Promise<void> {
    const seen = new Set<string>();
    const counted = new Map<string, { labels: Record<string, string>; n: number }>();
    for (const policy of this.#o.policies.all()) {
      const key = workloadKey(policy.workload);
      seen.add(key);
      this.#count(key, this.#o.pods.view(ledgerId(policy.workload)).pods, counted);
      try {
        await this.#one(policy, key);
      } catch (err) {
        this.#log.warn("spot repair pass failed", { workload: key, err });
      }
    }
    for (const k of this.#memory.keys()) if (!seen.has(k)) this.#memory.delete(k);
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
    while (!signal.aborted) {
      await this.tick();
      try {
        await this.#o.clock.sleep(intervalMs, signal);
      } catch {
        return;
      }
    }
  }

  async #one(policy: SpotPolicy, key: string): Promise<void> {
    const { pods, clock, allocator } = this.#o;
    if (!pods.ready) return;
    const id = ledgerId(policy.workload);
    const view = pods.view(id).pods;
    let memory = this.#memory.get(key);
    if (!memory) this.#memory.set(key, (memory = {}));
    const now = clock.now();
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
    if (plan.kind === "none") return;
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
    if (checked.kind === "none") return;
    memory.lastActionAt = now;
    memory.imbalanceSince = undefined;
    const pod = checked.pod;
    const podName = pod.metadata.name ?? "";
    if (checked.kind === "fallback") {
      const pending = Math.round(checked.pendingMs / 1000);
      let why: string;
      if (checked.opening) {
        const until = now + (this.#o.fallbackWindowMs ?? 600_000);
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
    const { kube, clock, metrics, identity } = this.#o;
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
    metrics?.repairs.inc({ workload: key, direction, outcome });
    this.actions.push({ workload: key, kind: direction, pod: name, outcome });
    this.#log.info("spot repair", { workload: key, direction, pod: name, outcome });
    if (outcome === "gone") return;
    try {
      await kube.create(
        "Event",
        repairEvent({
          pod,
          workload: key,
          message,
          type,
          action: outcome === "evicted" ? (direction === "fallback" ? "Fallback" : "Evict") : "EvictBlocked",
          instance: identity,
          now: clock.now(),
        }),
        { namespace },
      );
    } catch (err) {
      this.#log.warn("could not record the spot repair event", { workload: key, err });
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
