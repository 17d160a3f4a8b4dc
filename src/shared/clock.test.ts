import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "./clock.ts";

describe("FakeClock", () => {
  it("wakes sleepers in time order only when advanced", async () => {
    const clock = new FakeClock(1000);
    const woke: number[] = [];
    void clock.sleep(50).then(() => woke.push(clock.now()));
    void clock.sleep(10).then(() => woke.push(clock.now()));
    await clock.advance(5);
    assert.deepEqual(woke, []);
    await clock.advance(100);
    assert.deepEqual(woke, [1010, 1050]);
    assert.equal(clock.now(), 1105);
  });

  it("rejects an aborted sleep", async () => {
    const clock = new FakeClock();
    const ac = new AbortController();
    const p = clock.sleep(10, ac.signal);
    ac.abort(new Error("stop"));
    await assert.rejects(p, /stop/);
    assert.equal(clock.pending, 0);
  });
});
