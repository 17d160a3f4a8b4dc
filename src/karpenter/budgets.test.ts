// The asserts narrow as they go (assert.equal asserts its actual); optional chains keep each line readable alone.
/* eslint-disable @typescript-eslint/no-unnecessary-condition */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { bindingBudget, budgetsNow, cronFires, parseCron, selectorMatches } from "./budgets.ts";
import type { NodePool } from "../objects/karpenter.ts";

const pool = (budgets: NonNullable<NodePool["spec"]["disruption"]>["budgets"]): NodePool => ({
  metadata: { name: "p" },
  spec: { template: { spec: {} }, disruption: { budgets } },
});
const at = (s: string): number => Date.parse(s);

describe("cron", () => {
  it("fires as robfig/cron does (UTC, names, ranges, steps, day-of-month OR day-of-week)", () => {
    const c = parseCron("*/15 9-17 * * mon-fri");
    assert.equal(cronFires(c, at("2026-06-01T09:45:00Z")), true); // a Monday
    assert.equal(cronFires(c, at("2026-06-01T09:40:00Z")), false);
    assert.equal(cronFires(c, at("2026-06-06T10:00:00Z")), false); // Saturday
    const both = parseCron("0 0 1 * 0"); // the 1st OR a Sunday
    assert.equal(cronFires(both, at("2026-06-07T00:00:00Z")), true);
    assert.equal(cronFires(parseCron("@daily"), at("2026-06-07T00:00:00Z")), true);
    assert.throws(() => parseCron("* * *"), /5 fields/);
    assert.throws(() => parseCron("61 * * * *"), /out of/);
  });
});

describe("disruption budgets", () => {
  it("the smallest active budget binds; percentages round up; no budgets: 10%", () => {
    const now = at("2026-06-01T10:00:00Z");
    assert.equal(bindingBudget(budgetsNow(pool(undefined), "Underutilized", 5, now))?.allowed, 1);
    assert.equal(
      bindingBudget(budgetsNow(pool([{ nodes: "50%" }, { nodes: "3" }]), "Empty", 5, now))?.allowed,
      3,
    );
    // A budget for Drifted only does not limit consolidation.
    assert.equal(
      bindingBudget(budgetsNow(pool([{ nodes: "0", reasons: ["Drifted"] }]), "Empty", 5, now)),
      undefined,
    );
  });

  it("a scheduled budget is active for its duration after each hit, and says when it ends or opens", () => {
    const p = pool([{ nodes: "0", schedule: "0 22 * * *", duration: "10h" }]);
    const inside = budgetsNow(p, "Underutilized", 4, at("2026-06-02T03:00:00Z"))[0];
    assert.equal(inside?.active, true);
    assert.equal(inside?.activeUntil, at("2026-06-02T08:00:00Z"));
    const outside = budgetsNow(p, "Underutilized", 4, at("2026-06-02T12:00:00Z"))[0];
    assert.equal(outside?.active, false);
    assert.equal(outside?.nextStart, at("2026-06-02T22:00:00Z"));
    const bad = budgetsNow(pool([{ nodes: "0", schedule: "nonsense" }]), "Empty", 1, 0)[0];
    assert.match(bad?.invalid ?? "", /cron/);
  });

  it("selectors: null matches nothing, {} everything, expressions as policy/v1", () => {
    assert.equal(selectorMatches(null, { a: "1" }), false);
    assert.equal(selectorMatches({}, { a: "1" }), true);
    assert.equal(
      selectorMatches({ matchExpressions: [{ key: "a", operator: "In", values: ["1"] }] }, { a: "1" }),
      true,
    );
    assert.equal(
      selectorMatches({ matchExpressions: [{ key: "a", operator: "DoesNotExist" }] }, { a: "1" }),
      false,
    );
  });
});
