// The spot repair's self-heal actions, read from the `WaveSpotRepair` Events the agent forwards
// (the webhook's repair records them: src/webhook/events.ts, ADR 0006), and the webhook's late
// answers, read from its `WaveSpotLateAnswer` Events (src/webhook/late-events.ts). Pure: the store
// sink writes what this returns in the batch's transaction, so the spot page can count them per
// workload over any range, across core restarts and after Kubernetes has expired the Events.
import type { Event } from "../../objects/kube.ts";
import {
  SPOT_LATE_ANSWER_EVENT_REASON,
  SPOT_REPAIR_EVENT_COMPONENT,
  SPOT_REPAIR_EVENT_REASON,
} from "../../objects/wave.ts";
import type { SpotLateAnswer, SpotRepair } from "../store/store.ts";

/** "namespace/Kind/name: why" → the workload key and the why. */
const WORKLOAD_PREFIX = /^([^/\s:]+\/[^/\s:]+\/[^/\s:]+):\s*(.*)$/s;

export function isRepairEvent(ev: Event): boolean {
  const component = ev.reportingComponent ?? ev.source?.component ?? "";
  // Late-answer Events share the component (src/webhook/late-events.ts) but are not repair actions.
  if (ev.reason === SPOT_LATE_ANSWER_EVENT_REASON) return false;
  return ev.reason === SPOT_REPAIR_EVENT_REASON || component === SPOT_REPAIR_EVENT_COMPONENT;
}

/** The webhook's late-answer Event: its reason and component (a kubelet's Event is never one). */
export function isLateAnswerEvent(ev: Event): boolean {
  const component = ev.reportingComponent ?? ev.source?.component ?? "";
  return ev.reason === SPOT_LATE_ANSWER_EVENT_REASON && component === SPOT_REPAIR_EVENT_COMPONENT;
}

const eventId = (ev: Event): string =>
  ev.metadata.uid ?? `${ev.metadata.namespace ?? ""}/${ev.metadata.name ?? ""}`;

const eventTime = (ev: Event, fallbackAt: number): number => {
  const stamp = Date.parse(ev.lastTimestamp ?? ev.eventTime ?? ev.firstTimestamp ?? "");
  return Number.isFinite(stamp) ? stamp : fallbackAt;
};

/**
 * One late-answer row from an Event; undefined for any other Event. The workload is the message's
 * prefix (as for repairs), else the involved object (the Event is on the workload); the count is
 * the Event's (one Event carries a minute of late answers), at least 1.
 */
export function lateAnswerOf(clusterId: string, ev: Event, fallbackAt: number): SpotLateAnswer | undefined {
  if (!isLateAnswerEvent(ev)) return undefined;
  const io = ev.involvedObject;
  const ns = io.namespace ?? ev.metadata.namespace ?? "";
  const workload =
    WORKLOAD_PREFIX.exec(ev.message ?? "")?.[1] ??
    (ns && io.kind && io.name ? `${ns}/${io.kind}/${io.name}` : undefined);
  if (!workload) return undefined;
  const count = Number.isSafeInteger(ev.count) && (ev.count ?? 0) > 0 ? (ev.count ?? 1) : 1;
  return { clusterId, event: eventId(ev), workload, count, at: eventTime(ev, fallbackAt) };
}

/** The rows `rowOf` makes of a batch's Events (a snapshot's and the upserted ones). */
function eventRows<T>(
  events: Iterable<{ kind: string; object: unknown }>,
  rowOf: (ev: Event) => T | undefined,
): T[] {
  const out: T[] = [];
  for (const o of events) {
    if (o.kind !== "Event") continue;
    const r = rowOf(o.object as Event);
    if (r) out.push(r);
  }
  return out;
}

/** The late-answer rows among a batch's Events. */
export const lateAnswersOf = (
  clusterId: string,
  events: Iterable<{ kind: string; object: unknown }>,
  fallbackAt: number,
): SpotLateAnswer[] => eventRows(events, (ev) => lateAnswerOf(clusterId, ev, fallbackAt));

/** One repair row from an Event; undefined for any other Event (or one without a workload). */
export function repairOf(clusterId: string, ev: Event, fallbackAt: number): SpotRepair | undefined {
  if (!isRepairEvent(ev)) return undefined;
  const m = WORKLOAD_PREFIX.exec(ev.message ?? "");
  if (!m?.[1]) return undefined;
  const ns = ev.involvedObject.namespace ?? ev.metadata.namespace ?? "";
  return {
    clusterId,
    event: eventId(ev),
    workload: m[1],
    action: ev.action ?? "",
    pod: `${ns}/${ev.involvedObject.name ?? ""}`,
    type: ev.type === "Warning" ? "Warning" : "Normal",
    message: m[2] ?? "",
    at: eventTime(ev, fallbackAt),
  };
}

/** The repairs among a batch's Events. */
export const repairsOf = (
  clusterId: string,
  events: Iterable<{ kind: string; object: unknown }>,
  fallbackAt: number,
): SpotRepair[] => eventRows(events, (ev) => repairOf(clusterId, ev, fallbackAt));
