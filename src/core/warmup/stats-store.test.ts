import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore } from "../store/sqlite.ts";
import type { Store, StoredWarmupEvent } from "../store/store.ts";
import { FakeClock } from "../../shared/clock.ts";
import { createLogger, silentLogger } from "../../shared/log.ts";
import { TestKube } from "../../warmup/testing/kube.ts";
import { node, nodePool, pod } from "../../warmup/testing/fixtures.ts";
import { WarmupController } from "../../warmup/controller.ts";
import { isWarmupPod } from "../../objects/wave.ts";
import { DEFAULT_POLICY } from "../../policy/warmup.ts";
import { reduceCounters, warmupCounts, type WarmupCounters, type WarmupEvent } from "../../warmup/stats.ts";
import {
  countersInWindow,
  DEFAULT_WINDOW_MS,
  DurableWarmupStats,
  fromStored,
  toStored,
} from "./stats-store.ts";

const T0 = Date.UTC(2026, 0, 1);
const MIN = 60_000;
const HOUR = 60 * MIN;

const events: WarmupEvent[] = [
  { type: "created", pool: "general", at: T0, pod: "warm-1" },
  { type: "created", pool: "general", at: T0, pod: "warm-2" },
  { type: "prepull", pool: "general", at: T0 + MIN, node: "n1", image: "nginx:1", outcome: "pulled" },
  { type: "prepull", pool: "general", at: T0 + MIN, node: "n1", image: "redis:7", outcome: "failed" },
  { type: "hit", pool: "general", at: T0 + 2 * MIN, node: "n1" },
  { type: "miss", pool: "general", at: T0 + 10 * MIN, node: "n2", reason: "ttl" },
  // Two warmup pods that never got a node end in the same pass: both count.
  { type: "miss", pool: "gpu", at: T0 + 11 * MIN, pod: "warm-3", reason: "pool-deleted" },
  { type: "miss", pool: "gpu", at: T0 + 11 * MIN, pod: "warm-4", reason: "pool-deleted" },
  { type: "created", pool: "gpu", at: T0 + 12 * MIN, pod: "warm-5" },
];
const inMemory = events.reduce<WarmupCounters>(reduceCounters, {});

async function tempStore(): Promise<{ open: () => Promise<Store>; dispose: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), "wave-warmup-stats-"));
  const path = join(dir, "wave.db");
  // Opened once here so the schema exists before the test's handles.
  await (await openSqliteStore({ path })).store.close();
  return {
    open: async () => (await openSqliteStore({ path })).store,
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Runs `fn` on a store of a fresh temporary database, closed and removed after it. */
async function withStore(fn: (store: Store) => Promise<void>): Promise<void> {
  const db = await tempStore();
  const store = await db.open();
  try {
    await fn(store);
  } finally {
    await store.close();
    db.dispose();
  }
}

/** Lets pending promise chains (store I/O included) run; bounded so a broken test fails. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2_000; i++) {
    if (cond()) return;
    await new Promise((r) => setImmediate(r));
  }
  assert.fail(`timed out waiting for ${what}`);
}

void describe("durable warmup stats", () => {
  void it("round-trips every event type through the stored form", () => {
    for (const e of events) assert.deepEqual(fromStored(toStored("c1", e)), e);
    // A miss reason from a newer build still counts as a miss.
    const future: StoredWarmupEvent = { clusterId: "c1", pool: "a", type: "miss", at: T0, reason: "evicted" };
    assert.equal(fromStored(future).type, "miss");
  });

  void it("counters survive a core restart and equal the in-memory fold of the same events", async () => {
    const db = await tempStore();
    try {
      const clock = new FakeClock(T0 + HOUR);
      const first = await db.open();
      const before = new DurableWarmupStats({ store: first, clusterId: "c1", clock, log: silentLogger });
      for (const e of events) before.record(e);
      assert.equal(before.pending, events.length, "recorded without waiting for the store");
      assert.equal(await before.flush(), true);
      assert.deepEqual(await before.refresh(), inMemory);
      await first.close();

      // A new core process: new store handle, new stats, nothing in memory.
      const second = await db.open();
      try {
        const after = new DurableWarmupStats({ store: second, clusterId: "c1", clock, log: silentLogger });
        assert.deepEqual(after.counters(), {}, "nothing known before the first read");
        assert.deepEqual(await after.refresh(), inMemory);
        assert.deepEqual(after.counters(), inMemory);
        assert.deepEqual(warmupCounts(after.counters()), { hits: 1, misses: 3, timeSavedSeconds: 0 });
        // Another cluster's window is its own.
        assert.deepEqual(await after.refresh("c2"), {});
      } finally {
        await second.close();
      }
    } finally {
      db.dispose();
    }
  });

  void it("counts a re-sent batch once and only events inside the window", async () => {
    await withStore(async (store) => {
      const stored = events.map((e) => toStored("c1", e));
      await store.writeWarmupEvents(stored);
      await store.writeWarmupEvents(stored); // e.g. the first commit's answer was lost
      const clock = new FakeClock(T0 + 12 * MIN + 1);
      const stats = new DurableWarmupStats({ store, clusterId: "c1", clock, log: silentLogger });
      assert.deepEqual(await stats.refresh(), inMemory);
      // 24 h after the first event it has left the window; the rest are still in it.
      await clock.advance(DEFAULT_WINDOW_MS - 12 * MIN);
      assert.equal(stats.windowMs, DEFAULT_WINDOW_MS);
      assert.deepEqual(await stats.refresh(), events.slice(2).reduce<WarmupCounters>(reduceCounters, {}));
      await clock.advance(HOUR);
      assert.deepEqual(await stats.refresh(), {});
    });
  });

  void it("reads the window's warm cost with its counters, over the same bounds", async () => {
    await withStore(async (store) => {
      await store.writeWarmupEvents(events.map((e) => toStored("c1", e)));
      const clock = new FakeClock(T0 + HOUR);
      const asked: [string, number, number][] = [];
      const stats = new DurableWarmupStats({
        store,
        clusterId: "c1",
        clock,
        log: silentLogger,
        warmCost: (clusterId, from, to) => {
          asked.push([clusterId, from, to]);
          return Promise.resolve({ general: 0.25 * asked.length });
        },
      });
      assert.deepEqual(
        stats.window(),
        { counters: {}, warmCost: {}, from: 0, to: 0 },
        "none before the first read",
      );
      await stats.refresh();
      const from = T0 + HOUR - DEFAULT_WINDOW_MS;
      assert.deepEqual(asked, [["c1", from, T0 + HOUR + 1]]);
      assert.deepEqual(stats.window(), {
        counters: inMemory,
        warmCost: { general: 0.25 },
        from,
        to: T0 + HOUR + 1,
      });
      // A later read reads both again, over its own bounds.
      await clock.advance(MIN);
      await stats.refresh();
      assert.deepEqual(stats.window().warmCost, { general: 0.5 });
      assert.equal(stats.window().to, T0 + HOUR + MIN + 1);
    });
  });

  void it("folds a window read in pages like the whole window at once", async () => {
    await withStore(async (store) => {
      await store.writeWarmupEvents(events.map((e) => toStored("c1", e)));
      for (const size of [1, 2, 3, 100]) {
        assert.deepEqual(await countersInWindow(store, "c1", T0, T0 + HOUR, size), inMemory, `page ${size}`);
      }
    });
  });

  void it("retries a failed write with backoff, logs it, bounds the queue and flushes at shutdown", async () => {
    const db = await tempStore();
    const store = await db.open();
    const lines: { level: string; msg: string }[] = [];
    const log = createLogger({ write: (l) => lines.push(JSON.parse(l) as { level: string; msg: string }) });
    let failing = true;
    let attempts = 0;
    const flaky: Pick<Store, "writeWarmupEvents" | "warmupEvents"> = {
      writeWarmupEvents: (rows) => {
        attempts++;
        return failing ? Promise.reject(new Error("database is locked")) : store.writeWarmupEvents(rows);
      },
      warmupEvents: (q) => store.warmupEvents(q),
    };
    const clock = new FakeClock(T0 + HOUR);
    const stats = new DurableWarmupStats({
      store: flaky,
      clusterId: "c1",
      clock,
      log,
      flushMs: 1_000,
      maxBackoffMs: 8_000,
      maxPending: 8,
    });
    const ac = new AbortController();
    const running = stats.run(ac.signal);
    try {
      for (const e of events.slice(0, 4)) stats.record(e);
      await until(() => clock.pending === 1, "the loop to sleep");
      await clock.advance(1_000);
      await until(() => attempts === 1, "the first write");
      await until(() => clock.pending === 1, "the loop to sleep again");
      // Backing off: 1 s later nothing is tried; the ceiling after one failure is 2 s.
      await clock.advance(1_000);
      await new Promise((r) => setImmediate(r));
      assert.equal(attempts, 1);
      await clock.advance(1_000);
      await until(() => attempts === 2, "the retry");
      assert.equal(lines.filter((l) => l.msg.includes("write failed; will retry")).length, 2);
      assert.equal(stats.pending, 4, "kept for the next try");

      // Past the bound the oldest go, and say so.
      for (const e of events.slice(4)) stats.record(e);
      assert.equal(stats.pending, 8);
      assert.ok(lines.some((l) => l.level === "error" && l.msg.includes("dropped")));

      failing = false;
      await until(() => clock.pending === 1, "the loop to sleep");
      await clock.advance(8_000);
      await until(() => stats.pending === 0, "the queue to drain");
      const kept = events.slice(1).reduce<WarmupCounters>(reduceCounters, {});
      assert.deepEqual(await stats.refresh(), kept);

      // Recorded after the last pass: written when the loop stops.
      const late: WarmupEvent = { type: "hit", pool: "gpu", at: T0 + 13 * MIN, node: "n9" };
      stats.record(late);
      ac.abort();
      await running;
      assert.equal(stats.pending, 0);
      assert.deepEqual(await stats.refresh(), reduceCounters(kept, late));
    } finally {
      ac.abort();
      await running;
      await store.close();
      db.dispose();
    }
  });

  void it("stores the controller's own events: after a restart the counters equal its in-memory fold", async () => {
    const db = await tempStore();
    try {
      const clock = new FakeClock(T0);
      const kube = new TestKube(clock);
      await kube.create("NodePool", nodePool("general"));
      await kube.create("Node", node("n1", "general", { cpu: "4", memory: "16Gi" }));
      await kube.create(
        "Pod",
        pod("big", { cpu: "3", memory: "4Gi", node: "n1", image: "example.com/big:1" }),
      );
      const store = await db.open();
      const stats = new DurableWarmupStats({ store, clusterId: "c1", clock, log: silentLogger });
      const seen: WarmupEvent[] = [];
      const controller = new WarmupController({
        client: kube,
        view: kube.state,
        clock,
        namespace: "wave",
        policyOf: () => ({ ...DEFAULT_POLICY, enabled: true, prePull: false }),
        priceOf: () => 0.1,
        onEvent: (e) => {
          seen.push(e);
          stats.record(e);
        },
      });
      await controller.start();
      assert.equal((await kube.all("Pod")).filter(isWarmupPod).length, 1);
      // The pool goes away before the warmup pod got a node: a node-less miss, keyed by its pod.
      await kube.delete("NodePool", "general");
      await clock.advance(1_000);
      await controller.reconcileAll();
      assert.deepEqual(
        seen.map((e) => e.type),
        ["created", "miss"],
      );
      assert.equal(await stats.flush(), true);
      const [, miss] = await store.warmupEvents({ clusterId: "c1", from: T0, to: T0 + HOUR });
      assert.equal(miss?.reason, "pool-deleted");
      assert.ok(miss.pod, "the node-less miss names its warmup pod");
      await store.close();

      const reopened = await db.open();
      try {
        const after = new DurableWarmupStats({ store: reopened, clusterId: "c1", clock, log: silentLogger });
        assert.deepEqual(await after.refresh(), seen.reduce<WarmupCounters>(reduceCounters, {}));
        assert.equal(after.counters().general?.misses, 1);
      } finally {
        await reopened.close();
      }
    } finally {
      db.dispose();
    }
  });
});
