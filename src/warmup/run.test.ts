import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock, flushMicrotasks } from "../shared/clock.ts";
import type { ReconcileResult } from "./controller.ts";
import { runController, type Reconciler } from "./run.ts";

/** A reconciler that records its passes, run with a poke trigger the test can call. */
function poked(clock: FakeClock, pokeIntervalMs?: number) {
  const calls: string[] = [];
  const t: { poke?: (pool: string) => void } = {};
  const c: Reconciler = {
    name: "test",
    start: () => Promise.resolve(new Map<string, ReconcileResult>([["a", { requeueAfter: 30_000 }]])),
    reconcileAll: () => Promise.resolve(new Map<string, ReconcileResult>()),
    reconcile: (pool) => {
      calls.push(`${pool}@${clock.now()}`);
      return Promise.resolve({ requeueAfter: 30_000 });
    },
  };
  const stop = new AbortController();
  const done = runController(c, {
    clock,
    signal: stop.signal,
    ...(pokeIntervalMs === undefined ? {} : { pokeIntervalMs }),
    triggers: (fn) => {
      t.poke = fn;
      return () => (t.poke = undefined);
    },
  });
  const end = async (): Promise<void> => {
    stop.abort();
    await clock.advance(1);
    await done;
  };
  return { calls, poke: (pool: string) => t.poke?.(pool), subscribed: () => t.poke !== undefined, end };
}

describe("runController", () => {
  it("reconciles each pool at its requeue time and backs off on failure", async () => {
    const clock = new FakeClock(0);
    const calls: string[] = [];
    let failB = true;
    const c: Reconciler = {
      name: "test",
      start: () =>
        Promise.resolve(
          new Map<string, ReconcileResult>([
            ["a", { requeueAfter: 5_000 }],
            ["b", { requeueAfter: 1_000 }],
          ]),
        ),
      reconcileAll: () => Promise.resolve(new Map<string, ReconcileResult>()),
      reconcile: (pool) => {
        calls.push(`${pool}@${clock.now()}`);
        if (pool === "b" && failB) return Promise.reject(new Error("boom"));
        return Promise.resolve({ requeueAfter: 5_000 });
      },
    };
    const stop = new AbortController();
    const done = runController(c, { clock, signal: stop.signal, resyncMs: 60_000 });
    await flushMicrotasks();
    await clock.advance(1_000); // b fails → retry after 1 s
    await clock.advance(1_000); // b fails → retry after 2 s
    failB = false;
    await clock.advance(3_000); // a at 5 s; b at 4 s
    assert.deepEqual(calls, ["b@1000", "b@2000", "b@4000", "a@5000"]);
    stop.abort();
    await clock.advance(1);
    await done;
  });

  it("reconciles a poked pool at once", async () => {
    const clock = new FakeClock(0);
    const { calls, poke, subscribed, end } = poked(clock);
    await clock.advance(1_000);
    assert.deepEqual(calls, []);
    poke("a");
    await clock.advance(0);
    assert.deepEqual(calls, ["a@1000"]);
    await clock.advance(30_000);
    assert.deepEqual(calls, ["a@1000", "a@31000"]);
    await end();
    assert.equal(subscribed(), false);
  });

  it("folds pokes that come within pokeIntervalMs of a pass into one pass at the interval's end", async () => {
    const clock = new FakeClock(0);
    const { calls, poke, end } = poked(clock, 1000);
    await clock.advance(5_000);
    poke("a");
    await clock.advance(0);
    assert.deepEqual(calls, ["a@5000"], "the first poke: at once");
    await clock.advance(200);
    poke("a");
    await clock.advance(100);
    poke("a");
    await clock.advance(0);
    assert.deepEqual(calls, ["a@5000"], "pokes within the interval wait");
    await clock.advance(700);
    assert.deepEqual(calls, ["a@5000", "a@6000"], "one pass for both, at the interval's end");
    await end();
  });
});
