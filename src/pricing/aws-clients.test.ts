// The real AWS SDK v3 clients (credential chain, JSON 1.1 and EC2 query protocols, retries)
// against a local server replaying recorded responses (testing.ts, testdata/wire). Every failure
// mode a live region can hit ends in the table's prices, labelled, and is logged once.
import { after, afterEach, before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeClock } from "../shared/clock.ts";
import { createLogger, type Logger } from "../shared/log.ts";
import { awsFetchers, type AwsClientOptions } from "./aws-clients.ts";
import { describeError } from "./live.ts";
import { createPricing } from "./setup.ts";
import { setAwsEnv, startFakeAws, type FakeAws } from "./testing.ts";
import type { PriceQuote } from "./types.ts";

const KEYS = { accessKeyId: "AKIAFAKESTATICKEY001", secretAccessKey: "fake-secret-for-tests" };

/** Waits for real I/O (the local server) — never for the clock, which tests move themselves. */
async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function capture(): { log: Logger; lines: { level: string; msg: string; [k: string]: unknown }[] } {
  const lines: { level: string; msg: string }[] = [];
  return { lines, log: createLogger({ level: "debug", write: (l) => lines.push(JSON.parse(l) as never) }) };
}

let fake: FakeAws;
beforeEach(async () => {
  fake = await startFakeAws();
});
afterEach(() => fake.close());

const opts = (o: AwsClientOptions = {}): AwsClientOptions => ({
  endpoint: fake.url,
  credentials: KEYS,
  ...o,
});

describe("AWS SDK clients against recorded responses", () => {
  it("reads GetProducts (JSON 1.1) and DescribeSpotPriceHistory (EC2 XML) page by page", async () => {
    const f = awsFetchers(opts())("us-east-1");
    const od = await f.onDemand.fetchOnDemand("us-east-1");
    assert.deepEqual(Object.fromEntries(od), {
      "m5.large": 0.096,
      "c6g.xlarge": 0.136,
      "m5.xlarge": 0.192,
      "p5.48xlarge": 55.04,
    });
    const spot = await f.spot.fetchSpot(new Date("2026-01-20T10:00:00Z"));
    assert.deepEqual(Object.fromEntries(spot.map((p) => [`${p.instanceType}/${p.zone}`, p.usdPerHour])), {
      "m5.large/us-east-1a": 0.0387,
      "m5.large/us-east-1b": 0.0351,
      "c6g.xlarge/us-east-1a": 0.0519,
      "c6g.xlarge/us-east-1c": 0.0493,
    });
    assert.deepEqual(
      fake.requests.map((r) => [r.service, r.region, r.nextToken !== undefined, r.status]),
      [
        ["pricing", "us-east-1", false, 200],
        ["pricing", "us-east-1", true, 200],
        ["ec2", "us-east-1", false, 200],
        ["ec2", "us-east-1", true, 200],
      ],
    );
    assert.ok(
      fake.requests.every((r) => r.accessKeyId === KEYS.accessKeyId),
      "signed with the given keys",
    );
  });

  it("retries throttling (Pricing 400 ThrottlingException, EC2 503 RequestLimitExceeded) and 5xx", async () => {
    fake.fail("pricing", "throttle");
    fake.fail("ec2", "throttle");
    fake.fail("ec2", "server-error");
    const f = awsFetchers(opts())("us-east-1");
    assert.equal((await f.onDemand.fetchOnDemand("us-east-1")).size, 4);
    assert.equal((await f.spot.fetchSpot(new Date())).length, 4);
    assert.deepEqual(
      fake.requests.map((r) => `${r.service}:${r.status}`),
      ["pricing:400", "pricing:200", "pricing:200", "ec2:503", "ec2:500", "ec2:200", "ec2:200"],
    );
  });

  it("gives up after the SDK's attempts with an error that names the cause and holds no secrets", async () => {
    fake.fail("pricing", "throttle", 2);
    fake.fail("ec2", "server-error", 2);
    const f = awsFetchers(opts({ maxAttempts: 2 }))("us-east-1");
    const od = await f.onDemand.fetchOnDemand("us-east-1").catch((e: unknown) => e);
    assert.equal(describeError(od), "ThrottlingException (HTTP 400): Rate exceeded");
    const spot = await f.spot.fetchSpot(new Date()).catch((e: unknown) => e);
    assert.equal(describeError(spot), "InternalError (HTTP 500): An internal error has occurred");
    assert.doesNotMatch(describeError(od) + describeError(spot), /AKIA|fake-secret/);
  });

  it("bounds a hung request by the request timeout", async () => {
    fake.fail("pricing", "hang");
    const f = awsFetchers(opts({ maxAttempts: 1, requestTimeoutMs: 300 }))("us-east-1");
    const err = await f.onDemand.fetchOnDemand("us-east-1").catch((e: unknown) => e);
    assert.match(describeError(err), /TimeoutError/);
  });
});

describe("credentials from the standard chain", () => {
  let dir = "";
  let restore: () => void = () => undefined;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "wave-pricing-creds-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  afterEach(() => restore());

  it("EKS Pod Identity: container credentials from the agent's URI with the projected token", async () => {
    const tokenFile = join(dir, "eks-pod-identity-token");
    writeFileSync(tokenFile, fake.credentials.token);
    restore = setAwsEnv({
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `${fake.url}/v1/credentials`,
      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: tokenFile,
    });
    const f = awsFetchers({ endpoint: fake.url })("us-east-1");
    assert.equal((await f.onDemand.fetchOnDemand("us-east-1")).get("m5.large"), 0.096);
    assert.equal(fake.requests[0]?.service, "credentials");
    const signed = fake.requests.filter((r) => r.service === "pricing");
    assert.ok(signed.length > 0 && signed.every((r) => r.accessKeyId === fake.credentials.accessKeyId));
  });

  it("none resolve: the fallback answers with its label, logged once at info under auto", async () => {
    restore = setAwsEnv({});
    const clock = new FakeClock(Date.UTC(2026, 0, 20, 10));
    const { log, lines } = capture();
    const pricing = createPricing({
      clock,
      log,
      fetchersFor: awsFetchers({ endpoint: fake.url, maxAttempts: 1 }),
      quietNoCredentials: true,
    });
    const ac = new AbortController();
    const done = pricing.run(ac.signal);
    // The first lookup of a us-east-1 node starts that region's prices and is answered by the table.
    assert.deepEqual(pricing.provider.price("m5.large", "on-demand", "us-east-1a"), {
      usdPerHour: 0.096,
      source: "static",
      asOf: "2026-01-19",
    });
    await until(() => pricing.live?.status()[0]?.spot.state === "no-credentials", "no-credentials");
    assert.equal(pricing.live?.status()[0]?.onDemand.state, "no-credentials");
    assert.equal(pricing.provider.price("m5.large", "spot", "us-east-1a")?.source, "estimate");
    // Retries keep failing the same way: still one line per source.
    await until(() => clock.pending === 1, "the region's loop to park");
    for (let i = 0; i < 3; i++) {
      const before = clock.now();
      await clock.advance(5 * 60_000);
      await until(() => clock.pending === 1 && clock.now() > before, "the retry to park");
    }
    const said = lines.filter((l) => /credentials/.test(l.msg));
    assert.deepEqual(
      said.map((l) => [l.level, l.source]),
      [
        ["info", "on-demand"],
        ["info", "spot"],
      ],
    );
    assert.equal(fake.requests.length, 0, "nothing unsigned was sent");
    ac.abort();
    await done;
  });
});

describe("live prices per region over the real clients: every failure ends in the labelled table", () => {
  const T0 = Date.UTC(2026, 0, 20, 10);
  const HOUR = 3_600_000;

  function live(o: { regions?: string[]; maxAgeMs?: number; log?: Logger } = {}) {
    const clock = new FakeClock(T0);
    const pricing = createPricing({
      clock,
      ...(o.log ? { log: o.log } : {}),
      fetchersFor: awsFetchers(opts({ maxAttempts: 1 })),
      ...(o.regions ? { regions: o.regions } : {}),
      ...(o.maxAgeMs !== undefined ? { maxAgeMs: o.maxAgeMs } : {}),
    });
    const ac = new AbortController();
    const done = pricing.run(ac.signal);
    const status = (region: string) => pricing.live?.status().find((s) => s.region === region);
    return {
      clock,
      pricing,
      p: pricing.provider,
      status,
      /** Waits until the region's loop has finished a refresh and parked on the clock. */
      settled: async (region: string, n = 1) => {
        await until(
          () => status(region)?.onDemand.state !== "pending" && status(region)?.spot.state !== "pending",
          `${region} refreshed`,
        );
        await until(() => clock.pending === n, "loops parked");
      },
      stop: async () => {
        ac.abort();
        await done;
      },
    };
  }

  it("discovers each region from the nodes' zones and serves its recorded prices", async () => {
    const l = live();
    assert.equal(l.p.price("m5.large", "spot", "us-east-1a")?.source, "estimate", "until fetched");
    assert.equal(l.p.price("m5.large", "on-demand", undefined, "eu-west-1")?.source, "static");
    await l.settled("us-east-1", 2);
    await l.settled("eu-west-1", 2);
    const asOf = new Date(T0).toISOString();
    const liveQuote = (usdPerHour: number): PriceQuote => ({ usdPerHour, source: "live", asOf });
    assert.deepEqual(l.p.price("m5.large", "spot", "us-east-1a"), liveQuote(0.0387));
    assert.deepEqual(l.p.price("c6g.xlarge", "spot", "us-east-1c"), liveQuote(0.0493));
    assert.deepEqual(l.p.price("m5.large", "spot", "eu-west-1b"), liveQuote(0.0398));
    assert.deepEqual(l.p.price("m5.large", "on-demand", "eu-west-1b"), liveQuote(0.107));
    assert.deepEqual(l.pricing.live?.regions, ["eu-west-1", "us-east-1"]);
    // A zone-less, region-less lookup and a non-AWS zone start nothing.
    assert.equal(l.p.price("m5.large", "on-demand"), undefined, "no region known: unpriced, not guessed");
    l.p.price("m5.large", "on-demand", "test-zone-a");
    assert.deepEqual(l.pricing.live.regions, ["eu-west-1", "us-east-1"]);
    await l.stop();
  });

  it("partial data: what the answer lacks falls back per node, the rest is live", async () => {
    fake.setPages("ec2", "us-east-1", [
      (await import("node:fs")).readFileSync(
        new URL("./testdata/wire/describe-spot-price-history.us-east-1.2.xml", import.meta.url),
        "utf8",
      ),
    ]);
    const l = live({ regions: ["us-east-1"] });
    await l.settled("us-east-1");
    assert.equal(l.p.price("c6g.xlarge", "spot", "us-east-1c")?.source, "live");
    assert.equal(l.p.price("m5.large", "spot", "us-east-1b")?.usdPerHour, 0.0366);
    const missing = l.p.price("m5.large", "spot", "us-east-1a");
    assert.equal(missing?.source, "estimate");
    assert.equal(missing.usdPerHour, 0.0336, "0.35 × the live on-demand price");
    assert.equal(l.p.price("c7g.large", "on-demand", "us-east-1a")?.source, "static", "not in the answer");
    await l.stop();
  });

  it("partial data: a page that fails mid-way fails the refresh, never half a price list", async () => {
    const l = live({ regions: ["us-east-1"] });
    await l.settled("us-east-1");
    assert.equal(l.status("us-east-1")?.onDemand.prices, 4);
    fake.setPages("pricing", "us-east-1", [
      (await import("node:fs")).readFileSync(
        new URL("./testdata/wire/get-products.us-east-1.1.json", import.meta.url),
        "utf8",
      ),
    ]); // page 2 is gone: its NextToken is refused
    await l.clock.advance(12 * HOUR);
    await until(() => l.status("us-east-1")?.onDemand.state === "failing", "failing");
    assert.match(l.status("us-east-1")?.onDemand.lastError ?? "", /InvalidNextTokenException \(HTTP 400\)/);
    assert.equal(l.status("us-east-1")?.onDemand.prices, 4, "the previous full list is kept");
    assert.equal(l.p.price("p5.48xlarge", "on-demand", "us-east-1a")?.source, "live");
    await l.stop();
  });

  it("throttled or failing endpoints: table prices, labelled, until they answer; logged once per change", async () => {
    const { log, lines } = capture();
    fake.fail("pricing", "throttle", 3);
    fake.fail("ec2", "server-error", 3);
    const l = live({ regions: ["us-east-1"], log });
    await l.settled("us-east-1");
    assert.equal(l.status("us-east-1")?.onDemand.state, "failing");
    assert.equal(l.p.price("m5.large", "on-demand", "us-east-1a")?.source, "static");
    assert.equal(l.p.price("m5.large", "spot", "us-east-1a")?.source, "estimate");
    for (let i = 0; i < 2; i++) {
      await l.clock.advance(5 * 60_000); // the short retry, not 12 h
      await until(() => l.clock.pending === 1, "parked");
    }
    await l.clock.advance(5 * 60_000);
    await until(() => l.status("us-east-1")?.spot.state === "ok", "recovered");
    assert.equal(l.p.price("m5.large", "spot", "us-east-1a")?.source, "live");
    const pricingLines = lines
      .filter((x) => x.component === "pricing.live")
      .map((x) => `${x.level} ${String(x.source)} ${x.msg}`);
    assert.deepEqual(pricingLines.sort(), [
      "info on-demand live prices recovered",
      "info spot live prices recovered",
      "warn on-demand live prices unavailable: prices from the shipped table meanwhile",
      "warn spot live prices unavailable: prices from the shipped table meanwhile",
    ]);
    assert.doesNotMatch(JSON.stringify(lines), /AKIA|fake-secret/);
    await l.stop();
  });

  it("region not found: the Pricing API and EC2 answer nothing there; the table answers, labelled", async () => {
    const l = live({ regions: ["ap-northeast-1"] });
    await l.settled("ap-northeast-1");
    const s = l.status("ap-northeast-1");
    assert.equal(s?.onDemand.state, "failing");
    assert.match(
      s.onDemand.lastError ?? "",
      /RegionNotPriced: the Pricing API has no Linux on-demand prices for ap-northeast-1/,
    );
    assert.match(s.spot.lastError ?? "", /RegionNotPriced/);
    const q = l.p.price("m5.large", "on-demand", "ap-northeast-1a");
    assert.equal(q?.source, "static");
    assert.equal(q.asOf, "2024-12-01");
    await l.stop();
  });

  it("stale: past the max age live prices stop answering and the table does, labelled", async () => {
    const { log, lines } = capture();
    const l = live({ regions: ["us-east-1"], maxAgeMs: 24 * HOUR, log });
    await l.settled("us-east-1");
    assert.equal(l.p.price("m5.large", "spot", "us-east-1b")?.source, "live");
    fake.fail("pricing", "server-error", 1000);
    fake.fail("ec2", "server-error", 1000);
    await l.clock.advance(12 * HOUR);
    await until(() => l.clock.pending === 1 && l.status("us-east-1")?.spot.state === "failing", "failing");
    assert.equal(l.p.price("m5.large", "spot", "us-east-1b")?.source, "live", "12 h old: still served");
    // Retries every 5 min keep failing until the prices are more than 24 h old.
    for (let t = 0; t <= 12 * HOUR; t += 60 * 60_000) {
      const before = fake.requests.length;
      await l.clock.advance(60 * 60_000);
      await until(() => l.clock.pending === 1 && fake.requests.length > before, "retried");
    }
    assert.equal(l.status("us-east-1")?.spot.state, "stale");
    const q = l.p.price("m5.large", "spot", "us-east-1b");
    assert.equal(q?.source, "estimate");
    assert.equal(l.p.price("m5.large", "on-demand", "us-east-1b")?.source, "static");
    assert.equal(lines.filter((x) => /older than the max age/.test(x.msg)).length, 2, "once per source");
    await l.stop();
  });
});
