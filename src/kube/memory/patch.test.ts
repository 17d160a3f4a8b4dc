import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { PatchError, jsonPatch, mergePatch } from "./patch.ts";

describe("mergePatch (RFC 7386)", () => {
  // The examples from RFC 7386 appendix A.
  const cases: [unknown, unknown, unknown][] = [
    [{ a: "b" }, { a: "c" }, { a: "c" }],
    [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
    [{ a: "b" }, { a: null }, {}],
    [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
    [{ a: ["b"] }, { a: "c" }, { a: "c" }],
    [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
    [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
    [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
    [
      ["a", "b"],
      ["c", "d"],
      ["c", "d"],
    ],
    [{ a: "b" }, ["c"], ["c"]],
    [{ a: "foo" }, null, null],
    [{ a: "foo" }, "bar", "bar"],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: "b", c: null }, { a: "b" }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  for (const [target, patch, want] of cases) {
    it(`${JSON.stringify(target)} + ${JSON.stringify(patch)}`, () => {
      const before = structuredClone(target);
      assert.deepEqual(mergePatch(target, patch), want);
      assert.deepEqual(target, before, "input untouched");
    });
  }
});

describe("jsonPatch (RFC 6902)", () => {
  it("applies add, remove, replace, move, copy and test", () => {
    const doc = { metadata: { labels: { a: "1" }, finalizers: ["x", "y"] }, spec: { list: [1, 2] } };
    const out = jsonPatch(doc, [
      { op: "add", path: "/metadata/labels/karpenter.sh~1nodepool", value: "default" },
      { op: "remove", path: "/metadata/finalizers/0" },
      { op: "replace", path: "/spec/list/1", value: 3 },
      { op: "add", path: "/spec/list/-", value: 4 },
      { op: "copy", from: "/spec/list", path: "/spec/copy" },
      { op: "move", from: "/metadata/labels/a", path: "/metadata/labels/b" },
      { op: "test", path: "/metadata/finalizers", value: ["y"] },
    ]);
    assert.deepEqual(out, {
      metadata: { labels: { "karpenter.sh/nodepool": "default", b: "1" }, finalizers: ["y"] },
      spec: { list: [1, 3, 4], copy: [1, 3, 4] },
    });
    assert.deepEqual(doc.metadata.finalizers, ["x", "y"], "input untouched");
  });

  it("fails atomically with a clear error", () => {
    const doc = { a: 1 };
    assert.throws(() => jsonPatch(doc, [{ op: "test", path: "/a", value: 2 }]), /test failed at \/a/);
    assert.throws(() => jsonPatch(doc, [{ op: "remove", path: "/b" }]), PatchError);
    assert.throws(() => jsonPatch(doc, [{ op: "replace", path: "/b", value: 1 }]), PatchError);
    assert.throws(() => jsonPatch(doc, [{ op: "add", path: "/x/y", value: 1 }]), PatchError);
    assert.throws(() => jsonPatch([1], [{ op: "add", path: "/5", value: 1 }]), /out of range/);
    assert.throws(() => jsonPatch(doc, [{ op: "add", path: "/b" }]), /needs a value/);
    assert.throws(() => jsonPatch(doc, { op: "add" }), /must be an array/);
    assert.throws(() => jsonPatch(doc, [{ op: "frob", path: "/a" }]), /unknown JSON patch op/);
    assert.deepEqual(doc, { a: 1 });
  });
});
