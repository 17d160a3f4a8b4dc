import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../../shared/clock.ts";
import { Throttle } from "./live.ts";

describe("Throttle", () => {
  it("fires the first change at once and coalesces a burst into one trailing call", async () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    const t = new Throttle(clock, 250, () => fired.push(clock.now()));
    const t0 = clock.now();
    t.poke();
    assert.deepEqual(fired, [t0]);
    await clock.advance(10);
    t.poke();
    await clock.advance(10);
    t.poke();
    assert.equal(fired.length, 1, "held back within the interval");
    await clock.advance(229);
    assert.equal(fired.length, 1);
    await clock.advance(1);
    assert.deepEqual(fired, [t0, t0 + 250], "the trailing edge delivers the latest change");
    await clock.advance(1000);
    assert.equal(fired.length, 2, "no change, no call");
    t.poke();
    assert.equal(fired.length, 3, "after a quiet interval the next change goes out at once");
  });

  it("stops cleanly with a trailing call pending", async () => {
    const clock = new FakeClock();
    let n = 0;
    const t = new Throttle(clock, 250, () => n++);
    t.poke();
    t.poke();
    t.stop();
    await clock.advance(1000);
    assert.equal(n, 1);
    t.poke();
    assert.equal(n, 1);
  });
});
