import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../shared/clock.ts";
import { LaggingClock, fastForwardStepMs } from "./clock.ts";

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
