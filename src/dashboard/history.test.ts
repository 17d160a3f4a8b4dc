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

  it("understands core's finer transitions: Created, Terminating, DisruptionCancelled", () => {
    const lives = livesOf([
      { nodeClaim: "a", nodePool: "p", phase: "Created", at: 0 },
      { nodeClaim: "a", nodePool: "p", phase: "Disrupted", at: 10, reason: "Underutilized" },
      { nodeClaim: "a", nodePool: "p", phase: "DisruptionCancelled", at: 12 },
      { nodeClaim: "a", nodePool: "p", phase: "Disrupted", at: 30, reason: "Empty" },
      { nodeClaim: "a", nodePool: "p", phase: "Terminating", at: 31 },
      { nodeClaim: "a", nodePool: "p", phase: "Terminated", at: 40 },
      { nodeClaim: "b", nodePool: "p", phase: "Created", at: 5 },
      { nodeClaim: "b", nodePool: "p", phase: "Terminating", at: 9, reason: "expired" },
      { nodeClaim: "c", nodePool: "p", phase: "Created", at: 5 },
      { nodeClaim: "c", nodePool: "p", phase: "LaunchFailed", at: 6 },
    ]);
    const [a, b, c] = lives;
    assert.ok(a && b && c);
    assert.equal(a.launchedAt, 0, "creation stands in for launch");
    assert.equal(a.disruptedAt, 30, "the cancelled disruption is forgotten");
    assert.equal(a.reason, "Empty");
    assert.equal(a.lifetimeMs, 40);
    assert.equal(goneAt(a), 30);
    assert.equal(goneAt(b), 9);
    assert.equal(b.reason, "Expired");
    assert.equal(c.launchedAt, undefined);
  });
});
