import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Pod, PodDisruptionBudget } from "../objects/kube.ts";
import { pdbStatus } from "./pdb.ts";

const pod = (name: string, ready: boolean, rs = "ledger-1"): Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name,
    namespace: "payments",
    ownerReferences: [
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: rs, uid: `uid-${rs}`, controller: true },
    ],
  },
  spec: { containers: [] },
  status: { phase: "Running", conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
});
const pdb = (spec: Partial<PodDisruptionBudget["spec"]>): PodDisruptionBudget => ({
  apiVersion: "policy/v1",
  kind: "PodDisruptionBudget",
  metadata: { name: "ledger", namespace: "payments" },
  spec: { selector: { matchLabels: { app: "ledger" } }, ...spec },
});

describe("PodDisruptionBudget status (the disruption controller's count)", () => {
  it("minAvailable equal to the healthy pods allows 0; one more pod allows 1", () => {
    const two = [pod("a", true), pod("b", true)];
    const got = pdbStatus(pdb({ minAvailable: 2 }), two, () => 2);
    assert.deepEqual(got, { expectedPods: 2, desiredHealthy: 2, currentHealthy: 2, disruptionsAllowed: 0 });
    assert.equal(
      pdbStatus(pdb({ minAvailable: 2 }), [...two, pod("c", true)], () => 3).disruptionsAllowed,
      1,
    );
  });

  it("maxUnavailable and percentages count the controllers' scale (a pod being replaced still counts)", () => {
    const pods = [pod("a", true), pod("b", false)];
    const got = pdbStatus(pdb({ maxUnavailable: 1 }), pods, () => 3);
    assert.deepEqual(got, { expectedPods: 3, desiredHealthy: 2, currentHealthy: 1, disruptionsAllowed: 0 });
    assert.equal(
      pdbStatus(pdb({ minAvailable: "50%" }), [pod("a", true), pod("b", true)], () => 2).disruptionsAllowed,
      1,
    );
    assert.equal(
      pdbStatus(pdb({ maxUnavailable: 0 }), [pod("a", true)], () => undefined).disruptionsAllowed,
      0,
    );
  });
});
