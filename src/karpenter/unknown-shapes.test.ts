// What a newer (or older) Karpenter writes that Wave has no name for: shown as written, never
// dropped, never a crash. Built from the v1.8.2 recording with what v1.15 adds (disruption reason
// Unhealthy, NodeClaim condition Rebooting, NodePool operators Gte/Lte) and made-up future values.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { trimNodeClaim } from "../agent/trim.ts";
import { canonicalReason } from "../dashboard/history.ts";
import type { NodeSelectorRequirement } from "../objects/kube.ts";
import type { NodeClaim } from "../objects/karpenter.ts";
import { diffNodeClaim, nodeClaimState } from "./lifecycle.ts";
import { requirementsAllow } from "./requirements.ts";
import { matchesRequirement } from "./scheduling.ts";

const recorded = JSON.parse(
  readFileSync(
    new URL("../../test/fixtures/karpenter/recorded/v1.8.2/nodeclaim-versions.json", import.meta.url),
    "utf8",
  ),
) as NodeClaim[];
const initialized = (): NodeClaim => {
  const c = recorded.find(
    (x) =>
      x.status?.conditions?.some((k) => k.type === "Initialized" && k.status === "True") &&
      !x.status.conditions.some((k) => k.type === "DisruptionReason"),
  );
  assert.ok(c, "the recording has an Initialized version");
  return structuredClone(c);
};
const disruptedBy = (
  reason: string,
  extra: { type: string; status: "True" | "False" | "Unknown"; reason: string }[] = [],
): NodeClaim => {
  const c = initialized();
  c.status?.conditions?.push(
    {
      type: "DisruptionReason",
      status: "True",
      reason,
      lastTransitionTime: "2026-12-03T12:00:00Z",
      message: "",
    },
    ...extra.map((e) => ({ ...e, lastTransitionTime: "2026-12-03T12:00:00Z" })),
  );
  return c;
};

describe("unknown disruption reasons and conditions", () => {
  for (const reason of ["Unhealthy", "SomeFutureReason"]) {
    it(`${reason}: phase Disrupting with the reason as written, through diff and canonical spelling`, () => {
      const next = disruptedBy(reason);
      const s = nodeClaimState(next);
      assert.equal(s.phase, "Disrupting");
      assert.equal(s.reason, reason);
      const steps = diffNodeClaim(initialized(), next, { observedAt: "2026-12-03T12:00:01Z" });
      assert.deepEqual(
        steps.map((t) => [t.type, t.reason]),
        [["Disrupted", reason]],
      );
      assert.equal(canonicalReason(reason), reason);
      assert.equal(
        canonicalReason(reason.toLowerCase()),
        reason === "Unhealthy" ? "Unhealthy" : reason.toLowerCase(),
      );
    });
  }

  it("a condition type Wave does not know (v1.15 Rebooting, a future one) is kept by the agent and ignored by the phase", () => {
    const c = disruptedBy("Empty", [
      { type: "Rebooting", status: "True", reason: "Rebooting" },
      { type: "SomethingNew", status: "Unknown", reason: "AwaitingReconciliation" },
    ]);
    const kept = (trimNodeClaim(c).status?.conditions ?? []).map((k) => k.type);
    assert.ok(kept.includes("Rebooting") && kept.includes("SomethingNew"), kept.join(", "));
    assert.equal(nodeClaimState(c).phase, "Disrupting");
    assert.equal(nodeClaimState(c).reason, "Empty");
  });

  it("a DisruptionReason with only a message (or nothing) still marks the claim disrupting", () => {
    const c = disruptedBy("");
    const cond = c.status?.conditions?.find((k) => k.type === "DisruptionReason");
    assert.ok(cond);
    cond.message = "Unhealthy/Repair";
    assert.equal(nodeClaimState(c).reason, "Unhealthy/Repair");
    delete cond.message;
    assert.equal(nodeClaimState(c).phase, "Disrupting");
    assert.equal(canonicalReason(nodeClaimState(c).reason), "Unknown");
  });
});

describe("NodePool requirement operators (Gte/Lte from Karpenter v1.15, and unknown ones)", () => {
  const cpu = "karpenter.kwok.sh/instance-cpu";
  const req = (operator: string, v: string): NodeSelectorRequirement =>
    ({ key: cpu, operator, values: [v] }) as NodeSelectorRequirement;

  it("Gte and Lte are inclusive integer bounds", () => {
    assert.equal(requirementsAllow([req("Gte", "4")], cpu, "4"), true);
    assert.equal(requirementsAllow([req("Gte", "4")], cpu, "2"), false);
    assert.equal(requirementsAllow([req("Lte", "8")], cpu, "8"), true);
    assert.equal(requirementsAllow([req("Lte", "8")], cpu, "16"), false);
    assert.equal(requirementsAllow([req("Gte", "4")], cpu, "4x"), false);
    assert.equal(matchesRequirement(req("Gte", "4"), { [cpu]: "4" }), true);
    assert.equal(matchesRequirement(req("Lte", "4"), { [cpu]: "5" }), false);
  });

  it("an operator Wave does not know never rules a value out of a pool (and never throws)", () => {
    assert.equal(requirementsAllow([req("Between", "4")], cpu, "2"), true);
    assert.equal(matchesRequirement(req("Between", "4"), { [cpu]: "2" }), false);
  });
});
