import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "../../objects/kube.ts";
import { repairEvent } from "../../webhook/events.ts";
import { lateAnswerEvent } from "../../webhook/late-events.ts";
import { isRepairEvent, lateAnswerOf, lateAnswersOf, repairOf, repairsOf } from "./repairs.ts";

const pod = { metadata: { name: "web-1", namespace: "shop", uid: "p1" }, spec: { containers: [] } };
const AT = Date.parse("2026-03-02T12:00:00Z");
/** An ingest batch: the pod, then `events`. */
const batch = (...events: Event[]) => [
  { kind: "Pod" as const, object: pod },
  ...events.map((object) => ({ kind: "Event" as const, object })),
];

describe("spot repairs from Events", () => {
  it("a late-answer Event (same component) is not a repair action", () => {
    assert.equal(isRepairEvent(lateAnswerEvent("shop/Deployment/web", 3, AT, "wave-webhook-0")), false);
  });

  it("reads the webhook's own Event: workload, action, pod, why, time", () => {
    const ev = repairEvent({
      pod,
      workload: "shop/StatefulSet/db",
      message: "on spot: its slot is on-demand",
      type: "Normal",
      action: "Evict",
      instance: "wave-webhook-0",
      now: AT,
    });
    assert.deepEqual(repairOf("c1", { ...ev, metadata: { ...ev.metadata, uid: "e1" } }, 0), {
      clusterId: "c1",
      event: "e1",
      workload: "shop/StatefulSet/db",
      action: "Evict",
      pod: "shop/web-1",
      type: "Normal",
      message: "on spot: its slot is on-demand",
      at: AT,
    });
    // Without a uid (as the agent's trimming may leave it): namespace/name identifies it.
    assert.equal(repairOf("c1", ev, 0)?.event, `shop/${ev.metadata.name ?? ""}`);
  });

  it("skips other Events and repair Events without a workload; a missing time is the batch's", () => {
    const other: Event = {
      metadata: { name: "x", namespace: "shop" },
      involvedObject: { kind: "Pod", name: "web-1", namespace: "shop" },
      reason: "Pulled",
      message: "shop/Deployment/web: not ours",
    };
    const noWorkload: Event = { ...other, reason: "WaveSpotRepair", message: "no prefix here" };
    const untimed: Event = { ...other, reason: "WaveSpotRepair", message: "shop/Deployment/web: why" };
    assert.equal(repairOf("c1", other, 5), undefined);
    assert.equal(repairOf("c1", noWorkload, 5), undefined);
    assert.equal(repairOf("c1", untimed, 5)?.at, 5);
    assert.equal(repairOf("c1", untimed, 5)?.action, "");
    assert.deepEqual(
      repairsOf("c1", batch(other, untimed), 5).map((r) => r.workload),
      ["shop/Deployment/web"],
    );
  });

  it("reads the webhook's late-answer Event: workload, count, time; nothing else is one", () => {
    const ev = lateAnswerEvent("shop/Deployment/web", 4, AT, "wave-webhook-0");
    assert.deepEqual(lateAnswerOf("c1", { ...ev, metadata: { ...ev.metadata, uid: "e9" } }, 0), {
      clusterId: "c1",
      event: "e9",
      workload: "shop/Deployment/web",
      count: 4,
      at: AT,
    });
    // Without the message's prefix: the involved object (the workload) names it.
    assert.equal(lateAnswerOf("c1", { ...ev, message: "late" }, 0)?.workload, "shop/Deployment/web");
    // A count Kubernetes left out is one answer.
    const { count: _, ...uncounted } = ev;
    assert.equal(lateAnswerOf("c1", uncounted, 0)?.count, 1);
    // A repair Event, or the reason from another component, is not a late answer.
    const repair = repairEvent({
      pod,
      workload: "shop/Deployment/web",
      message: "m",
      type: "Normal",
      action: "Evict",
      instance: "i",
      now: AT,
    });
    assert.equal(lateAnswerOf("c1", repair, 0), undefined);
    const spoof: Event = { ...ev, reportingComponent: "kubelet", source: { component: "kubelet" } };
    assert.equal(lateAnswerOf("c1", spoof, 0), undefined);
    assert.deepEqual(
      lateAnswersOf("c1", batch(repair, ev), 0).map((r) => [r.workload, r.count]),
      [["shop/Deployment/web", 4]],
    );
  });
});
