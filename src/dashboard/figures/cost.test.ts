import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CompositePriceProvider } from "../../pricing/composite.ts";
import { parseStaticPriceTable, StaticPriceProvider } from "../../pricing/static.ts";
import { machinesOf } from "../machines.ts";
import { cluster } from "../testkit.ts";
import { costByPool, nodeCosts, type NodeCost, spotRatio, spotSavings, totalCost } from "./cost.ts";

const close = (a: number | null | undefined, b: number, msg?: string): void => {
  assert.ok(a !== null && a !== undefined && Math.abs(a - b) < 1e-9, `${msg ?? ""} ${String(a)} ≉ ${b}`);
};

const prices = new CompositePriceProvider({
  static: new StaticPriceProvider(
    parseStaticPriceTable({
      schema: 1,
      generatedAt: "2026-01-19",
      regions: {
        "us-east-1": {
          asOf: "2026-01-19",
          provenance: "published",
          onDemand: { "m5.large": 0.1, "m5.xlarge": 0.2 },
        },
      },
    }),
  ),
  spotEstimateFactor: 0.4,
  live: {
    // live spot for m5.xlarge in us-east-1a only
    price: (it, ct, zone) =>
      it === "m5.xlarge" && ct === "spot" && zone === "us-east-1a"
        ? { usdPerHour: 0.06, source: "live", asOf: "2026-01-20T00:00:00Z" }
        : undefined,
  },
});

const { nodes, nodeClaims } = cluster([
  {
    name: "od-1",
    pool: "web",
    instanceType: "m5.large",
    capacityType: "on-demand",
    zone: "us-east-1a",
    cpu: "2",
  },
  {
    name: "spot-1",
    pool: "web",
    instanceType: "m5.xlarge",
    capacityType: "spot",
    zone: "us-east-1a",
    cpu: "4",
  },
  {
    name: "spot-2",
    pool: "web",
    instanceType: "m5.xlarge",
    capacityType: "spot",
    zone: "us-east-1b",
    cpu: "4",
  },
  {
    name: "kwok-1",
    pool: "rig",
    instanceType: "c-2x-amd64-linux",
    capacityType: "spot",
    zone: "test-zone-a",
    cpu: "2",
  },
  {
    name: "odd-1",
    pool: "rig",
    instanceType: "z9.huge",
    capacityType: "on-demand",
    zone: "us-east-1a",
    cpu: "8",
  },
]);
const machines = machinesOf(nodes, nodeClaims);
const lines = nodeCosts(machines, prices);

describe("cost per node", () => {
  it("prices each node from the best source and says which", () => {
    const by = (name: string): NodeCost => {
      const l = lines.find((x) => x.machine === name);
      assert.ok(l, name);
      return l;
    };
    assert.equal(by("od-1").source, "static");
    close(by("od-1").usdPerHour, 0.1);
    close(by("od-1").usdPerMonth, 73);
    assert.equal(by("spot-1").source, "live");
    close(by("spot-1").usdPerHour, 0.06);
    assert.equal(by("spot-2").source, "estimate");
    close(by("spot-2").usdPerHour, 0.08);
    assert.equal(by("kwok-1").source, "kwok");
    close(by("kwok-1").usdPerHour, (0.05 + 0.001 * 4 * 1.073741824) * 0.7);
    assert.equal(by("odd-1").source, "unknown");
    assert.equal(by("odd-1").usdPerHour, null);
  });
});

describe("cost per pool and cluster", () => {
  it("sums priced nodes, counts unpriced ones and carries the sources", () => {
    const pools = costByPool(lines);
    assert.deepEqual(
      pools.map((p) => [p.nodePool, p.nodes, p.unpriced, p.source]),
      [
        ["rig", 2, 1, "mixed"],
        ["web", 3, 0, "mixed"],
      ],
    );
    const web = pools[1]!;
    close(web.usdPerHour, 0.1 + 0.06 + 0.08);
    close(web.usdPerMonth, (0.1 + 0.06 + 0.08) * 730);
    assert.deepEqual(web.sources, { static: 1, live: 1, estimate: 1 });
    assert.equal(web.oldestAsOf, "2026-01-19");
    const all = totalCost(lines);
    assert.equal(all.nodes, 5);
    assert.equal(all.unpriced, 1);
    assert.equal(totalCost(lines.filter((l) => l.machine === "od-1")).source, "static");
    assert.equal(totalCost([]).source, "unknown");
  });
});

describe("spot ratio", () => {
  it("by nodes, vCPU and cost", () => {
    const r = spotRatio(machines, lines);
    assert.deepEqual([r.nodes.spot, r.nodes.onDemand, r.nodes.total], [3, 2, 5]);
    close(r.nodes.spotShare, 0.6);
    close(r.vcpu.spotShare, 10 / 20);
    const kwokSpot = (0.05 + 0.001 * 4 * 1.073741824) * 0.7;
    close(r.cost.spotShare, (0.06 + 0.08 + kwokSpot) / (0.1 + 0.06 + 0.08 + kwokSpot));
    assert.equal(r.cost.unpriced, 1);
    assert.equal(spotRatio([], []).nodes.spotShare, 0);
  });
});

describe("spot savings", () => {
  it("compares each spot node with on-demand of the same type, like for like", () => {
    const s = spotSavings(machines, prices);
    const kwokOd = 0.05 + 0.001 * 4 * 1.073741824;
    close(s.allOnDemandUsdPerHour, 0.1 + 0.2 + 0.2 + kwokOd);
    close(s.actualUsdPerHour, 0.1 + 0.06 + 0.08 + kwokOd * 0.7);
    close(s.savedUsdPerHour, 0.14 + 0.12 + kwokOd * 0.3);
    close(s.savedUsdPerMonth, (0.14 + 0.12 + kwokOd * 0.3) * 730);
    assert.equal(s.spotNodes, 3);
    assert.equal(s.unpricedSpotNodes, 0);
    assert.deepEqual(s.sources, { static: 1, live: 1, estimate: 1, kwok: 1 });
    assert.equal(s.source, "mixed");
  });

  it("is zero for an all on-demand cluster", () => {
    const s = spotSavings(
      machines.filter((m) => m.capacityType === "on-demand"),
      prices,
    );
    assert.equal(s.savedUsdPerHour, 0);
    assert.equal(s.savedShare, 0);
  });
});
