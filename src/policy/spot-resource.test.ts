import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { SpotPolicyResource, SpotPolicySpec } from "../objects/policy-crds.ts";
import { repairModeOf, spotPolicyFromResource } from "./spot-resource.ts";
import { errorsOf } from "./resource.test-helper.ts";
import { parsePolicySet } from "./validate-spot.ts";

const cr = (
  spec: Partial<SpotPolicySpec> & Record<string, unknown>,
  namespace = "shop",
): SpotPolicyResource => ({
  apiVersion: "wave.sh/v1alpha1",
  kind: "SpotPolicy",
  metadata: { name: "web", namespace, generation: 1 },
  spec: { targetRef: { kind: "Deployment", name: "web" }, threshold: 2, strategy: "Prefer", ...spec },
});

describe("spotPolicyFromResource", () => {
  it("targets the workload in the CR's namespace and maps every field", () => {
    const r = spotPolicyFromResource(
      cr({ percentAboveBase: 50, repair: "DryRun", fallbackWindowSeconds: 300 }),
    );
    assert.deepEqual(r, {
      ok: true,
      policy: {
        workload: { namespace: "shop", kind: "Deployment", name: "web" },
        threshold: 2,
        strategy: "Prefer",
        percentAboveBase: 50,
        repair: "dry-run",
        fallbackWindowSeconds: 300,
      },
    });
  });

  it("maps repair On and Off, and leaves absent optional fields absent", () => {
    const on = spotPolicyFromResource(cr({ repair: "On" }));
    const off = spotPolicyFromResource(cr({ repair: "Off", strategy: "Require" }));
    const plain = spotPolicyFromResource(cr({}));
    assert.ok(on.ok && off.ok && plain.ok);
    assert.equal(on.policy.repair, true);
    assert.equal(off.policy.repair, false);
    assert.deepEqual(Object.keys(plain.policy).sort(), ["strategy", "threshold", "workload"]);
    assert.equal(repairModeOf(on.policy.repair), "On");
    assert.equal(repairModeOf(off.policy.repair), "Off");
    assert.equal(repairModeOf(undefined), "On");
    assert.equal(repairModeOf("dry-run"), "DryRun");
  });

  it("names every bad field in the CR's own terms", () => {
    const r = spotPolicyFromResource(
      cr({
        threshold: -1,
        percentAboveBase: 101,
        strategy: "Maybe" as never,
        repair: "Sometimes" as never,
        targetRef: { kind: "CronJob" as never, name: "Web!" },
      }),
    );
    assert.deepEqual(errorsOf(r), [
      "spec.repair: must be On, Off or DryRun",
      "spec.targetRef.kind: must be one of Deployment, StatefulSet, ReplicaSet",
      "spec.targetRef.name: must be an object name",
      "spec.threshold: must be an integer ≥ 0",
      'spec.strategy: must be "Prefer" or "Require"',
      "spec.percentAboveBase: must be an integer 0–100",
    ]);
  });

  it("refuses a fallback window on Require and one out of range", () => {
    const require = spotPolicyFromResource(cr({ strategy: "Require", fallbackWindowSeconds: 300 }));
    const short = spotPolicyFromResource(cr({ fallbackWindowSeconds: 5 }));
    assert.deepEqual(errorsOf(require), [
      "spec.fallbackWindowSeconds: only a Prefer policy has a fallback window",
    ]);
    assert.deepEqual(errorsOf(short), ["spec.fallbackWindowSeconds: must be an integer 60–86400"]);
  });

  it("refuses a CR without a spec or a namespace instead of throwing", () => {
    const bare = { ...cr({}), spec: undefined } as unknown as SpotPolicyResource;
    const r = spotPolicyFromResource(bare);
    assert.equal(r.ok, false);
    const noNs = spotPolicyFromResource({ ...cr({}), metadata: { name: "web" } });
    assert.deepEqual(errorsOf(noNs), ["metadata.namespace: must be a namespace name"]);
  });

  it("produces policies core's set validator accepts", () => {
    const r = spotPolicyFromResource(cr({ fallbackWindowSeconds: 600, repair: "Off" }));
    assert.ok(r.ok);
    const set = parsePolicySet({
      apiVersion: "wave.sh/v1alpha1",
      kind: "SpotPolicySet",
      policies: [r.policy],
    });
    assert.deepEqual(set.policies[0], r.policy);
  });
});
