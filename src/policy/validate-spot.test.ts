import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { policySet, webInput } from "./spot.test-helper.ts";
import { PolicyIndex } from "./spot.ts";
import { parsePolicySet, PolicyValidationError } from "./validate-spot.ts";

const web = webInput;
const set = policySet;

describe("parsePolicySet", () => {
  it("accepts a valid set and indexes it", () => {
    const parsed = parsePolicySet(
      set([web, { ...web, workload: { ...web.workload, name: "api" }, percentAboveBase: 50 }]),
    );
    const idx = new PolicyIndex(parsed);
    assert.equal(idx.size, 2);
    assert.equal(idx.get({ namespace: "shop", kind: "Deployment", name: "api" })?.percentAboveBase, 50);
    assert.equal(idx.get({ namespace: "shop", kind: "StatefulSet", name: "api" }), undefined);
  });

  it("lists every problem", () => {
    try {
      parsePolicySet({
        apiVersion: "v1",
        kind: "SpotPolicySet",
        policies: [
          {
            workload: { namespace: "Shop", kind: "Job", name: "" },
            threshold: -1,
            strategy: "Maybe",
            percentAboveBase: 101,
            extra: 1,
          },
          web,
          web,
        ],
      });
      assert.fail("expected an error");
    } catch (err) {
      assert.ok(err instanceof PolicyValidationError);
      const all = err.problems.join("\n");
      for (const p of [
        "apiVersion",
        "namespace",
        "kind: must be one of",
        "name",
        "threshold",
        "strategy",
        "percentAboveBase",
        "extra: unknown field",
        "duplicate policy",
      ])
        assert.ok(all.includes(p), `missing problem ${p} in\n${all}`);
    }
    assert.throws(() => parsePolicySet(null), /must be a JSON object/);
    assert.equal(parsePolicySet(set([{ ...web, repair: "dry-run" }])).policies[0]?.repair, "dry-run");
    assert.equal(parsePolicySet(set([{ ...web, repair: false }])).policies[0]?.repair, false);
    assert.throws(
      () => parsePolicySet(set([{ ...web, repair: "maybe" }])),
      /repair: must be true, false or "dry-run"/,
    );
    assert.throws(() => parsePolicySet(set("x" as unknown as unknown[])), /policies: must be an array/);
  });
});
