// Issue 43 (5), through the webhook in process: two SpotPolicies on one Deployment in the
// (in-memory) apiserver, read by the webhook's own informer (CrdPolicySource); pods admitted by
// review() with the real slot allocator and backing verifier over real ReplicaSets, the repair
// and the status writer as the repair's leader runs them. The one created first is placed, the
// other shows Conflict, every other workload is placed; deleting the winner hands the workload
// to the other, which the repair then brings to its target.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { SpotPolicyResource } from "../objects/policy-crds.ts";
import { CrdPolicySource } from "./crd-policy-source.ts";
import { PlacementWorld } from "./placement-world.ts";
import { SpotStatusWriter } from "./policy-status.ts";

const spotCr = (name: string, target: string, threshold: number): SpotPolicyResource => ({
  apiVersion: "wave.sh/v1alpha1",
  kind: "SpotPolicy",
  metadata: { name, namespace: "shop" },
  spec: { targetRef: { kind: "Deployment", name: target }, threshold, strategy: "Require" },
});

let crds: CrdPolicySource | undefined;
let w: PlacementWorld;

before(async () => {
  w = await PlacementWorld.create({
    threshold: 0,
    deployments: [],
    repair: true,
    // Every pod runs on "n1": an on-demand node as far as the repair's adoption looks.
    nodes: { synced: true, of: () => "on-demand" },
    source: (kube, clock) => (crds = new CrdPolicySource({ kube, clock })),
  });
  // From Git first; a minute later from the console, under a name that sorts first.
  await w.kube.create("SpotPolicy", spotCr("web-git", "web", 1));
  await w.kube.create("SpotPolicy", spotCr("api", "api", 2));
  await w.clock.advance(60_000);
  await w.kube.create("SpotPolicy", spotCr("a-console", "web", 3));
  assert.ok(crds);
  assert.equal(await crds.start(), true);
});

after(async () => {
  await crds?.stop();
  await w.stop();
});

describe("two SpotPolicies on one Deployment, through the webhook", () => {
  it("the one created first is placed, the other shows Conflict, every other workload is placed", async () => {
    assert.ok(crds);
    await w.scale("h1", 4, "web");
    await w.scale("h1", 3, "api");
    await w.sync();
    assert.deepEqual(w.unplaced, [], "every pod placed");
    assert.equal((await w.live("web")).length, 4);
    assert.equal(await w.onDemand("web"), 1, "web-git's threshold, not a-console's 3");
    assert.equal(await w.onDemand("api"), 2);
    for (let s = 0; s < 10; s++) await w.tick(1_000);
    assert.equal(w.evictions, 0, "nothing to repair: at web-git's target");
    const statuses = new SpotStatusWriter({
      kube: w.kube,
      index: crds.index,
      seen: () => w.repair?.status() ?? new Map(),
      clock: w.clock,
    });
    await statuses.sync();
    const loser = await w.kube.get("SpotPolicy", "a-console", "shop");
    const winner = await w.kube.get("SpotPolicy", "web-git", "shop");
    const conflict = loser.status?.conditions?.find((c) => c.type === "Conflict");
    assert.equal(conflict?.status, "True");
    assert.match(conflict.message, /SpotPolicy shop\/web-git, created first, which decides/);
    assert.equal(winner.status?.targetOnDemand, 1);
    assert.equal(winner.status.conditions?.find((c) => c.type === "Ready")?.reason, "AtTarget");
  });

  it("the winner deleted: the other decides, the repair brings web to its 3 on-demand, its Conflict clears", async () => {
    assert.ok(crds);
    await w.kube.delete("SpotPolicy", "web-git", { namespace: "shop" });
    for (let s = 0; s < 120 && (await w.onDemand("web")) !== 3; s++) await w.tick(1_000);
    assert.equal(await w.onDemand("web"), 3);
    assert.equal(await w.onDemand("api"), 2, "the other workload untouched");
    const statuses = new SpotStatusWriter({
      kube: w.kube,
      index: crds.index,
      seen: () => w.repair?.status() ?? new Map(),
      clock: w.clock,
    });
    for (let s = 0; s < 10; s++) await w.tick(1_000);
    await statuses.sync();
    const now = await w.kube.get("SpotPolicy", "a-console", "shop");
    assert.equal(
      now.status?.conditions?.find((c) => c.type === "Conflict"),
      undefined,
    );
    assert.equal(now.status?.targetOnDemand, 3);
  });
});
