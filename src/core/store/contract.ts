// The contract every Store backend must pass. sqlite.test.ts and postgres.test.ts run this same
// function against their backend; a behaviour tested here is a behaviour both backends share.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { downsample } from "../history/downsample.ts";
import type { RetentionPolicy } from "../history/downsample.ts";
import type { SeriesGap, SeriesPoint, SeriesRow } from "../history/series.ts";
import type { MigrateResult } from "./migrations.ts";
import { StoreInputError } from "./store.ts";
import type {
  Disruption,
  LifecycleEvent,
  AuditEntry,
  ClusterLease,
  SpotLateAnswer,
  SpotRepair,
  Store,
  StoredWarmupEvent,
  WorkloadPodsRow,
  WriteBatch,
} from "./store.ts";

export interface StoreHarness {
  /** Opens (or re-opens) the same database. */
  open(retention?: RetentionPolicy): Promise<{ store: Store; migrations: MigrateResult }>;
  /** Removes the database. */
  dispose(): Promise<void>;
}

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 0, 1);

/** Small tiers so a test can cover every stage quickly. */
const smallRetention: RetentionPolicy = {
  tiers: [
    { stepMs: MIN, retainMs: HOUR },
    { stepMs: 5 * MIN, retainMs: 6 * HOUR },
    { stepMs: HOUR, retainMs: 2 * DAY },
  ],
  eventRetainMs: DAY,
};

function event(
  uid: string,
  phase: LifecycleEvent["phase"],
  at: number,
  nodePool = "general",
): LifecycleEvent {
  return { clusterId: "c1", nodeClaim: `nc-${uid}`, nodeClaimUid: uid, nodePool, phase, at };
}

function point(minute: number, nodes: number, capacityType = "spot", nodePool = "general"): SeriesPoint {
  return {
    kind: "point",
    clusterId: "c1",
    nodePool,
    capacityType,
    ts: T0 + minute * MIN,
    resolutionMs: MIN,
    nodes,
    vcpu: nodes * 4,
    memoryBytes: nodes * 16 * 2 ** 30,
    costPerHour: nodes * 0.0731,
    nodesMax: nodes,
    samples: 1,
  };
}

function gap(fromMin: number, untilMin: number): SeriesGap {
  return {
    kind: "gap",
    clusterId: "c1",
    ts: T0 + fromMin * MIN,
    until: T0 + untilMin * MIN,
    resolutionMs: MIN,
  };
}

/**
 * Writes a batch of Event rows of one kind (repairs or late answers) with its checkpoint: every
 * row is new and the checkpoint kept; sent again (a snapshot after a reconnect) none is new, so
 * each Event counts once; a batch without that kind reports no count for it.
 */
/** A spot repair row of cluster c1 (an Evict of web's pod), as `e` overrides it. */
function repair(e: Partial<SpotRepair> & { event: string; at: number }): SpotRepair {
  return {
    clusterId: "c1",
    workload: "shop/Deployment/web",
    action: "Evict",
    pod: "shop/web-1",
    type: "Normal",
    message: "on spot, its slot is on-demand",
    ...e,
  };
}

/** A late-answer row of cluster c1 (one answer for web), as `e` overrides it. */
function lateAnswer(e: Partial<SpotLateAnswer> & { event: string; at: number }): SpotLateAnswer {
  return {
    clusterId: "c1",
    workload: "shop/Deployment/web",
    count: 1,
    ...e,
  };
}

async function assertWrittenOnce(
  store: Store,
  batch: WriteBatch,
  kind: "repairs" | "lateAnswers",
): Promise<void> {
  const first = await store.write(batch);
  assert.equal(first[kind], batch[kind]?.length);
  assert.equal(first.checkpoint?.sequence, batch.checkpoint?.sequence);
  const again: WriteBatch =
    kind === "repairs" ? { repairs: batch.repairs } : { lateAnswers: batch.lateAnswers };
  assert.equal((await store.write(again))[kind], 0);
  assert.equal((await store.write({}))[kind], undefined);
}

function samplesOf(rows: SeriesRow[]): number {
  return rows.reduce((n, r) => n + (r.kind === "point" ? r.samples : 0), 0);
}

function assertSameRows(actual: SeriesRow[], expected: SeriesRow[]): void {
  assert.equal(actual.length, expected.length, "row count");
  actual.forEach((a, i) => {
    const e = expected[i];
    assert.ok(e);
    assert.equal(a.kind, e.kind);
    assert.equal(a.ts, e.ts);
    assert.equal(a.resolutionMs, e.resolutionMs);
    if (a.kind === "point" && e.kind === "point") {
      assert.equal(a.nodePool, e.nodePool);
      assert.equal(a.capacityType, e.capacityType);
      assert.equal(a.samples, e.samples);
      assert.equal(a.nodesMax, e.nodesMax);
      for (const f of ["nodes", "vcpu", "memoryBytes", "costPerHour"] as const) {
        assert.ok(Math.abs(a[f] - e[f]) <= 1e-9 * Math.max(1, Math.abs(e[f])), `${f}: ${a[f]} vs ${e[f]}`);
      }
    } else if (a.kind === "gap" && e.kind === "gap") {
      assert.equal(a.until, e.until);
    }
  });
}

/** Runs `check` on a new handle on the store's database (see withStore). */
type Reopen = (check: (reopened: Store) => Promise<void>) => Promise<void>;

export function storeContract(
  name: string,
  makeHarness: () => Promise<StoreHarness>,
  opts: { skip?: string | undefined } = {},
): void {
  void describe(`Store contract: ${name}`, { skip: opts.skip ?? false }, () => {
    const withStore = async (
      fn: (store: Store, reopen: Reopen, h: StoreHarness) => Promise<void>,
      retention?: RetentionPolicy,
    ): Promise<void> => {
      const h = await makeHarness();
      const { store } = await h.open(retention);
      // Closes the store and runs `check` on a new handle on the same database, with the same
      // retention: what a restart of core keeps.
      const reopen: Reopen = async (check) => {
        await store.close();
        const { store: reopened } = await h.open(retention);
        try {
          await check(reopened);
        } finally {
          await reopened.close();
        }
      };
      try {
        await fn(store, reopen, h);
      } finally {
        await store.close();
        await h.dispose();
      }
    };

    void it("applies migrations once; re-opening applies none and keeps the data", async () => {
      const h = await makeHarness();
      try {
        const first = await h.open();
        assert.deepEqual(first.migrations.applied, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
        await first.store.putPolicy("c1", "spot", "p", { a: 1 }, T0);
        await first.store.close();
        const second = await h.open();
        assert.deepEqual(second.migrations, { applied: [], version: 14 });
        assert.deepEqual((await second.store.getPolicy("c1", "spot", "p"))?.value, { a: 1 });
        await second.store.close();
      } finally {
        await h.dispose();
      }
    });

    void it("records clusters from hellos: firstSeen kept, lastSeen never moves back", async () => {
      await withStore(async (store) => {
        const a = await store.upsertCluster({ id: "c1", name: "prod", versions: { agent: "0.1.0" }, at: T0 });
        assert.deepEqual(a, {
          id: "c1",
          name: "prod",
          firstSeen: T0,
          lastSeen: T0,
          versions: { agent: "0.1.0" },
        });
        const b = await store.upsertCluster({
          id: "c1",
          name: "prod-eu",
          versions: { agent: "0.2.0", karpenter: "1.4.0" },
          at: T0 + HOUR,
        });
        assert.deepEqual(b, {
          id: "c1",
          name: "prod-eu",
          firstSeen: T0,
          lastSeen: T0 + HOUR,
          versions: { agent: "0.2.0", karpenter: "1.4.0" },
        });
        const late = await store.upsertCluster({ id: "c1", name: "prod-eu", versions: {}, at: T0 + MIN });
        assert.equal(late.lastSeen, T0 + HOUR);
        await store.upsertCluster({ id: "c0", name: "dev", versions: {}, at: T0 });
        assert.deepEqual(
          (await store.listClusters()).map((c) => c.id),
          ["c0", "c1"],
        );
        assert.equal(await store.getCluster("nope"), undefined);
        await assert.rejects(
          store.upsertCluster({ id: "", name: "x", versions: {}, at: T0 }),
          StoreInputError,
        );
      });
    });

    void it("stores lifecycle events once, whatever is resent", async () => {
      await withStore(async (store) => {
        const full: LifecycleEvent = {
          ...event("u1", "Launched", T0 + 1000),
          nodeName: "ip-10-0-0-1",
          instanceType: "m5.large",
          capacityType: "spot",
          zone: "eu-west-1a",
          reason: "provisioning",
        };
        const batch = [full, event("u1", "Registered", T0 + 2000), event("u2", "Launched", T0 + 3000, "gpu")];
        assert.equal((await store.write({ lifecycle: batch })).lifecycle, 3);
        // A reconnect resends the same events; a re-derivation sends Launched again with another time.
        const again = await store.write({ lifecycle: [...batch, event("u1", "Launched", T0 + 9000)] });
        assert.equal(again.lifecycle, 0);
        const all = await store.lifecycle({ clusterId: "c1", from: T0, to: T0 + HOUR });
        assert.deepEqual(all, batch);
        const gpu = await store.lifecycle({ clusterId: "c1", from: T0, to: T0 + HOUR, nodePool: "gpu" });
        assert.deepEqual(
          gpu.map((e) => e.nodeClaimUid),
          ["u2"],
        );
        const window = await store.lifecycle({ clusterId: "c1", from: T0 + 2000, to: T0 + 3000 });
        assert.deepEqual(
          window.map((e) => e.phase),
          ["Registered"],
        );
        assert.equal(
          (await store.lifecycle({ clusterId: "c1", from: T0, to: T0 + HOUR, limit: 1 })).length,
          1,
        );
        assert.deepEqual(await store.lifecycle({ clusterId: "c2", from: T0, to: T0 + HOUR }), []);
      });
    });

    void it("stores a disruption once even when an Event and a condition both report it", async () => {
      await withStore(async (store) => {
        const d: Disruption = {
          clusterId: "c1",
          nodeClaim: "nc-1",
          nodePool: "general",
          reason: "Underutilized",
          at: T0 + 5000,
          source: "event",
        };
        assert.equal((await store.write({ disruptions: [d] })).disruptions, 1);
        const dup = await store.write({ disruptions: [d, { ...d, source: "condition", at: T0 + 6000 }] });
        assert.equal(dup.disruptions, 0);
        const other = {
          ...d,
          nodeClaim: "nc-2",
          reason: "Drifted",
          nodePool: "gpu",
          source: "condition" as const,
        };
        assert.equal((await store.write({ disruptions: [other] })).disruptions, 1);
        assert.deepEqual(await store.disruptions({ clusterId: "c1", from: T0, to: T0 + HOUR }), [d, other]);
        assert.deepEqual(
          await store.disruptions({ clusterId: "c1", from: T0, to: T0 + HOUR, nodePool: "gpu" }),
          [other],
        );
      });
    });

    void it("finds a NodeClaim's whole lifecycle by its name or its node's, the newest of a reused name", async () => {
      await withStore(async (store) => {
        const row = (
          uid: string,
          phase: LifecycleEvent["phase"],
          at: number,
          nodeName?: string,
        ): LifecycleEvent => ({
          clusterId: "c1",
          nodeClaim: "nc-a",
          nodeClaimUid: uid,
          nodePool: "general",
          phase,
          at,
          ...(nodeName ? { nodeName } : {}),
        });
        const older = [row("u-old", "Launched", T0), row("u-old", "Terminated", T0 + 1000)];
        const newer = [
          row("u-new", "Launched", T0 + 5000),
          row("u-new", "Registered", T0 + 6000, "node-a"),
          row("u-new", "Terminated", T0 + 9000, "node-a"),
        ];
        await store.write({
          lifecycle: [...older, ...newer, { ...row("u-c2", "Launched", T0 + 9999), clusterId: "c2" }],
        });
        const phases = (rows: LifecycleEvent[]) => rows.map((r) => [r.nodeClaimUid, r.phase]);
        assert.deepEqual(phases(await store.nodeClaimLifecycle("c1", "nc-a")), phases(newer));
        assert.deepEqual(phases(await store.nodeClaimLifecycle("c1", "node-a")), phases(newer));
        assert.deepEqual(await store.nodeClaimLifecycle("c1", "nope"), []);
      });
    });

    void it("counts disruptions per pool and reason exactly, past any page size", async () => {
      await withStore(async (store) => {
        const rows: Disruption[] = [];
        for (let i = 0; i < 1485; i++) {
          rows.push({
            clusterId: "c1",
            nodeClaim: `nc-${i}`,
            nodePool: i % 3 === 0 ? "batch" : "general",
            reason: i % 5 === 0 ? "Drifted" : "Underutilized",
            at: T0 + i * 1000,
            source: "event",
          });
        }
        const first = rows[0];
        assert.ok(first);
        rows.push({ ...first, clusterId: "c2" });
        await store.write({ disruptions: rows });
        const all = await store.disruptionCounts({ clusterId: "c1", from: T0, to: T0 + 2 * HOUR });
        assert.equal(
          all.reduce((n, c) => n + c.count, 0),
          1485,
        );
        const expect = (pool: string, reason: string): number =>
          rows.filter((r) => r.clusterId === "c1" && r.nodePool === pool && r.reason === reason).length;
        assert.deepEqual(all, [
          { nodePool: "batch", reason: "Drifted", count: expect("batch", "Drifted") },
          { nodePool: "batch", reason: "Underutilized", count: expect("batch", "Underutilized") },
          { nodePool: "general", reason: "Drifted", count: expect("general", "Drifted") },
          { nodePool: "general", reason: "Underutilized", count: expect("general", "Underutilized") },
        ]);
        const batch = await store.disruptionCounts({
          clusterId: "c1",
          from: T0,
          to: T0 + 1000,
          nodePool: "batch",
        });
        assert.deepEqual(batch, [{ nodePool: "batch", reason: "Drifted", count: 1 }]);
      });
    });

    void it("commits rows and checkpoint together; checkpoints only move forward within an epoch", async () => {
      await withStore(async (store, reopen, h) => {
        const cp = (sequence: number, epoch = "e1") => ({
          clusterId: "c1",
          epoch,
          sequence,
          at: T0 + sequence,
        });
        const r1 = await store.write({ lifecycle: [event("u1", "Launched", T0)], checkpoint: cp(10) });
        assert.deepEqual(r1.checkpoint, { clusterId: "c1", epoch: "e1", sequence: 10, updatedAt: T0 + 10 });
        const r2 = await store.write({ checkpoint: cp(7) }); // a late, already-acked batch
        assert.equal(r2.checkpoint?.sequence, 10);
        assert.equal((await store.write({ checkpoint: cp(11) })).checkpoint?.sequence, 11);
        const restarted = await store.write({ checkpoint: cp(1, "e2") }); // agent restarted
        assert.deepEqual(restarted.checkpoint, {
          clusterId: "c1",
          epoch: "e2",
          sequence: 1,
          updatedAt: T0 + 1,
        });

        // A bad row anywhere in a batch: nothing is written, the checkpoint does not move.
        await assert.rejects(
          store.write({
            lifecycle: [event("u9", "Launched", T0)],
            series: [point(0, 1), { ...point(1, 1), nodes: -1 }],
            checkpoint: cp(2, "e2"),
          }),
          (err: unknown) =>
            err instanceof StoreInputError && /nodes must be a finite number/.test(err.message),
        );
        assert.equal((await store.checkpoint("c1"))?.sequence, 1);
        assert.equal((await store.lifecycle({ clusterId: "c1", from: T0, to: T0 + HOUR })).length, 1);
        assert.deepEqual(await store.series({ clusterId: "c1", from: T0, to: T0 + HOUR }), []);
        assert.equal(await store.checkpoint("c2"), undefined);

        // The checkpoint survives a restart of core.
        await reopen(async (reopened) => {
          assert.equal((await reopened.checkpoint("c1"))?.sequence, 1);
        });
        await (await h.open()).store.close();
      });
    });

    void it("stores series points and cluster-wide gap markers; resends are ignored", async () => {
      await withStore(async (store) => {
        const rows: SeriesRow[] = [
          point(0, 2),
          point(0, 1, "on-demand"),
          point(1, 3),
          point(1, 1, "on-demand"),
          gap(2, 6),
          point(6, 5),
          point(6, 1, "on-demand"),
          point(6, 7, "spot", "gpu"),
        ];
        assert.equal((await store.write({ series: rows })).series, rows.length);
        assert.equal((await store.write({ series: rows })).series, 0);

        const all = await store.series({ clusterId: "c1", from: T0, to: T0 + HOUR });
        assertSameRows(all, downsample(rows, MIN));
        assert.ok(all.some((r) => r.kind === "gap" && r.ts === T0 + 2 * MIN && r.until === T0 + 6 * MIN));

        // Filters keep the (cluster-wide) gap.
        const spotGeneral = await store.series({
          clusterId: "c1",
          from: T0,
          to: T0 + HOUR,
          nodePool: "general",
          capacityType: "spot",
        });
        assert.deepEqual(
          spotGeneral.map((r) => (r.kind === "gap" ? "gap" : `${(r.ts - T0) / MIN}:${r.nodes}`)),
          ["0:2", "1:3", "gap", "6:5"],
        );
        // Coarser steps re-bucket with sample weights; the gap is never filled.
        const fiveMin = await store.series({ clusterId: "c1", from: T0, to: T0 + HOUR, stepMs: 5 * MIN });
        assertSameRows(fiveMin, downsample(rows, 5 * MIN));
        const first = fiveMin.find(
          (r) => r.kind === "point" && r.capacityType === "spot" && r.nodePool === "general",
        );
        assert.ok(first?.kind === "point");
        assert.equal(first.nodes, 2.5);
        assert.equal(first.samples, 2);

        assert.deepEqual(await store.latestSeries("c1"), {
          ts: T0 + 6 * MIN,
          series: [
            { nodePool: "general", capacityType: "on-demand" },
            { nodePool: "general", capacityType: "spot" },
            { nodePool: "gpu", capacityType: "spot" },
          ],
        });
        assert.equal(await store.latestSeries("c2"), undefined);
        await assert.rejects(store.series({ clusterId: "c1", from: T0 + 1, to: T0 }), StoreInputError);
        await assert.rejects(store.series({ clusterId: "c1", from: 0, to: T0, stepMs: 1 }), /larger stepMs/);
      });
    });

    void it("rolls up, applies retention, and never double-counts or loses a sample", async () => {
      await withStore(async (store) => {
        // Three hours of raw minutes for two series, with the agent down for minutes 70..83.
        const rows: SeriesRow[] = [];
        for (let m = 0; m < 180; m++) {
          if (m >= 70 && m < 83) continue;
          rows.push(point(m, 1 + (m % 7)), point(m, m % 3, "on-demand"));
        }
        rows.push(gap(70, 83));
        await store.write({ series: rows });
        await store.write({
          lifecycle: [event("old", "Launched", T0), event("new", "Launched", T0 + 2 * DAY)],
          disruptions: [
            {
              clusterId: "c1",
              nodeClaim: "nc-old",
              nodePool: "general",
              reason: "Empty",
              at: T0,
              source: "event",
            },
          ],
        });
        const written = samplesOf(rows);
        const everything = { clusterId: "c1", from: T0 - DAY, to: T0 + 10 * DAY };

        let now = T0 + 180 * MIN + 30_000;
        const c1 = await store.compact(now);
        // Buckets that ended over 2 min (the default delay) ago: 5 min buckets up to minute 175 —
        // 35 × 2 series minus 2 × 2 wholly in the gap, plus the gap — and hours 0 and 1.
        assert.equal(c1.rolledUp[5 * MIN], (35 - 2) * 2 + 1);
        assert.equal(c1.rolledUp[HOUR], 2 * 2 + 1);
        // Raw rows before now - 1 h (aligned to 5 min) are gone: minutes 0..119 minus the gap, and the gap.
        assert.equal(c1.deleted[MIN], (120 - 13) * 2 + 1);
        assert.equal(c1.deletedEvents, 0);

        // The tiers hold exactly what the pure downsampler computes from the raw rows.
        const fiveMin = await store.series({ ...everything, from: T0, to: T0 + 120 * MIN, stepMs: 5 * MIN });
        assertSameRows(
          fiveMin,
          downsample(
            rows.filter((r) => r.ts < T0 + 120 * MIN),
            5 * MIN,
          ),
        );
        const hourly = await store.series({ ...everything, stepMs: HOUR });
        assertSameRows(hourly, downsample(rows, HOUR));
        // A raw-step query reads 5 min rows where raw ones are gone, raw rows after: every sample once.
        const mixed = await store.series(everything);
        assert.equal(samplesOf(mixed), written);
        assert.equal(mixed.filter((r) => r.kind === "point" && r.resolutionMs === MIN).length, 60 * 2);
        assert.equal(mixed.filter((r) => r.kind === "gap").length, 1);

        // Compacting again at the same time changes nothing.
        const c2 = await store.compact(now);
        assert.deepEqual(c2.deleted, { [MIN]: 0, [5 * MIN]: 0, [HOUR]: 0 });
        assert.deepEqual(c2.rolledUp, { [5 * MIN]: 0, [HOUR]: 0 });
        assertSameRows(await store.series(everything), mixed);

        // A day later: raw and 5 min rows are gone, the hourly rows still hold every sample.
        now = T0 + DAY + 12 * HOUR;
        const c3 = await store.compact(now);
        assert.equal(c3.deletedEvents, 2);
        const later = await store.series(everything);
        assert.equal(samplesOf(later), written);
        assertSameRows(later, downsample(rows, HOUR));
        assert.deepEqual(
          (await store.lifecycle(everything)).map((e) => e.nodeClaimUid),
          ["new"],
        );
        assert.deepEqual(await store.disruptions(everything), []);

        // Past the last tier's retention nothing is left, not even the gap.
        await store.compact(T0 + 5 * DAY);
        assert.deepEqual(await store.series(everything), []);
      }, smallRetention);
    });

    void it("carries a gap written after a long outage into every tier, though compaction went on", async () => {
      await withStore(async (store) => {
        await store.write({ series: Array.from({ length: 10 }, (_, m) => point(m, 2)) });
        await store.compact(T0 + 10 * MIN);
        await store.compact(T0 + 60 * MIN); // the agent is away: nothing new, but time moves on
        // The agent is back at minute 60: the recorder writes the gap and the new point.
        await store.write({ series: [gap(10, 60), point(60, 3)] });
        await store.compact(T0 + 70 * MIN);
        const fiveMin = await store.series({ clusterId: "c1", from: T0, to: T0 + 65 * MIN, stepMs: 5 * MIN });
        assert.deepEqual(
          fiveMin.map((r) => (r.kind === "gap" ? `gap ${(r.ts - T0) / MIN}..${(r.until - T0) / MIN}` : r.ts)),
          [T0, T0 + 5 * MIN, "gap 10..60", T0 + 60 * MIN],
        );
        // Hours later only the hourly tier is left, and it still has the gap.
        await store.compact(T0 + 3 * HOUR);
        await store.compact(T0 + 8 * HOUR);
        const hourly = await store.series({ clusterId: "c1", from: T0, to: T0 + 8 * HOUR });
        assert.deepEqual(
          hourly.map((r) => `${r.kind}@${(r.ts - T0) / MIN}/${r.resolutionMs / MIN}`),
          ["point@0/60", "gap@10/60", "point@60/60"],
        );
        assert.equal(samplesOf(hourly), 11);
      }, smallRetention);
    });

    void it("waits rollupDelayMs before rolling a bucket up, so a slightly late row still counts", async () => {
      await withStore(async (store) => {
        await store.write({ series: [0, 1, 2, 3].map((m) => point(m, m)) });
        // 30 s after the bucket ended: within the default delay of two raw steps.
        assert.equal((await store.compact(T0 + 5 * MIN + 30_000)).rolledUp[5 * MIN], 0);
        await store.write({ series: [point(4, 9)] }); // the late row
        assert.equal((await store.compact(T0 + 8 * MIN)).rolledUp[5 * MIN], 1);
        const [bucket] = await store.series({ clusterId: "c1", from: T0, to: T0 + 5 * MIN, stepMs: 5 * MIN });
        assert.ok(bucket?.kind === "point");
        assert.equal(bucket.resolutionMs, 5 * MIN);
        assert.equal(bucket.samples, 5);
        assert.equal(bucket.nodesMax, 9);
      }, smallRetention);
    });

    void it("keeps spot repairs with the batch's checkpoint, once per Event, by cluster, range and workload", async () => {
      await withStore(async (store, reopen) => {
        const rows = [
          repair({ event: "u1", at: T0 }),
          repair({ event: "u2", at: T0 + MIN, action: "EvictBlocked", type: "Warning" }),
          repair({ event: "u3", at: T0 + 2 * MIN, workload: "shop/StatefulSet/db", pod: "shop/db-0" }),
          repair({ event: "u4", at: T0 + MIN, clusterId: "c2" }),
        ];
        const cp = { clusterId: "c1", epoch: "e", sequence: 3, at: T0 };
        await assertWrittenOnce(store, { repairs: rows, checkpoint: cp }, "repairs");

        const all = { clusterId: "c1", from: T0, to: T0 + DAY };
        assert.deepEqual(await store.spotRepairs(all), rows.slice(0, 3));
        assert.deepEqual(
          (await store.spotRepairs({ ...all, workload: "shop/Deployment/web" })).map((x) => x.event),
          ["u1", "u2"],
        );
        assert.deepEqual(
          (await store.spotRepairs({ ...all, from: T0 + MIN, to: T0 + 2 * MIN })).map((x) => x.event),
          ["u2"],
        );
        assert.equal((await store.spotRepairs({ ...all, limit: 1 })).length, 1);
        assert.deepEqual(
          (await store.spotRepairs({ ...all, clusterId: "c2" })).map((x) => x.event),
          ["u4"],
        );
        // A bad row fails the whole batch, checkpoint included.
        await assert.rejects(
          store.write({
            repairs: [
              repair({ event: "u5", at: T0 }),
              { ...repair({ event: "u6", at: T0 }), type: "Info" as "Normal" },
            ],
            checkpoint: { ...cp, sequence: 4 },
          }),
          StoreInputError,
        );
        assert.equal((await store.checkpoint("c1"))?.sequence, 3);
        assert.equal((await store.spotRepairs(all)).length, 3);

        await reopen(async (reopened) => {
          assert.deepEqual(await reopened.spotRepairs(all), rows.slice(0, 3));
          // Retention as for lifecycle rows (a day here).
          await reopened.compact(T0 + DAY + 30 * MIN);
          assert.deepEqual(await reopened.spotRepairs(all), []);
        });
      }, smallRetention);
    });

    void it("keeps late answers once per Event with the batch's checkpoint and sums them per workload over a range", async () => {
      await withStore(async (store, reopen) => {
        const rows = [
          lateAnswer({ event: "l1", at: T0, count: 3 }),
          lateAnswer({ event: "l2", at: T0 + MIN, count: 2 }),
          lateAnswer({ event: "l3", at: T0 + MIN, workload: "shop/StatefulSet/db" }),
          lateAnswer({ event: "l4", at: T0 + MIN, clusterId: "c2", count: 7 }),
        ];
        const cp = { clusterId: "c1", epoch: "e", sequence: 5, at: T0 };
        await assertWrittenOnce(store, { lateAnswers: rows, checkpoint: cp }, "lateAnswers");

        const all = { clusterId: "c1", from: T0, to: T0 + DAY };
        assert.deepEqual(await store.spotLateAnswers(all), [
          { workload: "shop/Deployment/web", count: 5 },
          { workload: "shop/StatefulSet/db", count: 1 },
        ]);
        // [from, to): the minute-old Events only.
        assert.deepEqual(await store.spotLateAnswers({ ...all, from: T0 + 1 }), [
          { workload: "shop/Deployment/web", count: 2 },
          { workload: "shop/StatefulSet/db", count: 1 },
        ]);
        assert.deepEqual(await store.spotLateAnswers({ ...all, to: T0 + MIN }), [
          { workload: "shop/Deployment/web", count: 3 },
        ]);
        assert.deepEqual(await store.spotLateAnswers({ ...all, clusterId: "c2" }), [
          { workload: "shop/Deployment/web", count: 7 },
        ]);
        // A bad row fails the whole batch, checkpoint included.
        await assert.rejects(
          store.write({
            lateAnswers: [lateAnswer({ event: "l5", at: T0 }), lateAnswer({ event: "l6", at: T0, count: 0 })],
            checkpoint: { ...cp, sequence: 6 },
          }),
          StoreInputError,
        );
        assert.equal((await store.checkpoint("c1"))?.sequence, 5);

        await reopen(async (reopened) => {
          assert.equal((await reopened.spotLateAnswers(all)).length, 2);
          // Retention as for lifecycle rows (a day here).
          await reopened.compact(T0 + DAY + 30 * MIN);
          assert.deepEqual(await reopened.spotLateAnswers(all), []);
        });
      }, smallRetention);
    });

    void it("keeps the audit of changes made through Wave per cluster, newest first, paged, and refuses bad entries", async () => {
      await withStore(async (store, reopen) => {
        const e = (at: number, over: Partial<AuditEntry> = {}): AuditEntry => ({
          clusterId: "c1",
          at,
          subject: "ann@example.com",
          groups: ["wave-admins"],
          source: "oidc",
          via: "ui",
          address: "10.0.0.7",
          action: "spot-policy.put",
          object: "SpotPolicy shop/Deployment/web",
          before: null,
          after: '{"threshold":2}',
          ...over,
        });
        const a = await store.appendAudit(e(T0));
        const b = await store.appendAudit(
          e(T0 + MIN, { before: '{"threshold":2}', after: null, via: "cli" }),
        );
        await store.appendAudit(e(T0 + MIN, { clusterId: "c2", subject: "token:admin", groups: [] }));
        assert.ok(b.id > a.id);
        assert.deepEqual(await store.listAudit({ clusterId: "c1", limit: 10 }), [b, a]);
        assert.deepEqual(await store.listAudit({ clusterId: "c1", limit: 1 }), [b]);
        assert.deepEqual(await store.listAudit({ clusterId: "c1", limit: 10, before: b.id }), [a]);
        assert.deepEqual(
          (await store.listAudit({ clusterId: "c2", limit: 10 })).map((r) => [r.subject, r.groups]),
          [["token:admin", []]],
        );
        await assert.rejects(store.appendAudit(e(T0, { subject: "" })), StoreInputError);
        await assert.rejects(store.appendAudit(e(T0, { after: "x".repeat(5000) })), StoreInputError);
        await reopen(async (reopened) => {
          assert.equal((await reopened.listAudit({ clusterId: "c1", limit: 10 })).length, 2);
        });
      });
    });

    void it("keeps console sessions by the hash of their id until they expire, across a reopen (every replica sees them)", async () => {
      await withStore(async (store, reopen) => {
        const hash = (c: string): string => c.repeat(64);
        const s1 = {
          idHash: hash("a"),
          subject: "ann@example.com",
          name: "Ann",
          groups: ["wave-admins"],
          expiresAt: T0 + HOUR,
        };
        await store.putSession(s1, T0);
        await store.putSession({ ...s1, idHash: hash("b"), expiresAt: T0 + MIN }, T0);
        assert.deepEqual(await store.getSession(hash("a"), T0), s1);
        assert.equal(await store.getSession(hash("b"), T0 + MIN), undefined, "expired");
        assert.equal(await store.getSession(hash("c"), T0), undefined);
        await assert.rejects(store.putSession({ ...s1, idHash: "raw-session-id" }, T0), StoreInputError);
        await reopen(async (reopened) => {
          assert.equal((await reopened.getSession(hash("a"), T0 + 1))?.subject, "ann@example.com");
          await reopened.deleteSession(hash("a"));
          assert.equal(await reopened.getSession(hash("a"), T0 + 1), undefined);
        });
      });
    });

    void it("appends warmup events once each, answers by cluster, range and pool, and retains them like lifecycle rows", async () => {
      await withStore(async (store, reopen) => {
        const w = (e: Omit<StoredWarmupEvent, "clusterId">, clusterId = "c1"): StoredWarmupEvent => ({
          clusterId,
          ...e,
        });
        const batch: StoredWarmupEvent[] = [
          w({ pool: "general", type: "created", at: T0, pod: "warm-1" }),
          w({
            pool: "general",
            type: "prepull",
            at: T0 + MIN,
            node: "n1",
            image: "nginx:1",
            reason: "pulled",
          }),
          w({
            pool: "general",
            type: "prepull",
            at: T0 + MIN,
            node: "n1",
            image: "redis:7",
            reason: "failed",
          }),
          w({
            pool: "general",
            type: "hit",
            at: T0 + 2 * MIN,
            node: "n1",
            pod: "apps/web-1",
            since: T0,
            seconds: 2.5,
            saved: 28.5,
          }),
          w({ pool: "gpu", type: "miss", at: T0 + 2 * MIN, pod: "warm-2", reason: "pool-deleted" }),
          w({ pool: "gpu", type: "miss", at: T0 + 2 * MIN, pod: "warm-3", reason: "pool-deleted" }),
          w({ pool: "general", type: "hit", at: T0 + 3 * MIN, node: "n1" }, "c2"),
        ];
        assert.equal(await store.writeWarmupEvents(batch), 7);
        // A re-sent batch (its ack was lost) adds nothing; a new event in it still lands.
        const later = w({ pool: "general", type: "miss", at: T0 + HOUR, node: "n2", reason: "ttl" });
        assert.equal(await store.writeWarmupEvents([...batch, later]), 1);
        assert.equal(await store.writeWarmupEvents([]), 0);

        const all = { clusterId: "c1", from: T0, to: T0 + DAY };
        const rows = await store.warmupEvents(all);
        assert.deepEqual(rows, [...batch.slice(0, 6), later]);
        assert.deepEqual(
          (await store.warmupEvents({ ...all, nodePool: "gpu" })).map((e) => e.pod),
          ["warm-2", "warm-3"],
        );
        // [from, to): the window's end is exclusive, its start inclusive.
        assert.deepEqual(
          (await store.warmupEvents({ ...all, from: T0 + MIN, to: T0 + 2 * MIN })).map((e) => e.image),
          ["nginx:1", "redis:7"],
        );
        assert.equal((await store.warmupEvents({ ...all, limit: 2 })).length, 2);
        assert.equal((await store.warmupEvents({ ...all, clusterId: "c2" })).length, 1);

        // Bad input fails the whole batch before anything is written.
        const bad = { ...later, at: T0 + 2 * HOUR, type: "boom" } as unknown as StoredWarmupEvent;
        await assert.rejects(
          store.writeWarmupEvents([w({ pool: "general", type: "hit", at: T0 + 2 * HOUR }), bad]),
          StoreInputError,
        );
        await assert.rejects(store.writeWarmupEvents([{ ...later, at: 1.5 }]), /integer epoch ms/);
        await assert.rejects(store.writeWarmupEvents([{ ...later, saved: -1 }]), /saved must be a number/);

        // Cold starts (issue 38): once per (cluster, pod, ready time), by cluster, range and pool.
        const cold = (pod: string, at: number, seconds: number, pool = "general") => ({
          clusterId: "c1",
          pool,
          pod,
          node: `n-${pod}`,
          at,
          seconds,
        });
        const starts = [
          cold("apps/a", T0, 31),
          cold("apps/b", T0 + MIN, 35.5),
          cold("apps/c", T0 + MIN, 40, "gpu"),
        ];
        assert.equal(await store.writeColdStarts(starts), 3);
        assert.equal(await store.writeColdStarts([...starts, cold("apps/d", T0 + 2 * MIN, 9)]), 1);
        assert.deepEqual(
          (await store.coldStarts({ ...all, nodePool: "general" })).map((r) => [r.pod, r.seconds]),
          [
            ["apps/a", 31],
            ["apps/b", 35.5],
            ["apps/d", 9],
          ],
        );
        assert.deepEqual(
          await store.coldStarts({ ...all, from: T0 + MIN, to: T0 + 2 * MIN }),
          starts.slice(1),
        );
        await assert.rejects(store.writeColdStarts([cold("apps/e", T0, -1)]), /seconds must be/);
        assert.equal((await store.warmupEvents(all)).length, 7);

        // Durable: a new handle on the same database answers the same rows.
        await reopen(async (reopened) => {
          assert.deepEqual(await reopened.warmupEvents(all), rows);
          // Retention follows lifecycle rows: older than eventRetainMs (a day here) goes.
          const c = await reopened.compact(T0 + DAY + 30 * MIN);
          assert.equal(c.deletedEvents, 7 + 4, "the warmup events and the cold starts");
          assert.deepEqual(await reopened.warmupEvents(all), [later]);
          assert.deepEqual(await reopened.coldStarts(all), []);
        });
      }, smallRetention);
    });

    void it("sums savings rows over a range per scope and name; resends are ignored; bad rows write nothing", async () => {
      await withStore(async (store) => {
        const row = (
          scope: "pool" | "workload",
          name: string,
          ts: number,
          actualUsd: number,
          onDemandUsd: number,
        ) => ({
          clusterId: "c1",
          scope,
          name,
          ts,
          stepMs: MIN,
          actualUsd,
          onDemandUsd,
        });
        const rows = [
          row("pool", "general", T0, 0.1, 0.25),
          row("pool", "general", T0 + MIN, 0.2, 0.5),
          row("pool", "batch", T0 + MIN, 1, 1),
          row("workload", "shop/Deployment/web", T0 + MIN, 0.05, 0.1),
          { ...row("pool", "general", T0, 9, 9), clusterId: "c2" },
        ];
        assert.equal(await store.writeSavings(rows), 5);
        assert.equal(await store.writeSavings(rows.slice(0, 2)), 0, "a resend adds nothing");
        const all = await store.savings({ clusterId: "c1", from: T0, to: T0 + 2 * MIN });
        const general = all.find((t) => t.scope === "pool" && t.name === "general");
        assert.ok(general);
        assert.ok(Math.abs(general.actualUsd - 0.3) < 1e-12 && Math.abs(general.onDemandUsd - 0.75) < 1e-12);
        assert.equal(general.buckets, 2);
        assert.deepEqual([general.from, general.to], [T0, T0 + 2 * MIN]);
        assert.deepEqual(
          all.map((t) => `${t.scope}:${t.name}`),
          ["pool:batch", "pool:general", "workload:shop/Deployment/web"],
        );
        const second = await store.savings({
          clusterId: "c1",
          from: T0 + MIN,
          to: T0 + 2 * MIN,
          nodePool: "general",
        });
        assert.deepEqual(
          second.map((t) => [t.name, t.actualUsd]),
          [
            ["general", 0.2],
            ["shop/Deployment/web", 0.05],
          ],
        );
        await assert.rejects(
          store.writeSavings([row("pool", "x", T0 + 5 * MIN, 1, 1), row("pool", "y", T0, -1, 1)]),
          StoreInputError,
        );
        assert.equal(
          (await store.savings({ clusterId: "c1", from: T0 + 5 * MIN, to: T0 + 6 * MIN })).length,
          0,
        );
      });
    });

    void it("keeps workload pod counts per bucket, per cluster; resends are ignored; bad rows write nothing", async () => {
      await withStore(async (store) => {
        const row = (workload: string, ts: number, pods: number, clusterId = "c1") => ({
          clusterId,
          workload,
          ts,
          stepMs: MIN,
          pods,
        });
        const rows = [
          row("shop/Deployment/web", T0 + MIN, 4),
          row("shop/Deployment/web", T0, 3),
          row("shop/StatefulSet/db", T0, 1),
          row("shop/Deployment/web", T0, 9, "c2"),
        ];
        assert.equal(await store.writeWorkloadPods(rows), 4);
        assert.equal(await store.writeWorkloadPods(rows.slice(0, 2)), 0, "a resend adds nothing");
        assert.deepEqual(await store.workloadPods({ clusterId: "c1", from: T0, to: T0 + 2 * MIN }), [
          row("shop/Deployment/web", T0, 3),
          row("shop/StatefulSet/db", T0, 1),
          row("shop/Deployment/web", T0 + MIN, 4),
        ]);
        assert.deepEqual(
          (await store.workloadPods({ clusterId: "c1", from: T0 + MIN, to: T0 + 2 * MIN })).map(
            (r) => r.pods,
          ),
          [4],
        );
        await assert.rejects(
          store.writeWorkloadPods([row("a/Deployment/x", T0 + 5 * MIN, 1), row("a/Deployment/y", T0, -1)]),
          StoreInputError,
        );
        assert.equal(
          (await store.workloadPods({ clusterId: "c1", from: T0 + 5 * MIN, to: T0 + 6 * MIN })).length,
          0,
        );
      });
    });

    void it("keeps each workload's newest revision and its pods beside the count (a rollout's surge)", async () => {
      await withStore(async (store) => {
        const before: WorkloadPodsRow = {
          clusterId: "c1",
          workload: "shop/Deployment/api",
          ts: T0,
          stepMs: MIN,
          pods: 4,
          revision: "7c9f",
          revisionPods: 4,
        };
        const rolling: WorkloadPodsRow = { ...before, ts: T0 + MIN, pods: 7, revision: "5d4b" };
        const none: WorkloadPodsRow = {
          clusterId: "c1",
          workload: "shop/Deployment/old",
          ts: T0,
          stepMs: MIN,
          pods: 2,
        };
        assert.equal(await store.writeWorkloadPods([before, rolling, none]), 3);
        assert.deepEqual(await store.workloadPods({ clusterId: "c1", from: T0, to: T0 + 2 * MIN }), [
          before,
          none,
          rolling,
        ]);
        for (const bad of [
          { ...before, revisionPods: 5 },
          { ...before, revision: "" },
          { ...none, revisionPods: 1 },
          { ...none, revision: "x" },
        ])
          await assert.rejects(store.writeWorkloadPods([{ ...bad, ts: T0 + 9 * MIN }]), StoreInputError);
      });
    });

    void it("keeps spot and warmup policies as JSON by key, per cluster", async () => {
      await withStore(async (store) => {
        const spot = { namespace: "web", selector: { app: "api" }, onDemandBase: 2, spotPercent: 50 };
        assert.deepEqual(await store.putPolicy("c1", "spot", "web/api", spot, T0), {
          clusterId: "c1",
          kind: "spot",
          key: "web/api",
          value: spot,
          updatedAt: T0,
        });
        await store.putPolicy("c1", "warmup", "general", { nodes: 1 }, T0);
        const updated = await store.putPolicy("c1", "spot", "web/api", { ...spot, spotPercent: 70 }, T0 + 1);
        assert.equal(updated.updatedAt, T0 + 1);
        assert.deepEqual((await store.getPolicy("c1", "spot", "web/api"))?.value, {
          ...spot,
          spotPercent: 70,
        });
        await store.putPolicy("c1", "spot", "a/b", [1, "two", null], T0);
        assert.deepEqual(
          (await store.listPolicies("c1", "spot")).map((p) => p.key),
          ["a/b", "web/api"],
        );
        assert.equal((await store.listPolicies("c1", "warmup")).length, 1);
        assert.equal(await store.deletePolicy("c1", "spot", "a/b"), true);
        assert.equal(await store.deletePolicy("c1", "spot", "a/b"), false);
        assert.equal(await store.getPolicy("c1", "spot", "a/b"), undefined);
        await assert.rejects(store.putPolicy("c1", "spot", "x", undefined, T0), /JSON-serialisable/);
        await assert.rejects(store.putPolicy("c1", "spot", "", {}, T0), StoreInputError);
        await assert.rejects(store.putPolicy("", "spot", "x", {}, T0), StoreInputError);

        // Another cluster's policies are its own: same key, other value, never listed with c1's.
        await store.putPolicy("c2", "spot", "web/api", { other: true }, T0 + 2);
        assert.deepEqual((await store.getPolicy("c2", "spot", "web/api"))?.value, { other: true });
        assert.deepEqual((await store.getPolicy("c1", "spot", "web/api"))?.value, {
          ...spot,
          spotPercent: 70,
        });
        assert.deepEqual(
          (await store.listPolicies("c2", "spot")).map((p) => [p.clusterId, p.key]),
          [["c2", "web/api"]],
        );
        assert.equal((await store.listPolicies("c2", "warmup")).length, 0);
        assert.equal(await store.deletePolicy("c2", "spot", "web/api"), true);
        assert.ok(await store.getPolicy("c1", "spot", "web/api"), "deleting c2's left c1's");
        assert.equal(await store.adoptPolicies("c1"), 0, "nothing without a cluster to adopt");
      });
    });

    void it("keeps policy CR revisions once per resourceVersion, newest first, and one migration mark per cluster", async () => {
      await withStore(async (store) => {
        const rev = (rv: string, at: number, threshold: number) => ({
          clusterId: "c1",
          kind: "SpotPolicy" as const,
          name: "shop/web",
          resourceVersion: rv,
          at,
          deleted: false,
          manager: "wave-console",
          changedBy: "token:admin",
          spec: { threshold },
        });
        assert.equal(await store.recordPolicyRevision(rev("5", T0, 1)), true);
        assert.equal(await store.recordPolicyRevision(rev("5", T0 + 9, 1)), false, "the same version again");
        await store.recordPolicyRevision({ ...rev("8", T0 + 1000, 2), deleted: true, manager: "kubectl" });
        await store.recordPolicyRevision({ ...rev("9", T0 + 2000, 3), clusterId: "c2" });
        assert.deepEqual(
          (await store.policyRevisions("c1", "SpotPolicy", "shop/web")).map((r) => [
            r.resourceVersion,
            r.deleted,
            r.manager,
            (r.spec as { threshold: number }).threshold,
          ]),
          [
            ["8", true, "kubectl", 2],
            ["5", false, "wave-console", 1],
          ],
        );
        // The changes made outside Wave: another field manager than Wave's own two.
        await store.recordPolicyRevision({ ...rev("10", T0 + 3000, 4), manager: "wave-status" });
        await store.recordPolicyRevision({
          ...rev("11", T0 + 4000, 5),
          name: "shop/db",
          manager: "argocd-controller",
        });
        assert.deepEqual(
          (await store.foreignPolicyRevisions("c1", ["wave-console", "wave-status"])).map((r) => [
            r.name,
            r.resourceVersion,
            r.manager,
          ]),
          [
            ["shop/db", "11", "argocd-controller"],
            ["shop/web", "8", "kubectl"],
          ],
        );
        assert.equal(
          (await store.foreignPolicyRevisions("c1", ["wave-console", "wave-status"], 1)).length,
          1,
        );
        assert.equal(await store.policyMigration("c1"), undefined);
        const mark = { clusterId: "c1", at: T0, created: 3, existed: 1 };
        assert.equal(await store.markPolicyMigration(mark), true);
        assert.equal(await store.markPolicyMigration({ ...mark, created: 0 }), false, "marked once");
        assert.deepEqual(await store.policyMigration("c1"), mark);
      });
    });

    void it("hands a cluster's lease to one holder at a time; the newest stream may take it", async () => {
      await withStore(async (store) => {
        const TTL = 15_000;
        const lease = (
          clusterId: string,
          holder: string,
          now: number,
          force = false,
        ): Promise<ClusterLease> =>
          store.acquireLease({
            clusterId,
            holder,
            url: `http://${holder.slice(-1)}:8080`,
            now,
            ttlMs: TTL,
            force,
          });
        const a = await lease("c1", "core-a", T0);
        assert.deepEqual(a, {
          clusterId: "c1",
          holder: "core-a",
          url: "http://a:8080",
          generation: 1,
          acquiredAt: T0,
          renewedAt: T0,
          expiresAt: T0 + TTL,
        });
        // Held and not expired: b does not get it without force, and sees a's lease.
        const refused = await lease("c1", "core-b", T0 + 1000);
        assert.equal(refused.holder, "core-a");
        assert.equal(refused.generation, 1);
        // a renews; b's renewal of a lease it does not hold changes nothing.
        assert.deepEqual(await store.renewLeases("core-a", ["c1", "c9"], T0 + 5000, TTL), ["c1"]);
        assert.deepEqual(await store.renewLeases("core-b", ["c1"], T0 + 5000, TTL), []);
        assert.equal((await store.leases())[0]?.expiresAt, T0 + 5000 + TTL);
        // Expired: anyone takes it, with a new generation.
        const b = await lease("c1", "core-b", T0 + 5000 + TTL);
        assert.equal(b.holder, "core-b");
        assert.equal(b.generation, 2);
        assert.equal(b.acquiredAt, T0 + 5000 + TTL);
        // a's renewal now fails: it knows it lost the cluster.
        assert.deepEqual(await store.renewLeases("core-a", ["c1"], T0 + 21_000, TTL), []);
        // Force (the agent now streams to a): taken back at once, next generation.
        const back = await lease("c1", "core-a", T0 + 21_000, true);
        assert.deepEqual([back.holder, back.generation], ["core-a", 3]);
        // Re-acquiring one's own lease keeps the generation and acquiredAt.
        const again = await lease("c1", "core-a", T0 + 22_000);
        assert.deepEqual([again.generation, again.acquiredAt], [3, T0 + 21_000]);
        // Released: free at once for another replica.
        assert.equal(await store.releaseLease("c1", "core-b"), false);
        assert.equal(await store.releaseLease("c1", "core-a"), true);
        const c = await lease("c1", "core-b", T0 + 23_000);
        assert.deepEqual([c.holder, c.generation], ["core-b", 4]);
        // Other clusters are independent.
        await lease("c2", "core-a", T0 + 23_000);
        assert.deepEqual(
          (await store.leases()).map((l) => [l.clusterId, l.holder]),
          [
            ["c1", "core-b"],
            ["c2", "core-a"],
          ],
        );
        const bad = { clusterId: "c1", holder: "x", url: "", now: T0, ttlMs: TTL, force: false };
        await assert.rejects(store.acquireLease({ ...bad, clusterId: "" }), StoreInputError);
        await assert.rejects(store.acquireLease({ ...bad, ttlMs: 0 }), StoreInputError);
      });
    });
  });
}
