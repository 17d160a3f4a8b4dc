// Figures the console shows that must agree with core's: exact counts, labelled scopes.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { cleanup, render, screen, within } from "@testing-library/react";
import type { DisruptionCountsDto, DisruptionDto, NodeDetailDto } from "../../src/dashboard/dto.ts";
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
