import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import {
  cpuMillis,
  formatBytesHuman,
  formatCpuHuman,
  formatMilli,
  formatUnits,
  isQuantity,
  memoryBytes,
  parseMilli,
  parseQuantity,
  parseQuantityNano,
  parseUnits,
  QuantityError,
} from "./quantity.ts";

describe("parseQuantityNano", () => {
  const cases: [string, bigint][] = [
    ["0", 0n],
    ["500m", 500_000_000n],
    ["2", 2_000_000_000n],
    ["1.5", 1_500_000_000n],
    ["+1.5", 1_500_000_000n],
    ["-1.5", -1_500_000_000n],
    [".5", 500_000_000n],
    ["5.", 5_000_000_000n],
    ["007", 7_000_000_000n],
    ["1n", 1n],
    ["1u", 1000n],
    ["1k", 1_000_000_000_000n],
    ["1M", 10n ** 15n],
    ["1G", 10n ** 18n],
    ["1T", 10n ** 21n],
    ["1P", 10n ** 24n],
    ["1E", 10n ** 27n],
    ["1e3", 1000n * 10n ** 9n],
    ["1E3", 1000n * 10n ** 9n],
    ["1e+3", 1000n * 10n ** 9n],
    ["12e-3", 12_000_000n],
    ["100Ki", 102_400n * 10n ** 9n],
    ["512Mi", 536_870_912n * 10n ** 9n],
    ["2Gi", 2_147_483_648n * 10n ** 9n],
    ["1.5Gi", 1_610_612_736n * 10n ** 9n],
    ["1Ti", 2n ** 40n * 10n ** 9n],
    ["1Pi", 2n ** 50n * 10n ** 9n],
    ["1Ei", 2n ** 60n * 10n ** 9n],
  ];
  for (const [input, want] of cases) {
    it(`parses ${input}`, () => assert.equal(parseQuantityNano(input), want));
  }

  it("rounds sub-nano amounts up, away from zero, like the apiserver", () => {
    assert.equal(parseQuantityNano("0.1n"), 1n);
    assert.equal(parseQuantityNano("1e-12"), 1n);
    assert.equal(parseQuantityNano("-1e-12"), -1n);
    assert.equal(parseQuantityNano("1.0000000001"), 1_000_000_001n);
    assert.equal(parseQuantityNano("0e-30"), 0n);
    assert.equal(parseQuantityNano("1e-60"), 1n);
  });

  const bad: [string, RegExp][] = [
    ["", /no digits|expected/],
    ["m", /no digits/],
    [".", /no digits/],
    ["-", /no digits/],
    ["Gi", /no digits/],
    ["1Gb", /unknown suffix "Gb"/],
    ["1ki", /unknown suffix "ki"/],
    ["1KiB", /unknown suffix/],
    ["1e", /unknown suffix "e"/],
    ["1Ki3", /unknown suffix "Ki3"/],
    ["1 Gi", /expected/],
    [" 1", /expected/],
    ["1.2.3", /expected/],
    ["--1", /no digits/],
    ["1-1", /unknown suffix "-1"/],
    ["0x10", /unknown suffix/],
    ["NaN", /no digits/],
    ["Infinity", /no digits/],
    ["1e999999999", /exponent out of range/],
    ["1e61", /exponent out of range/],
  ];
  for (const [input, msg] of bad) {
    it(`rejects ${JSON.stringify(input)}`, () => {
      assert.throws(
        () => parseQuantityNano(input),
        (err: unknown) => err instanceof QuantityError && msg.test(err.message) && err.input === input,
      );
    });
  }

  it("names the input in the error", () => {
    assert.throws(() => parseQuantityNano("12Gb"), { message: /invalid quantity "12Gb"/ });
  });
  it("rejects a non-string", () => {
    assert.throws(() => parseQuantityNano(3 as unknown as string), QuantityError);
  });
  it("isQuantity mirrors the parser", () => {
    assert.equal(isQuantity("2Gi"), true);
    assert.equal(isQuantity("2GB"), false);
  });
});

describe("number conversions", () => {
  it("CPU in millicores, rounded up", () => {
    assert.equal(cpuMillis("500m"), 500);
    assert.equal(cpuMillis("2"), 2000);
    assert.equal(cpuMillis("1.5"), 1500);
    assert.equal(cpuMillis("0.1m"), 1);
    assert.equal(cpuMillis("250000u"), 250);
    assert.equal(cpuMillis("1k"), 1_000_000);
    assert.equal(parseMilli("-0.5m"), -1);
  });
  it("memory in bytes, rounded up", () => {
    assert.equal(memoryBytes("2Gi"), 2_147_483_648);
    assert.equal(memoryBytes("512Mi"), 536_870_912);
    assert.equal(memoryBytes("1G"), 1_000_000_000);
    assert.equal(memoryBytes("1e3"), 1000);
    assert.equal(memoryBytes("100Ki"), 102_400);
    assert.equal(memoryBytes("8182Mi"), 8_579_448_832);
    assert.equal(parseUnits("500m"), 1);
    assert.equal(parseUnits("1Ei"), 2 ** 60);
  });
  it("generic parse keeps fractions", () => {
    assert.equal(parseQuantity("500m"), 0.5);
    assert.equal(parseQuantity("1.5"), 1.5);
    assert.equal(parseQuantity("1Ki"), 1024);
    assert.equal(parseQuantity("1M"), 1e6);
    assert.equal(parseQuantity("-250m"), -0.25);
  });
});

describe("formatting", () => {
  it("millicores round-trip", () => {
    for (const m of [0, 1, 250, 1000, 1500, 3900, 64000]) assert.equal(cpuMillis(formatMilli(m)), m);
    assert.equal(formatMilli(2000), "2");
    assert.equal(formatMilli(1500), "1500m");
    assert.throws(() => formatMilli(1.5), RangeError);
  });
  it("units pick the largest exact suffix and round-trip", () => {
    assert.equal(formatUnits(2 ** 31), "2Gi");
    assert.equal(formatUnits(8_579_448_832), "8182Mi");
    assert.equal(formatUnits(1536), "1536");
    assert.equal(formatUnits(3072), "3Ki");
    assert.equal(formatUnits(1000, false), "1k");
    assert.equal(formatUnits(64, false), "64");
    assert.equal(formatUnits(0), "0");
    for (const b of [1, 1023, 1024, 1536, 2 ** 40, 5 * 2 ** 50, 123_456_789]) {
      assert.equal(memoryBytes(formatUnits(b)), b);
    }
  });
  it("human display", () => {
    assert.equal(formatBytesHuman(1_610_612_736), "1.5Gi");
    assert.equal(formatBytesHuman(2 ** 31), "2Gi");
    assert.equal(formatBytesHuman(512), "512B");
    assert.equal(formatBytesHuman(100), "100B");
    assert.equal(formatBytesHuman(10 * 2 ** 30), "10Gi");
    assert.equal(formatBytesHuman(8_579_448_832), "8Gi");
    assert.equal(formatBytesHuman(8_579_448_832, 2), "7.99Gi");
    assert.equal(formatCpuHuman(1500), "1.5");
    assert.equal(formatCpuHuman(250), "250m");
    assert.equal(formatCpuHuman(3900), "3.9");
    assert.equal(formatCpuHuman(100), "100m");
    assert.equal(formatCpuHuman(10_000), "10");
  });
});

describe("agrees with k8s.io/apimachinery (golden file)", () => {
  const golden = readFileSync(
    new URL("../../test/fixtures/karpenter/quantity-golden.txt", import.meta.url),
    "utf8",
  )
    .trim()
    .split("\n");

  it("has a meaningful number of cases", () => {
    assert.ok(golden.length > 1000);
  });

  it("every MilliValue, Value and rejection matches", () => {
    const mismatches: string[] = [];
    for (const line of golden) {
      const m = /^(".*") (ERR|(-?\d+) (-?\d+))$/.exec(line);
      assert.ok(m, `malformed golden line ${line}`);
      const input = JSON.parse(m[1] ?? "") as string;
      let ours: string;
      try {
        ours = `${String(parseMilli(input))} ${String(parseUnits(input))}`;
      } catch (err) {
        assert.ok(err instanceof QuantityError);
        ours = "ERR";
      }
      if (ours !== m[2]) mismatches.push(`${JSON.stringify(input)}: kubernetes ${m[2] ?? ""}, wave ${ours}`);
    }
    assert.deepEqual(mismatches, []);
  });

  it("deliberate differences: bare suffixes rejected, negatives rounded away from zero", () => {
    assert.throws(() => parseQuantityNano("Gi"), QuantityError); // apimachinery: 0
    assert.equal(parseMilli("-.06662268Ki"), -68222); // apimachinery: -68220
  });
});
