import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DO_NOT_DISRUPT_ANNOTATION } from "../objects/karpenter.ts";
import { DO_NOT_DISRUPT_OWNER_ANNOTATION } from "../objects/wave.ts";
import { reduceCounters, warmupStats, type WarmupCounters, type WarmupEvent } from "./stats.ts";
import { node } from "./testing/fixtures.ts";

describe("warmup stats", () => {
  it("folds events into counters and derives gauges from state", () => {
    const events: WarmupEvent[] = [
      { type: "created", pool: "a", at: 0, pod: "w1" },
      { type: "created", pool: "a", at: 1, pod: "w2" },
      { type: "hit", pool: "a", at: 2, node: "n1" },
      { type: "miss", pool: "a", at: 3, reason: "ttl" },
      { type: "prepull", pool: "a", at: 4, node: "n1", image: "x", outcome: "pulled" },
      { type: "prepull", pool: "a", at: 4, node: "n1", image: "y", outcome: "failed" },
    ];
    const counters = events.reduce<WarmupCounters>(reduceCounters, {});
    const warm = node("n2", "a", { capacityType: "spot" });
    warm.metadata.annotations = {
      [DO_NOT_DISRUPT_ANNOTATION]: "true",
      [DO_NOT_DISRUPT_OWNER_ANNOTATION]: "warmup",
    };
    // A user's do-not-disrupt is not warm capacity.
    const user = node("n3", "a");
    user.metadata.annotations = { [DO_NOT_DISRUPT_ANNOTATION]: "true" };
    const prices: string[] = [];
    const stats = warmupStats(counters, [warm, user], (_n, ct) => (prices.push(ct), 0.05));
    assert.deepEqual(stats, [
      {
        pool: "a",
        created: 2,
        hits: 1,
        misses: 1,
        imagesPulled: 1,
        pullFailures: 1,
        timeSavedSeconds: 0,
        warmNodes: 1,
        warmCostPerHour: 0.05,
        hitRate: 0.5,
      },
    ]);
    assert.deepEqual(prices, ["spot"]);
  });
});
