import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock, flushMicrotasks } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { Registry } from "../shared/metrics.ts";
import { createPricing, startPricing } from "./setup.ts";

describe("createPricing", () => {
  it("without AWS sources prices from the shipped table, KWOK, and estimates spot", async () => {
    const p = createPricing({ clock: new FakeClock(), regions: ["us-east-1"] });
    assert.equal(p.live, undefined);
    await p.run(new AbortController().signal); // returns at once
    assert.equal(p.provider.price("m5.large", "on-demand")?.source, "static");
    assert.equal(p.provider.price("m5.large", "spot", "us-east-1a")?.source, "estimate");
    assert.equal(p.provider.price("s-4x-arm64-linux", "spot", "test-zone-b")?.source, "kwok");
  });

  it("with AWS sources serves live prices once refreshed", async () => {
    const clock = new FakeClock();
    const p = createPricing({
      clock,
      regions: ["eu-west-1"],
      fetchersFor: () => ({
        onDemand: { fetchOnDemand: () => Promise.resolve(new Map([["m5.large", 0.107]])) },
        spot: {
          fetchSpot: () =>
            Promise.resolve([
              { instanceType: "m5.large", zone: "eu-west-1b", usdPerHour: 0.03, timestamp: 0 },
            ]),
        },
      }),
      spotEstimateFactor: 0.5,
    });
    assert.ok(p.live);
    const ac = new AbortController();
    const done = p.run(ac.signal);
    await flushMicrotasks();
    assert.deepEqual(p.provider.price("m5.large", "spot", "eu-west-1b")?.source, "live");
    assert.equal(p.provider.price("m5.large", "on-demand", "eu-west-1b")?.usdPerHour, 0.107);
    assert.equal(p.provider.price("m5.large", "spot", "eu-west-1c")?.usdPerHour, 0.0535);
    assert.equal(p.provider.price("c5.large", "on-demand", "eu-west-1a")?.source, "static");
    ac.abort();
    await done;
  });
});

describe("startPricing", () => {
  const config = {
    pricingSource: "auto" as const,
    pricingRegions: [] as string[],
    pricingRefreshMs: 12 * 3_600_000,
    pricingMaxAgeMs: 24 * 3_600_000,
  };
  const deps = () => ({ clock: new FakeClock(), log: silentLogger, signal: AbortSignal.abort() });

  it("static never prices live; auto keeps the simulated cluster on the table; aws and auto go live", () => {
    assert.equal(startPricing({ ...config, pricingSource: "static" }, deps()).live, undefined);
    assert.equal(startPricing(config, { ...deps(), simulated: true }).live, undefined);
    assert.ok(startPricing(config, deps()).live);
    const fixed = startPricing({ ...config, pricingSource: "aws", pricingRegions: ["eu-west-1"] }, deps());
    assert.deepEqual(fixed.live?.regions, ["eu-west-1"]);
    // One fixed region is also the table's default for zone-less lookups.
    assert.equal(fixed.provider.price("m5.large", "on-demand")?.source, "static");
  });

  it("exports each region's state and age on /metrics", async () => {
    const metrics = new Registry();
    const clock = new FakeClock(Date.UTC(2026, 0, 20));
    // Already aborted: nothing is fetched, the state stays pending.
    const p = startPricing(
      { ...config, pricingRegions: ["us-east-1"] },
      { clock, log: silentLogger, signal: AbortSignal.abort(), metrics },
    );
    assert.match(
      await metrics.render(),
      /^wave_pricing_live_state\{region="us-east-1",source="spot",state="pending"\} 1$/m,
    );
    assert.ok(p.live);
  });
});
