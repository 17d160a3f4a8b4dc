import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../shared/clock.ts";
import { scopedView } from "./view.ts";
import { TestKube } from "./testing/kube.ts";
import { node, nodeClaim, nodePool, pod } from "./testing/fixtures.ts";

describe("warmup view", () => {
  it("is the cluster state, in step with the apiserver's writes", async () => {
    const kube = new TestKube(new FakeClock());
    await kube.create("NodePool", nodePool("p"));
    await kube.create("Node", node("n1", "p"));
    await kube.create("Pod", pod("a", { node: "n1", cpu: "1" }));
    await kube.create("Pod", pod("b", { cpu: "1" }));
    const view = kube.state;
    assert.deepEqual(
      view.nodesInPool("p").map((n) => n.metadata.name),
      ["n1"],
    );
    assert.deepEqual(
      view.podsOnNode("n1").map((p) => p.metadata.name),
      ["a"],
    );
    assert.deepEqual(
      view.pendingPods().map((p) => p.metadata.name),
      ["b"],
    );
    await kube.delete("Node", "n1");
    assert.deepEqual(view.nodesInPool("p"), []);
  });

  it("scoped to one pool shows nothing of the others", async () => {
    const kube = new TestKube(new FakeClock());
    for (const p of ["mine", "theirs"]) {
      await kube.create("NodePool", nodePool(p));
      await kube.create("Node", node(`n-${p}`, p));
      await kube.create("NodeClaim", nodeClaim(`c-${p}`, p, `n-${p}`));
    }
    const view = scopedView(kube.state, "mine");
    assert.deepEqual(
      view.nodePools().map((p) => p.metadata.name),
      ["mine"],
    );
    assert.deepEqual(
      view.nodes().map((n) => n.metadata.name),
      ["n-mine"],
    );
    assert.deepEqual(
      view.nodeClaims().map((c) => c.metadata.name),
      ["c-mine"],
    );
    assert.equal(view.node("n-theirs"), undefined);
    assert.equal(view.nodePool("theirs"), undefined);
    assert.deepEqual(view.nodesInPool("theirs"), []);
  });
});
