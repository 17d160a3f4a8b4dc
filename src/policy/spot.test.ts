// One way to write a workload wherever people read it (issue 43): the CLI's form.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { workloadKey, workloadName, workloadNameOfKey } from "./spot.ts";

describe("workloadName", () => {
  it("is the form wave spot set takes, kind lower-cased; a stored key reads the same", () => {
    const ref = { kind: "Deployment" as const, namespace: "shop", name: "web" };
    assert.equal(workloadName(ref), "deployment/shop/web");
    assert.equal(workloadNameOfKey(workloadKey(ref)), "deployment/shop/web");
    assert.equal(workloadNameOfKey("not-a-key"), "not-a-key");
  });
});
