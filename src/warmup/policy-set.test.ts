import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MemoryKube } from "../kube/memory/memory.ts";
import { silentLogger } from "../shared/log.ts";
import { DEFAULT_POLICY } from "../policy/warmup.ts";
import { ConfigMapPolicyMemory, POLICY_MEMORY_KEY, PolicySet, VolatilePolicyMemory } from "./policy-set.ts";

describe("PolicySet", () => {
  it("replaces the whole set, names the pools that changed, leaves invalid policies out", () => {
    const set = new PolicySet({ memory: new VolatilePolicyMemory(), log: silentLogger });
    assert.deepEqual(set.get("general"), DEFAULT_POLICY);
    assert.deepEqual(
      set.replace([
        { pool: "general", value: { enabled: true } },
        { pool: "batch", value: { ttlSecond: 5 } },
      ]),
      ["general"],
    );
    assert.equal(set.get("general").enabled, true);
    assert.deepEqual(set.get("batch"), DEFAULT_POLICY, "a typo is not a policy");
    assert.deepEqual(
      set.replace([{ pool: "general", value: { enabled: true } }]),
      [],
      "same set: nothing changed",
    );
    assert.deepEqual(set.replace([]), ["general"], "a pool left out of core's set goes back to the default");
    assert.equal(set.get("general").enabled, false);
  });

  it("remembers core's last set in a ConfigMap, so a new process (core away) acts on it", async () => {
    const kube = new MemoryKube();
    const memory = () => new ConfigMapPolicyMemory(kube, "wave", "wave-warmup-policies");
    const first = new PolicySet({ memory: memory(), log: silentLogger });
    await first.restore(); // nothing remembered yet
    first.replace([{ pool: "general", value: { enabled: true, maxWarmNodes: 3 } }]);
    await first.saved();
    const cm = await kube.get("ConfigMap", "wave-warmup-policies", "wave");
    assert.equal(
      (JSON.parse(cm.data?.[POLICY_MEMORY_KEY] ?? "{}") as Record<string, { maxWarmNodes: number }>).general
        ?.maxWarmNodes,
      3,
    );

    const next = new PolicySet({ memory: memory(), log: silentLogger });
    await next.restore();
    assert.equal(next.get("general").enabled, true);
    assert.equal(next.get("general").maxWarmNodes, 3);
    // The chart's ConfigMap exists already: updated in place, other keys kept.
    await kube.patch("ConfigMap", "wave-warmup-policies", { data: { note: "chart" } }, { namespace: "wave" });
    next.replace([]);
    await next.saved();
    const after = await kube.get("ConfigMap", "wave-warmup-policies", "wave");
    assert.deepEqual(after.data, { note: "chart", [POLICY_MEMORY_KEY]: "{}" });
  });

  it("core's set wins over the remembered one when it came first; unreadable memory leaves warmup off", async () => {
    const memory = new VolatilePolicyMemory();
    memory.saved = { general: { ...DEFAULT_POLICY, enabled: true } };
    const set = new PolicySet({ memory, log: silentLogger });
    set.replace([{ pool: "general", value: { enabled: false } }]);
    await set.restore();
    assert.equal(set.get("general").enabled, false);

    const broken = new PolicySet({
      memory: { load: () => Promise.reject(new Error("forbidden")), save: () => Promise.resolve() },
      log: silentLogger,
    });
    await broken.restore();
    assert.deepEqual(broken.get("general"), DEFAULT_POLICY);
  });
});
