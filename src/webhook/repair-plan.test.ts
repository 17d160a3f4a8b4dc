// The repair's pacing, pure: a PodDisruptionBudget that refuses every eviction backs a workload off
// instead of being retried (and warned about in an Event) every cooldown for as long as it stands.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_REPAIR_TIMING, cooldownOf } from "./repair-plan.ts";

describe("repair plan: cooldownOf", () => {
  it("is the cooldown until an eviction is refused, then doubles per refusal up to the cap", () => {
    const t = DEFAULT_REPAIR_TIMING;
    assert.equal(cooldownOf({}, t), 5_000);
    assert.equal(cooldownOf({ refused: 0 }, t), 5_000);
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 1000].map((refused) => cooldownOf({ refused }, t) / 1000),
      [10, 20, 40, 80, 160, 300, 300, 300],
    );
  });
});
