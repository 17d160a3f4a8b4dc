import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  SelectorError,
  fieldMatcher,
  fieldValue,
  labelMatcher,
  labelSelectorMatcher,
  labelSelectorToString,
  parseFieldSelector,
  parseLabelSelector,
} from "./selectors.ts";

describe("parseLabelSelector", () => {
  it("parses every operator", () => {
    assert.deepEqual(
      parseLabelSelector(
        "app=web, tier==be,env!=prod,zone in (a, b),size notin (x),karpenter.sh/nodepool,!legacy",
      ),
      [
        { key: "app", operator: "=", values: ["web"] },
        { key: "tier", operator: "=", values: ["be"] },
        { key: "env", operator: "!=", values: ["prod"] },
        { key: "zone", operator: "in", values: ["a", "b"] },
        { key: "size", operator: "notin", values: ["x"] },
        { key: "karpenter.sh/nodepool", operator: "exists", values: [] },
        { key: "legacy", operator: "!", values: [] },
      ],
    );
    assert.deepEqual(parseLabelSelector(""), []);
    assert.deepEqual(parseLabelSelector("a="), [{ key: "a", operator: "=", values: [""] }]);
    assert.deepEqual(parseLabelSelector("n>3"), [{ key: "n", operator: "gt", values: ["3"] }]);
  });

  it("rejects malformed selectors with a clear error", () => {
    for (const bad of [
      "a in b",
      "a in (b",
      "a,",
      "=x",
      "a b",
      "Bad_Prefix/x=1",
      "a=b c",
      "a==-x",
      "n>x",
      "a!b",
    ]) {
      assert.throws(() => parseLabelSelector(bad), SelectorError, bad);
    }
  });
});

describe("labelMatcher", () => {
  const labels = { app: "web", zone: "a", n: "5" };
  const cases: [string, boolean][] = [
    ["", true],
    ["app=web", true],
    ["app=db", false],
    ["app!=db", true],
    ["missing!=x", true],
    ["zone in (a,b)", true],
    ["zone in (c)", false],
    ["missing in (a)", false],
    ["zone notin (c)", true],
    ["missing notin (c)", true],
    ["zone notin (a)", false],
    ["app", true],
    ["missing", false],
    ["!missing", true],
    ["!app", false],
    ["n>4,n<6", true],
    ["n>5", false],
    ["app=web,zone=b", false],
  ];
  for (const [sel, want] of cases) {
    it(`"${sel}" → ${want}`, () => assert.equal(labelMatcher(sel)(labels), want));
  }
  it("treats missing labels as empty", () => {
    assert.equal(labelMatcher("!a")(undefined), true);
    assert.equal(labelMatcher("a")(undefined), false);
  });
});

describe("labelSelectorMatcher", () => {
  it("matches matchLabels and matchExpressions together", () => {
    const m = labelSelectorMatcher({
      matchLabels: { app: "web" },
      matchExpressions: [
        { key: "zone", operator: "In", values: ["a", "b"] },
        { key: "legacy", operator: "DoesNotExist" },
      ],
    });
    assert.equal(m({ app: "web", zone: "a" }), true);
    assert.equal(m({ app: "web", zone: "c" }), false);
    assert.equal(m({ app: "web", zone: "a", legacy: "1" }), false);
  });
  it("empty selects all, null selects none", () => {
    assert.equal(labelSelectorMatcher({})({ a: "b" }), true);
    assert.equal(labelSelectorMatcher(null)({ a: "b" }), false);
  });
  it("rejects In without values", () => {
    assert.throws(
      () => labelSelectorMatcher({ matchExpressions: [{ key: "a", operator: "In" }] }),
      SelectorError,
    );
  });
  it("renders a selector string that parses back to the same meaning", () => {
    const sel = {
      matchLabels: { app: "web" },
      matchExpressions: [
        { key: "zone", operator: "NotIn" as const, values: ["b", "a"] },
        { key: "x", operator: "Exists" as const },
      ],
    };
    const s = labelSelectorToString(sel);
    assert.equal(s, "app=web,zone notin (a,b),x");
    assert.equal(labelMatcher(s)({ app: "web", zone: "c", x: "" }), true);
    assert.equal(labelMatcher(s)({ app: "web", zone: "a", x: "" }), false);
  });
});

describe("field selectors", () => {
  const pod = {
    metadata: { name: "p1", namespace: "ns" },
    spec: { nodeName: "n1", containers: [] },
    status: { phase: "Running" },
  };
  it("parses =, == and != with escapes", () => {
    assert.deepEqual(parseFieldSelector("spec.nodeName==n1,status.phase!=Failed,metadata.name=a\\,b"), [
      { field: "spec.nodeName", operator: "=", value: "n1" },
      { field: "status.phase", operator: "!=", value: "Failed" },
      { field: "metadata.name", operator: "=", value: "a,b" },
    ]);
    assert.throws(() => parseFieldSelector("nonsense"), SelectorError);
    assert.throws(() => parseFieldSelector("a=b=c"), SelectorError);
  });
  it("matches pods by node, phase and name", () => {
    assert.equal(fieldMatcher("Pod", "spec.nodeName=n1,status.phase=Running")(pod), true);
    assert.equal(fieldMatcher("Pod", "spec.nodeName=n2")(pod), false);
    assert.equal(fieldMatcher("Pod", "metadata.namespace!=ns")(pod), false);
    // An unscheduled pod has an empty nodeName.
    assert.equal(fieldMatcher("Pod", "spec.nodeName=")({ metadata: {}, spec: {} }), true);
  });
  it("matches events by involved object", () => {
    const ev = {
      metadata: { name: "e" },
      involvedObject: { kind: "Node", name: "n1" },
      source: { component: "karpenter" },
    };
    assert.equal(fieldMatcher("Event", "involvedObject.kind=Node,involvedObject.name=n1")(ev), true);
    assert.equal(fieldMatcher("Event", "involvedObject.kind=Pod")(ev), false);
    assert.equal(fieldValue(ev, "source"), "karpenter");
  });
  it("refuses fields the apiserver does not support", () => {
    assert.throws(() => fieldMatcher("Node", "status.phase=Ready"), /field label not supported/);
    assert.equal(
      fieldMatcher("Node", "spec.unschedulable=true")({ metadata: {}, spec: { unschedulable: true } }),
      true,
    );
  });
});
