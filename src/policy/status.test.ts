import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { stampedConditions, statusChanged, statusPatch } from "./status.ts";

const T0 = Date.UTC(2026, 0, 1, 12);

describe("policy status", () => {
  it("a status patch removes what the new status no longer has", () => {
    assert.deepEqual(statusPatch({ onDemand: 1, spot: 2 }, { onDemand: 3 }), { onDemand: 3, spot: null });
  });

  it("a status differs only by content, not key order", () => {
    assert.equal(statusChanged({ a: 1, b: { c: 2, d: 3 } }, { b: { d: 3, c: 2 }, a: 1 }), false);
    assert.equal(statusChanged(undefined, {}), false);
    assert.equal(statusChanged({ a: 1 }, { a: 2 }), true);
  });

  it("a condition keeps its transition time while its status holds", () => {
    const first = stampedConditions([{ type: "Ready", status: "True", reason: "A", message: "" }], [], T0, 3);
    assert.deepEqual(first, [
      {
        type: "Ready",
        status: "True",
        reason: "A",
        message: "",
        lastTransitionTime: "2026-01-01T12:00:00Z",
        observedGeneration: 3,
      },
    ]);
    const held = stampedConditions(
      [{ type: "Ready", status: "True", reason: "B", message: "x" }],
      first,
      T0 + 60_000,
      undefined,
    );
    assert.deepEqual(held, [
      {
        type: "Ready",
        status: "True",
        reason: "B",
        message: "x",
        lastTransitionTime: "2026-01-01T12:00:00Z",
      },
    ]);
    const flipped = stampedConditions(
      [{ type: "Ready", status: "False", reason: "B", message: "x" }],
      first,
      T0 + 60_000,
      4,
    );
    assert.equal(flipped[0]?.lastTransitionTime, "2026-01-01T12:01:00Z");
  });
});
