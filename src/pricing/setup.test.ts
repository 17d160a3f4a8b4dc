import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock, flushMicrotasks } from "../shared/clock.ts";
import { createPricing } from "./setup.ts";

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
