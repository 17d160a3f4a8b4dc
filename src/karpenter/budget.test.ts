import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { NodePool } from "../objects/karpenter.ts";
import { allowedDisruptions, budgetNodes, budgetState, cronMatches, nextHit, parseCron } from "./budget.ts";

const at = (h: number, m = 0, day = 5): number => Date.UTC(2026, 11, day, h, m);
const pool = (budgets: NonNullable<NodePool["spec"]["disruption"]>["budgets"]): NodePool => ({
  apiVersion: "karpenter.sh/v1",
  kind: "NodePool",
  metadata: { name: "p" },
  spec: { template: { spec: {} }, disruption: { budgets } },
});

describe("NodePool disruption budgets (Karpenter v1 semantics)", () => {
  it("parses cron fields, ranges, steps, lists, names and macros", () => {
    const c = parseCron("*/15 9-17 * * mon-fri");
    assert.ok(cronMatches(c, Date.UTC(2026, 11, 7, 9, 30))); // Monday
    assert.ok(!cronMatches(c, Date.UTC(2026, 11, 6, 9, 30))); // Sunday
    assert.ok(!cronMatches(c, Date.UTC(2026, 11, 7, 9, 31)));
    assert.ok(cronMatches(parseCron("@daily"), at(0)));
    assert.ok(cronMatches(parseCron("0 0 * * 7"), Date.UTC(2026, 11, 6))); // 7 = Sunday
    assert.throws(() => parseCron("0 25 * * *"), /out of 0-23/);
    assert.throws(() => parseCron("0 9 * *"), /5 fields/);
  });

  it("a scheduled budget is active from its hit for its duration, and says when it ends", () => {
    const b = { nodes: "0", schedule: "0 9 * * *", duration: "2h" };
    assert.deepEqual(budgetState(b, at(8, 59)), { active: false });
    assert.deepEqual(budgetState(b, at(9)), { active: true, until: at(11) });
    assert.deepEqual(budgetState(b, at(10, 59)), { active: true, until: at(11) });
    assert.deepEqual(budgetState(b, at(11)), { active: false });
    assert.equal(nextHit("0 9 * * *", at(11)), at(9, 0, 6));
    assert.deepEqual(budgetState({ nodes: "0", schedule: "nope", duration: "1h" }, at(9)), {
      active: true,
      invalid: true,
    });
  });

  it("allowed disruptions: minimum of active budgets for the reason, percentages rounded up", () => {
    assert.equal(budgetNodes("10%", 3), 1);
    assert.equal(budgetNodes("50%", 5), 3);
    const p = pool([
      { nodes: "10%" },
      { nodes: "0", schedule: "0 9 * * *", duration: "2h", reasons: ["Empty"] },
    ]);
    assert.equal(allowedDisruptions(p, 4, "Empty", at(8)).allowed, 1);
    const blocked = allowedDisruptions(p, 4, "Empty", at(9, 30));
    assert.equal(blocked.allowed, 0);
    assert.equal(blocked.blocking[0]?.until, at(11));
    assert.equal(allowedDisruptions(p, 4, "Underutilized", at(9, 30)).allowed, 1);
    assert.equal(allowedDisruptions(pool(undefined), 30, "Drifted", at(9)).allowed, 3, "default 10%");
  });
});
