import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parsePolicy } from "./validate-warmup.ts";
import { DEFAULT_POLICY } from "./warmup.ts";

describe("parsePolicy", () => {
  it("fills gaps from the defaults", () => {
    assert.deepEqual(parsePolicy({ enabled: true, maxCostPerHour: 2.5 }), {
      ok: true,
      policy: { ...DEFAULT_POLICY, enabled: true, maxCostPerHour: 2.5 },
    });
  });

  it("names every bad field, including unknown ones", () => {
    assert.deepEqual(
      parsePolicy({ enabled: "yes", ttlSeconds: 5, maxWarmNodes: 1.5, maxCostPerHour: -1, ttlSecond: 60 }),
      {
        ok: false,
        errors: [
          "enabled: expected true or false",
          "ttlSeconds: expected an integer from 30 to 86400",
          "maxWarmNodes: expected an integer from 0 to 100",
          "maxCostPerHour: expected a number >= 0 or null",
          "ttlSecond: unknown field",
        ],
      },
    );
    assert.deepEqual(parsePolicy([]), { ok: false, errors: ["policy: expected an object"] });
  });
});
