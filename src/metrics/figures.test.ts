// wave_nodepool_thrashing follows its help text: 1 for a pool flagged warning or critical (severity
// medium or high), 0 for low and none — the score is exported either way.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { nodePool } from "../dashboard/testkit.ts";
import { detectThrashing, type Severity, type ThrashingReport } from "../dashboard/thrashing/detect.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { ClusterState } from "../state/cluster.ts";
import { clusterFigures, GAUGES } from "./figures.ts";

const NOW = Date.UTC(2026, 11, 3, 20);

function report(pool: string, severity: Severity, score: number): ThrashingReport {
  return { ...detectThrashing({ nodePool: pool, events: [], now: NOW }), severity, score };
}

describe("wave_nodepool_thrashing", () => {
  it("is 1 for warning or critical (medium, high) and 0 for low and none, as its help says", () => {
    assert.match(GAUGES.wave_nodepool_thrashing, /warning or critical/);
    const state = new ClusterState();
    for (const p of ["calm", "mild", "warn", "crit"]) state.apply("NodePool", "add", nodePool(p));
    const figures = clusterFigures({
      clusterId: "c1",
      state,
      prices: new KwokPriceProvider(),
      now: NOW,
      connected: true,
      lastSeen: NOW,
      thrashing: [
        report("calm", "none", 0),
        report("mild", "low", 30),
        report("warn", "medium", 50),
        report("crit", "high", 90),
      ],
      spotPolicies: [],
    });
    const of = (name: "wave_nodepool_thrashing" | "wave_nodepool_thrashing_score"): Record<string, number> =>
      Object.fromEntries((figures.get(name) ?? []).map((s) => [String(s.labels["nodepool"]), s.value]));
    assert.deepEqual(of("wave_nodepool_thrashing"), { calm: 0, mild: 0, warn: 1, crit: 1 });
    assert.deepEqual(of("wave_nodepool_thrashing_score"), { calm: 0, mild: 30, warn: 50, crit: 90 });
  });
});
