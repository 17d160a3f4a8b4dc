// Every metric the spot-placement webhook and its repair controller expose on the webhook's
// /metrics, defined in this one place. Per workload: `workload` = "namespace/Kind/name".
import { Registry, type Counter, type Gauge } from "../shared/metrics.ts";

export interface SpotMetrics {
  registry: Registry;
  /** Admissions answered with a slot, by assignment. */
  admissions: Counter;
  /** Admissions answered with the fallback (no slot in time, API error), by reason. */
  fallbacks: Counter;
  /** Slots the ledger granted after the admission's deadline had already answered the fallback. */
  lateAnswers: Counter;
  /** Reviews with no pod about to be created (forged or stale): no on-demand slot given. */
  unbacked: Counter;
  /** Repair actions (ADR 0006), by direction (shortfall|excess|fallback) and outcome. */
  repairs: Counter;
  /** Live placed pods by assignment and by the capacity type of the node they run on. */
  pods: Gauge;
  /** Policy deliveries, by how they arrived (watch|poll) and outcome. */
  policyUpdates: Counter;
  /**
   * Creates a workload's zero fallback and late-answer series at its first admission, so
   * increase() and the fallback alert see the first one (a counter born at 1 shows no increase).
   */
  seen(workload: string): void;
}

/** Why an admission got the fallback. */
export const FALLBACK_REASONS = ["deadline", "error"] as const;
/** Workloads whose zero series exist; beyond this the set starts again (a re-add is a no-op). */
const MAX_SEEN = 10_000;

/** On a registry of its own (`wave webhook`), or on core's when one process runs both (`wave start`). */
export function createSpotMetrics(registry = new Registry()): SpotMetrics {
  const seen = new Set<string>();
  const m: SpotMetrics = {
    registry,
    admissions: registry.counter({
      name: "wave_spot_admissions_total",
      help: "Pods the spot webhook placed, by assigned capacity type.",
      labelNames: ["workload", "assignment"],
    }),
    fallbacks: registry.counter({
      name: "wave_spot_fallbacks_total",
      help: "Pods admitted with the fallback because no slot could be had in time.",
      labelNames: ["workload", "reason"],
    }),
    lateAnswers: registry.counter({
      name: "wave_spot_late_answers_total",
      help: "Slots the ledger granted after the admission deadline had passed (the pod got the fallback).",
      labelNames: ["workload"],
    }),
    unbacked: registry.counter({
      name: "wave_spot_unbacked_reviews_total",
      help: "AdmissionReviews with no pod about to be created (forged or stale): answered spot, no slot held.",
      labelNames: ["workload"],
    }),
    repairs: registry.counter({
      name: "wave_spot_repairs_total",
      help: "Spot placement repairs (one eviction each), by direction and outcome.",
      labelNames: ["workload", "direction", "outcome"],
    }),
    pods: registry.gauge({
      name: "wave_spot_pods",
      help: "Live pods of spot-policy workloads, by Wave's assignment and the node's capacity type (none = unscheduled).",
      labelNames: ["workload", "assignment", "node_capacity_type"],
    }),
    policyUpdates: registry.counter({
      name: "wave_spot_policy_updates_total",
      help: "Spot policy set fetches, by delivery (watch|poll) and outcome (changed|unchanged|error).",
      labelNames: ["delivery", "outcome"],
    }),
    seen(workload) {
      if (seen.has(workload)) return;
      if (seen.size >= MAX_SEEN) seen.clear();
      seen.add(workload);
      for (const reason of FALLBACK_REASONS) m.fallbacks.inc({ workload, reason }, 0);
      m.lateAnswers.inc({ workload }, 0);
    },
  };
  return m;
}
