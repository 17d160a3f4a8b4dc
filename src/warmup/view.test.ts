import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ClusterState } from "../state/cluster.ts";
import { FakeClock } from "../shared/clock.ts";
import { kubeWarmupView, stateWarmupView } from "./view.ts";
import { TestKube } from "./testing/kube.ts";
import { node, nodePool, pod } from "./testing/fixtures.ts";

describe("warmup views", () => {
  it("reads every page from a KubeClient", async () => {
    const kube = new TestKube(new FakeClock());
    for (let i = 0; i < 3; i++) await kube.create("Node", node(`n${i}`, "p"));
    const view = kubeWarmupView(kube);
    assert.deepEqual((await view.nodes()).map((n) => n.metadata.name).sort(), ["n0", "n1", "n2"]);
    assert.deepEqual(await view.nodePools(), []);
  });

  it("adapts core's cluster state structurally", async () => {
    const state = new ClusterState();
    state.apply("NodePool", "add", nodePool("p"));
    state.apply("Node", "add", node("n1", "p"));
    state.apply("Pod", "add", pod("a", { node: "n1", cpu: "1" }));
    const view = stateWarmupView(state);
    assert.deepEqual(
      (await view.nodePools()).map((x) => x.metadata.name),
      ["p"],
    );
    assert.deepEqual(
      (await view.nodes()).map((x) => x.metadata.name),
      ["n1"],
    );
    assert.deepEqual(
      (await view.pods()).map((x) => x.spec.nodeName),
      ["n1"],
    );
    assert.deepEqual(await view.nodeClaims(), []);
  });
});
