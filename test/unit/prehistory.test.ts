// Issue #14: history from the first second. `wave start` on the simulator (its clock pinned, so
// the day's demand curve is the same whatever the wall clock says) must, once caught up, hold a
// day of the cluster's history in the store: a point a minute from 24 h ago to now with no
// unmarked holes, and lifecycle steps, disruptions, warmup events and pods per workload from every
// part of the day — the far past generated in process (src/cli/prehistory.ts), the last minutes
// streamed through the agent and core's gRPC ingest.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { SIMULATED_HISTORY_MS, type Started } from "../../src/cli/start.ts";
import type { SeriesGap, SeriesPoint } from "../../src/core/history/series.ts";
import { pinnedClock } from "../../src/sim/clock.ts";
import { startSimulatedWave, type SimulatedWave } from "../support/wave.ts";

const MIN = 60_000;
const HOUR = 60 * MIN;
const CLUSTER = "day";
const clock = pinnedClock(Date.UTC(2026, 11, 3, 20, 0));

let sim: SimulatedWave;
let w: Started;
let now: number;

before(async () => {
  sim = await startSimulatedWave("prehistory-test", CLUSTER, { clock });
  w = sim.w;
  // Let the samplers write the minute the clock caught up in.
  await new Promise((r) => setTimeout(r, 1500));
  now = clock.now();
});

after(() => sim.stop());

/** The 4-hour windows of the day behind `now`. */
const windows = (): [number, number][] =>
  Array.from({ length: 6 }, (_, i) => [now - (6 - i) * 4 * HOUR, now - (5 - i) * 4 * HOUR]);

describe("the embedded cluster's history at start", { timeout: 600_000 }, () => {
  it("is a day long by default", () => {
    assert.equal(SIMULATED_HISTORY_MS, 24 * HOUR);
  });

  it("has a point every minute from 24 h ago to now, holes only where a gap is marked", async () => {
    const rows = await w.store.series({ clusterId: CLUSTER, from: now - 25 * HOUR, to: now + MIN });
    const points = rows.filter((r): r is SeriesPoint => r.kind === "point");
    const gaps = rows.filter((r): r is SeriesGap => r.kind === "gap");
    const first = points[0]?.ts ?? Infinity;
    assert.ok(first <= now - SIMULATED_HISTORY_MS + 2 * MIN, `first point ${new Date(first).toISOString()}`);
    assert.ok(
      points.some((p) => p.nodes > 0 && p.ts >= now - 3 * MIN),
      "a point of the last minutes",
    );
    const covered = new Set(points.map((p) => p.ts));
    const missing: string[] = [];
    for (let t = first; t < now - 2 * MIN; t += MIN)
      if (!covered.has(t) && !gaps.some((g) => g.ts <= t && t < g.until))
        missing.push(new Date(t).toISOString().slice(11, 16));
    assert.deepEqual(missing, [], "minutes with neither a point nor a marked gap");
    const gapMinutes = gaps.reduce((s, g) => s + (g.until - g.ts) / MIN, 0);
    assert.ok(gapMinutes <= 2, `${gapMinutes} minutes marked as gaps`);
    for (const [from, to] of windows())
      assert.ok(
        points.some((p) => p.ts >= from && p.ts < to && p.nodes > 0),
        `nodes between ${new Date(from).toISOString()} and ${new Date(to).toISOString()}`,
      );
  });

  it("has lifecycle steps, disruptions and warmup events all over the day", async () => {
    const range = { clusterId: CLUSTER, limit: 100_000 };
    for (const [from, to] of windows()) {
      const at = `${new Date(from).toISOString().slice(11, 16)}–${new Date(to).toISOString().slice(11, 16)}`;
      const lifecycle = await w.store.lifecycle({ ...range, from, to });
      const phases = new Set(lifecycle.map((e) => e.phase));
      assert.ok(phases.has("Launched") && phases.has("Terminated"), `${at}: ${[...phases].join(", ")}`);
      const disruptions = await w.store.disruptions({ ...range, from, to });
      assert.ok(disruptions.length > 0, `${at}: a disruption`);
      const warmup = await w.store.warmupEvents({ ...range, from, to });
      assert.ok(
        warmup.some((e) => e.type === "created"),
        `${at}: a warm node created (${warmup.length} events)`,
      );
    }
    const reasons = new Set(
      (await w.store.disruptions({ ...range, from: now - 24 * HOUR, to: now + 1 })).map((d) => d.reason),
    );
    assert.ok(reasons.size >= 3, `disruption reasons over the day: ${[...reasons].join(", ")}`);
  });

  it("has pods per workload for every minute of the day (what `wave whatif` replays)", async () => {
    const rows = await w.store.workloadPods({ clusterId: CLUSTER, from: now - 25 * HOUR, to: now + 1 });
    const buckets = new Set(rows.map((r) => r.ts));
    const first = Math.min(...buckets);
    assert.ok(first <= now - SIMULATED_HISTORY_MS + 2 * MIN, `first bucket ${new Date(first).toISOString()}`);
    assert.ok(buckets.size >= 24 * 60 - 5, `${buckets.size} minutes with pod counts`);
    // Each shop/* Deployment rolls once an hour (living.ts): a new revision each time, which the
    // what-if replays as a rollout, its surge told apart (the new revision's pods beside the count).
    const api = rows.filter((r) => r.workload === "shop/Deployment/api").sort((a, b) => a.ts - b.ts);
    const revisions = api.map((r) => r.revision).filter((r, i, all) => r !== undefined && r !== all[i - 1]);
    assert.ok(revisions.length >= 22, `${revisions.length} revisions of shop/api over the day`);
    assert.ok(
      api.some((r) => (r.revisionPods ?? r.pods) < r.pods),
      "a rollout's surge: older revisions' pods beside the new one's",
    );
  });
});
