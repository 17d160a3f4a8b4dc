// v1.15 node repair (NodeRepair gate) as Karpenter writes it — recorded on the rig
// (src/karpenter/events/fixtures/v1.15.0/repair-rig-*.json: a KWOKUnhealthy node replaced, then
// its replacement rebooted for KWOKRebootRequired) and written from its source
// (repair-source-events.json, the Events the rig did not produce): the repair's
// DisruptionTerminating Events are a disruption with reason Unhealthy, counted on /metrics; the
// agent keeps repair and reboot Events; why repair waits is never read as a consolidation blocker.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { Event } from "../../objects/kube.ts";
import type { NodeClaim } from "../../objects/karpenter.ts";
import { trimEvent } from "../../agent/trim.ts";
import { parseDisruptionMessage } from "../../karpenter/events/parse.ts";
import { DISRUPTION_REASONS, EventMetrics } from "../../metrics/events.ts";
import { Registry } from "../../shared/metrics.ts";
import { LifecycleTracker } from "./derive.ts";

const fixture = (name: string): unknown =>
  JSON.parse(
    readFileSync(new URL(`../../karpenter/events/fixtures/v1.15.0/${name}`, import.meta.url), "utf8"),
  );
const events = fixture("repair-source-events.json") as Event[];
const recorded = fixture("repair-rig-events.json") as Event[];
const rebooted = fixture("repair-rig-nodeclaim-rebooted.json") as NodeClaim;

const claim: NodeClaim = {
  metadata: { name: "rep-abc12", uid: "u-rep", labels: { "karpenter.sh/nodepool": "rep" } },
  spec: {},
  status: { nodeName: "kwok-rep-abc12-fuzzyotter-3-x1y2z3-1234567890" },
};

describe("node repair (Karpenter v1.15)", () => {
  it("the repair's DisruptionTerminating Events are one disruption of the claim, reason Unhealthy", () => {
    const t = new LifecycleTracker();
    const steps = events.flatMap((e) => t.event(e, () => claim));
    assert.deepEqual(
      steps.map((s) => [s.type, s.reason, s.nodeClaim, s.nodePool]),
      [["Disrupted", "Unhealthy", "rep-abc12", "rep"]],
    );
  });

  it("recorded on the rig: the replaced node's claim is disrupted once, reason Unhealthy", () => {
    const named = (kind: string): string =>
      recorded.find((e) => e.reason === "DisruptionTerminating" && e.involvedObject.kind === kind)
        ?.involvedObject.name ?? "";
    const repaired: NodeClaim = {
      metadata: { name: named("NodeClaim"), uid: "u-repaired", labels: { "karpenter.sh/nodepool": "p" } },
      spec: {},
      status: { nodeName: named("Node") },
    };
    const byName = (kind: "Node" | "NodeClaim", name: string): NodeClaim | undefined =>
      (kind === "NodeClaim" ? repaired.metadata.name : repaired.status?.nodeName) === name
        ? repaired
        : undefined;
    const t = new LifecycleTracker();
    const steps = recorded.flatMap((e) => t.event(e, byName));
    assert.deepEqual(
      steps.map((s) => [s.type, s.reason, s.nodeClaim]),
      [["Disrupted", "Unhealthy", repaired.metadata.name]],
    );
    for (const e of recorded) assert.ok(trimEvent(e), `the agent forwards ${e.reason ?? ""}`);
  });

  it("recorded on the rig: a reboot is an Unhealthy disruption of a node that stays, cleared when it ends", () => {
    // As recorded after the reboot: Rebooting False (RebootSucceeded), DisruptionReason cleared.
    const conditions = rebooted.status?.conditions ?? [];
    assert.equal(conditions.find((c) => c.type === "Rebooting")?.reason, "RebootSucceeded");
    assert.equal(
      conditions.find((c) => c.type === "DisruptionReason"),
      undefined,
    );
    // During it (seen on the rig at 22:48:5x): repair's commitReboot set DisruptionReason Unhealthy.
    const during: NodeClaim = {
      ...rebooted,
      status: {
        ...rebooted.status,
        conditions: [
          ...conditions,
          {
            type: "DisruptionReason",
            status: "True",
            reason: "Unhealthy",
            lastTransitionTime: "2026-12-07T22:48:40Z",
          },
        ],
      },
    };
    const t = new LifecycleTracker();
    const at = { observedAt: "2026-12-07T22:50:00Z" };
    const first = t.nodeClaim(undefined, during, at);
    assert.deepEqual(
      first.filter((s) => s.type === "Disrupted").map((s) => s.reason),
      ["Unhealthy"],
    );
    const after = t.nodeClaim(during, rebooted, at);
    assert.deepEqual(
      after.map((s) => [s.type, s.reason]),
      [["DisruptionCancelled", "Unhealthy"]],
      "the node stays: Karpenter clears the condition when the reboot ends",
    );
  });

  it("/metrics counts it under reason Unhealthy, pre-created at 0 for every pool", async () => {
    assert.ok((DISRUPTION_REASONS as readonly string[]).includes("Unhealthy"));
    const r = new Registry();
    const m = new EventMetrics(r);
    m.pool("c1", "calm");
    const steps = events.flatMap((e) => new LifecycleTracker().event(e, () => claim)).slice(0, 1);
    m.batch({ clusterId: "c1", sessionId: "s", sequence: 1, receivedAt: 0, changes: [], lifecycle: steps });
    const text = await r.render();
    assert.match(text, /wave_disruptions_total\{cluster="c1",nodepool="calm",reason="Unhealthy"\} 0/);
    assert.match(text, /wave_disruptions_total\{cluster="c1",nodepool="rep",reason="Unhealthy"\} 1/);
  });

  it("the agent forwards every repair and reboot Event", () => {
    for (const e of events) assert.ok(trimEvent(e), `${e.reason ?? ""}: ${e.message ?? ""}`);
  });

  it("why repair waits is 'repair-blocked', never a consolidation blocker's wording", () => {
    const held = events.filter((e) => e.reason === "NodeRepairBlocked" || e.reason === "DisruptionBlocked");
    assert.equal(held.length, 7);
    for (const e of held) assert.equal(parseDisruptionMessage(e.message ?? "").reason, "repair-blocked");
  });
});
