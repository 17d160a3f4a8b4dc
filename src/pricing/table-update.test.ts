import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseStaticPriceTable } from "./static.ts";
import { medianSpotRatio, mergeRegion, selectFamilies } from "./table-update.ts";
import { priceTable } from "./testing.ts";

describe("price table update steps", () => {
  it("keeps only the shipped families, sorted and rounded to 6 decimals", () => {
    const got = selectFamilies(
      new Map([
        ["x2gd.large", 0.167],
        ["m5.xlarge", 0.192],
        ["m5.large", 0.0960000001],
        ["p5.48xlarge", 55.04],
      ]),
    );
    assert.deepEqual(Object.entries(got), [
      ["m5.large", 0.096],
      ["m5.xlarge", 0.192],
      ["p5.48xlarge", 55.04],
    ]);
  });

  it("replaces one region, keeps the others, and the result still validates", () => {
    const table = priceTable({
      "us-east-1": { asOf: "2026-01-19", provenance: "published", onDemand: { "m5.large": 0.096 } },
      "eu-west-1": { asOf: "2024-12-01", provenance: "approximate", onDemand: { "m5.large": 0.1 } },
    });
    const next = mergeRegion(table, "eu-west-1", { "m5.large": 0.107 }, "2026-12-02");
    assert.equal(next.regions["eu-west-1"]?.provenance, "aws-pricing-api");
    assert.equal(next.regions["eu-west-1"].onDemand["m5.large"], 0.107);
    assert.equal(next.regions["us-east-1"]?.asOf, "2026-01-19");
    assert.equal(next.generatedAt, "2026-12-02");
    assert.deepEqual(parseStaticPriceTable(JSON.parse(JSON.stringify(next))), next);
    assert.equal(table.regions["eu-west-1"]?.onDemand["m5.large"], 0.1, "input untouched");
  });

  it("refuses to wipe a region with an empty fetch", () => {
    const table = priceTable({});
    assert.throws(() => mergeRegion(table, "us-east-1", {}, "2026-12-02"), /no prices fetched/);
  });

  it("measures the median spot/on-demand ratio", () => {
    const spot = [
      { instanceType: "m5.large", zone: "a", usdPerHour: 0.03, timestamp: 0 },
      { instanceType: "m5.large", zone: "b", usdPerHour: 0.04, timestamp: 0 },
      { instanceType: "c5.large", zone: "a", usdPerHour: 0.0425, timestamp: 0 },
      { instanceType: "zz.large", zone: "a", usdPerHour: 1, timestamp: 0 },
    ];
    const r = medianSpotRatio(spot, { "m5.large": 0.1, "c5.large": 0.085 });
    assert.ok(r !== undefined && Math.abs(r - 0.4) < 1e-12);
    assert.equal(medianSpotRatio([], {}), undefined);
  });
});
