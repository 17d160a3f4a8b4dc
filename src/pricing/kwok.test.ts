import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import {
  KwokInstanceTypesError,
  KwokPriceProvider,
  kwokOnDemandPrice,
  parseKwokInstanceType,
  parseKwokInstanceTypes,
} from "./kwok.ts";

const GIB = 2 ** 30;

describe("KWOK instance type names", () => {
  it("parses family, vCPU, memory per vCPU, arch and os", () => {
    assert.deepEqual(parseKwokInstanceType("c-1x-amd64-linux"), {
      name: "c-1x-amd64-linux",
      family: "c",
      vcpu: 1,
      memoryBytes: 2 * GIB,
      arch: "amd64",
      os: "linux",
    });
    assert.equal(parseKwokInstanceType("s-16x-arm64-windows")?.memoryBytes, 64 * GIB);
    assert.equal(parseKwokInstanceType("m-256x-arm64-linux")?.memoryBytes, 2048 * GIB);
  });

  it("rejects anything else", () => {
    for (const n of [
      "m5.large",
      "c-0x-amd64-linux",
      "e-2x-amd64-linux",
      "c-2x-x86-linux",
      "c-2x-amd64-linux-extra",
    ]) {
      assert.equal(parseKwokInstanceType(n), undefined, n);
    }
  });
});

describe("KWOK price formula", () => {
  // The two values below are the Price fields of c-1x-amd64-linux in Karpenter v1.8.2's
  // kwok/cloudprovider/instance_types.json.
  it("matches the embedded file's c-1x-amd64-linux offerings", () => {
    const p = new KwokPriceProvider();
    assert.equal(p.price("c-1x-amd64-linux", "on-demand", "test-zone-a")?.usdPerHour, 0.027147483648);
    const spot = p.price("c-1x-amd64-linux", "spot", "test-zone-b")?.usdPerHour ?? 0;
    assert.ok(Math.abs(spot - 0.019003238553599998) < 1e-15);
  });

  it("is 0.025/vCPU + 0.001/GB, spot 0.7×, reserved billed as on-demand", () => {
    assert.equal(kwokOnDemandPrice(4, 16 * GIB), 0.1 + (0.001 * 16 * GIB) / 1e9);
    const p = new KwokPriceProvider();
    const od = p.price("m-8x-amd64-linux", "on-demand")!;
    assert.equal(od.source, "kwok");
    assert.ok(Math.abs(od.usdPerHour - (0.2 + 0.001 * 64 * 1.073741824)) < 1e-12);
    assert.ok(Math.abs(p.price("m-8x-amd64-linux", "spot")!.usdPerHour - od.usdPerHour * 0.7) < 1e-12);
    assert.equal(p.price("m-8x-amd64-linux", "reserved")!.usdPerHour, od.usdPerHour);
    assert.equal(p.price("m5.large", "on-demand"), undefined);
  });

  // When the Go module cache holds Karpenter (the rig's build downloads it), check every offering
  // of every embedded type against the formula: the JSON is the truth.
  const roots = ["/root/go/pkg/mod/sigs.k8s.io"].filter(existsSync);
  const files = roots.flatMap((r) =>
    readdirSync(r)
      .filter((d) => d.startsWith("karpenter@"))
      .map((d) => `${r}/${d}/kwok/cloudprovider/instance_types.json`)
      .filter(existsSync),
  );
  it(
    `agrees with every embedded offering price (${files.length} Karpenter versions found)`,
    { skip: files.length === 0 },
    () => {
      for (const file of files) {
        const offerings = parseKwokInstanceTypes(JSON.parse(readFileSync(file, "utf8")));
        assert.ok(offerings.size >= 144, file);
        const p = new KwokPriceProvider();
        for (const [name, byCt] of offerings) {
          for (const [ct, byZone] of byCt) {
            for (const [zone, price] of byZone) {
              const q = p.price(name, ct as "spot" | "on-demand", zone);
              assert.ok(q, `${file}: ${name} unknown to the formula`);
              assert.ok(Math.abs(q.usdPerHour - price) <= 1e-12 * price, `${file}: ${name} ${ct} ${zone}`);
            }
          }
        }
      }
    },
  );
});

describe("custom KWOK instance types file", () => {
  const custom = parseKwokInstanceTypes(
    JSON.parse(readFileSync(new URL("./testdata/kwok-custom-instance-types.json", import.meta.url), "utf8")),
  );
  const asOf = "2026-11-30";
  const p = new KwokPriceProvider({ offerings: custom, offeringsAsOf: asOf });

  it("uses the file's offering prices per zone, over the formula", () => {
    assert.deepEqual(p.price("gpu-4x-amd64-linux", "spot", "test-zone-b"), {
      usdPerHour: 0.45,
      source: "kwok",
      asOf,
    });
    assert.equal(p.price("gpu-4x-amd64-linux", "on-demand", "test-zone-b")?.usdPerHour, 1.2);
    assert.equal(p.price("c-2x-amd64-linux", "on-demand", "test-zone-a")?.usdPerHour, 0.099);
    assert.ok(p.knows("gpu-4x-amd64-linux"));
  });

  it("takes the cheapest zone without a zone, and nothing for an unoffered zone", () => {
    assert.equal(p.price("gpu-4x-amd64-linux", "spot")?.usdPerHour, 0.45);
    assert.equal(p.price("gpu-4x-amd64-linux", "spot", "test-zone-c"), undefined);
    assert.equal(p.price("c-2x-amd64-linux", "spot", "test-zone-a"), undefined);
  });

  it("falls back to the formula for generated names the file does not list", () => {
    assert.equal(p.price("c-1x-amd64-linux", "on-demand")?.usdPerHour, 0.027147483648);
  });

  it("rejects malformed files with the offending path", () => {
    assert.throws(() => parseKwokInstanceTypes({}), KwokInstanceTypesError);
    assert.throws(
      () => parseKwokInstanceTypes([{ name: "x", offerings: [{ Price: "1" }] }]),
      /x\.offerings\[0\]: Price/,
    );
    assert.throws(
      () => parseKwokInstanceTypes([{ name: "x", offerings: [{ Price: 1, Requirements: [] }] }]),
      /needs capacity-type and zone/,
    );
  });
});
