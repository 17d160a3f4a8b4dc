// Counters and histograms fed by what happens rather than read off the state: NodeClaim
// lifecycle steps and disruptions from each ingested batch, Wave's spot self-heal actions (the
// webhook's repairs, forwarded by the agent as `WaveSpotRepair` Events), warmup events, and
// realized savings as the savings sampler records them. Counters start at 0 with the process;
// Prometheus's rate()/increase() handle the reset on a restart.
import { isRepairEvent } from "../core/ingest/repairs.ts";
import type { IngestBatch } from "../core/ingest/sink.ts";
import type { SavingsRow } from "../core/store/store.ts";
import type { Event } from "../objects/kube.ts";
import type { Counter, Histogram, Registry } from "../shared/metrics.ts";
import type { WarmupEvent } from "../warmup/stats.ts";
import { missReasons } from "../warmup/stats.ts";

/**
 * Karpenter's disruption reasons (v1; Unhealthy: v1.15 node repair, reboots included, as its own
 * karpenter_nodeclaims_disrupted_total reason "unhealthy"): pre-created at 0 so dashboards and
 * alerts see every pool.
 */
export const DISRUPTION_REASONS = ["Underutilized", "Empty", "Drifted", "Expired", "Unhealthy"] as const;

/** Seconds: NodeClaim phase transitions span seconds (launch) to days (lifetime). */
export const LIFECYCLE_BUCKETS = [
  1, 2.5, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1800, 3600, 14400, 86400,
];

/** Distinct workloads kept per cluster in the per-workload savings counters; more fold into "(other)". */
export const MAX_SAVINGS_WORKLOADS = 500;
/** NodeClaims whose launch time is remembered for the duration histograms. */
const MAX_OPEN_CLAIMS = 100_000;
/** Event uids whose last count is remembered (repeats of one Event only add their new count). */
const MAX_EVENTS = 50_000;

const TRANSITIONS = {
  Registered: ["Launched", "launched_to_registered"],
  Initialized: ["Registered", "registered_to_initialized"],
} as const;

interface Claim {
  at: Partial<Record<"Launched" | "Registered" | "Initialized", number>>;
}

export class EventMetrics {
  readonly #disruptions: Counter;
  readonly #steps: Counter;
  readonly #durations: Histogram;
  readonly #repairs: Counter;
  readonly #warmCreated: Counter;
  readonly #warmHits: Counter;
  readonly #warmMisses: Counter;
  readonly #warmSaved: Counter;
  readonly #savedPool: Counter;
  readonly #actualPool: Counter;
  readonly #onDemandPool: Counter;
  readonly #savedWorkload: Counter;
  readonly #claims = new Map<string, Claim>();
  readonly #eventCounts = new Map<string, number>();
  readonly #seenSteps = new Set<string>();
  readonly #workloads = new Map<string, Set<string>>();
  readonly #pools = new Map<string, Set<string>>();
  readonly #namespaces = new Map<string, Set<string>>();
  constructor(r: Registry) {
    this.#disruptions = r.counter({
      name: "wave_disruptions_total",
      help: "NodeClaims Karpenter disrupted, by pool and reason.",
      labelNames: ["cluster", "nodepool", "reason"],
    });
    this.#steps = r.counter({
      name: "wave_nodeclaim_lifecycle_events_total",
      help: "NodeClaim lifecycle steps seen, by pool, capacity type and phase.",
      labelNames: ["cluster", "nodepool", "capacity_type", "phase"],
    });
    this.#durations = r.histogram({
      name: "wave_nodeclaim_phase_duration_seconds",
      help: "Time between NodeClaim lifecycle phases (launched_to_registered, registered_to_initialized, launched_to_initialized, lifetime).",
      labelNames: ["cluster", "nodepool", "capacity_type", "transition"],
      buckets: LIFECYCLE_BUCKETS,
    });
    this.#repairs = r.counter({
      name: "wave_spot_repair_events_total",
      help: "Self-heal actions of spot placement (WaveSpotRepair Events), by namespace.",
      labelNames: ["cluster", "namespace"],
    });
    this.#warmCreated = r.counter({
      name: "wave_warmup_created_total",
      help: "Warmup pods created, by pool.",
      labelNames: ["cluster", "nodepool"],
    });
    this.#warmHits = r.counter({
      name: "wave_warmup_hits_total",
      help: "Warm nodes a real pod used, by pool.",
      labelNames: ["cluster", "nodepool"],
    });
    this.#warmMisses = r.counter({
      name: "wave_warmup_misses_total",
      help: "Warm nodes released unused, by pool and reason (ttl: expired).",
      labelNames: ["cluster", "nodepool", "reason"],
    });
    this.#warmSaved = r.counter({
      name: "wave_warmup_time_saved_seconds_total",
      help: "Pod start-up time saved by warm nodes, by pool: per hit, the pool's cold start (median start of its pods that waited for a new node, 24 h before the hit) minus the hit pod's own start, never negative; stored with the hit.",
      labelNames: ["cluster", "nodepool"],
    });
    this.#savedPool = r.counter({
      name: "wave_realized_savings_dollars_total",
      help: "Dollars saved against the same capacity all on-demand, as recorded each history step, by pool.",
      labelNames: ["cluster", "nodepool"],
    });
    this.#actualPool = r.counter({
      name: "wave_realized_cost_dollars_total",
      help: "Dollars the pool's priced capacity cost, as recorded each history step.",
      labelNames: ["cluster", "nodepool"],
    });
    this.#onDemandPool = r.counter({
      name: "wave_realized_on_demand_cost_dollars_total",
      help: "Dollars the same capacity would have cost all on-demand, as recorded each history step.",
      labelNames: ["cluster", "nodepool"],
    });
    this.#savedWorkload = r.counter({
      name: "wave_workload_realized_savings_dollars_total",
      help: `Dollars a workload saved (its requested share of spot nodes against on-demand); at most ${MAX_SAVINGS_WORKLOADS} workloads per cluster, the rest as workload="(other)".`,
      labelNames: ["cluster", "namespace", "workload_kind", "workload"],
    });
  }

  /** Creates the zero series of a pool so panels and alerts see it before anything happens. */
  pool(cluster: string, nodepool: string): void {
    let known = this.#pools.get(cluster);
    if (!known) this.#pools.set(cluster, (known = new Set()));
    if (known.has(nodepool)) return;
    known.add(nodepool);
    const l = { cluster, nodepool };
    for (const reason of DISRUPTION_REASONS) this.#disruptions.inc({ ...l, reason }, 0);
    this.#warmCreated.inc(l, 0);
    this.#warmHits.inc(l, 0);
    this.#warmSaved.inc(l, 0);
    for (const reason of missReasons) this.#warmMisses.inc({ ...l, reason }, 0);
    this.#savedPool.inc(l, 0);
    this.#actualPool.inc(l, 0);
    this.#onDemandPool.inc(l, 0);
  }

  /** Zero repair series of the namespaces that have spot policies (repairs have no pool). */
  namespaces(cluster: string, namespaces: Iterable<string>): void {
    let known = this.#namespaces.get(cluster);
    if (!known) this.#namespaces.set(cluster, (known = new Set()));
    for (const namespace of namespaces) {
      if (known.has(namespace)) continue;
      known.add(namespace);
      this.#repairs.inc({ cluster, namespace }, 0);
    }
  }

  /** One ingested batch: lifecycle steps, disruptions and spot repair Events. */
  batch(b: IngestBatch): void {
    const cluster = b.clusterId;
    for (const step of b.lifecycle) {
      const key = `${cluster}\u0000${step.id}`;
      if (this.#seenSteps.has(key)) continue;
      remember(this.#seenSteps, key, MAX_EVENTS * 4);
      const nodepool = step.nodePool ?? "";
      const ct = step.capacityType ?? "";
      const at = Date.parse(step.at);
      if (nodepool !== "") this.pool(cluster, nodepool);
      this.#steps.inc({ cluster, nodepool, capacity_type: ct, phase: step.type });
      if (step.type === "Disrupted" && step.reason) {
        this.#disruptions.inc({ cluster, nodepool, reason: step.reason });
      }
      if (!Number.isFinite(at)) continue;
      const claimKey = `${cluster}\u0000${step.uid ?? step.nodeClaim}`;
      const observe = (transition: string, seconds: number): void => {
        if (seconds >= 0)
          this.#durations.observe(seconds, { cluster, nodepool, capacity_type: ct, transition });
      };
      if (step.type === "Launched" || step.type === "Registered" || step.type === "Initialized") {
        let c = this.#claims.get(claimKey);
        if (!c) {
          if (this.#claims.size >= MAX_OPEN_CLAIMS) {
            const oldest = this.#claims.keys().next().value;
            if (oldest !== undefined) this.#claims.delete(oldest);
          }
          this.#claims.set(claimKey, (c = { at: {} }));
        }
        c.at[step.type] = at;
        if (step.type !== "Launched") {
          const [from, name] = TRANSITIONS[step.type];
          const start = c.at[from];
          if (start !== undefined) observe(name, (at - start) / 1000);
        }
        if (step.type === "Initialized" && c.at.Launched !== undefined) {
          observe("launched_to_initialized", (at - c.at.Launched) / 1000);
        }
      } else if (step.type === "Terminated") {
        const c = this.#claims.get(claimKey);
        if (c?.at.Launched !== undefined) observe("lifetime", (at - c.at.Launched) / 1000);
        this.#claims.delete(claimKey);
      }
    }
    for (const ch of b.changes) {
      if (ch.kind !== "Event" || ch.op === "delete") continue;
      const ev = ch.object as Event;
      if (!isRepairEvent(ev)) continue;
      const uid = `${cluster}\u0000${ev.metadata.uid ?? `${ev.metadata.namespace}/${ev.metadata.name}`}`;
      const count = Math.max(1, ev.count ?? 1);
      const before = this.#eventCounts.get(uid) ?? 0;
      if (count <= before) continue;
      this.#eventCounts.delete(uid);
      remember(this.#eventCounts, uid, MAX_EVENTS, count);
      const namespace = ev.involvedObject.namespace ?? ev.metadata.namespace ?? "";
      this.namespaces(cluster, [namespace]);
      this.#repairs.inc({ cluster, namespace }, count - before);
    }
  }

  /**
   * One warmup controller event of `cluster`; a hit adds `savedSeconds`, what it saved
   * (warmup/time-saved.ts, stored with the hit by core).
   */
  warmup(cluster: string, e: WarmupEvent, savedSeconds = 0): void {
    const l = { cluster, nodepool: e.pool };
    this.pool(cluster, e.pool);
    switch (e.type) {
      case "created":
        this.#warmCreated.inc(l);
        break;
      case "hit":
        this.#warmHits.inc(l);
        this.#warmSaved.inc(l, Math.max(0, savedSeconds));
        break;
      case "miss":
        this.#warmMisses.inc({ ...l, reason: e.reason });
        break;
      case "prepull":
        break;
    }
  }

  /** Savings rows the sampler wrote. */
  savings(rows: readonly SavingsRow[]): void {
    for (const r of rows) {
      if (r.scope === "pool") {
        const l = { cluster: r.clusterId, nodepool: r.name === "(none)" ? "" : r.name };
        if (l.nodepool !== "") this.pool(r.clusterId, l.nodepool);
        this.#savedPool.inc(l, Math.max(0, r.onDemandUsd - r.actualUsd));
        this.#actualPool.inc(l, r.actualUsd);
        this.#onDemandPool.inc(l, r.onDemandUsd);
        continue;
      }
      const [namespace = "", kind = "", ...rest] = r.name.split("/");
      let known = this.#workloads.get(r.clusterId);
      if (!known) this.#workloads.set(r.clusterId, (known = new Set()));
      const fits = known.has(r.name) || known.size < MAX_SAVINGS_WORKLOADS;
      if (fits) known.add(r.name);
      const labels = fits
        ? { cluster: r.clusterId, namespace, workload_kind: kind, workload: rest.join("/") }
        : { cluster: r.clusterId, namespace: "", workload_kind: "", workload: "(other)" };
      this.#savedWorkload.inc(labels, Math.max(0, r.onDemandUsd - r.actualUsd));
    }
  }
}

/** Insertion-ordered bounded memory: the oldest entry goes when full. */
function remember<K, V>(m: Set<K> | Map<K, V>, key: K, max: number, value?: V): void {
  if (m.size >= max) {
    const oldest = m.keys().next().value;
    if (oldest !== undefined) m.delete(oldest);
  }
  if (m instanceof Set) m.add(key);
  else m.set(key, value as V);
}
