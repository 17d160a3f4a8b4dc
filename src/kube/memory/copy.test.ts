import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { copyJson, sameJson } from "./copy.ts";

describe("copyJson / sameJson", () => {
  it("copies deeply: the copy shares nothing with the original", () => {
    const a = { m: { labels: { x: "1" } }, list: [{ n: 1 }, "s", null], u: undefined, b: true };
    const c = copyJson(a);
    assert.deepEqual(c, a);
    assert.ok("u" in c, "undefined-valued keys are kept, as structuredClone keeps them");
    c.m.labels.x = "2";
    (c.list[0] as { n: number }).n = 2;
    assert.equal(a.m.labels.x, "1");
    assert.deepEqual(a.list[0], { n: 1 });
  });

  it("compares by value, ignoring key order and undefined values", () => {
    assert.ok(sameJson({ a: 1, b: [1, { c: "x" }] }, { b: [1, { c: "x" }], a: 1 }));
    assert.ok(sameJson({ a: 1, z: undefined }, { a: 1 }));
    assert.ok(!sameJson({ a: 1 }, { a: 2 }));
    assert.ok(!sameJson({ a: [1, 2] }, { a: [2, 1] }));
    assert.ok(!sameJson({ a: [] }, { a: {} }));
    assert.ok(!sameJson({ a: 1 }, { a: 1, b: null }));
  });
});
