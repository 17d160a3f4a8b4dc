import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { observedPoolBootMs, observedPoolPullMs } from "./whatif-observed.ts";

const claim = (uid: string, pool: string, launched: number, bootMs: number) => [
  { nodeClaimUid: uid, nodePool: pool, phase: "Launched", at: launched },
  { nodeClaimUid: uid, nodePool: pool, phase: "Registered", at: launched + bootMs },
  { nodeClaimUid: uid, nodePool: pool, phase: "Initialized", at: launched + bootMs },
];

describe("each pool's boot and pull, from the recorded cluster (issue 38)", () => {
  it("reads a pool's boot from the claims launched where the cluster acted continuously, not from its 150 s grid", () => {
    const H = 3_600_000;
    const cadence = [
      { from: 0, stepMs: 150_000 },
      { from: H, stepMs: 1000 },
    ];
    const events = [
      // Fast-forwarded: every boot reads as one 150 s step.
      ...[0, 1, 2, 3, 4].flatMap((i) => claim(`a${i}`, "general", i * 300_000, 150_000)),
      ...[0, 1, 2].flatMap((i) => claim(`g${i}`, "gpu", i * 300_000, 150_000)),
      // Live: general's own boots (3–5 s); gpu launched none live.
      ...[3000, 4000, 5000].flatMap((b, i) => claim(`b${i}`, "general", H + i * 60_000, b)),
      ...claim("s0", "spot", H + 1000, 30_000),
    ];
    assert.deepEqual(observedPoolBootMs(events, cadence), {
      general: 4000,
      // gpu none and spot one continuous claim of their own: the cluster's continuous median.
      gpu: 4000,
      spot: 4000,
    });
    assert.deepEqual(
      observedPoolBootMs(events, [{ from: 0, stepMs: 1000 }]).gpu,
      150_000,
      "continuous: its own",
    );
  });

  it("reads a pool's pull from its fastest cold starts less its boot, the batch window and the kubelet", () => {
    const starts = [
      // Most of general's cold starts also waited for room (its limit): not pull.
      ...[82_000, 82_000, 90_000, 301_000, 301_000, 301_000].map((ms) => ({
        ms,
        pool: "general",
        cold: true,
      })),
      { ms: 1000, pool: "general", cold: false },
      ...[5000, 6000, 5000].map((ms) => ({ ms, pool: "gpu", cold: true })),
      { ms: 70_000, pool: "few", cold: true },
    ];
    assert.deepEqual(observedPoolPullMs(starts, { general: 60_000, gpu: 60_000 }, 60_000), {
      general: 20_000,
      gpu: 0,
    });
  });
});
