// Cases taken from Karpenter v1.15.0's own tests: pkg/cloudprovider/suite_test.go ("AdjustedPrice")
// and pkg/controllers/nodeoverlay/suite_test.go (matching, weight order, conflicts).
import { test } from "node:test";
import assert from "node:assert/strict";
import type { NodeOverlay } from "../objects/karpenter.ts";
import { adjustedPrice, orderByWeight, overlaidPrice, overlayMatches, winningOverlay } from "./overlay.ts";

/** An overlay as Karpenter's controller left it: validated, unless `failed` names why not. */
const overlay = (name: string, spec: NodeOverlay["spec"], failed?: string): NodeOverlay => ({
  metadata: { name },
  spec,
  status: {
    conditions: [
      failed
        ? { type: "ValidationSucceeded", status: "False", reason: failed }
        : { type: "ValidationSucceeded", status: "True" },
    ],
  },
});

const labels = {
  "karpenter.sh/nodepool": "default",
  "node.kubernetes.io/instance-type": "default-instance-type",
  "kubernetes.io/arch": "arm64",
  "karpenter.sh/capacity-type": "spot",
  "topology.kubernetes.io/zone": "test-zone-1",
};

test("adjustedPrice: Karpenter's AdjustedPrice table", () => {
  const cases: [string, number, number][] = [
    ["-10%", 10.0, 9.0],
    ["+10%", 10.0, 11.0],
    ["-50%", 10.0, 5.0],
    ["+100%", 10.0, 20.0],
    ["-100%", 10.0, 0.0],
    ["-200%", 10.0, 0.0],
    ["-25%", 1.5, 1.125],
    ["+0", 10.0, 10.0],
    ["+5", 10.0, 15.0],
    ["-2.5", 10.0, 7.5],
    ["-10", 10.0, 0.0],
    ["-15", 10.0, 0.0],
    ["+0.75", 1.25, 2.0],
    ["+100", 0.001, 100.001],
    ["+0.0001", 0.0001, 0.0002],
  ];
  for (const [change, base, want] of cases)
    assert.equal(adjustedPrice(base, change), want, `${change} of ${base}`);
  assert.equal(adjustedPrice(82781.0, "80.0"), 80, "an unsigned value overrides the price");
  assert.equal(adjustedPrice(82781.0, ""), 82781, "no change keeps it");
});

test("orderByWeight: heavier first, equal weights later name first, unset weight is 0", () => {
  const ordered = orderByWeight([
    overlay("a", { weight: 10 }),
    overlay("c", {}),
    overlay("b", { weight: 10 }),
    overlay("d", { weight: 20 }),
  ]);
  assert.deepEqual(
    ordered.map((o) => o.metadata.name),
    ["d", "b", "a", "c"],
  );
});

test("requirements: In, NotIn, Exists, DoesNotExist, Gt/Lt on integer labels; undefined keys pass only NotIn/DoesNotExist", () => {
  const m = (requirements: NodeOverlay["spec"]["requirements"]) =>
    overlayMatches(overlay("x", { requirements }), labels);
  assert.ok(m([]));
  assert.ok(m([{ key: "kubernetes.io/arch", operator: "In", values: ["arm64"] }]));
  assert.ok(!m([{ key: "kubernetes.io/arch", operator: "In", values: ["amd64"] }]));
  assert.ok(m([{ key: "karpenter.sh/capacity-type", operator: "Exists" }]));
  assert.ok(
    !m([{ key: "test-label", operator: "In", values: ["test-value"] }]),
    "a label the offering lacks",
  );
  assert.ok(m([{ key: "test-label", operator: "NotIn", values: ["test-value"] }]));
  assert.ok(m([{ key: "test-label", operator: "DoesNotExist" }]));
  assert.ok(!m([{ key: "kubernetes.io/arch", operator: "DoesNotExist" }]));
  const cpu = { ...labels, "karpenter.kwok.sh/instance-cpu": "4" };
  const gt = (operator: "Gt" | "Lt" | "Gte" | "Lte", v: string) =>
    overlayMatches(
      overlay("x", { requirements: [{ key: "karpenter.kwok.sh/instance-cpu", operator, values: [v] }] }),
      cpu,
    );
  assert.deepEqual(
    [gt("Gt", "3"), gt("Gt", "4"), gt("Gte", "4"), gt("Lt", "4"), gt("Lte", "4"), gt("Lt", "5")],
    [true, false, true, false, true, true],
  );
});

test("one overlay: a price override or adjustment on the offering it selects, the list price beside it", () => {
  const ordered = orderByWeight([
    overlay("cheap", {
      requirements: [{ key: "karpenter.sh/nodepool", operator: "In", values: ["default"] }],
      priceAdjustment: "+1000",
      weight: 10,
    }),
  ]);
  assert.deepEqual(overlaidPrice(ordered, labels, 1.02), {
    name: "cheap",
    change: "+1000",
    listUsdPerHour: 1.02,
    usdPerHour: 1001.02,
  });
  const other = { ...labels, "karpenter.sh/nodepool": "two" };
  assert.equal(overlaidPrice(ordered, other, 1.02), undefined, "only the pool its requirements name");
  const full = orderByWeight([overlay("full", { price: "13234.223" })]);
  assert.equal(overlaidPrice(full, labels, 1.02)?.usdPerHour, 13234.223);
});

test("weights: the heavier overlay prices the offering, a lighter one changes nothing (not cumulative)", () => {
  const ordered = orderByWeight([
    overlay("light", { priceAdjustment: "-50%", weight: 10 }),
    overlay("heavy", { priceAdjustment: "-20%", weight: 20 }),
  ]);
  assert.equal(winningOverlay(ordered, labels)?.overlay.metadata.name, "heavy");
  assert.equal(overlaidPrice(ordered, labels, 10)?.usdPerHour, 8);
});

test("same weight: the later name wins, the other conflicts (Karpenter's 'should fail when requirements overlays overlap')", () => {
  const ordered = orderByWeight([
    overlay("overlay-a", {
      requirements: [{ key: "kubernetes.io/arch", operator: "In", values: ["arm64"] }],
      price: "1.03",
      weight: 10,
    }),
    overlay("overlay-b", {
      requirements: [{ key: "karpenter.sh/capacity-type", operator: "Exists" }],
      price: "23",
      weight: 10,
    }),
  ]);
  assert.equal(overlaidPrice(ordered, labels, 1.02)?.usdPerHour, 23);
  assert.equal(overlaidPrice(ordered, labels, 1.02)?.name, "overlay-b");
});

test("a capacity conflict at the same weight skips that overlay's price too; a rejected overlay applies nowhere", () => {
  const capacity = { "smarter-devices/fuse": "1" };
  const ordered = orderByWeight([
    overlay("b-capacity", { capacity, weight: 10 }),
    overlay("a-priced", { capacity, price: "5", weight: 10 }),
    overlay("c-light", { priceAdjustment: "-10%", weight: 5 }),
  ]);
  assert.equal(overlaidPrice(ordered, labels, 10)?.name, "c-light");
  const invalid = orderByWeight([overlay("bad", { price: "1" }, "RuntimeValidation")]);
  assert.equal(overlaidPrice(invalid, labels, 10), undefined);
});

test("a lighter overlay of one weight conflicts with another of that weight even after a heavier one priced it", () => {
  // store.go keeps the last (lowest) weight per offering: 20 prices, 10 records, the second 10 conflicts.
  const ordered = orderByWeight([
    overlay("w20", { price: "1", weight: 20 }),
    overlay("w10-b", { price: "2", weight: 10 }),
    overlay("w10-a", { price: "3", weight: 10 }),
  ]);
  assert.equal(overlaidPrice(ordered, labels, 10)?.name, "w20");
});

test("an overlay Karpenter has not validated (gate NodeOverlay off, or not reconciled yet) prices nothing", () => {
  const { status: _validated, ...fresh } = overlay("new", { priceAdjustment: "-30%" });
  assert.equal(overlaidPrice([fresh], labels, 10), undefined);
  assert.equal(overlaidPrice([overlay("new", { priceAdjustment: "-30%" })], labels, 10)?.usdPerHour, 7);
});
