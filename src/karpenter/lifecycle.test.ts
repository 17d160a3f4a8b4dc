import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fixtures } from "../../test/fixtures/karpenter/load.ts";
import { diffNodeClaim, disruptionReasonOf, nodeClaimPhase, nodeClaimState } from "./lifecycle.ts";
import type { NodeClaimPhase, NodeClaimState } from "./lifecycle.ts";
import type { NodeClaim } from "../objects/karpenter.ts";

const observedAt = "2026-03-02T12:00:00Z";

/** A claim's state in `phase` since `since`: neither drifted nor consolidatable unless `more` says so. */
const state = (phase: NodeClaimPhase, since: string, more: Partial<NodeClaimState> = {}): NodeClaimState => ({
  phase,
  since,
  drifted: false,
  consolidatable: false,
  ...more,
});

describe("nodeClaimState on fixtures", () => {
  it("pending: every condition still AwaitingReconciliation", () => {
    assert.deepEqual(nodeClaimState(fixtures.nodeClaim("pending")), state("Pending", "2026-03-02T10:05:00Z"));
  });
  it("launch stalled on InsufficientCapacity is Pending with the reason", () => {
    const s = nodeClaimState(fixtures.nodeClaim("launch-failed"));
    assert.equal(s.phase, "Pending");
    assert.equal(s.reason, "InsufficientCapacity");
  });
  it("launched, registered, initialized, with the condition's transition time", () => {
    assert.deepEqual(
      nodeClaimState(fixtures.nodeClaim("launched")),
      state("Launched", "2026-03-02T10:05:01Z"),
    );
    assert.equal(nodeClaimPhase(fixtures.nodeClaim("registered")), "Registered");
    assert.equal(nodeClaimState(fixtures.nodeClaim("registered")).since, "2026-03-02T10:05:31Z");
    assert.equal(nodeClaimPhase(fixtures.nodeClaim("initialized")), "Initialized");
    assert.equal(nodeClaimState(fixtures.nodeClaim("initialized")).since, "2026-03-02T10:05:33Z");
  });
  it("disrupting from the DisruptionReason condition", () => {
    assert.deepEqual(
      nodeClaimState(fixtures.nodeClaim("disrupting")),
      state("Disrupting", "2026-03-02T11:41:05Z", { reason: "Underutilized", consolidatable: true }),
    );
  });
  it("drifted but not picked is still Initialized, marked drifted", () => {
    const s = nodeClaimState(fixtures.nodeClaim("drifted"));
    assert.equal(s.phase, "Initialized");
    assert.equal(s.drifted, true);
  });
  it("terminating from deletionTimestamp, keeping the disruption reason", () => {
    assert.deepEqual(
      nodeClaimState(fixtures.nodeClaim("terminating")),
      state("Terminating", "2026-03-02T11:41:20Z", { reason: "Underutilized", consolidatable: true }),
    );
  });
  it("a node tainted karpenter.sh/disrupted makes its claim Disrupting without the condition", () => {
    const nc = fixtures.nodeClaim("drifted");
    const node = fixtures.node("disrupted");
    assert.equal(nodeClaimPhase(nc), "Initialized");
    const s = nodeClaimState(nc, node);
    assert.equal(s.phase, "Disrupting");
    assert.equal(s.reason, "Drifted");
    assert.equal(nodeClaimPhase(nc, fixtures.node("initialized")), "Initialized");
    // The condition, when present, wins over the taint.
    assert.equal(nodeClaimState(fixtures.nodeClaim("disrupting"), node).reason, "Underutilized");
  });
  it("deletion at expireAfter is inferred as Expired", () => {
    const nc = fixtures.nodeClaim("initialized");
    nc.metadata.deletionTimestamp = "2026-04-01T10:05:00Z"; // creation + 720h
    assert.equal(disruptionReasonOf(nc), "Expired");
    nc.metadata.deletionTimestamp = "2026-03-20T10:05:00Z";
    assert.equal(disruptionReasonOf(nc), undefined);
    nc.spec.expireAfter = "Never";
    nc.metadata.deletionTimestamp = "2027-01-01T00:00:00Z";
    assert.equal(disruptionReasonOf(nc), undefined);
  });
});

describe("diffNodeClaim", () => {
  const stages = ["pending", "launched", "registered", "initialized", "disrupting", "terminating"] as const;

  it("walks the whole lifecycle one event per stage, stamped by Karpenter's transition times", () => {
    const seen: string[] = [];
    let prev: NodeClaim | undefined;
    for (const stage of stages) {
      const next = fixtures.nodeClaim(stage);
      for (const t of diffNodeClaim(prev, next, { observedAt }))
        seen.push(`${t.type}@${t.at}:${t.reason ?? ""}`);
      prev = next;
    }
    assert.ok(prev);
    for (const t of diffNodeClaim(prev, prev, { observedAt, deleted: true })) {
      seen.push(`${t.type}@${t.at}:${t.reason ?? ""}`);
    }
    assert.deepEqual(seen, [
      "Created@2026-03-02T10:05:00Z:",
      "Launched@2026-03-02T10:05:01Z:",
      "Registered@2026-03-02T10:05:31Z:",
      "Initialized@2026-03-02T10:05:33Z:",
      "Disrupted@2026-03-02T11:41:05Z:Underutilized",
      "Terminating@2026-03-02T11:41:20Z:Underutilized",
      `Terminated@${observedAt}:Underutilized`,
    ]);
  });

  it("carries the claim's name and uid", () => {
    const [t] = diffNodeClaim(fixtures.nodeClaim("launched"), fixtures.nodeClaim("registered"), {
      observedAt,
    });
    assert.deepEqual(t, {
      type: "Registered",
      at: "2026-03-02T10:05:31Z",
      nodeClaim: "default-8kzvq",
      uid: "0d6c1d7e-5f43-4d0b-9b61-1f2f3b7a9c01",
    });
  });

  it("first sight of an advanced claim reports every stage reached", () => {
    const types = diffNodeClaim(undefined, fixtures.nodeClaim("terminating"), { observedAt }).map(
      (t) => t.type,
    );
    assert.deepEqual(types, ["Created", "Launched", "Registered", "Initialized", "Disrupted", "Terminating"]);
  });

  it("an unchanged claim (resync) yields nothing", () => {
    assert.deepEqual(
      diffNodeClaim(fixtures.nodeClaim("disrupting"), fixtures.nodeClaim("disrupting"), { observedAt }),
      [],
    );
  });

  it("skipped intermediate versions still produce each stage once", () => {
    const types = diffNodeClaim(fixtures.nodeClaim("pending"), fixtures.nodeClaim("initialized"), {
      observedAt,
    }).map((t) => t.type);
    assert.deepEqual(types, ["Launched", "Registered", "Initialized"]);
  });

  it("drift is reported with Karpenter's drift reason", () => {
    const before = fixtures.nodeClaim("drifted");
    before.status!.conditions = before.status!.conditions!.filter((c) => c.type !== "Drifted");
    const out = diffNodeClaim(before, fixtures.nodeClaim("drifted"), { observedAt });
    assert.deepEqual(
      out.map((t) => [t.type, t.at, t.reason]),
      [["Drifted", "2026-03-02T12:00:04Z", "NodePoolDrifted"]],
    );
  });

  it("a cleared DisruptionReason without deletion is a cancelled disruption", () => {
    const out = diffNodeClaim(fixtures.nodeClaim("disrupting"), fixtures.nodeClaim("initialized"), {
      observedAt,
    });
    assert.deepEqual(
      out.map((t) => [t.type, t.at, t.reason]),
      [["DisruptionCancelled", observedAt, "Underutilized"]],
    );
  });

  it("a launch failure is reported once per reason", () => {
    const failed = fixtures.nodeClaim("launch-failed");
    const first = diffNodeClaim(undefined, failed, { observedAt }).map((t) => [t.type, t.reason]);
    assert.deepEqual(first, [
      ["Created", undefined],
      ["LaunchFailed", "InsufficientCapacity"],
    ]);
    assert.deepEqual(diffNodeClaim(failed, failed, { observedAt }), []);
  });

  it("a deleted claim never seen terminating still reports Terminating and Terminated", () => {
    const types = diffNodeClaim(fixtures.nodeClaim("initialized"), fixtures.nodeClaim("terminating"), {
      observedAt,
      deleted: true,
    }).map((t) => t.type);
    assert.deepEqual(types, ["Disrupted", "Terminating", "Terminated"]);
  });

  it("expiration (no DisruptionReason condition) is reported as Disrupted(Expired)", () => {
    const prev = fixtures.nodeClaim("initialized");
    const next = fixtures.nodeClaim("initialized");
    next.metadata.deletionTimestamp = "2026-04-01T10:05:02Z";
    assert.deepEqual(
      diffNodeClaim(prev, next, { observedAt }).map((t) => [t.type, t.at, t.reason]),
      [
        ["Disrupted", "2026-04-01T10:05:02Z", "Expired"],
        ["Terminating", "2026-04-01T10:05:02Z", "Expired"],
      ],
    );
    // A user's early delete is not a disruption.
    next.metadata.deletionTimestamp = "2026-03-03T00:00:00Z";
    assert.deepEqual(
      diffNodeClaim(prev, next, { observedAt }).map((t) => [t.type, t.reason]),
      [["Terminating", undefined]],
    );
  });

  it("a condition that flapped between observations is reported again", () => {
    const prev = fixtures.nodeClaim("initialized");
    const next = fixtures.nodeClaim("initialized");
    const init = next.status!.conditions!.find((c) => c.type === "Initialized")!;
    init.lastTransitionTime = "2026-03-02T10:30:00Z";
    assert.deepEqual(
      diffNodeClaim(prev, next, { observedAt }).map((t) => [t.type, t.at]),
      [["Initialized", "2026-03-02T10:30:00Z"]],
    );
  });
});
