// Warmup refuses a static NodePool (spec.replicas): the controller starts nothing and says why,
// the WarmupPolicy's status shows it, and the Warmup page gives the same reason (issue 39).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { WarmupPolicyResource } from "../objects/policy-crds.ts";
import { DEFAULT_POLICY } from "../policy/warmup.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { machineObjects, nodePool as poolOf, pod } from "../dashboard/testkit.ts";
import { buildWarmupView } from "../views/warmup.ts";
import { warmupPolicyStatus } from "./policy-status.ts";
import { setup, warmups } from "./testing/controller-setup.ts";

const WHY =
  "static-pool: static: Karpenter keeps 2 nodes and never consolidates them; it launches no node for a pending pod, so Wave does not warm it";

describe("warmup on a static NodePool", () => {
  it("the controller creates no warmup pod where it would for the same pool scaling with its pods", async () => {
    const elastic = await setup();
    await elastic.controller().start();
    assert.equal((await warmups(elastic.kube)).length, 1, "the bench's pool needs a warm node");

    const { kube, controller } = await setup();
    await kube.patch("NodePool", "general", { spec: { replicas: 2 } });
    const c = controller();
    await c.start();
    assert.equal((await warmups(kube)).length, 0);
    assert.deepEqual(c.outcome("general"), { state: "blocked", blocker: WHY, warmNodes: 0 });
  });

  it("a WarmupPolicy on it shows why it does nothing", async () => {
    const { kube, controller } = await setup();
    await kube.patch("NodePool", "general", { spec: { replicas: 2 } });
    const c = controller();
    await c.start();
    const cr: WarmupPolicyResource = {
      apiVersion: "wave.sh/v1alpha1",
      kind: "WarmupPolicy",
      metadata: { name: "general", generation: 1, creationTimestamp: "2026-01-01T00:00:00Z" },
      spec: { nodePool: "general", enabled: true },
    };
    const s = warmupPolicyStatus(
      cr,
      { outcome: c.outcome("general"), poolExists: true, newHits: 0, newMisses: 0 },
      Date.UTC(2026, 0, 1, 12),
    );
    assert.equal(s.state, "blocked");
    assert.equal(s.blocker, WHY);
    assert.equal(s.conditions?.[0]?.reason, "Blocked");
  });

  it("the Warmup page gives the same reason, ahead of detection", () => {
    const T0 = Date.parse("2026-03-02T12:00:00Z");
    const n = machineObjects({
      name: "n1",
      pool: "general",
      instanceType: "c-4x-amd64-linux",
      cpu: "4",
    }).node;
    assert.ok(n);
    const base = {
      clusterId: "c",
      coldStarts: [],
      defaults: DEFAULT_POLICY,
      events: [],
      lifecycle: [],
      prices: new KwokPriceProvider(),
      now: T0,
      from: T0 - 3_600_000,
      to: T0,
      policies: new Map([["general", { ...DEFAULT_POLICY, enabled: true }]]),
    };
    // A pending pod no node fits: an elastic pool would warm.
    const pods = () => [pod("hog", "n1", "3", "1Gi"), pod("big", undefined, "3900m", "1Gi", "Pending")];
    const elastic = { nodePools: () => [poolOf("general")], nodes: () => [n], pods };
    assert.equal(buildWarmupView({ ...base, state: elastic }).pools[0]?.blocker, null);
    const fixed = { ...elastic, nodePools: () => [poolOf("general", { replicas: 2 })] };
    const row = buildWarmupView({ ...base, state: fixed }).pools[0];
    assert.equal(row?.blocker, "static-pool");
    assert.equal(`${row.blocker}: ${row.blockerDetail ?? ""}`, WHY, "the controller's words");
  });
});
