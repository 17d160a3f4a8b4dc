import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock, flushMicrotasks } from "../shared/clock.ts";
import { LaggingClock, fastForwardStepMs, pinnedClock } from "./clock.ts";

describe("LaggingClock", () => {
  it("runs behind real time and catches up without passing it", async () => {
    const base = new FakeClock(1_000_000);
    const c = new LaggingClock(base, 60_000);
    assert.equal(c.now(), 940_000);
    c.catchUp(50_000);
    assert.equal(c.now(), 990_000);
    c.catchUp(50_000);
    assert.equal(c.lag, 0);
    assert.equal(c.now(), 1_000_000);
    await base.advance(5);
    assert.equal(c.now(), 1_000_005);
  });

  it("wakes a sleeper by its own time while fast-forwarding, by real time once caught up", async () => {
    const base = new FakeClock(1_000_000);
    const c = new LaggingClock(base, 600_000);
    let woke = false;
    const sleeping = c.sleep(60_000).then(() => (woke = true));
    await base.advance(5);
    c.catchUp(30_000);
    await base.advance(5);
    assert.equal(woke, false, "30 s of its 60 s passed");
    c.catchUp(30_000);
    await base.advance(5);
    assert.equal(woke, true, "60 s of simulated time passed in 15 ms of real time");
    await sleeping;

    c.catchUp(600_000);
    let late = false;
    const caughtUp = c.sleep(1000).then(() => (late = true));
    await base.advance(999);
    assert.equal(late, false);
    await base.advance(1);
    assert.equal(late, true, "no lag: a plain real-time sleep");
    await caughtUp;
  });

  it("wakes a sleeper on the jump itself, with no real time passing and no timer left behind", async () => {
    const base = new FakeClock(1_000_000);
    const c = new LaggingClock(base, 600_000);
    let woke = false;
    const sleeping = c.sleep(60_000).then(() => (woke = true));
    await flushMicrotasks();
    assert.equal(base.pending, 1, "one real-time wait");
    c.catchUp(59_000);
    await flushMicrotasks();
    assert.equal(woke, false, "59 s of its 60 s passed");
    assert.equal(base.pending, 1, "it waits again, once");
    c.catchUp(1_000);
    await flushMicrotasks();
    assert.equal(woke, true);
    assert.equal(base.pending, 0, "its real-time wait was cancelled");
    await sleeping;
  });

  it("rejects with the caller's reason when its signal aborts while it lags", async () => {
    const base = new FakeClock(1_000_000);
    const c = new LaggingClock(base, 600_000);
    const ac = new AbortController();
    const sleeping = c.sleep(60_000, ac.signal);
    await flushMicrotasks();
    const reason = new Error("stop");
    ac.abort(reason);
    await assert.rejects(sleeping, (err) => err === reason);
    assert.equal(base.pending, 0);
  });
});

describe("fastForwardStepMs", () => {
  it("jumps coarsely far in the past and second by second near now", () => {
    assert.equal(fastForwardStepMs(24 * 3_600_000), 150_000);
    assert.equal(fastForwardStepMs(3_600_000), 60_000);
    assert.equal(fastForwardStepMs(30_000), 1000);
    assert.equal(fastForwardStepMs(400), 400, "never past real time");
    assert.equal(fastForwardStepMs(24 * 3_600_000, 30_000), 30_000, "capped by the caller's maximum");
  });

  it("covers a day in a few hundred steps", () => {
    let lag = 24 * 3_600_000;
    let steps = 0;
    while (lag > 0) {
      lag -= fastForwardStepMs(lag);
      steps++;
    }
    assert.ok(steps < 1000, `${steps} steps`);
  });
});

describe("pinnedClock", () => {
  it("starts at the pinned moment and runs at the base clock's pace", async () => {
    const base = new FakeClock(5_000_000);
    const c = pinnedClock(Date.UTC(2026, 11, 3, 20), base);
    assert.equal(c.now(), Date.UTC(2026, 11, 3, 20));
    await base.advance(1500);
    assert.equal(c.now(), Date.UTC(2026, 11, 3, 20) + 1500);
  });
});
