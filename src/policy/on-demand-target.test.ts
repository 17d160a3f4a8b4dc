import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { onDemandTarget } from "./on-demand-target.ts";
import { spotPolicy } from "./spot.test-helper.ts";

const policy = spotPolicy;

describe("onDemandTarget", () => {
  it("follows the ASG base + percentage semantics", () => {
    assert.equal(onDemandTarget(policy(2, 50), 10), 6);
    assert.equal(onDemandTarget(policy(2, 50), 2), 2);
    assert.equal(onDemandTarget(policy(2, 50), 1), 1);
    assert.equal(onDemandTarget(policy(2, 50), 3), 3, "ceil favours on-demand");
    assert.equal(onDemandTarget(policy(3), 200), 3);
    assert.equal(onDemandTarget(policy(0, 100), 7), 7);
    assert.equal(onDemandTarget(policy(0), 7), 0);
  });
});
