import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { formatRoute, parseRoute } from "../src/route.ts";
import { parseRange, rangeQuery, resolveRange } from "../src/range.ts";
import { num, usd, usdDelta } from "../src/format.ts";

describe("deep links", () => {
  it("round-trips page, cluster, range, node and filters through the URL fragment", () => {
    const r = parseRoute("#/disruptions?cluster=prod&range=6h&node=ip-1&pool=general&reason=Drifted");
    assert.equal(r.page, "disruptions");
    assert.equal(r.cluster, "prod");
    assert.deepEqual(r.range, { kind: "preset", id: "6h" });
    assert.equal(r.node, "ip-1");
    assert.deepEqual(r.params, { pool: "general", reason: "Drifted" });
    assert.deepEqual(parseRoute(formatRoute(r)), r);
  });

  it("falls back to the overview and the last hour on anything it does not know", () => {
    const r = parseRoute("#/nope?range=banana");
    assert.equal(r.page, "overview");
    assert.deepEqual(r.range, { kind: "preset", id: "1h" });
    assert.deepEqual(parseRoute(""), { ...r, cluster: undefined });
  });

  it("resolves custom ranges to absolute bounds, presets to a window ending now", () => {
    const now = 10_000_000;
    assert.deepEqual(parseRange("1000-2000"), { kind: "custom", from: 1000, to: 2000 });
    assert.deepEqual(parseRange("2000-1000"), { kind: "preset", id: "1h" }, "an empty range is refused");
    assert.deepEqual(resolveRange({ kind: "preset", id: "15m" }, now), { from: now - 900_000, to: now });
    assert.equal(rangeQuery({ kind: "custom", from: 1, to: 2 }, now), "from=1&to=2");
  });
});

describe("number formats", () => {
  it("formats counts and money one way", () => {
    assert.equal(num(150000), "150,000");
    assert.equal(usd(0.0421), "$0.042");
    assert.equal(usd(12345), "$12.3k");
    assert.equal(usdDelta(-0.42), "−$0.420/h");
    assert.equal(usdDelta(1.5), "+$1.50/h");
  });
});
