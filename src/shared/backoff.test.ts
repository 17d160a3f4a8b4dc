import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Backoff, backoffCeiling } from "./backoff.ts";

describe("Backoff", () => {
  it("grows exponentially up to the cap", () => {
    const b = new Backoff({ initialMs: 100, maxMs: 1000, jitter: "none" });
    assert.deepEqual(
      Array.from({ length: 6 }, () => b.next()),
      [100, 200, 400, 800, 1000, 1000],
    );
    assert.equal(b.attempt, 6);
  });

  it("draws full jitter from the injected random source", () => {
    const draws = [0, 0.5, 0.999, 0.25];
    const b = new Backoff({ initialMs: 100, maxMs: 10_000, random: () => draws.shift() ?? 0 });
    assert.deepEqual([b.next(), b.next(), b.next(), b.next()], [0, 100, 399, 200]);
  });

  it("never exceeds the ceiling even with an out-of-range random", () => {
    const b = new Backoff({ initialMs: 100, maxMs: 300, random: () => 7 });
    for (let i = 0; i < 5; i++) assert.ok(b.next() <= 300);
  });

  it("resets to the first attempt", () => {
    const b = new Backoff({ initialMs: 10, maxMs: 1000, jitter: "none" });
    b.next();
    b.next();
    b.reset();
    assert.equal(b.attempt, 0);
    assert.equal(b.next(), 10);
  });

  it("stays finite for huge attempt counts", () => {
    assert.equal(backoffCeiling(10_000, { initialMs: 1, maxMs: 30_000 }), 30_000);
    assert.equal(backoffCeiling(3, { initialMs: 5, maxMs: 1000, factor: 3 }), 135);
  });

  it("rejects nonsense options", () => {
    assert.throws(() => new Backoff({ initialMs: 0, maxMs: 10 }), /invalid backoff/);
    assert.throws(() => new Backoff({ initialMs: 10, maxMs: 5 }), /invalid backoff/);
    assert.throws(() => new Backoff({ initialMs: 1, maxMs: 5, factor: 0.5 }), /invalid backoff/);
  });
});
