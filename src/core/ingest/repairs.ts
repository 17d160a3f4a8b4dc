// The spot repair's self-heal actions, read from the `WaveSpotRepair` Events the agent forwards
// (the webhook's repair records them: src/webhook/events.ts, ADR 0006). Pure: the store sink
// writes what this returns in the batch's transaction, so the spot page can count them per
// workload over any range, across core restarts and after Kubernetes has expired the Events.
import type { Event } from "../../objects/kube.ts";
import { SPOT_REPAIR_EVENT_COMPONENT, SPOT_REPAIR_EVENT_REASON } from "../../objects/wave.ts";
import type { SpotRepair } from "../store/store.ts";

/** "namespace/Kind/name: why" → the workload key and the why. */
const WORKLOAD_PREFIX = /^([^/\s:]+\/[^/\s:]+\/[^/\s:]+):\s*(.*)$/s;

export function isRepairEvent(ev: Event): boolean {
  const component = ev.reportingComponent ?? ev.source?.component ?? "";
  // Late-answer Events share the component (src/webhook/late-events.ts) but are not repair actions.
  if (ev.reason === "WaveSpotLateAnswer") return false;
  return ev.reason === SPOT_REPAIR_EVENT_REASON || component === SPOT_REPAIR_EVENT_COMPONENT;
}

/** One repair row from an Event; undefined for any other Event (or one without a workload). */
export function repairOf(clusterId: string, ev: Event, fallbackAt: number): SpotRepair | undefined {
  if (!isRepairEvent(ev)) return undefined;
  const m = WORKLOAD_PREFIX.exec(ev.message ?? "");
  if (!m?.[1]) return undefined;
  const ns = ev.involvedObject.namespace ?? ev.metadata.namespace ?? "";
  const stamp = Date.parse(ev.lastTimestamp ?? ev.eventTime ?? ev.firstTimestamp ?? "");
  return {
    clusterId,
    event: ev.metadata.uid ?? `${ev.metadata.namespace ?? ""}/${ev.metadata.name ?? ""}`,
    workload: m[1],
    action: ev.action ?? "",
    pod: `${ns}/${ev.involvedObject.name ?? ""}`,
    type: ev.type === "Warning" ? "Warning" : "Normal",
    message: m[2] ?? "",
    at: Number.isFinite(stamp) ? stamp : fallbackAt,
  };
}

/** The repairs among a batch's Events (a snapshot's and the upserted ones). */
export function repairsOf(
  clusterId: string,
  events: Iterable<{ kind: string; object: unknown }>,
  fallbackAt: number,
): SpotRepair[] {
  const out: SpotRepair[] = [];
  for (const o of events) {
    if (o.kind !== "Event") continue;
    const r = repairOf(clusterId, o.object as Event, fallbackAt);
    if (r) out.push(r);
  }
  return out;
}
