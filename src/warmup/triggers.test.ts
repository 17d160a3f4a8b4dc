import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../shared/clock.ts";
import { TestKube } from "./testing/kube.ts";
import { node, nodePool, pod } from "./testing/fixtures.ts";
import { warmupTriggers } from "./triggers.ts";

describe("warmup triggers", () => {
  it("wake a pool on a new pod (pending or on its node) and a node turning Ready, not on heartbeats", async () => {
    const kube = new TestKube(new FakeClock());
    await kube.create("NodePool", nodePool("general"));
    await kube.create("Node", node("n1", "general", { ready: false }));
    const poked: string[] = [];
    const stop = warmupTriggers(kube.state)((p) => poked.push(p));
    await kube.create("Pod", pod("pending", { cpu: "1" }));
    assert.deepEqual(poked, ["general"], "a pending pod the pool would host");
    await kube.create("Pod", pod("bound", { cpu: "1", node: "n1" }));
    assert.deepEqual(poked, ["general", "general"], "a pod on the pool's node (a warmup hit)");
    poked.length = 0;
    await kube.patch("Pod", "bound", { status: { phase: "Running" } }, { namespace: "apps" });
    await kube.patch("Node", "n1", { metadata: { labels: { touched: "yes" } } });
    assert.deepEqual(poked, [], "updates that change neither binding nor readiness");
    await kube.patch("Node", "n1", { status: { conditions: [{ type: "Ready", status: "True" }] } });
    assert.deepEqual(poked, ["general"], "the node turned Ready");
    stop();
    await kube.create("Pod", pod("late", { cpu: "1" }));
    assert.deepEqual(poked, ["general"], "nothing after unsubscribing");
  });
});
