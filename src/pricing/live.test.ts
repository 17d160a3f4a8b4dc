import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { FakeClock, flushMicrotasks } from "../shared/clock.ts";
import { pricingApiFetcher, spotPriceHistoryFetcher, type OnDemandFetcher, type SpotFetcher } from "./aws.ts";
import { LIVE_REFRESH_MS, LIVE_RETRY_MS, LivePriceProvider } from "./live.ts";

function fixture(name: string): unknown {
  return JSON.parse(readFileSync(new URL(`./testdata/${name}`, import.meta.url), "utf8"));
}

/** SDK-shaped clients replaying the recorded pages. */
function recordedClients() {
  const calls = { pricing: 0, ec2: 0 };
  const pricing = {
    send(cmd: { input: { NextToken?: string } }) {
      calls.pricing++;
      return Promise.resolve(
        fixture(cmd.input.NextToken ? "get-products.page2.json" : "get-products.page1.json"),
      );
    },
  };
  const ec2 = {
    send(cmd: { input: { NextToken?: string } }) {
      calls.ec2++;
      return Promise.resolve(
        fixture(
          cmd.input.NextToken
            ? "describe-spot-price-history.page2.json"
            : "describe-spot-price-history.page1.json",
        ),
      );
    },
  };
  return {
    calls,
    onDemand: pricingApiFetcher(pricing as never),
    spot: spotPriceHistoryFetcher(ec2 as never),
  };
}

describe("LivePriceProvider", () => {
  it("serves spot per zone and on-demand after a refresh, stamped with the fetch time", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 20, 10));
    const { onDemand, spot } = recordedClients();
    const live = new LivePriceProvider({ region: "us-east-1", clock, onDemand, spot });
    assert.equal(live.available, false);
    assert.equal(live.price("m5.large", "on-demand", "us-east-1a"), undefined);
    assert.equal(await live.refresh(), true);
    assert.deepEqual(live.price("m5.large", "spot", "us-east-1b"), {
      usdPerHour: 0.0351,
      source: "live",
      asOf: "2026-01-20T10:00:00.000Z",
    });
    assert.equal(live.price("m5.large", "on-demand", "us-east-1b")?.usdPerHour, 0.096);
    assert.equal(live.price("m5.large", "reserved", "us-east-1b")?.usdPerHour, 0.096);
    assert.equal(live.price("m5.large", "spot", "us-east-1c"), undefined, "no offering in that zone");
    assert.equal(live.price("m5.large", "spot"), undefined, "spot needs a zone");
    assert.equal(live.price("m5.large", "on-demand", "eu-west-1a"), undefined, "other region");
    assert.equal(live.status.spot.prices, 4);
    assert.equal(live.status.spot.state, "ok");
  });

  it("refreshes every 12 h on the injected clock and stops on abort", async () => {
    const clock = new FakeClock();
    const { calls, onDemand, spot } = recordedClients();
    const live = new LivePriceProvider({ region: "us-east-1", clock, onDemand, spot });
    const ac = new AbortController();
    const done = live.run(ac.signal);
    await flushMicrotasks();
    assert.equal(calls.pricing, 2, "two pages");
    await clock.advance(LIVE_REFRESH_MS - 1);
    assert.equal(calls.pricing, 2);
    await clock.advance(1);
    assert.equal(calls.pricing, 4);
    ac.abort();
    await done;
  });

  it("keeps the last good prices when a refresh fails, and retries sooner", async () => {
    const clock = new FakeClock();
    let fail = false;
    let fetches = 0;
    const onDemand: OnDemandFetcher = {
      fetchOnDemand: () => {
        fetches++;
        return fail
          ? Promise.reject(new Error("ThrottlingException"))
          : Promise.resolve(new Map([["m5.large", 0.096]]));
      },
    };
    const spot: SpotFetcher = { fetchSpot: () => Promise.resolve([]) }; // empty answer = failure
    const live = new LivePriceProvider({ region: "us-east-1", clock, onDemand, spot });
    const ac = new AbortController();
    const done = live.run(ac.signal);
    await flushMicrotasks();
    assert.equal(live.price("m5.large", "on-demand", "us-east-1a")?.usdPerHour, 0.096);
    assert.match(
      live.status.spot.lastError ?? "",
      /RegionNotPriced: DescribeSpotPriceHistory has no Linux spot prices/,
    );
    assert.equal(live.status.spot.state, "failing");
    fail = true;
    await clock.advance(LIVE_RETRY_MS);
    assert.equal(fetches, 2, "retried after the short delay, not 12 h");
    assert.equal(live.price("m5.large", "on-demand", "us-east-1a")?.usdPerHour, 0.096, "old price kept");
    assert.match(live.status.onDemand.lastError ?? "", /Throttling/);
    assert.equal(live.status.onDemand.state, "failing");
    ac.abort();
    await done;
  });

  it("without credentials (no fetchers) knows nothing and reports success", async () => {
    const live = new LivePriceProvider({ region: "us-east-1", clock: new FakeClock() });
    assert.equal(await live.refresh(), true);
    assert.equal(live.available, false);
    assert.equal(live.price("m5.large", "on-demand", "us-east-1a"), undefined);
  });
});
