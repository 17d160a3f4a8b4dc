import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DEFAULT_POLICY } from "../policy/warmup.ts";
import { cheaperWarmNote, podStartError, recordedPodStart } from "./whatif-podstart.ts";

describe("the what-if's pod-start model check", () => {
  it("takes the recorded starts of pods created in the window, and compares percentiles (a second apart: none)", () => {
    const starts = [1000, 1000, 2000, 5000, 60_000].map((ms, i) => ({
      created: i * 1000,
      ms,
      pool: "p",
      cold: ms > 2000,
    }));
    assert.equal(recordedPodStart(starts, 10_000, 20_000), undefined);
    assert.deepEqual(recordedPodStart(starts, 0, 10_000), {
      count: 5,
      p50Ms: 2000,
      p95Ms: 60_000,
      maxMs: 60_000,
    });
    const rec = { count: 5, p50Ms: 2000, p95Ms: 60_000, maxMs: 60_000 };
    assert.deepEqual(podStartError({ count: 9, p50Ms: 2500, p95Ms: 66_000, maxMs: 0 }, rec), {
      p50: 0,
      p95: 0.1,
    });
    assert.deepEqual(podStartError({ count: 9, p50Ms: 150_000, p95Ms: 450_000, maxMs: 0 }, rec), {
      p50: 74,
      p95: 6.5,
    });
  });
});

describe("more warm nodes that come out cheaper", () => {
  const warm = (n: number) => ({ general: { ...DEFAULT_POLICY, enabled: true, maxWarmNodes: n } });
  const side = (usd: number, general: number, apiOnDemand: number) => ({
    costPerHour: usd,
    pools: { general: { nodes: 1, costPerHour: general } },
    spotInterruptions: 3,
    end: {
      costPerHour: usd,
      nodes: { spot: 0, onDemand: 1 },
      pools: {},
      byDeployment: { "shop/api": { onDemand: apiOnDemand, spot: 0, pending: 0 } },
    },
  });

  it("say why, from what the replay shows; dearer or fewer warm nodes say nothing", () => {
    const notes = cheaperWarmNote(
      { warmup: warm(1) },
      { warmup: warm(3) },
      side(14.7, 5.0, 15),
      side(14.4, 4.7, 3),
    );
    assert.equal(notes.length, 1);
    assert.match(notes[0] ?? "", /more warm nodes \(1 → 3\) yet cheaper \(−\$0\.30\/h\)/);
    assert.match(notes[0] ?? "", /general −\$0\.30\/h/);
    assert.match(notes[0] ?? "", /shop\/api 15 → 3/);
    assert.deepEqual(
      cheaperWarmNote({ warmup: warm(1) }, { warmup: warm(3) }, side(14.4, 4.7, 3), side(14.7, 5, 3)),
      [],
    );
    assert.deepEqual(
      cheaperWarmNote({ warmup: warm(3) }, { warmup: warm(1) }, side(14.7, 5, 3), side(14.4, 4.7, 3)),
      [],
    );
  });
});
