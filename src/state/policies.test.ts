// Wave's policy resources in the cluster state (issue 31): stored as they are, read per kind,
// filled by informers over the apiserver (followPolicies) or a mirror of the in-memory one.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { SpotPolicyResource, WarmupPolicyResource } from "../objects/policy-crds.ts";
import { FakeClock, flushMicrotasks } from "../shared/clock.ts";
import { ClusterState, STATE_KINDS, type StateChange } from "./cluster.ts";
import { followPolicies, mirrorMemoryKube } from "./follow.ts";

const spot = (name: string, namespace: string, threshold = 1): SpotPolicyResource => ({
  apiVersion: "wave.sh/v1alpha1",
  kind: "SpotPolicy",
  metadata: { name, namespace },
  spec: { targetRef: { kind: "Deployment", name }, threshold, strategy: "Prefer" },
});
const warm = (name: string): WarmupPolicyResource => ({
  apiVersion: "wave.sh/v1alpha1",
  kind: "WarmupPolicy",
  metadata: { name },
  spec: { nodePool: name, enabled: true },
});

describe("ClusterState policies", () => {
  it("keeps SpotPolicies per namespace and WarmupPolicies by name", () => {
    const s = new ClusterState();
    const seen: StateChange[] = [];
    s.subscribe((c) => seen.push(c), ["SpotPolicy", "WarmupPolicy"]);
    s.apply("SpotPolicy", "add", spot("web", "a"));
    s.apply("SpotPolicy", "add", spot("web", "b"));
    s.apply("WarmupPolicy", "add", warm("general"));
    assert.deepEqual(
      seen.map((c) => `${c.kind} ${c.type} ${c.key}`),
      ["SpotPolicy add a/web", "SpotPolicy add b/web", "WarmupPolicy add general"],
    );
    assert.equal(s.spotPolicy("a", "web")?.metadata.namespace, "a");
    assert.equal(s.spotPolicies().length, 2);
    assert.deepEqual(
      s.spotPolicies("b").map((p) => p.metadata.namespace),
      ["b"],
    );
    assert.equal(s.warmupPolicy("general")?.spec.nodePool, "general");
    s.apply("SpotPolicy", "delete", spot("web", "a"));
    assert.equal(s.spotPolicy("a", "web"), undefined);
    s.replaceAll("WarmupPolicy", []);
    assert.deepEqual(s.warmupPolicies(), []);
    assert.ok(STATE_KINDS.includes("SpotPolicy") && STATE_KINDS.includes("WarmupPolicy"));
  });

  it("refuses a SpotPolicy without a namespace", () => {
    const s = new ClusterState();
    assert.throws(
      () => s.apply("SpotPolicy", "add", { ...spot("web", "a"), metadata: { name: "web" } }),
      /namespace/,
    );
  });
});

describe("followPolicies", () => {
  it("fills the state from the apiserver and follows later changes", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const kube = new MemoryKube({ clock, enforceNamespaces: false });
    await kube.create("SpotPolicy", spot("web", "shop"));
    const state = new ClusterState();
    const ac = new AbortController();
    const informers = followPolicies({ client: kube, state, signal: ac.signal, clock });
    await informers.SpotPolicy.synced;
    await informers.WarmupPolicy.synced;
    assert.equal(state.spotPolicy("shop", "web")?.spec.threshold, 1);
    await kube.create("WarmupPolicy", warm("general"));
    await kube.patch("SpotPolicy", "web", { spec: { threshold: 3 } }, { namespace: "shop" });
    for (let i = 0; i < 20 && state.spotPolicy("shop", "web")?.spec.threshold !== 3; i++)
      await flushMicrotasks();
    assert.equal(state.spotPolicy("shop", "web")?.spec.threshold, 3);
    assert.equal(state.warmupPolicy("general")?.spec.enabled, true);
    ac.abort();
  });

  it("a mirror of the in-memory apiserver holds the policies too", async () => {
    const kube = new MemoryKube({ clock: new FakeClock(0), enforceNamespaces: false });
    await kube.create("WarmupPolicy", warm("general"));
    const { state, stop } = await mirrorMemoryKube(kube);
    assert.equal(state.warmupPolicies().length, 1);
    await kube.create("SpotPolicy", spot("api", "shop"));
    assert.equal(state.spotPolicy("shop", "api")?.metadata.name, "api");
    stop();
  });
});

describe("MemoryKube status subresource", () => {
  it("a status patch changes only status and never bumps the generation", async () => {
    const kube = new MemoryKube({ clock: new FakeClock(0), enforceNamespaces: false });
    const created = await kube.create("SpotPolicy", spot("web", "shop"));
    assert.equal(created.metadata.generation, 1);
    const patched = await kube.patch(
      "SpotPolicy",
      "web",
      { spec: { threshold: 9 }, status: { observedGeneration: 1, onDemand: 2 } },
      { namespace: "shop", subresource: "status" },
    );
    assert.equal(patched.spec.threshold, 1);
    assert.equal(patched.status?.onDemand, 2);
    assert.equal(patched.metadata.generation, 1);
    const specChange = await kube.patch(
      "SpotPolicy",
      "web",
      { spec: { threshold: 2 } },
      { namespace: "shop" },
    );
    assert.equal(specChange.metadata.generation, 2);
    assert.equal(specChange.status?.onDemand, 2);
  });
});
