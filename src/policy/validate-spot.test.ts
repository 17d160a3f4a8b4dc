import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { policySet, webInput } from "./spot.test-helper.ts";
import { PolicyIndex } from "./spot.ts";
import {
  parsePolicySet,
  parseSpotPolicies,
  parseSpotPolicy,
  PolicyValidationError,
} from "./validate-spot.ts";

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

describe("parseSpotPolicy / parseSpotPolicies", () => {
  it("validates one policy, or a list, with the set's own problems", () => {
    assert.deepEqual(parseSpotPolicy({ ...web, percentAboveBase: 50 }), { ...web, percentAboveBase: 50 });
    assert.deepEqual(parseSpotPolicies([web]), [web]);
    assert.throws(
      () => parseSpotPolicy({ ...web, threshold: -1 }),
      /policies\[0\]\.threshold: must be an integer ≥ 0/,
    );
    assert.throws(
      () => parseSpotPolicies([web, web]),
      /policies\[1\]: duplicate policy for shop\/Deployment\/web/,
    );
    assert.throws(() => parseSpotPolicies("x"), /policies: must be an array/);
  });
});
