import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  loadStaticPriceTable,
  parseStaticPriceTable,
  PriceTableError,
  StaticPriceProvider,
} from "./static.ts";
import { regionOfZone, zoneOfProviderID } from "./types.ts";
import { priceTable } from "./testing.ts";

describe("shipped static table", () => {
  const table = loadStaticPriceTable();

  it("covers the main regions and families with dated provenance", () => {
    for (const r of [
      "us-east-1",
      "us-east-2",
      "us-west-2",
      "eu-west-1",
      "eu-central-1",
      "ap-southeast-1",
      "ap-northeast-1",
    ]) {
      const region = table.regions[r];
      assert.ok(region, r);
      assert.match(region.asOf, /^\d{4}-\d{2}-\d{2}$/);
      for (const it of [
        "m5.large",
        "m6i.xlarge",
        "m6g.large",
        "m7i.2xlarge",
        "m7g.large",
        "c5.large",
        "c6i.large",
        "c6g.large",
        "c7i.large",
        "c7g.large",
        "r5.large",
        "r6i.large",
        "r6g.large",
        "r7i.large",
        "r7g.large",
        "t3.medium",
        "t3a.large",
        "t4g.small",
      ]) {
        assert.ok((region.onDemand[it] ?? 0) > 0, `${r} ${it}`);
      }
    }
    for (const it of ["g5.xlarge", "g6.2xlarge", "p4d.24xlarge", "p5.48xlarge"]) {
      assert.ok((table.regions["us-east-1"]?.onDemand[it] ?? 0) > 0, it);
    }
  });

  it("holds AWS's published us-east-1 prices", () => {
    const p = new StaticPriceProvider(table);
    const published = {
      "m5.large": 0.096,
      "c7g.medium": 0.0363,
      "m7i.48xlarge": 9.6768,
      "t4g.nano": 0.0042,
      "g5.xlarge": 1.006,
      "p5.48xlarge": 55.04,
    };
    for (const [type, usd] of Object.entries(published))
      assert.equal(p.price(type, "on-demand", "us-east-1a")?.usdPerHour, usd, type);
  });

  it("round-trips byte for byte as hack/pricing/update.ts writes it (stable diffs, Prettier-clean)", () => {
    const file = readFileSync(new URL("./data/ec2-on-demand.json", import.meta.url), "utf8");
    assert.equal(JSON.stringify(table, null, 2) + "\n", file);
  });

  it("scales linearly within a family (sanity of the hand-compiled regions)", () => {
    for (const [name, region] of Object.entries(table.regions)) {
      for (const fam of ["m5", "c6i", "r6g", "m7i"]) {
        const large = region.onDemand[`${fam}.large`]!;
        const x4 = region.onDemand[`${fam}.4xlarge`]!;
        assert.ok(Math.abs(x4 - 8 * large) < 1e-6, `${name} ${fam}`);
      }
    }
  });
});

describe("StaticPriceProvider", () => {
  const table = priceTable({
    "eu-west-1": { asOf: "2024-12-01", provenance: "approximate", onDemand: { "m5.large": 0.107 } },
  });

  it("answers on-demand and reserved from the zone's region, never spot", () => {
    const p = new StaticPriceProvider(table);
    assert.deepEqual(p.price("m5.large", "on-demand", "eu-west-1b"), {
      usdPerHour: 0.107,
      source: "static",
      asOf: "2024-12-01",
    });
    assert.equal(p.price("m5.large", "reserved", undefined, "eu-west-1")?.usdPerHour, 0.107);
    assert.equal(p.price("m5.large", "spot", "eu-west-1b"), undefined);
    assert.equal(p.price("m5.large", "on-demand", "us-east-1a"), undefined);
    assert.equal(p.price("m9.large", "on-demand", "eu-west-1a"), undefined);
    assert.equal(p.price("m5.large", "on-demand"), undefined);
    assert.equal(
      new StaticPriceProvider(table, { defaultRegion: "eu-west-1" }).price("m5.large", "on-demand")
        ?.usdPerHour,
      0.107,
    );
  });

  it("rejects malformed tables naming the bad entry", () => {
    assert.throws(() => parseStaticPriceTable([]), PriceTableError);
    assert.throws(() => parseStaticPriceTable({ schema: 2 }), /unsupported schema/);
    assert.throws(
      () =>
        parseStaticPriceTable({
          schema: 1,
          generatedAt: "2026-01-01",
          regions: { r: { asOf: "2026-01-01", provenance: "published", onDemand: { "m5.large": -1 } } },
        }),
      /regions\.r\.onDemand\.m5\.large: price must be a positive number/,
    );
    assert.throws(
      () =>
        parseStaticPriceTable({
          schema: 1,
          generatedAt: "2026-01-01",
          regions: { r: { asOf: "2026-01-01", provenance: "guessed", onDemand: {} } },
        }),
      /unknown provenance/,
    );
  });

  it("reports an unreadable file as a table error", () => {
    assert.throws(() => loadStaticPriceTable("/nonexistent/prices.json"), PriceTableError);
  });
});

describe("regionOfZone", () => {
  it("strips the zone letter, local-zone suffix, and refuses non-AWS zones", () => {
    assert.equal(regionOfZone("us-east-1a"), "us-east-1");
    assert.equal(regionOfZone("ap-northeast-1d"), "ap-northeast-1");
    assert.equal(regionOfZone("us-west-2-lax-1a"), "us-west-2");
    assert.equal(regionOfZone("us-gov-west-1a"), "us-gov-west-1");
    assert.equal(regionOfZone("test-zone-a"), undefined);
    assert.equal(regionOfZone("use1-az1"), undefined);
    assert.equal(regionOfZone(undefined), undefined);
  });
});

describe("zoneOfProviderID", () => {
  it("reads the zone of an EC2 provider ID, nothing else", () => {
    assert.equal(zoneOfProviderID("aws:///us-east-1a/i-0123456789abcdef0"), "us-east-1a");
    assert.equal(zoneOfProviderID("aws:///us-west-2-lax-1a/i-0123456789abcdef0"), "us-west-2-lax-1a");
    assert.equal(zoneOfProviderID("kwok://node-1"), undefined);
    assert.equal(zoneOfProviderID("aws:///use1-az1/i-0123"), undefined);
    assert.equal(zoneOfProviderID(undefined), undefined);
  });
});
