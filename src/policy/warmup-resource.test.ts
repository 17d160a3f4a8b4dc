import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { WarmupPolicyResource, WarmupPolicySpec } from "../objects/policy-crds.ts";
import { errorsOf } from "./resource.test-helper.ts";
import { DEFAULT_POLICY } from "./warmup.ts";
import { warmupPolicyFromResource } from "./warmup-resource.ts";
import { warmupPoliciesFromResources } from "./in-force.ts";

const cr = (
  name: string,
  spec: Partial<WarmupPolicySpec>,
  created = "2026-01-01T00:00:00Z",
): WarmupPolicyResource => ({
  apiVersion: "wave.sh/v1alpha1",
  kind: "WarmupPolicy",
  metadata: { name, creationTimestamp: created, generation: 1 },
  spec: { nodePool: "general", enabled: true, ...spec },
});

describe("warmupPolicyFromResource", () => {
  it("fills what the CR leaves out from the defaults and reads the cost cap as a number", () => {
    const r = warmupPolicyFromResource(cr("general", { maxWarmNodes: 3, maxCostPerHour: "0.50" }));
    assert.deepEqual(r, {
      ok: true,
      pool: "general",
      policy: { ...DEFAULT_POLICY, enabled: true, maxWarmNodes: 3, maxCostPerHour: 0.5 },
    });
  });

  it("names every bad field with the ranges of the API", () => {
    const r = warmupPolicyFromResource(
      cr("general", { ttlSeconds: 10, maxWarmNodes: 101, maxCostPerHour: "-1", prePullDeadlineSeconds: 5 }),
    );
    assert.deepEqual(errorsOf(r), [
      'spec.maxCostPerHour: expected a decimal string in USD, e.g. "0.50"',
      "spec.maxWarmNodes: expected an integer from 0 to 100",
      "spec.ttlSeconds: expected an integer from 30 to 86400",
      "spec.prePullDeadlineSeconds: expected an integer from 10 to 3600",
    ]);
  });

  it("needs a pool and enabled", () => {
    const r = warmupPolicyFromResource({ ...cr("x", {}), spec: {} as WarmupPolicySpec });
    assert.deepEqual(errorsOf(r), [
      "spec.nodePool: must name a NodePool",
      "spec.enabled: expected true or false",
    ]);
  });
});

describe("warmupPoliciesFromResources", () => {
  it("one policy per pool: the oldest CR wins and the other is reported", () => {
    const { policies, problems } = warmupPoliciesFromResources([
      cr("late", { maxWarmNodes: 5 }, "2026-01-02T00:00:00Z"),
      cr("early", { maxWarmNodes: 2 }),
      cr("gpu", { nodePool: "gpu", enabled: false }),
    ]);
    assert.equal(policies.get("general")?.maxWarmNodes, 2);
    assert.equal(policies.get("gpu")?.enabled, false);
    assert.deepEqual(problems, [
      {
        name: "late",
        errors: [
          "NodePool general already has WarmupPolicy early, created first, which decides: this one is not in force",
        ],
      },
    ]);
  });

  it("an invalid CR keeps its pool's previous policy (last known good)", () => {
    const before = warmupPoliciesFromResources([cr("general", { maxWarmNodes: 2 })]).policies;
    const after = warmupPoliciesFromResources([cr("general", { maxWarmNodes: 1000 })], before);
    assert.equal(after.policies.get("general")?.maxWarmNodes, 2);
    assert.equal(after.problems.length, 1);
    // Without a previous policy, the pool has none.
    assert.equal(warmupPoliciesFromResources([cr("general", { maxWarmNodes: 1000 })]).policies.size, 0);
  });
});
