import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CompositePriceProvider, DEFAULT_SPOT_ESTIMATE_FACTOR } from "./composite.ts";
import { StaticPriceProvider } from "./static.ts";
import type { PriceProvider, PriceQuote } from "./types.ts";
import { priceTable } from "./testing.ts";

const staticProvider = new StaticPriceProvider(
  priceTable({
    "us-east-1": {
      asOf: "2026-01-19",
      provenance: "published",
      onDemand: { "m5.large": 0.096, "c5.large": 0.085 },
    },
  }),
);

/** A live provider that knows m5.large only. */
const live: PriceProvider = {
  price(it, ct, zone): PriceQuote | undefined {
    if (it !== "m5.large") return undefined;
    if (ct === "spot")
      return zone === "us-east-1a"
        ? { usdPerHour: 0.04, source: "live", asOf: "2026-01-20T10:00:00Z" }
        : undefined;
    return { usdPerHour: 0.097, source: "live", asOf: "2026-01-20T10:00:00Z" };
  },
};

describe("CompositePriceProvider", () => {
  const p = new CompositePriceProvider({ live, static: staticProvider, spotEstimateFactor: 0.4 });

  it("prefers kwok for KWOK types", () => {
    assert.equal(p.price("c-1x-amd64-linux", "on-demand", "test-zone-a")?.source, "kwok");
  });

  it("prefers live, then static, then a spot estimate from the best on-demand price", () => {
    assert.equal(p.price("m5.large", "spot", "us-east-1a")?.source, "live");
    assert.equal(p.price("m5.large", "on-demand", "us-east-1a")?.usdPerHour, 0.097);
    assert.deepEqual(p.price("c5.large", "on-demand", "us-east-1a"), {
      usdPerHour: 0.085,
      source: "static",
      asOf: "2026-01-19",
    });
    // spot unknown live in us-east-1b: 0.4 × live on-demand
    const est = p.price("m5.large", "spot", "us-east-1b")!;
    assert.equal(est.source, "estimate");
    assert.ok(Math.abs(est.usdPerHour - 0.4 * 0.097) < 1e-12);
    assert.ok(Math.abs(p.price("c5.large", "spot", "us-east-1b")!.usdPerHour - 0.4 * 0.085) < 1e-12);
    assert.equal(p.price("x9.huge", "spot", "us-east-1b"), undefined);
  });

  it("works with the static table alone (no credentials)", () => {
    const offline = new CompositePriceProvider({ static: staticProvider });
    const q = offline.price("m5.large", "spot", "us-east-1d")!;
    assert.equal(q.source, "estimate");
    assert.ok(Math.abs(q.usdPerHour - DEFAULT_SPOT_ESTIMATE_FACTOR * 0.096) < 1e-12);
  });

  it("rejects a nonsensical estimate factor", () => {
    for (const spotEstimateFactor of [0, 1.5, NaN])
      assert.throws(
        () => new CompositePriceProvider({ static: staticProvider, spotEstimateFactor }),
        RangeError,
      );
  });
});
