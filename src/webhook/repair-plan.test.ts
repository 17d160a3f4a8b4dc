// The repair's pacing, pure: a PodDisruptionBudget that refuses every eviction backs a workload off
// instead of being retried (and warned about in an Event) every cooldown for as long as it stands;
// and the next eviction waits for the last one's replacement to be Ready.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../objects/kube.ts";
import { ASSIGNMENT_LABEL } from "../objects/wave.ts";
import type { SpotPolicy } from "../policy/spot.ts";
import { DEFAULT_REPAIR_TIMING, cooldownOf, planRepair } from "./repair-plan.ts";

describe("repair plan: cooldownOf", () => {
  it("is the cooldown until an eviction is refused, then doubles per refusal up to the cap", () => {
    const t = DEFAULT_REPAIR_TIMING;
    assert.equal(cooldownOf({}, t), 5_000);
    assert.equal(cooldownOf({ refused: 0 }, t), 5_000);
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 1000].map((refused) => cooldownOf({ refused }, t) / 1000),
      [10, 20, 40, 80, 160, 300, 300, 300],
    );
  });
});

describe("repair plan: one move at a time", () => {
  const pod = (name: string, assigned: string, createdAt: number, ready: boolean): Pod => ({
    metadata: {
      name,
      namespace: "shop",
      creationTimestamp: new Date(createdAt).toISOString(),
      labels: { [ASSIGNMENT_LABEL]: assigned, "pod-template-hash": "h1" },
    },
    spec: { containers: [], nodeName: "n1" },
    status: { phase: "Running", conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  });
  const policy: SpotPolicy = {
    workload: { namespace: "shop", kind: "Deployment", name: "web" },
    threshold: 3,
    strategy: "Prefer",
  };
  const T = Date.parse("2026-12-05T00:00:00Z");
  const plan = (pods: Pod[], now: number) =>
    planRepair({
      policy,
      pods,
      memory: { imbalanceSince: T - 60_000 },
      now,
      nextCapacity: () => "on-demand",
      fallbackUntil: 0,
    });

  it("waits while the last replacement starts (not Ready yet), so a PodDisruptionBudget is not asked to refuse", () => {
    const pods = [
      pod("a", "spot", T - 600_000, true),
      pod("b", "spot", T - 600_000, true),
      pod("c", "spot", T - 600_000, true),
      pod("r", "on-demand", T - 10_000, false), // the last eviction's replacement, waiting for its node
    ];
    assert.deepEqual(plan(pods, T), {
      kind: "none",
      reason: "a pod is starting: the next eviction waits until it is Ready",
    });
    const ready = plan([...pods.slice(0, 3), pod("r", "on-demand", T - 10_000, true)], T);
    assert.equal(ready.kind, "evict", "Ready: the next spot pod moves");
    assert.equal(
      plan(pods, T - 10_000 + DEFAULT_REPAIR_TIMING.startingMs).kind,
      "evict",
      "a pod unready for 2 min holds nothing back",
    );
  });
});
