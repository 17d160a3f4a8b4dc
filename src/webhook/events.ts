// Kubernetes Events the spot repair records (ADR 0006). This is a contract: the agent forwards
// Events of component `wave-spot-repair` (src/agent/trim.ts), core's spot-placement page and its
// metrics read them. Reason is always `WaveSpotRepair`; the involved object is the pod acted on;
// the message starts with the workload key ("namespace/Kind/name: ...") and says why.
import type { Event, Pod } from "../objects/kube.ts";
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  SPOT_REPAIR_EVENT_COMPONENT,
  SPOT_REPAIR_EVENT_REASON,
} from "../objects/wave.ts";

export interface RepairEventInput {
  pod: Pod;
  /** "namespace/Kind/name". */
  workload: string;
  message: string;
  type: "Normal" | "Warning";
  /** Short verb: Evict, EvictBlocked, Fallback. */
  action: string;
  /** This replica (pod name). */
  instance: string;
  now: number;
}

/** When, what and which replica of this component: the same on every Event it writes. */
function stamp(ts: string, action: string, instance: string) {
  return {
    firstTimestamp: ts,
    lastTimestamp: ts,
    action,
    reportingComponent: SPOT_REPAIR_EVENT_COMPONENT,
    reportingInstance: instance,
    source: { component: SPOT_REPAIR_EVENT_COMPONENT },
  };
}

export function repairEvent(e: RepairEventInput): Event {
  const ts = new Date(e.now).toISOString().replace(/\.\d{3}Z$/, "Z");
  const name = e.pod.metadata.name ?? "pod";
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: {
      // Event names are <involved object>.<unique suffix>, as client-go's recorder makes them.
      name: `${name}.${e.now.toString(16)}${Math.floor(Math.random() * 0xffff).toString(16)}`.slice(0, 253),
      namespace: e.pod.metadata.namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
    },
    involvedObject: {
      apiVersion: "v1",
      kind: "Pod",
      namespace: e.pod.metadata.namespace,
      name,
      ...(e.pod.metadata.uid !== undefined ? { uid: e.pod.metadata.uid } : {}),
    },
    reason: SPOT_REPAIR_EVENT_REASON,
    message: `${e.workload}: ${e.message}`,
    type: e.type,
    count: 1,
    ...stamp(ts, e.action, e.instance),
  };
}

/**
 * Reason of the dry-run plan's summary on the workload itself (`kubectl describe deployment`
 * shows it). Not forwarded to core: the plan's per-pod `PlanEvict` Events (reason WaveSpotRepair)
 * are what the Spot placement page counts.
 */
export const SPOT_REPAIR_PLAN_REASON = "WaveSpotRepairPlan";

/** The dry-run plan, summed up in one Event on the workload ("namespace/Kind/name"). */
export function planEvent(workload: string, message: string, instance: string, now: number): Event {
  return workloadEvent({
    workload,
    reason: SPOT_REPAIR_PLAN_REASON,
    message,
    count: 1,
    action: "Plan",
    instance,
    now,
  });
}

export interface WorkloadEventInput {
  /** "namespace/Kind/name"; the message is prefixed with it. */
  workload: string;
  reason: string;
  message: string;
  count: number;
  action: string;
  /** This replica (pod name). */
  instance: string;
  now: number;
  /** Unique part of the Event name after the timestamp; random when absent. */
  nameSuffix?: string;
}

/** A Normal Event of this component on a workload (plan summaries, late answers). */
export function workloadEvent(e: WorkloadEventInput): Event {
  const [namespace = "", kind = "", name = ""] = e.workload.split("/");
  const ts = new Date(e.now).toISOString().replace(/\.\d{3}Z$/, "Z");
  const suffix = e.nameSuffix ?? Math.floor(Math.random() * 0xffff).toString(16);
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: {
      name: `${name}.${e.now.toString(16)}${suffix}`.slice(0, 253),
      namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
    },
    involvedObject: { apiVersion: "apps/v1", kind, namespace, name },
    reason: e.reason,
    message: `${e.workload}: ${e.message}`,
    type: "Normal",
    count: e.count,
    ...stamp(ts, e.action, e.instance),
  };
}
