import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { defaultRetention, downsample, mergeGaps, planSegments, validateRetention } from "./downsample.ts";
import type { SeriesGap, SeriesPoint } from "./series.ts";

const MIN = 60_000;
const HOUR = 60 * MIN;
const T0 = Date.UTC(2026, 0, 1);

function pt(minute: number, nodes: number, extra: Partial<SeriesPoint> = {}): SeriesPoint {
  return {
    kind: "point",
    clusterId: "c1",
    nodePool: "a",
    capacityType: "spot",
    ts: T0 + minute * MIN,
    resolutionMs: MIN,
    nodes,
    vcpu: nodes * 2,
    memoryBytes: nodes * 1000,
    costPerHour: nodes * 0.5,
    nodesMax: nodes,
    samples: 1,
    ...extra,
  };
}

function gap(fromMin: number, untilMin: number, clusterId = "c1"): SeriesGap {
  return { kind: "gap", clusterId, ts: T0 + fromMin * MIN, until: T0 + untilMin * MIN, resolutionMs: MIN };
}

describe("downsample", () => {
  it("averages gauges, keeps the max and counts samples per bucket", () => {
    const rows = downsample([pt(0, 1), pt(1, 3), pt(2, 2), pt(5, 10)], 5 * MIN);
    assert.equal(rows.length, 2);
    const [a, b] = rows as [SeriesPoint, SeriesPoint];
    assert.equal(a.ts, T0);
    assert.equal(a.resolutionMs, 5 * MIN);
    assert.equal(a.nodes, 2);
    assert.equal(a.vcpu, 4);
    assert.equal(a.costPerHour, 1);
    assert.equal(a.nodesMax, 3);
    assert.equal(a.samples, 3);
    assert.equal(b.ts, T0 + 5 * MIN);
    assert.equal(b.nodes, 10);
  });

  it("weights by samples, so rolling up in two stages equals rolling up once", () => {
    const raw = Array.from({ length: 120 }, (_, m) => pt(m, (m * 7) % 11));
    raw.splice(13, 4); // a partly covered 5-minute bucket
    const once = downsample(raw, HOUR);
    const twice = downsample(downsample(raw, 5 * MIN), HOUR);
    assert.equal(once.length, 2);
    assert.equal(twice.length, 2);
    for (let i = 0; i < 2; i++) {
      const x = once[i] as SeriesPoint;
      const y = twice[i] as SeriesPoint;
      assert.ok(Math.abs(x.nodes - y.nodes) < 1e-9);
      assert.equal(x.nodesMax, y.nodesMax);
      assert.equal(x.samples, y.samples);
    }
    assert.equal((once[0] as SeriesPoint).samples, 56);
  });

  it("keeps series apart and never fills a gap", () => {
    const rows = downsample(
      [pt(0, 1), pt(1, 1, { capacityType: "on-demand" }), gap(2, 9), pt(9, 4), pt(10, 4)],
      5 * MIN,
    );
    assert.deepEqual(
      rows.map((r) => (r.kind === "gap" ? `gap ${r.ts}` : `${r.ts} ${r.capacityType} ${r.samples}`)),
      [
        `${T0} on-demand 1`,
        `${T0} spot 1`,
        `gap ${T0 + 2 * MIN}`,
        `${T0 + 5 * MIN} spot 1`,
        `${T0 + 10 * MIN} spot 1`,
      ],
    );
  });

  it("merges overlapping and touching gaps per cluster", () => {
    const merged = mergeGaps([gap(5, 8), gap(0, 3), gap(3, 4), gap(7, 10), gap(0, 1, "c2")]);
    assert.deepEqual(
      merged.map((g) => `${g.clusterId} ${(g.ts - T0) / MIN}..${(g.until - T0) / MIN}`),
      ["c1 0..4", "c1 5..10", "c2 0..1"],
    );
  });
});

describe("validateRetention", () => {
  it("accepts the default and rejects policies that would lose data", () => {
    validateRetention(defaultRetention);
    const t = (stepMs: number, retainMs: number): { stepMs: number; retainMs: number } => ({
      stepMs,
      retainMs,
    });
    assert.throws(() => validateRetention({ tiers: [], eventRetainMs: 1 }), /at least one tier/);
    assert.throws(
      () => validateRetention({ tiers: [t(2 * MIN, HOUR), t(3 * MIN, 2 * HOUR)], eventRetainMs: 1 }),
      /larger multiple/,
    );
    assert.throws(
      () => validateRetention({ tiers: [t(MIN, HOUR), t(5 * MIN, HOUR)], eventRetainMs: 1 }),
      /longer than/,
    );
    assert.throws(
      () => validateRetention({ tiers: [t(MIN, 30 * MIN), t(HOUR, 2 * HOUR)], eventRetainMs: 1 }),
      /next tier's stepMs/,
    );
    assert.throws(() => validateRetention({ tiers: [t(0, 1)], eventRetainMs: 1 }), /positive integer/);
    assert.throws(
      () => validateRetention({ ...defaultRetention, rollupDelayMs: -1 }),
      /rollupDelayMs must be an integer >= 0/,
    );
  });
});

describe("planSegments", () => {
  const tiers = defaultRetention.tiers;
  const now = T0 + 30 * 24 * HOUR;
  const states = [
    { retainedFrom: now - 24 * HOUR, rolledUpTo: Infinity },
    { retainedFrom: now - 7 * 24 * HOUR, rolledUpTo: now - 5 * MIN },
    { retainedFrom: now - 90 * 24 * HOUR, rolledUpTo: now - HOUR },
  ];

  it("reads each instant from exactly one tier", () => {
    const segs = planSegments(tiers, states, now - 10 * 24 * HOUR, now, 5 * MIN);
    assert.deepEqual(segs, [
      { tier: 2, from: now - 10 * 24 * HOUR, to: now - 7 * 24 * HOUR },
      { tier: 1, from: now - 7 * 24 * HOUR, to: now - 5 * MIN },
      { tier: 0, from: now - 5 * MIN, to: now },
    ]);
  });

  it("uses raw rows for a raw-step query and coarse tiers only for what raw no longer keeps", () => {
    const segs = planSegments(tiers, states, now - 2 * 24 * HOUR, now, MIN);
    assert.deepEqual(segs, [
      { tier: 1, from: now - 2 * 24 * HOUR, to: now - 24 * HOUR },
      { tier: 0, from: now - 24 * HOUR, to: now },
    ]);
  });

  it("reads raw rows only on a fresh store", () => {
    const fresh = tiers.map(() => ({ retainedFrom: -Infinity, rolledUpTo: -Infinity }));
    assert.deepEqual(planSegments(tiers, fresh, T0, T0 + HOUR, HOUR), [{ tier: 0, from: T0, to: T0 + HOUR }]);
    assert.deepEqual(planSegments(tiers, fresh, T0, T0, HOUR), []);
  });
});
