// The one advisor's pieces (issue 43): which value a pool's field is held at, and how the
// cross-check finds a field proposed two ways in the console's answers.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ThrashingReport } from "./thrashing/detect.ts";
import { nodePoolPatchesIn, patchConflicts, poolHolds, withAppliedFix } from "./pool-advice.ts";
import { nodePool } from "./testkit.ts";

const NOW = Date.parse("2026-06-01T10:00:00Z");
const report = (cycles: number, patch?: Record<string, unknown>): ThrashingReport =>
  ({
    nodePool: "batch",
    signals: { cycles },
    advice: patch ? [{ id: "raise-consolidate-after", title: "Raise", detail: "", patch }] : [],
  }) as unknown as ThrashingReport;

describe("pool holds", () => {
  const applied = (after: string) => {
    const pool = nodePool("batch", { disruption: { consolidateAfter: after, budgets: [{ nodes: "0" }] } });
    const p = withAppliedFix({ spec: { disruption: { consolidateAfter: after } } }, "Raise", NOW - 60_000);
    pool.metadata.annotations = (p["metadata"] as { annotations: Record<string, string> }).annotations;
    return pool;
  };

  it("the thrashing advice's current proposal first, then the applied fix, then a churning pool's own values", () => {
    const raise = { spec: { disruption: { consolidateAfter: "20m" } } };
    const h = poolHolds(applied("15m"), report(4, raise), NOW);
    assert.deepEqual(
      h.map((x) => [x.field, x.value]),
      [
        ["consolidateAfter", "20m"],
        ["budgets", [{ nodes: "0" }]],
      ],
    );
    // No churn: only the applied fix holds; one odd cycle is not churn.
    assert.deepEqual(
      poolHolds(applied("15m"), report(1), NOW).map((x) => [x.field, x.value]),
      [["consolidateAfter", "15m"]],
    );
    // A day later, or once the user changed the field, the fix holds nothing.
    assert.deepEqual(poolHolds(applied("15m"), undefined, NOW + 25 * 3_600_000), []);
    const edited = applied("15m");
    edited.spec.disruption = { consolidateAfter: "5m" };
    assert.deepEqual(poolHolds(edited, undefined, NOW), []);
  });
});

describe("patch conflicts (the cross-check's judge)", () => {
  it("reads every kubectl NodePool patch in an answer and names a field set two ways", () => {
    const answer = {
      items: [
        {
          fix: {
            kubectl: `kubectl patch nodepool gpu --type merge -p '{"spec":{"disruption":{"consolidateAfter":"1m"}}}'`,
          },
        },
        {
          fix: {
            kubectl: `kubectl patch nodepool gpu --type merge -p '{"spec":{"disruption":{"consolidateAfter":"5m"}}}'`,
          },
        },
        { fix: { kubectl: `kubectl patch deployment web -n shop --type merge -p '{"spec":{}}'` } },
      ],
    };
    const patches = nodePoolPatchesIn("consolidation", answer);
    assert.equal(patches.length, 2);
    assert.deepEqual(patchConflicts(patches), ['gpu consolidateAfter: consolidation "1m" | "5m"']);
    // The thrashing advice's policy options are alternatives of one advice; across sources they must agree.
    const thrashing = [
      {
        source: "thrashing",
        pool: "b",
        patch: { spec: { disruption: { consolidationPolicy: "Balanced" } } },
      },
      {
        source: "thrashing",
        pool: "b",
        patch: { spec: { disruption: { consolidationPolicy: "WhenEmpty" } } },
      },
    ];
    assert.deepEqual(patchConflicts(thrashing), []);
    const other = {
      source: "consolidation",
      pool: "b",
      patch: { spec: { disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized" } } },
    };
    assert.equal(patchConflicts([...thrashing, other]).length, 1);
  });
});
