import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Event } from "../../objects/kube.ts";
import { repairEvent } from "../../webhook/events.ts";
import { lateAnswerEvent } from "../../webhook/late-events.ts";
import { isRepairEvent, repairOf, repairsOf } from "./repairs.ts";

const pod = { metadata: { name: "web-1", namespace: "shop", uid: "p1" }, spec: { containers: [] } };
const AT = Date.parse("2026-03-02T12:00:00Z");

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
      repairsOf(
        "c1",
        [
          { kind: "Pod", object: pod },
          { kind: "Event", object: other },
          { kind: "Event", object: untimed },
        ],
        5,
      ).map((r) => r.workload),
      ["shop/Deployment/web"],
    );
  });
});
