import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { canonicalReason, goneAt, livesOf } from "./history.ts";

describe("history helpers", () => {
  it("canonicalizes Karpenter's two spellings of a reason", () => {
    assert.equal(canonicalReason("underutilized"), "Underutilized");
    assert.equal(canonicalReason("EMPTY"), "Empty");
    assert.equal(canonicalReason("SpotInterrupted"), "SpotInterrupted");
    assert.equal(canonicalReason(undefined), "Unknown");
  });

  it("builds lives from unordered records; removal time is the disruption decision", () => {
    const [life] = livesOf([
      { nodeClaim: "a", nodePool: "p", phase: "Terminated", at: 50 },
      { nodeClaim: "a", nodePool: "p", phase: "Launched", at: 10, instanceType: "m5.large" },
      { nodeClaim: "a", nodePool: "p", phase: "Disrupted", at: 40, reason: "empty" },
    ]);
    assert.ok(life);
    assert.equal(life.lifetimeMs, 40);
    assert.equal(life.reason, "Empty");
    assert.equal(life.instanceType, "m5.large");
    assert.equal(goneAt(life), 40);
    assert.equal(goneAt({ ...life, disruptedAt: undefined }), 50);
  });
});
