// The AWS adapters and the GetProducts parser, against recorded response shapes
// (testdata/*.json: the JSON the SDK resolves to, PriceList items as AWS's JSON strings).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { GetProductsCommand, GetProductsCommandOutput } from "@aws-sdk/client-pricing";
import type {
  DescribeSpotPriceHistoryCommand,
  DescribeSpotPriceHistoryCommandOutput,
} from "@aws-sdk/client-ec2";
import { pricingApiFetcher, spotPriceHistoryFetcher } from "./aws.ts";
import { collectOnDemand, onDemandFilters, parsePriceListItem } from "./pricelist.ts";

function fixture(name: string): unknown {
  return JSON.parse(readFileSync(new URL(`./testdata/${name}`, import.meta.url), "utf8"));
}

/** Replays pages keyed by the request's NextToken and records every request. */
function recorded<I extends { NextToken?: string | undefined }, O>(pages: Record<string, O>) {
  const requests: I[] = [];
  return {
    requests,
    send(cmd: { input: I }): Promise<O> {
      requests.push(cmd.input);
      const page = pages[cmd.input.NextToken ?? ""];
      return page
        ? Promise.resolve(page)
        : Promise.reject(new Error(`no page for ${String(cmd.input.NextToken)}`));
    },
  };
}

describe("GetProducts price list parsing", () => {
  const page1 = fixture("get-products.page1.json") as { PriceList: string[] };

  it("reads the hourly USD of a plain Linux on-demand product", () => {
    assert.deepEqual(parsePriceListItem(page1.PriceList[0]), {
      instanceType: "m5.large",
      usdPerHour: 0.096,
      effectiveDate: "2025-12-01T00:00:00Z",
    });
  });

  it("skips capacity blocks and zero-priced placeholders", () => {
    assert.equal(parsePriceListItem(page1.PriceList[2]), undefined);
    assert.equal(parsePriceListItem(page1.PriceList[3]), undefined);
  });

  it("throws on an item that is not JSON, ignores JSON of another shape", () => {
    assert.throws(() => parsePriceListItem("{not json"));
    assert.equal(parsePriceListItem({ product: {} }), undefined);
    assert.equal(parsePriceListItem(42), undefined);
  });

  it("uses the standard on-demand filters", () => {
    const fields = Object.fromEntries(onDemandFilters("eu-west-1").map((f) => [f.Field, f.Value]));
    assert.deepEqual(fields, {
      regionCode: "eu-west-1",
      productFamily: "Compute Instance",
      operatingSystem: "Linux",
      tenancy: "Shared",
      preInstalledSw: "NA",
      capacitystatus: "Used",
    });
  });

  it("keeps the lower price of duplicates regardless of order", () => {
    const a = JSON.stringify({
      product: { attributes: { instanceType: "x.large" } },
      terms: { OnDemand: { t: { priceDimensions: { d: { unit: "Hrs", pricePerUnit: { USD: "0.2" } } } } } },
    });
    const b = a.replace('"0.2"', '"0.1"');
    assert.equal(collectOnDemand([a, b]).get("x.large"), 0.1);
    assert.equal(collectOnDemand([b, a]).get("x.large"), 0.1);
  });
});

describe("pricingApiFetcher", () => {
  it("pages through GetProducts and keeps only Linux on-demand prices", async () => {
    const client = recorded<GetProductsCommand["input"], GetProductsCommandOutput>({
      "": fixture("get-products.page1.json") as GetProductsCommandOutput,
      eyJ0b2tlbiI6IjEwMCJ9: fixture("get-products.page2.json") as GetProductsCommandOutput,
    });
    const prices = await pricingApiFetcher(client).fetchOnDemand("us-east-1");
    assert.deepEqual(Object.fromEntries(prices), {
      "m5.large": 0.096,
      "c6g.xlarge": 0.136,
      "m5.xlarge": 0.192,
      "p5.48xlarge": 55.04,
    });
    assert.equal(client.requests.length, 2);
    const [first, second] = client.requests;
    assert.equal(first?.ServiceCode, "AmazonEC2");
    assert.equal(second?.NextToken, "eyJ0b2tlbiI6IjEwMCJ9");
    assert.ok(first.Filters?.some((f) => f.Field === "regionCode" && f.Value === "us-east-1"));
  });

  it("propagates an API error", async () => {
    const client = { send: () => Promise.reject(new Error("AccessDeniedException")) };
    await assert.rejects(pricingApiFetcher(client).fetchOnDemand("us-east-1"), /AccessDenied/);
  });
});

describe("spotPriceHistoryFetcher", () => {
  it("keeps the newest price per type and zone across pages", async () => {
    const page1 = fixture("describe-spot-price-history.page1.json") as DescribeSpotPriceHistoryCommandOutput;
    const client = recorded<DescribeSpotPriceHistoryCommand["input"], DescribeSpotPriceHistoryCommandOutput>({
      "": page1,
      [page1.NextToken!]: fixture(
        "describe-spot-price-history.page2.json",
      ) as DescribeSpotPriceHistoryCommandOutput,
    });
    const now = new Date("2026-01-20T10:00:00Z");
    const got = await spotPriceHistoryFetcher(client).fetchSpot(now);
    const byKey = Object.fromEntries(got.map((p) => [`${p.instanceType}/${p.zone}`, p.usdPerHour]));
    assert.deepEqual(byKey, {
      "m5.large/us-east-1a": 0.0387,
      "m5.large/us-east-1b": 0.0351,
      "c6g.xlarge/us-east-1a": 0.0519,
      "c6g.xlarge/us-east-1c": 0.0493,
    });
    const [first] = client.requests;
    assert.equal(first?.StartTime, now);
    assert.deepEqual(first.ProductDescriptions, ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"]);
  });
});
