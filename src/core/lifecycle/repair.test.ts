// v1.15 node repair (NodeRepair gate) as Karpenter writes it (fixtures written from its source:
// src/karpenter/events/fixtures/v1.15.0/repair-source-events.json): the repair's
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

const events = JSON.parse(
  readFileSync(
    new URL("../../karpenter/events/fixtures/v1.15.0/repair-source-events.json", import.meta.url),
    "utf8",
  ),
) as Event[];

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
