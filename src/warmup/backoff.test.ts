import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { WARMUP_UNUSED_STREAK_ANNOTATION } from "../objects/wave.ts";
import { MAX_BACKOFF_MS, backoffCooldownMs, nextStreak, unusedStreak } from "./backoff.ts";

const policy = { cooldownSeconds: 300, ttlSeconds: 600 };

describe("warmup back-off", () => {
  it("grows the cooldown with each unused expiry in a row, up to a cap", () => {
    assert.equal(backoffCooldownMs(policy, 0), 300_000, "no streak: the policy's cooldown");
    // Counted from the last warmup's start: its TTL, then at least another TTL after the release.
    assert.equal(backoffCooldownMs(policy, 1), 1_200_000, "after one unused node: a TTL past the release");
    assert.equal(backoffCooldownMs(policy, 2), 1_800_000);
    assert.equal(backoffCooldownMs(policy, 3), 3_000_000);
    assert.equal(backoffCooldownMs(policy, 6), MAX_BACKOFF_MS);
    assert.equal(
      backoffCooldownMs({ cooldownSeconds: 0, ttlSeconds: 60 }, 1),
      120_000,
      "never 0 after a miss",
    );
    assert.equal(
      backoffCooldownMs({ cooldownSeconds: 86_400, ttlSeconds: 60 }, 3),
      86_400_000,
      "never below the policy",
    );
  });

  it("counts unused expiries, resets on a hit, ignores ends that say nothing about demand", () => {
    let s = 0;
    s = nextStreak(s, { kind: "miss", reason: "ttl" });
    s = nextStreak(s, { kind: "miss", reason: "ttl" });
    assert.equal(s, 2);
    assert.equal(nextStreak(s, { kind: "miss", reason: "node-gone" }), 2);
    assert.equal(nextStreak(s, { kind: "miss", reason: "disabled" }), 2);
    assert.equal(nextStreak(s, { kind: "hit" }), 0);
    assert.equal(nextStreak(6, { kind: "miss", reason: "ttl" }), 6, "bounded");
  });

  it("reads the streak off the NodePool, tolerating junk", () => {
    const pool = (v?: string) => ({
      metadata: v === undefined ? {} : { annotations: { [WARMUP_UNUSED_STREAK_ANNOTATION]: v } },
    });
    assert.equal(unusedStreak(pool()), 0);
    assert.equal(unusedStreak(pool("3")), 3);
    assert.equal(unusedStreak(pool("-1")), 0);
    assert.equal(unusedStreak(pool("lots")), 0);
    assert.equal(unusedStreak(pool("99")), 6);
    assert.equal(unusedStreak(undefined), 0);
  });
});
