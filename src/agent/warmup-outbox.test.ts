import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { WarmupOutbox } from "./warmup-outbox.ts";

function must<T>(v: T | undefined): T {
  assert.ok(v !== undefined);
  return v;
}

const hit = (at: number) => ({ type: "hit" as const, pool: "general", at, node: `n-${at}` });

describe("WarmupOutbox", () => {
  it("batches what is queued, sends every unacknowledged batch again from cursor 0, drops acknowledged ones", () => {
    let work = 0;
    const o = new WarmupOutbox({ maxBatch: 2, onWork: () => work++ });
    for (const at of [1, 2, 3]) o.push(hit(at));
    assert.equal(work, 3);
    const b1 = must(o.next(0));
    const b2 = must(o.next(b1.batch));
    assert.deepEqual(
      b1.events.map((e) => e.at),
      [1, 2],
    );
    assert.deepEqual(
      b2.events.map((e) => e.at),
      [3],
    );
    assert.equal(o.next(b2.batch), undefined);
    // A new stream starts over: both batches, same numbers.
    assert.equal(o.next(0)?.batch, b1.batch);
    o.ack(b1.batch);
    assert.equal(o.pending, 1);
    assert.equal(o.next(0)?.batch, b2.batch);
    o.ack(b2.batch);
    assert.equal(o.pending, 0);
    assert.equal(o.next(0), undefined);
  });

  it("drops the oldest events beyond its bound, counted", () => {
    const o = new WarmupOutbox({ maxEvents: 3, maxBatch: 2 });
    o.push(hit(1));
    o.push(hit(2));
    o.next(0); // [1, 2] sent, not acknowledged
    for (const at of [3, 4, 5]) o.push(hit(at));
    assert.equal(o.pending, 3);
    assert.equal(o.dropped, 2);
    const all = [];
    for (let b = o.next(0); b; b = o.next(b.batch)) all.push(...b.events);
    assert.deepEqual(
      all.map((e) => e.at),
      [3, 4, 5],
    );
  });
});
