import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { formatAmounts, parseQuantity, resourceAmount, toAmounts } from "./quantity.ts";

describe("quantities", () => {
  it("parses SI, binary and exponent forms", () => {
    assert.equal(parseQuantity("1.5Gi"), 1.5 * 2 ** 30);
    assert.equal(parseQuantity("2k"), 2000);
    assert.equal(parseQuantity("1e3"), 1000);
    assert.equal(parseQuantity("100M"), 1e8);
  });

  it("counts cpu in millicores, rounding up like the scheduler", () => {
    assert.equal(resourceAmount("cpu", "0.1"), 100);
    assert.equal(resourceAmount("cpu", "250m"), 250);
    assert.equal(resourceAmount("cpu", "1n"), 1);
    assert.deepEqual(toAmounts({ cpu: "2", memory: "1Gi", pods: "110" }), {
      cpu: 2000,
      memory: 2 ** 30,
      pods: 110,
    });
  });

  it("rejects garbage with the value in the message", () => {
    assert.throws(() => parseQuantity("12 apples"), /"12 apples"/);
    assert.throws(() => parseQuantity(""), /invalid quantity/);
  });

  it("formats back to what the apiserver accepts", () => {
    assert.deepEqual(formatAmounts({ cpu: 1500, memory: 2 ** 30, gpu: 0 }), {
      cpu: "1500m",
      memory: "1073741824",
    });
  });
});
