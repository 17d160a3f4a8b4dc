// Pins a replay's whole result: the simulator's speed-ups (memoised passes, skipped idle passes,
// cached groupings; issue 29) must not change what a replay answers. The figures below are what
// the code without them answered for the same replay, to the last bit (main f46fd2c with the
// model's fidelity changes of h/wiffid 61115ff: main alone gave $13.55929572499947/h, 149 claims).
// A change meant to alter the model (calibration, fidelity) updates them; the failure prints them.
// Issue 38 changed them on purpose, twice: pods stamped when a continuously acting cluster starts
// them (src/sim/pod-start.ts; the same cost, claims and pods, p95 65 → 62 s), then names and
// offerings drawn per launch and per generateName prefix (common random numbers, so a warm node
// does not rename every later pod and node): $13.57219118055501/h, 146 claims, 213 starts before.
// And a third time (issue 38, point 1 and 4): warmup pods kept off the pool's existing nodes, a warm
// node freed as soon as its pod is placed, analytics' cooldown 60 s — more warmups, so more
// preemptions of warmup pods (7 → 10) and one more claim: $13.675879780555013/h, 152 claims before.
// And a fourth (issue 38, general's 80 %): kube-scheduler's queue order (priority, then the pod
// waiting longest, not names) and a pending warmup pod's taken node counted as a hit (no relaunch
// for it) cut Karpenter's relaunches for the same pods: 153 → 147 claims, $13.598124294443968/h;
// then general's policy sized to the web tier's steps (cooldown 60 s, TTL 30 min) makes more
// warmups: 155 claims, 12 preemptions. $13.7041658916661/h, 153 claims, 221 starts, p95 63 s before.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { DEFAULT_POLICY, type WarmupPolicy } from "../policy/warmup.ts";
import { LIVING_SPOT_POLICIES, LIVING_WARMUP, seedLivingCluster } from "./living.ts";
import { replay } from "./replay.ts";

const MINUTE = 60_000;

describe("a replay's result is pinned", () => {
  it("the living cluster's 30 min with its spot and warmup policies, interruptions and preemptions", async () => {
    const warmup: Record<string, WarmupPolicy> = {};
    for (const [pool, p] of Object.entries(LIVING_WARMUP)) warmup[pool] = { ...DEFAULT_POLICY, ...p };
    const r = await replay({
      workload: (kube) => seedLivingCluster(kube),
      policy: { spot: [...LIVING_SPOT_POLICIES], warmup },
      durationMs: 30 * MINUTE,
      catalog: "aws",
      bootDelayMs: 60_000,
      spotInterruptionRate: 0.15,
      seed: 7,
      startMs: Date.UTC(2026, 11, 3, 9),
      settleMs: 10 * MINUTE,
      quietStepMs: 30_000,
    });
    const digest = createHash("sha256").update(JSON.stringify(r)).digest("hex").slice(0, 16);
    assert.deepEqual(
      {
        costPerHour: r.costPerHour,
        nodeClaimsCreated: r.nodeClaimsCreated,
        podStarts: r.podStart.count,
        p95Ms: r.podStart.p95Ms,
        preemptions: r.preemptions,
        spotInterruptions: r.spotInterruptions,
        digest,
      },
      {
        costPerHour: 13.6780951277774,
        nodeClaimsCreated: 155,
        podStarts: 225,
        p95Ms: 62_000,
        preemptions: 12,
        spotInterruptions: 5,
        digest: "bc4cc08b5542ee03",
      },
    );
  });
});
