import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../shared/clock.ts";
import { LaggingClock } from "./clock.ts";

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
});
