import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { DisruptionRecord, LifecycleRecord } from "../history.ts";
import { disruptionsByReason, lifecycleTimeline } from "./disruptions.ts";

const T0 = Date.UTC(2026, 0, 1, 12);
const MIN = 60_000;

describe("disruptionsByReason", () => {
  const records: DisruptionRecord[] = [
    { nodeClaim: "a", nodePool: "web", reason: "Underutilized", at: T0 + 1 * MIN },
    { nodeClaim: "a", nodePool: "web", reason: "underutilized", at: T0 + 1 * MIN }, // same, via metric spelling
    { nodeClaim: "b", nodePool: "web", reason: "Empty", at: T0 + 5 * MIN },
    { nodeClaim: "c", nodePool: "batch", reason: "Drifted", at: T0 + 10 * MIN },
    { nodeClaim: "d", nodePool: "batch", reason: "Underutilized", at: T0 + 30 * MIN }, // at window end: out
    { nodeClaim: "e", nodePool: "batch", reason: "Underutilized", at: T0 - 1 }, // before: out
  ];

  it("counts per reason and per pool within [from, to), once per NodeClaim and reason", () => {
    const got = disruptionsByReason(records, { from: T0, to: T0 + 30 * MIN });
    assert.equal(got.total, 3);
    assert.deepEqual(got.byReason, { Underutilized: 1, Empty: 1, Drifted: 1 });
    assert.deepEqual(got.byPool, { web: { Underutilized: 1, Empty: 1 }, batch: { Drifted: 1 } });
  });

  it("is empty for an empty window", () => {
    assert.equal(disruptionsByReason(records, { from: T0, to: T0 }).total, 0);
  });
});

describe("lifecycleTimeline", () => {
  const ev = (
    nodeClaim: string,
    phase: LifecycleRecord["phase"],
    min: number,
    reason?: string,
  ): LifecycleRecord => ({
    nodeClaim,
    nodePool: nodeClaim.startsWith("b") ? "batch" : "web",
    instanceType: "m5.large",
    capacityType: "spot",
    zone: "us-east-1a",
    phase,
    at: T0 + min * MIN,
    ...(reason ? { reason } : {}),
  });
  const events = [
    ev("w1", "Terminated", 20, "Underutilized"),
    ev("w1", "Launched", 0),
    ev("w1", "Registered", 1),
    ev("w1", "Initialized", 2),
    ev("w1", "Disrupted", 15, "underutilized"),
    ev("w1", "Launched", 99), // duplicate phase: first wins
    ev("w2", "Launched", 16),
    ev("w2", "Registered", 17),
    ev("w0", "Launched", -120),
    ev("w0", "Terminated", -60),
    ev("b1", "Launched", 5),
  ];

  it("builds one lane per NodeClaim overlapping the window, with phases and lifetime", () => {
    const lanes = lifecycleTimeline(events, { from: T0, to: T0 + 30 * MIN });
    assert.deepEqual(
      lanes.map((l) => l.nodeClaim),
      ["w1", "b1", "w2"],
    );
    const w1 = lanes[0]!;
    assert.equal(w1.lifetimeMs, 20 * MIN);
    assert.equal(w1.reason, "Underutilized");
    assert.equal(w1.disruptedAt, T0 + 15 * MIN);
    assert.deepEqual(
      w1.phases.map((p) => p.phase),
      ["Launched", "Registered", "Initialized", "Disrupted", "Terminated"],
    );
    assert.equal(w1.instanceType, "m5.large");
    assert.equal(lanes[2]!.terminatedAt, undefined, "still alive");
  });

  it("filters by pool and keeps the most recent lanes under a limit", () => {
    assert.deepEqual(
      lifecycleTimeline(events, { from: T0, to: T0 + 30 * MIN }, { nodePool: "batch" }).map(
        (l) => l.nodeClaim,
      ),
      ["b1"],
    );
    assert.deepEqual(
      lifecycleTimeline(events, { from: T0, to: T0 + 30 * MIN }, { limit: 1 }).map((l) => l.nodeClaim),
      ["w2"],
    );
  });
});
