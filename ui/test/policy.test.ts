// The policy editors' checks and preview are src/policy's: the ranges the API validates with and
// the on-demand arithmetic the webhook places pods by (no copy in the UI).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { SpotWorkloadDto } from "../../src/dashboard/dto.ts";
import { onDemandTarget } from "../../src/policy/on-demand-target.ts";
import { parsePolicy } from "../../src/policy/validate-warmup.ts";
import { DEFAULT_POLICY, WARMUP_INTEGER_RANGES } from "../../src/policy/warmup.ts";
import { spotPreview, spotProblems, warmupProblems } from "../src/pages/policy.ts";

describe("policy editor checks (src/policy)", () => {
  it("flags a warmup field exactly where the API refuses it", () => {
    for (const [field, [lo, hi]] of Object.entries(WARMUP_INTEGER_RANGES))
      for (const v of [lo - 1, lo, hi, hi + 1, lo + 0.5]) {
        const draft = { ...DEFAULT_POLICY, [field]: v };
        assert.equal(field in warmupProblems(draft), !parsePolicy(draft).ok, `${field} = ${v}`);
      }
  });

  it("flags percentAboveBase outside 0–100 and a negative threshold", () => {
    assert.deepEqual(spotProblems({ threshold: 2, percentAboveBase: 100 }), {});
    assert.deepEqual(spotProblems({ threshold: -1, percentAboveBase: 101 }), {
      threshold: "a whole number ≥ 0",
      percentAboveBase: "a whole number from 0 to 100",
    });
  });

  it("previews the webhook's on-demand count", () => {
    const w = { pods: 10, costPerHour: 1, podCostPerHour: { onDemand: 0.2, spot: 0.06 } } as SpotWorkloadDto;
    for (const threshold of [0, 2, 12])
      for (const percentAboveBase of [0, 33, 50, 100]) {
        const od = onDemandTarget({ threshold, percentAboveBase }, 10);
        assert.ok(
          spotPreview(w, { threshold, strategy: "Prefer", percentAboveBase }).startsWith(
            `${od} of 10 pods on-demand`,
          ),
        );
      }
  });
});
