/* eslint-disable @typescript-eslint/no-unnecessary-condition */
// One price per node under a Karpenter NodeOverlay (issue 39): the node table and drawer, the
// pool's and the cluster's $/h, the history samples, what consolidation would save and the warmup
// cost cap's lookup all read machinePrice, so all show the price Karpenter decides with.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ClusterState } from "../../state/cluster.ts";
import { machineObjects, nodePool } from "../testkit.ts";
import type { NodeOverlay } from "../../objects/karpenter.ts";
import type { PriceProvider } from "../../pricing/types.ts";
import { buildNodeList, buildNodePools, buildOverview, poolSamplesOf } from "../views.ts";
import { explainNodes } from "../consolidation/explain.ts";
import { explainInputOf } from "../consolidation/view.ts";
import { buildNodeDetail } from "../../views/node.ts";
import { clusterPrices, machinePrice, priceLookup } from "./price.ts";

const NOW = Date.parse("2026-06-01T10:00:00Z");
const LIST = 0.4;
const prices: PriceProvider = {
  price: (it) => (it === "big" ? { usdPerHour: LIST, source: "kwok", asOf: "2026-01-01" } : undefined),
};

const savingsPlan: NodeOverlay = {
  metadata: { name: "savings-plan" },
  spec: {
    requirements: [
      { key: "node.kubernetes.io/instance-type", operator: "In", values: ["big"] },
      { key: "karpenter.sh/nodepool", operator: "In", values: ["default"] },
    ],
    priceAdjustment: "-30%",
    weight: 10,
  },
  status: { conditions: [{ type: "ValidationSucceeded", status: "True" }] },
};

function world(overlays: NodeOverlay[]): ClusterState {
  const s = new ClusterState();
  s.apply(
    "NodePool",
    "add",
    nodePool("default", {
      disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "1m" },
    }),
  );
  const { node, nodeClaim } = machineObjects({
    name: "a",
    pool: "default",
    instanceType: "big",
    capacityType: "on-demand",
    cpu: "4",
    memory: "8Gi",
  });
  if (!node || !nodeClaim) throw new Error("machine");
  node.metadata.labels = { ...node.metadata.labels, "karpenter.sh/initialized": "true" };
  nodeClaim.status = { ...nodeClaim.status, conditions: [{ type: "Consolidatable", status: "True" }] };
  s.apply("NodeClaim", "add", nodeClaim);
  s.apply("Node", "add", node);
  for (const o of overlays) s.apply("NodeOverlay", "add", o);
  return s;
}

/** Every figure that prices node "a", as each reader computes it. */
function figures(s: ClusterState): Record<string, number | undefined> {
  const input = { clusterId: "c", state: s, prices, now: NOW };
  const node = s.node("a");
  assert.ok(node);
  const explained = explainNodes(explainInputOf({ state: s }, [], prices, NOW));
  const lookup = priceLookup(clusterPrices(prices, s.nodeOverlays()), () => []);
  const detail = buildNodeDetail({
    row: undefined,
    node,
    nodeClaim: s.nodeClaim("a"),
    pods: [],
    lifecycle: [],
    prices: clusterPrices(prices, s.nodeOverlays()),
  });
  return {
    nodeRow: buildNodeList(input).items[0]?.costPerHour,
    drawer: detail.price.usdPerHour ?? undefined,
    pool: buildNodePools(input)[0]?.costPerHour,
    cluster: buildOverview(input).costPerHour,
    history: poolSamplesOf(s, prices)[0]?.costPerHour,
    consolidationSaves: explained.find((n) => n.node === "a")?.savingsPerHour,
    warmupCap: lookup(node, "on-demand"),
  };
}

describe("a node's price under a NodeOverlay", () => {
  it("every figure is Karpenter's adjusted price (list × 0.7), saying which overlay and the list price", () => {
    const s = world([savingsPlan]);
    for (const [figure, v] of Object.entries(figures(s)))
      assert.ok(v !== undefined && Math.abs(v - LIST * 0.7) < 1e-12, `${figure}: ${v}`);
    const row = buildNodeList({ clusterId: "c", state: s, prices, now: NOW }).items[0];
    assert.equal(row?.pricedBy, "overlay savings-plan -30%");
    assert.equal(row?.priceSource, "kwok");
    assert.equal(row?.listPricePerHour, LIST);
  });

  it("without an overlay (or one for another pool) every figure is the list price", () => {
    const otherPool: NodeOverlay = {
      ...savingsPlan,
      metadata: { name: "other" },
      spec: {
        ...savingsPlan.spec,
        requirements: [{ key: "karpenter.sh/nodepool", operator: "In", values: ["b"] }],
      },
    };
    for (const s of [world([]), world([otherPool])]) {
      for (const [figure, v] of Object.entries(figures(s))) assert.equal(v, LIST, figure);
      const row = buildNodeList({ clusterId: "c", state: s, prices, now: NOW }).items[0];
      assert.equal(row?.pricedBy, "kwok");
      assert.equal(row?.listPricePerHour, null);
    }
  });

  it("the list prices alone, or a quote without labels, never take an overlay", () => {
    const s = world([savingsPlan]);
    assert.equal(
      machinePrice(prices, { instanceType: "big", labels: s.node("a")?.metadata.labels })?.usdPerHour,
      LIST,
    );
    const overlaid = clusterPrices(prices, s.nodeOverlays());
    assert.equal(machinePrice(overlaid, { instanceType: "big" })?.usdPerHour, LIST);
    assert.equal(clusterPrices(overlaid, s.nodeOverlays()), overlaid, "wrapping twice applies it once");
  });
});

describe("the overlay a node's price reads, matched once per overlay set", () => {
  it("follows a new overlay set for the same node (its labels object unchanged) and a new capacity type", () => {
    const labels = {
      "node.kubernetes.io/instance-type": "big",
      "karpenter.sh/nodepool": "default",
      "karpenter.sh/capacity-type": "on-demand",
    };
    const m = { instanceType: "big", capacityType: "on-demand" as const, labels };
    const first = [savingsPlan];
    assert.equal(machinePrice(clusterPrices(prices, first), m)?.usdPerHour, LIST * 0.7);
    assert.equal(machinePrice(clusterPrices(prices, first), m)?.usdPerHour, LIST * 0.7, "the same again");
    const deeper = [{ ...savingsPlan, spec: { ...savingsPlan.spec, priceAdjustment: "-50%" } }];
    assert.equal(machinePrice(clusterPrices(prices, deeper), m)?.usdPerHour, LIST * 0.5, "the new set's");
    assert.equal(machinePrice(clusterPrices(prices, []), m)?.usdPerHour, LIST, "none: the list price");
    const onlySpot = [
      {
        ...savingsPlan,
        spec: {
          ...savingsPlan.spec,
          requirements: [{ key: "karpenter.sh/capacity-type", operator: "In" as const, values: ["spot"] }],
        },
      },
    ];
    assert.equal(
      machinePrice(clusterPrices(prices, onlySpot), m)?.usdPerHour,
      LIST,
      "on-demand: not matched",
    );
    assert.equal(
      machinePrice(clusterPrices(prices, onlySpot), m, "spot")?.usdPerHour,
      LIST * 0.7,
      "as spot: matched",
    );
    // A ClusterPrices wrapped again keeps the list prices underneath: never overlaid twice.
    const twice = clusterPrices(clusterPrices(prices, first), first);
    assert.equal(machinePrice(twice, m)?.usdPerHour, LIST * 0.7);
  });
});
