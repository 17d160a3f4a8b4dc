import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Condition, Event } from "../../objects/kube.ts";
import type { NodeClaim } from "../../objects/karpenter.ts";
import { LifecycleTracker, disruptionFromEvent } from "./derive.ts";

const T0 = "2026-01-01T00:00:00Z";
const T1 = "2026-01-01T00:00:30Z";
const T2 = "2026-01-01T00:01:00Z";
const T3 = "2026-01-01T00:02:00Z";
const T4 = "2026-01-01T01:00:00Z";
const T5 = "2026-01-01T01:05:00Z";

function claim(conds: Condition[], extra: { deletionTimestamp?: string } = {}): NodeClaim {
  return {
    metadata: {
      name: "default-abc12",
      uid: "uid-1",
      creationTimestamp: T0,
      labels: {
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/capacity-type": "spot",
        "node.kubernetes.io/instance-type": "c-4x-amd64-linux",
        "topology.kubernetes.io/zone": "test-zone-a",
      },
      ...extra,
    },
    spec: {},
    status: { nodeName: "node-1", conditions: conds },
  };
}

const launched: Condition = { type: "Launched", status: "True", lastTransitionTime: T1 };
const registered: Condition = { type: "Registered", status: "True", lastTransitionTime: T2 };
const initialized: Condition = { type: "Initialized", status: "True", lastTransitionTime: T3 };
const disrupting: Condition = {
  type: "DisruptionReason",
  status: "True",
  reason: "Underutilized",
  lastTransitionTime: T4,
};

function terminating(msg: string, kind = "Node", name = "node-1"): Event {
  return {
    metadata: { name: "ev1", namespace: "default" },
    involvedObject: { kind, name },
    reason: "DisruptionTerminating",
    message: msg,
    lastTimestamp: T4,
  };
}

describe("disruptionFromEvent", () => {
  it("reads the reason of DisruptionTerminating events about a Node or NodeClaim", () => {
    assert.deepEqual(disruptionFromEvent(terminating("Disrupting Node: Underutilized")), {
      kind: "Node",
      name: "node-1",
      reason: "Underutilized",
      at: T4,
    });
    assert.equal(
      disruptionFromEvent(terminating("Disrupting NodeClaim: Drifted/Replace", "NodeClaim"))?.reason,
      "Drifted",
    );
    assert.equal(disruptionFromEvent(terminating("Disrupting Node: Expired"))?.reason, "Expired");
  });

  it("ignores other reasons, other kinds and unparseable messages", () => {
    assert.equal(
      disruptionFromEvent({ ...terminating("Disrupting Node: Empty"), reason: "DisruptionBlocked" }),
      undefined,
    );
    assert.equal(disruptionFromEvent(terminating("Disrupting Node: Empty", "Pod")), undefined);
    assert.equal(disruptionFromEvent(terminating("something else")), undefined);
  });
});

describe("LifecycleTracker", () => {
  it("derives Launched → Registered → Initialized → Disrupted → Terminated with condition times", () => {
    const tr = new LifecycleTracker();
    const v1 = claim([launched]);
    const v2 = claim([launched, registered]);
    const v3 = claim([launched, registered, initialized]);
    const v4 = claim([launched, registered, initialized, disrupting]);
    const v5 = claim([launched, registered, initialized, disrupting], { deletionTimestamp: T5 });
    const steps = [
      ...tr.nodeClaim(undefined, v1, { observedAt: T1 }),
      ...tr.nodeClaim(v1, v2, { observedAt: T2 }),
      ...tr.nodeClaim(v2, v3, { observedAt: T3 }),
      ...tr.nodeClaim(v3, v4, { observedAt: T4 }),
      ...tr.nodeClaim(v4, v5, { observedAt: T5 }),
      ...tr.nodeClaim(v5, v5, { observedAt: "2026-01-01T01:06:00Z", deleted: true }),
    ];
    assert.deepEqual(
      steps.map((s) => [s.type, s.at, s.reason]),
      [
        ["Created", T0, undefined],
        ["Launched", T1, undefined],
        ["Registered", T2, undefined],
        ["Initialized", T3, undefined],
        ["Disrupted", T4, "Underutilized"],
        ["Terminating", T5, "Underutilized"],
        ["Terminated", "2026-01-01T01:06:00Z", "Underutilized"],
      ],
    );
    const first = steps[1]!;
    assert.equal(first.id, "uid-1/Launched");
    assert.equal(first.nodePool, "default");
    assert.equal(first.capacityType, "spot");
    assert.equal(first.instanceType, "c-4x-amd64-linux");
    assert.equal(first.zone, "test-zone-a");
    assert.equal(first.nodeName, "node-1");
  });

  it("reports each step once when the same state is replayed (snapshot after reconnect)", () => {
    const tr = new LifecycleTracker();
    const v = claim([launched, registered]);
    assert.equal(tr.nodeClaim(undefined, v, { observedAt: T2 }).length, 3);
    // A fresh snapshot delivers the claim again as first sight.
    assert.deepEqual(tr.nodeClaim(undefined, v, { observedAt: T3 }), []);
  });

  it("takes the disruption reason from a DisruptionTerminating event, once", () => {
    const tr = new LifecycleTracker();
    const v = claim([launched, registered, initialized]);
    tr.nodeClaim(undefined, v, { observedAt: T3 });
    const lookup = (kind: "Node" | "NodeClaim", name: string) =>
      (kind === "Node" && name === "node-1") || (kind === "NodeClaim" && name === "default-abc12")
        ? v
        : undefined;
    const fromNode = tr.event(terminating("Disrupting Node: Empty"), lookup);
    assert.deepEqual(
      fromNode.map((e) => [e.type, e.reason, e.at, e.source, e.id]),
      [["Disrupted", "Empty", T4, "event", "uid-1/Disrupted"]],
    );
    // Karpenter emits the same on the NodeClaim, and the condition follows: no duplicates.
    assert.deepEqual(
      tr.event(terminating("Disrupting NodeClaim: Empty", "NodeClaim", "default-abc12"), lookup),
      [],
    );
    const withCond = claim([launched, registered, initialized, { ...disrupting, reason: "Empty" }]);
    assert.deepEqual(
      tr.nodeClaim(v, withCond, { observedAt: T4 }).map((e) => e.type),
      [],
    );
    assert.deepEqual(tr.event(terminating("Disrupting Node: Empty", "Node", "unknown-node"), lookup), []);
  });

  it("allows a new disruption after Karpenter cancels one", () => {
    const tr = new LifecycleTracker();
    const base = claim([launched, registered, initialized]);
    const d1 = claim([launched, registered, initialized, disrupting]);
    tr.nodeClaim(undefined, base, { observedAt: T3 });
    assert.deepEqual(
      tr.nodeClaim(base, d1, { observedAt: T4 }).map((e) => e.type),
      ["Disrupted"],
    );
    assert.deepEqual(
      tr.nodeClaim(d1, base, { observedAt: T4 }).map((e) => e.type),
      ["DisruptionCancelled"],
    );
    const d2 = claim([
      launched,
      registered,
      initialized,
      { ...disrupting, reason: "Drifted", lastTransitionTime: T5 },
    ]);
    assert.deepEqual(
      tr.nodeClaim(base, d2, { observedAt: T5 }).map((e) => [e.type, e.reason]),
      [["Disrupted", "Drifted"]],
    );
  });
});
