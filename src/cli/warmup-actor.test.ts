// The warmup controller as the agent runs it (createWarmupActor), on a cluster priced from the
// regional static table: the cost cap must see the price of the node a warmup would launch.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../objects/kube.ts";
import type { NodeOverlay } from "../objects/karpenter.ts";
import { isWarmupPod } from "../objects/wave.ts";
import { CompositePriceProvider } from "../pricing/composite.ts";
import { StaticPriceProvider, loadStaticPriceTable } from "../pricing/static.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { DEFAULT_POLICY } from "../policy/warmup.ts";
import { node, nodePool, pod, T0 } from "../warmup/testing/fixtures.ts";
import { TestKube } from "../warmup/testing/kube.ts";
import { createWarmupActor } from "./warmup-actor.ts";

const aws = new CompositePriceProvider({ static: new StaticPriceProvider(loadStaticPriceTable()) });

/** Warmup pods after one start of the actor's controller under a cost cap. */
async function warmupsUnderCap(
  maxCostPerHour: number,
  overlays: readonly NodeOverlay[] = [],
): Promise<Pod[]> {
  const clock = new FakeClock(T0);
  const kube = new TestKube(clock);
  await kube.create("NodePool", nodePool("general"));
  // A full node (3 of 4 CPUs used): the next pod needs a new node of the pool.
  await kube.create(
    "Node",
    node("n1", "general", {
      cpu: "4",
      memory: "16Gi",
      instanceType: "m5.xlarge",
      labels: { "topology.kubernetes.io/zone": "us-east-1a" },
    }),
  );
  await kube.create("Pod", pod("big", { cpu: "3", memory: "4Gi", node: "n1" }));
  const actor = createWarmupActor({
    kube,
    view: kube.state,
    prices: aws,
    overlays: () => overlays,
    clock,
    log: silentLogger,
    namespace: "wave",
    memory: { load: () => Promise.resolve(undefined), save: () => Promise.resolve() },
    report: () => undefined,
  });
  actor.setPolicies([
    { pool: "general", value: { ...DEFAULT_POLICY, enabled: true, prePull: false, maxCostPerHour } },
  ]);
  await actor.controller.start();
  return (await kube.all("Pod")).filter(isWarmupPod);
}

describe("warmup actor's cost cap", () => {
  it("prices the node a warmup would launch where the pool runs and refuses it over the cap", async () => {
    const price = aws.price("m5.xlarge", "on-demand", "us-east-1a")?.usdPerHour;
    assert.ok(price !== undefined && price > 0);
    assert.equal(aws.price("m5.xlarge", "on-demand"), undefined, "without a place the table has no price");
    assert.equal((await warmupsUnderCap(price / 2)).length, 0, "one new node costs more than the cap");
    assert.equal((await warmupsUnderCap(price * 2)).length, 1);
  });
});

describe("warmup actor's cost cap under a NodeOverlay", () => {
  it("prices the new node as Karpenter does: a -30% overlay on the type brings it under the cap", async () => {
    const list = aws.price("m5.xlarge", "on-demand", "us-east-1a")?.usdPerHour;
    assert.ok(list !== undefined && list > 0);
    const overlay: NodeOverlay = {
      metadata: { name: "savings-plan" },
      spec: {
        requirements: [{ key: "node.kubernetes.io/instance-type", operator: "In", values: ["m5.xlarge"] }],
        priceAdjustment: "-30%",
      },
      // Validated by Karpenter's NodeOverlay controller (it runs with the gate on).
      status: { conditions: [{ type: "ValidationSucceeded", status: "True" }] },
    };
    const cap = list * 0.8;
    assert.equal((await warmupsUnderCap(cap)).length, 0, "at the list price the node is over the cap");
    assert.equal((await warmupsUnderCap(cap, [overlay])).length, 1, "at Karpenter's price it is under");
  });
});
