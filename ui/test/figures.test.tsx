// Figures the console shows that must agree with core's: exact counts, labelled scopes.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { cleanup, render, screen, within } from "@testing-library/react";
import type {
  DisruptionCountsDto,
  DisruptionDto,
  LiveDto,
  NodeDetailDto,
  OverviewDto,
  SavingsDto,
  SpotViewDto,
} from "../../src/dashboard/dto.ts";
import { Overview } from "../src/pages/Overview.tsx";
import { Spot } from "../src/pages/Spot.tsx";
import { Disruptions } from "../src/pages/Disruptions.tsx";
import { NodeDrawer } from "../src/pages/NodeDrawer.tsx";
import { ctxFor, mockFetch, NOW } from "./helpers.tsx";

afterEach(() => {
  cleanup();
  sessionStorage.clear();
  location.hash = "";
});

describe("Disruptions page counts", () => {
  it("counts every disruption in range from core's count, not from the 1,000-row list", async () => {
    const list: DisruptionDto[] = Array.from({ length: 1000 }, (_, i) => ({
      at: NOW - 1000 - i * 1000,
      nodeClaim: `nc-${i}`,
      nodePool: "batch",
      reason: i % 2 === 0 ? "Underutilized" : "Empty",
    }));
    const counts: DisruptionCountsDto = {
      from: NOW - 24 * 3_600_000,
      to: NOW,
      total: 1485,
      counts: [
        { nodePool: "batch", reason: "Empty", count: 700 },
        { nodePool: "batch", reason: "Underutilized", count: 785 },
      ],
    };
    const calls = mockFetch([
      [/disruptions\/counts\?/, () => [200, counts]],
      [/disruptions\?/, () => [200, list]],
      [/events\?/, () => [200, []]],
    ]);
    render(<Disruptions ctx={ctxFor({ route: { ...ctxFor().route, page: "disruptions" } })} />);
    const panel = await screen.findByTestId("disruption-counts");
    await within(panel).findByText("(1,485)");
    const row = within(panel).getByTestId("count-row");
    assert.deepEqual(
      [...row.querySelectorAll("td")].map((td) => td.textContent),
      ["batch", "700", "785", "1,485"],
    );
    assert.match(
      (await screen.findByTestId("disruption-list-paged")).textContent,
      /newest 1,000 of 1,485 disruptions/,
    );
    assert.ok(calls.some((c) => /\/disruptions\/counts\?from=/.test(c.url)));
  });
});

describe("Node drawer of a disrupted NodeClaim", () => {
  it("shows the NodeClaim core serves from history, says it is gone, and its type from the labels", async () => {
    const d: NodeDetailDto = {
      node: null,
      nodeClaim: "batch-x1",
      gone: true,
      timeline: [
        { phase: "Launched", at: NOW - 600_000, sincePreviousSeconds: null, reason: null },
        { phase: "Disrupted", at: NOW - 60_000, sincePreviousSeconds: 540, reason: "Underutilized" },
      ],
      pods: [],
      price: { usdPerHour: 0.133, source: "kwok", asOf: "2026-03-01" },
      labels: {
        "karpenter.sh/nodepool": "batch",
        "node.kubernetes.io/instance-type": "c-4x-amd64-linux",
        "karpenter.sh/capacity-type": "spot",
      },
      taints: [],
      doNotDisruptBy: null,
      annotations: {},
    };
    mockFetch([[/nodes\/batch-x1/, () => [200, d]]]);
    render(<NodeDrawer ctx={ctxFor()} name="batch-x1" />);
    assert.match((await screen.findByTestId("drawer-gone")).textContent, /no longer exists/);
    assert.match(screen.getByTestId("node-drawer").textContent, /batch · c-4x-amd64-linux · spot/);
    assert.match(screen.getByTestId("drawer-timeline").textContent, /Disrupted/);
  });
});

describe("savings, each labelled with its scope", () => {
  const overview: OverviewDto = {
    clusterId: "prod",
    at: NOW,
    nodes: 3,
    nodePools: 1,
    pendingPods: 0,
    costPerHour: 0.5,
    costPerMonth: 365,
    priceSources: { live: 3 },
    spotRatio: { nodes: 0.5, vcpu: 0.5, cost: 0.3 },
    spotSavingsPerHour: 3.44,
    requested: { cpu: 2, memoryBytes: 2 ** 30 },
    allocatable: { cpu: 8, memoryBytes: 2 ** 33 },
    disruptionsLastHour: 0,
    thrashingPools: [],
    warmup: { warmNodes: 0, costPerHour: 0, hits: 0, misses: 0, timeSavedSeconds: 0 },
  };
  const line = { name: "x", actualUsd: 1, onDemandUsd: 2, savedUsd: 1, savedShare: 0.5 };
  const savings: SavingsDto = {
    from: NOW - 86_400_000,
    to: NOW,
    total: line,
    pools: [{ ...line, name: "general" }],
    workloads: [{ ...line, name: "shop/Deployment/web" }],
  };

  it("says the Overview's savings are the nodes', its per-pool and per-workload rows their scopes", async () => {
    mockFetch([
      [/\/savings\?/, () => [200, savings]],
      [/\/series\?/, () => [200, { from: 0, to: 0, step: 60, nodePool: null, points: [], gaps: [] }]],
      [/\/disruptions\/counts\?/, () => [200, { from: 0, to: NOW, total: 0, counts: [] }]],
    ]);
    const live: LiveDto = { overview, nodePools: [] };
    render(<Overview ctx={ctxFor({ live })} />);
    const saves = await screen.findByTestId("overview-spot-saves");
    assert.equal(saves.textContent, "nodes save $3.44/h");
    assert.match(saves.getAttribute("title") ?? "", /scope nodes/);
    await screen.findByTestId("savings-pools");
    assert.match(
      screen.getByTestId("savings-pools").querySelector("caption")?.textContent ?? "",
      /scope nodes/,
    );
    assert.match(
      screen.getByTestId("savings-workloads").querySelector("caption")?.textContent ?? "",
      /scope workloads/,
    );
  });

  it("says the Spot page's savings are the managed workloads' share, and where the Overview's differ", async () => {
    const view: SpotViewDto = {
      clusterId: "prod",
      at: NOW,
      from: NOW - 3_600_000,
      to: NOW,
      workloads: [],
      totals: {
        workloads: 0,
        pods: 0,
        onDemand: 0,
        spot: 0,
        savedPerHour: 2.91,
        fallbacks: 0,
        onDemandNow: 0,
        repairs: 0,
        lateAnswers: 0,
      },
    };
    mockFetch([[/spot-placement/, () => [200, view]]]);
    render(<Spot ctx={ctxFor({ route: { ...ctxFor().route, page: "spot" } })} />);
    const card = (await screen.findByTestId("spot-total-saved")).closest(".card") ?? document.body;
    assert.match(card.textContent, /\$2\.91\/h/);
    assert.match(card.textContent, /scope workloads.*managed workloads only.*Overview's figure: scope nodes/);
  });
});
