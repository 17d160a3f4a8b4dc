import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import { SeriesRecorder } from "./recorder.ts";
import { runClusterSampler, type ClusterSamplerOptions } from "./sampler.ts";
import type { PoolSample, SeriesRow } from "./series.ts";

const MIN = 60_000;
const T0 = Date.UTC(2026, 0, 1, 12, 0);

function sample(nodePool: string, capacityType: string, nodes: number): PoolSample {
  return {
    nodePool,
    capacityType,
    nodes,
    vcpu: nodes * 4,
    memoryBytes: nodes * 16e9,
    costPerHour: nodes * 0.1,
  };
}

function summary(rows: SeriesRow[]): string[] {
  return rows.map((r) =>
    r.kind === "gap"
      ? `gap ${(r.ts - T0) / MIN}..${(r.until - T0) / MIN}`
      : `${(r.ts - T0) / MIN} ${r.nodePool}/${r.capacityType}=${r.nodes}`,
  );
}

describe("SeriesRecorder", () => {
  it("produces one aligned point per series per step", () => {
    const clock = new FakeClock(T0 + 15_000);
    const rec = new SeriesRecorder({ clusterId: "c1", stepMs: MIN, clock });
    const rows = rec.record([sample("default", "spot", 3), sample("default", "on-demand", 1)]);
    assert.deepEqual(summary(rows), ["0 default/spot=3", "0 default/on-demand=1"]);
    const p = rows[0];
    assert.ok(p?.kind === "point");
    assert.equal(p.ts, T0);
    assert.equal(p.samples, 1);
    assert.equal(p.nodesMax, 3);
    assert.equal(p.vcpu, 12);
  });

  it("ignores a second snapshot in the same bucket", async () => {
    const clock = new FakeClock(T0);
    const rec = new SeriesRecorder({ clusterId: "c1", stepMs: MIN, clock });
    rec.record([sample("a", "spot", 1)]);
    await clock.advance(30_000);
    assert.deepEqual(rec.record([sample("a", "spot", 9)]), []);
  });

  it("marks a gap when more than two steps pass without a snapshot, never interpolating", async () => {
    const clock = new FakeClock(T0);
    const rec = new SeriesRecorder({ clusterId: "c1", stepMs: MIN, clock });
    rec.record([sample("a", "spot", 2)]);
    // One late bucket (2 steps later) is tolerated: no gap, and no invented point for minute 1.
    await clock.advance(2 * MIN);
    assert.deepEqual(summary(rec.record([sample("a", "spot", 2)])), ["2 a/spot=2"]);
    // The agent is down for minutes 3..5: data resumes at minute 6.
    await clock.advance(2 * MIN);
    assert.equal(rec.openGap(), undefined);
    await clock.advance(MIN);
    assert.deepEqual(summary(rec.openGap() ? [rec.openGap()!] : []), ["gap 3..5"]);
    await clock.advance(MIN);
    assert.deepEqual(summary(rec.record([sample("a", "spot", 8)])), ["gap 3..6", "6 a/spot=8"]);
    assert.equal(rec.openGap(), undefined);
  });

  it("writes one zero point for a series that vanished from the snapshot", async () => {
    const clock = new FakeClock(T0);
    const rec = new SeriesRecorder({ clusterId: "c1", stepMs: MIN, clock });
    rec.record([sample("a", "spot", 2), sample("a", "on-demand", 1)]);
    await clock.advance(MIN);
    assert.deepEqual(summary(rec.record([sample("a", "on-demand", 1)])), ["1 a/on-demand=1", "1 a/spot=0"]);
    await clock.advance(MIN);
    assert.deepEqual(summary(rec.record([sample("a", "on-demand", 1)])), ["2 a/on-demand=1"]);
  });

  it("marks core's own downtime as a gap after resume()", async () => {
    const clock = new FakeClock(T0 + 10 * MIN);
    const rec = new SeriesRecorder({ clusterId: "c1", stepMs: MIN, clock });
    rec.resume(T0, [{ nodePool: "a", capacityType: "spot" }]);
    assert.deepEqual(summary(rec.record([])), ["gap 1..10", "10 a/spot=0"]);
    await clock.advance(MIN);
  });

  it("marks even one bucket missed across a core restart as a gap, then tolerates a late one again", async () => {
    // Core killed after writing minute 0 and back before minute 2: minute 1 was never sampled.
    const clock = new FakeClock(T0 + 2 * MIN + 5_000);
    const rec = new SeriesRecorder({ clusterId: "c1", stepMs: MIN, clock });
    rec.resume(T0, [{ nodePool: "a", capacityType: "spot" }]);
    assert.deepEqual(summary(rec.openGap() ? [rec.openGap()!] : []), ["gap 1..2"]);
    assert.deepEqual(summary(rec.record([sample("a", "spot", 3)])), ["gap 1..2", "2 a/spot=3"]);
    // Running again: one late bucket is the sampler's jitter, not an outage.
    await clock.advance(2 * MIN);
    assert.equal(rec.openGap(), undefined);
    assert.deepEqual(summary(rec.record([sample("a", "spot", 3)])), ["4 a/spot=3"]);
  });

  it("marks no gap when core restarts within one bucket", () => {
    const clock = new FakeClock(T0 + MIN + 1_000);
    const rec = new SeriesRecorder({ clusterId: "c1", stepMs: MIN, clock });
    rec.resume(T0 + 30_000, [{ nodePool: "a", capacityType: "spot" }]);
    assert.equal(rec.openGap(), undefined);
    assert.deepEqual(summary(rec.record([sample("a", "spot", 1)])), ["1 a/spot=1"]);
  });

  it("rejects bad samples with a clear error and keeps its state", () => {
    const clock = new FakeClock(T0);
    const rec = new SeriesRecorder({ clusterId: "c1", stepMs: MIN, clock });
    assert.throws(
      () => rec.record([{ ...sample("a", "spot", 1), vcpu: Number.NaN }]),
      /vcpu must be a finite/,
    );
    assert.throws(() => rec.record([sample("a", "spot", 1), sample("a", "spot", 2)]), /twice/);
    assert.throws(() => rec.record([{ ...sample("a", "spot", 1), nodePool: "" }]), /nodePool is required/);
    assert.equal(rec.lastTs, undefined);
    assert.equal(rec.record([sample("a", "spot", 1)]).length, 1);
  });
});

/**
 * A sampler of one-minute steps on a fake clock 5 s into T0's first minute, collecting the rows it
 * writes (a write fails, without being collected, while `writeFails()`); `stop` ends it.
 */
function minuteSampler(
  opts: Pick<ClusterSamplerOptions, "clusters" | "snapshot" | "latest"> & { writeFails?: () => boolean },
): { clock: FakeClock; written: SeriesRow[]; stop: () => Promise<void> } {
  const { writeFails, ...sources } = opts;
  const clock = new FakeClock(T0 + 5_000);
  const written: SeriesRow[] = [];
  const ac = new AbortController();
  const done = runClusterSampler({
    stepMs: MIN,
    clock,
    log: silentLogger,
    signal: ac.signal,
    ...sources,
    write: (rows) => {
      if (writeFails?.()) return Promise.reject(new Error("store down"));
      written.push(...rows);
      return Promise.resolve();
    },
  });
  const stop = async (): Promise<void> => {
    ac.abort();
    await done;
  };
  return { clock, written, stop };
}

describe("runClusterSampler", () => {
  it("samples at each step boundary, marks a disconnection as a gap and retries failed writes", async () => {
    let live = true;
    let failWrites = false;
    const { clock, written, stop } = minuteSampler({
      clusters: () => ["c1"],
      snapshot: () => (live ? [sample("a", "spot", 1)] : undefined),
      latest: () => Promise.resolve(undefined),
      writeFails: () => failWrites,
    });
    await clock.advance(MIN); // minute 1
    await clock.advance(MIN); // minute 2
    live = false;
    await clock.advance(4 * MIN); // minutes 3..6: disconnected
    live = true;
    failWrites = true;
    await clock.advance(MIN); // minute 7: recorded, write fails
    failWrites = false;
    await clock.advance(MIN); // minute 8: both written
    await stop();
    assert.deepEqual(summary(written), ["1 a/spot=1", "2 a/spot=1", "gap 3..7", "7 a/spot=1", "8 a/spot=1"]);
  });

  it("keeps one series per cluster; a cluster taken over resumes from what the store holds", async () => {
    let owned = ["c1", "c2"];
    const stored = new Map<string, { ts: number; series: { nodePool: string; capacityType: string }[] }>();
    const { clock, written, stop } = minuteSampler({
      clusters: () => owned,
      snapshot: (id) => [sample(id === "c1" ? "a" : "b", "spot", id === "c1" ? 1 : 2)],
      latest: (id) => Promise.resolve(stored.get(id)),
    });
    await clock.advance(MIN); // minute 1: both
    owned = ["c1"]; // c2 now owned by another replica, which records minutes 2 and 3
    await clock.advance(MIN);
    await clock.advance(MIN);
    stored.set("c2", { ts: T0 + 3 * MIN, series: [{ nodePool: "b", capacityType: "spot" }] });
    owned = ["c1", "c2"]; // back: continues after minute 3 without a gap
    await clock.advance(MIN);
    await stop();
    const of = (id: string): string[] => summary(written.filter((r) => r.clusterId === id));
    assert.deepEqual(of("c1"), ["1 a/spot=1", "2 a/spot=1", "3 a/spot=1", "4 a/spot=1"]);
    assert.deepEqual(of("c2"), ["1 b/spot=2", "4 b/spot=2"]);
  });
});
