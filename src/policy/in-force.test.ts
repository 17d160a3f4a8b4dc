import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { SpotPolicyResource } from "../objects/policy-crds.ts";
import { spotPoliciesInForce } from "./in-force.ts";

const cr = (
  name: string,
  o: { target?: string; threshold?: number; created?: string } = {},
): SpotPolicyResource => ({
  apiVersion: "wave.sh/v1alpha1",
  kind: "SpotPolicy",
  metadata: { name, namespace: "shop", creationTimestamp: o.created ?? "2026-01-01T00:00:00Z" },
  spec: {
    targetRef: { kind: "Deployment", name: o.target ?? "web" },
    threshold: o.threshold ?? 1,
    strategy: "Prefer",
  },
});

const decided = (crs: SpotPolicyResource[]) => {
  const r = spotPoliciesInForce(crs);
  return {
    policies: r.policies.map((p) => `${p.workload.name}=${String(p.threshold)}`),
    decidedBy: Object.fromEntries(r.decidedBy),
    conflicts: r.conflicts.map((c) => `${c.key}<${c.winner}`),
  };
};

describe("spotPoliciesInForce: the one rule for two SpotPolicies on one workload", () => {
  it("the one created first decides, whatever order the resources come in", () => {
    const git = cr("web-git", { threshold: 2, created: "2026-01-01T00:00:00Z" });
    const console_ = cr("a-console", { threshold: 5, created: "2026-01-02T00:00:00Z" });
    const other = cr("api", { target: "api", threshold: 1, created: "2026-01-03T00:00:00Z" });
    const want = {
      policies: ["api=1", "web=2"],
      decidedBy: { "shop/Deployment/api": "shop/api", "shop/Deployment/web": "shop/web-git" },
      conflicts: ["shop/a-console<shop/web-git"],
    };
    assert.deepEqual(decided([git, console_, other]), want);
    assert.deepEqual(decided([other, console_, git]), want);
  });

  it("created in the same second: the first by name", () => {
    assert.deepEqual(decided([cr("b", { threshold: 2 }), cr("a", { threshold: 3 })]).conflicts, [
      "shop/b<shop/a",
    ]);
  });

  it("the conflict names the workload and the policy that decides", () => {
    const [c] = spotPoliciesInForce([cr("a"), cr("b")]).conflicts;
    assert.equal(
      c?.message,
      "Deployment shop/web already has SpotPolicy shop/a, created first, which decides: this one is not in force",
    );
    assert.equal(c.target, "shop/Deployment/web");
  });

  it("an invalid resource competes with its last valid version; without one it is only reported", () => {
    const broken = cr("old", { threshold: -1, created: "2025-01-01T00:00:00Z" });
    const young = cr("young", { threshold: 4, created: "2026-01-01T00:00:00Z" });
    const none = spotPoliciesInForce([broken, young]);
    assert.deepEqual(
      none.policies.map((p) => p.threshold),
      [4],
    );
    assert.equal(none.invalid[0]?.keptPrevious, false);
    const kept = spotPoliciesInForce(
      [broken, young],
      new Map([
        [
          "shop/old",
          {
            workload: { namespace: "shop", kind: "Deployment", name: "web" },
            threshold: 2,
            strategy: "Prefer",
          },
        ],
      ]),
    );
    assert.deepEqual(
      kept.policies.map((p) => p.threshold),
      [2],
    );
    assert.equal(kept.invalid[0]?.keptPrevious, true);
    assert.deepEqual(
      kept.conflicts.map((c) => c.key),
      ["shop/young"],
    );
  });
});
