// A fix applied through Wave, as the Thrashing page shows it while the score still counts the
// cycles from before it (issue 43).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { NodePool } from "../../objects/karpenter.ts";
import { appliedFix, holds } from "./applied.ts";

const MIN = 60_000;
const NOW = Date.parse("2026-03-02T12:00:00Z");
const patch = { spec: { disruption: { consolidateAfter: "15m" } } };
const pool = (consolidateAfter: string) =>
  ({
    metadata: { name: "batch" },
    spec: { disruption: { consolidateAfter, consolidationPolicy: "WhenEmpty" } },
  }) as unknown as NodePool;
const entry = (at: number, id = 1, object = "NodePool batch: Raise consolidateAfter to 15m") => ({
  id,
  action: "thrashing.apply",
  object,
  at,
  after: JSON.stringify(patch),
});

describe("a fix in effect", () => {
  it("holds a merge patch when every field it sets has that value (null: absent)", () => {
    assert.equal(holds(pool("15m"), patch), true);
    assert.equal(holds(pool("0s"), patch), false);
    assert.equal(holds({ a: 1 }, { b: null }), true);
    assert.equal(holds({ a: { b: [1, 2] } }, { a: { b: [1, 2] } }), true);
  });

  it("is the newest applied within the window that the NodePool still holds; clears a window after it", () => {
    const fix = appliedFix("batch", pool("15m"), [entry(NOW - 5 * MIN)], NOW, 30 * MIN);
    assert.deepEqual(fix, {
      title: "Raise consolidateAfter to 15m",
      at: NOW - 5 * MIN,
      clearsBy: NOW + 25 * MIN,
    });
    assert.equal(
      appliedFix("batch", pool("0s"), [entry(NOW - 5 * MIN)], NOW, 30 * MIN),
      undefined,
      "changed back",
    );
    assert.equal(
      appliedFix("batch", pool("15m"), [entry(NOW - 31 * MIN)], NOW, 30 * MIN),
      undefined,
      "out of the window",
    );
    assert.equal(
      appliedFix("other", pool("15m"), [entry(NOW - 5 * MIN)], NOW, 30 * MIN),
      undefined,
      "another pool",
    );
    const two = [entry(NOW - 5 * MIN, 1), entry(NOW - 5 * MIN, 2, "NodePool batch: the second")];
    assert.equal(appliedFix("batch", pool("15m"), two, NOW, 30 * MIN)?.title, "the second", "the newest");
  });
});
