// Warmup reading the WarmupPolicy resources (issue 31): they decide once listed, core's set is
// ignored from then on, the last known good set is remembered, and the status Wave writes.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { WarmupPolicyResource, WarmupPolicySpec } from "../objects/policy-crds.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { PolicySet, VolatilePolicyMemory } from "./policy-set.ts";
import { WarmupStatusWriter, warmupPolicyStatus } from "./policy-status.ts";

const T0 = Date.UTC(2026, 0, 1, 12);
const cr = (name: string, spec: Partial<WarmupPolicySpec> = {}): WarmupPolicyResource => ({
  apiVersion: "wave.sh/v1alpha1",
  kind: "WarmupPolicy",
  metadata: { name, generation: 1, creationTimestamp: "2026-01-01T00:00:00Z" },
  spec: { nodePool: name, enabled: true, ...spec },
});

describe("PolicySet from the WarmupPolicy resources", () => {
  it("the resources decide once listed; core's set is ignored from then on; remembered", async () => {
    const memory = new VolatilePolicyMemory();
    const set = new PolicySet({ memory, log: silentLogger });
    set.replace([{ pool: "general", value: { enabled: true, maxWarmNodes: 3 } }]);
    assert.equal(set.get("general").maxWarmNodes, 3);
    assert.deepEqual(set.fromResources([cr("general", { maxWarmNodes: 2 }), cr("gpu")]), ["general", "gpu"]);
    assert.equal(set.resourcesDecide, true);
    assert.equal(set.get("general").maxWarmNodes, 2);
    assert.deepEqual(set.replace([{ pool: "general", value: { enabled: false } }]), []);
    assert.equal(set.get("general").enabled, true, "core's set no longer decides");
    await set.saved();
    assert.deepEqual(Object.keys(memory.saved ?? {}).sort(), ["general", "gpu"]);
    // An invalid edit keeps the pool's last good policy; a deleted CR turns its pool off.
    assert.deepEqual(set.fromResources([cr("general", { ttlSeconds: 1 }), cr("gpu")]), []);
    assert.equal(set.get("general").maxWarmNodes, 2);
    assert.deepEqual(set.fromResources([cr("general", { maxWarmNodes: 2 })]), ["gpu"]);
    assert.equal(set.get("gpu").enabled, false);
  });

  it("a restart restores the remembered set until the resources are listed, and never over them", async () => {
    const memory = new VolatilePolicyMemory();
    memory.saved = { general: { ...(await import("../policy/warmup.ts")).DEFAULT_POLICY, enabled: true } };
    const listed = new PolicySet({ memory, log: silentLogger });
    listed.fromResources([]);
    await listed.restore();
    assert.equal(listed.get("general").enabled, false, "the listed resources win over the memory");
    const away = new PolicySet({ memory, log: silentLogger });
    await away.restore();
    assert.equal(away.get("general").enabled, true, "apiserver away: the last known good set");
  });
});

describe("WarmupPolicy status", () => {
  it("state, blocker, warm nodes, hits and misses; Ready says why not", () => {
    const s = warmupPolicyStatus(
      cr("general"),
      { outcome: { state: "warm", warmNodes: 1 }, poolExists: true, newHits: 2, newMisses: 1 },
      T0,
    );
    assert.equal(s.state, "warm");
    assert.equal(s.warmNodes, 1);
    assert.equal(s.hits, 2);
    assert.equal(s.misses, 1);
    assert.equal(s.conditions?.[0]?.status, "True");
    const gone = warmupPolicyStatus(
      cr("nope"),
      { outcome: undefined, poolExists: false, newHits: 0, newMisses: 0 },
      T0,
    );
    assert.equal(gone.state, "blocked");
    assert.equal(gone.blocker, "NodePool nope not found");
    assert.equal(gone.conditions?.[0]?.reason, "NodePoolNotFound");
    const capped = warmupPolicyStatus(
      cr("general"),
      {
        outcome: { state: "blocked", blocker: "cost-cap: over 0.50/h", warmNodes: 0 },
        poolExists: true,
        newHits: 0,
        newMisses: 0,
      },
      T0,
    );
    assert.equal(capped.conditions?.[0]?.reason, "Blocked");
  });

  it("the writer adds hits and misses to what the CR shows, writes only on change, never the spec", async () => {
    const clock = new FakeClock(T0);
    const kube = new MemoryKube({ clock });
    await kube.create("WarmupPolicy", cr("general"));
    let current = [await kube.get("WarmupPolicy", "general")];
    const writer = new WarmupStatusWriter({
      kube,
      resources: () => current,
      outcome: () => ({ state: "warm", warmNodes: 1 }),
      poolExists: () => true,
      clock,
    });
    writer.record({ type: "hit", pool: "general", at: T0, node: "n1" });
    writer.record({ type: "created", pool: "general", at: T0, pod: "p" });
    await writer.sync();
    assert.equal(writer.writes, 1);
    // The state lags the write: the count must not go back.
    await writer.sync();
    current = [await kube.get("WarmupPolicy", "general")];
    assert.equal(current[0]?.status?.hits, 1);
    const writes = writer.writes;
    await writer.sync();
    assert.equal(writer.writes, writes, "unchanged: no write");
    writer.record({ type: "miss", pool: "general", at: T0, node: "n1", reason: "ttl" });
    await writer.sync();
    const after = await kube.get("WarmupPolicy", "general");
    assert.deepEqual([after.status?.hits, after.status?.misses, after.metadata.generation], [1, 1, 1]);
  });

  it("two WarmupPolicies naming one pool: the one created first counts the hits, the other shows Conflict", async () => {
    const clock = new FakeClock(T0);
    const kube = new MemoryKube({ clock });
    await kube.create("WarmupPolicy", cr("general-git", { nodePool: "general" }));
    await clock.advance(60_000);
    await kube.create("WarmupPolicy", cr("a-console", { nodePool: "general", maxWarmNodes: 4 }));
    const writer = new WarmupStatusWriter({
      kube,
      resources: () => [...kube.peek("WarmupPolicy")].reverse(),
      outcome: () => ({ state: "warm", warmNodes: 1 }),
      poolExists: () => true,
      clock,
    });
    writer.record({ type: "hit", pool: "general", at: T0, node: "n1" });
    await writer.sync();
    const winner = await kube.get("WarmupPolicy", "general-git");
    const loser = await kube.get("WarmupPolicy", "a-console");
    assert.deepEqual([winner.status?.state, winner.status?.hits, winner.status?.warmNodes], ["warm", 1, 1]);
    assert.deepEqual([loser.status?.state, loser.status?.hits, loser.status?.warmNodes], ["blocked", 0, 0]);
    const conflict = loser.status?.conditions?.find((c) => c.type === "Conflict");
    assert.equal(conflict?.status, "True");
    assert.match(conflict.message, /NodePool general already has WarmupPolicy general-git, created first/);
  });
});
