// Figures the console shows that must agree with core's: exact counts, labelled scopes.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import type {
  DisruptionCountsDto,
  DisruptionDto,
  LiveDto,
  NodeDetailDto,
  NodePoolDto,
  OverviewDto,
  SavingsDto,
  SpotViewDto,
} from "../../src/dashboard/dto.ts";
import { Overview } from "../src/pages/Overview.tsx";
import { Spot } from "../src/pages/Spot.tsx";
import { Disruptions } from "../src/pages/Disruptions.tsx";
import { NodeDrawer } from "../src/pages/NodeDrawer.tsx";
import { NodePools } from "../src/pages/NodePools.tsx";
import { App } from "../src/App.tsx";
import { cluster, ctxFor, mockFetch, NOW } from "./helpers.tsx";

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
      price: {
        usdPerHour: 0.133,
        source: "kwok",
        asOf: "2026-03-01",
        pricedBy: "kwok",
        listUsdPerHour: null,
      },
      labels: {
        "karpenter.sh/nodepool": "batch",
        "node.kubernetes.io/instance-type": "c-4x-amd64-linux",
        "karpenter.sh/capacity-type": "spot",
      },
      taints: [],
      doNotDisruptBy: null,
      annotations: {},
      disruption: null,
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
    warmup: {
      warmNodes: 0,
      costPerHour: 0,
      hits: 0,
      misses: 0,
      timeSavedSeconds: 0,
      warmCostUsd: 0,
      from: 0,
      to: 0,
    },
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

  it("shows the window's warm cost beside its hits, misses and time saved (issue 38)", async () => {
    mockFetch([
      [/\/savings\?/, () => [200, savings]],
      [/\/series\?/, () => [200, { from: 0, to: 0, step: 60, nodePool: null, points: [], gaps: [] }]],
      [/\/disruptions\/counts\?/, () => [200, { from: 0, to: NOW, total: 0, counts: [] }]],
    ]);
    const warmup = { ...overview.warmup, hits: 4, misses: 1, timeSavedSeconds: 240, warmCostUsd: 1.27 };
    const live: LiveDto = { overview: { ...overview, warmup }, nodePools: [] };
    render(<Overview ctx={ctxFor({ live })} />);
    const card = await screen.findByTestId("overview-warm");
    assert.match(
      card.closest(".card")?.textContent ?? card.textContent,
      /4 hits \/ 1 misses \(24 h\).*warm cost \$1\.27/,
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

describe("admin sign-in", () => {
  /** Core as the console sees it: viewer and admin tokens, the Spot page's data. */
  function core(): string[] {
    const used: string[] = [];
    const json = (status: number, body: unknown): Response => new Response(JSON.stringify(body), { status });
    globalThis.fetch = (input: string | URL | Request, init?: RequestInit) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      const auth = new Headers(init?.headers).get("authorization") ?? "";
      const token = auth.replace(/^Bearer /, "");
      used.push(`${token} ${url}`);
      if (token !== "v-token" && token !== "a-token")
        return Promise.resolve(
          json(401, { error: "unauthorized", message: "a valid bearer token is required" }),
        );
      if (url.endsWith("/stream")) return new Promise<Response>(() => undefined);
      if (url.endsWith("api/v1/whoami"))
        return Promise.resolve(
          json(200, {
            role: token === "a-token" ? "admin" : "viewer",
            subject: token === "a-token" ? "token:admin" : "token:viewer",
            groups: [],
            source: "token",
          }),
        );
      if (url.endsWith("api/v1/clusters")) return Promise.resolve(json(200, [cluster]));
      if (url.includes("/spot-placement"))
        return Promise.resolve(
          json(200, {
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
              savedPerHour: 0,
              fallbacks: 0,
              onDemandNow: 0,
              repairs: 0,
              lateAnswers: 0,
            },
          }),
        );
      return Promise.resolve(json(404, { message: `no mock for ${url}` }));
    };
    return used;
  }

  it("keeps the console signed in when the admin token is mistyped, then continues the clicked action", async () => {
    const used = core();
    sessionStorage.setItem("wave.token", "v-token");
    location.hash = "#/spot?cluster=prod";
    render(<App />);
    fireEvent.click(await screen.findByRole("button", { name: "New policy (admin)" }));
    const dialog = screen.getByRole("dialog", { name: "sign in as admin" });
    // A typo: the console stays, signed in as the viewer; the prompt says why and stays open.
    fireEvent.change(within(dialog).getByLabelText("token"), { target: { value: "a-tokn" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Sign in" }));
    assert.match((await within(dialog).findByTestId("token-problem")).textContent, /not accepted/);
    assert.equal(sessionStorage.getItem("wave.token"), "v-token");
    assert.ok(screen.getByRole("button", { name: "New policy (admin)" }), "the page is still there");
    assert.equal(screen.queryByText("Wave's API needs a token to show this cluster."), null);
    // A viewer's token grants nothing either.
    fireEvent.change(within(dialog).getByLabelText("token"), { target: { value: "v-token" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Sign in" }));
    await waitFor(() =>
      assert.match(within(dialog).getByTestId("token-problem").textContent, /viewer token/),
    );
    // The admin token: accepted, and the editor the click asked for opens without a second click.
    fireEvent.change(within(dialog).getByLabelText("token"), { target: { value: "a-token" } });
    fireEvent.click(within(dialog).getByRole("button", { name: "Sign in" }));
    assert.ok(await screen.findByRole("form", { name: "spot policy" }));
    assert.equal(screen.queryByRole("dialog", { name: "sign in as admin" }), null);
    assert.equal(sessionStorage.getItem("wave.token"), "a-token");
    assert.ok(
      used.some((u) => u.startsWith("a-tokn ")),
      "the typo was checked with core",
    );
  });
});

describe("NodePools page limits", () => {
  it("shows each pool's memory limit and its use beside the CPU limit, 'no limit' without one", async () => {
    const pool = (name: string, over: Partial<NodePoolDto>): NodePoolDto => ({
      name,
      nodes: 2,
      nodesByCapacityType: { spot: 2 },
      vcpu: 8,
      memoryBytes: 32 * 2 ** 30,
      costPerHour: 0.5,
      costPerMonth: 365,
      costByCapacityType: { spot: 0.5 },
      priceSources: { kwok: 2 },
      oldestPriceAsOf: null,
      limits: { cpu: null, memoryBytes: null },
      limitUsage: { cpu: null, memory: null },
      consolidationPolicy: "WhenEmptyOrUnderutilized",
      consolidateAfter: "30s",
      capacityTypes: ["spot"],
      thrashing: "none",
      thrashingFlagged: false,
      warmNodes: 0,
      static: null,
      ...over,
    });
    const pools = [
      pool("general", {
        limits: { cpu: 16, memoryBytes: 64 * 2 ** 30 },
        limitUsage: { cpu: 0.5, memory: 0.5 },
      }),
      pool("batch", {}),
    ];
    mockFetch([
      [/\/series\?/, () => [200, { from: 0, to: 0, step: 60, nodePool: null, points: [], gaps: [] }]],
    ]);
    render(<NodePools ctx={ctxFor({ live: { overview: undefined as never, nodePools: pools } })} />);
    const rows = await screen.findAllByTestId("pool-row");
    const row = (name: string) => rows.find((r) => r.textContent.startsWith(name)) ?? document.body;
    assert.ok(screen.getByRole("columnheader", { name: /memory limit/ }));
    assert.equal(within(row("general")).getByTestId("pool-memory-limit").textContent, "50% of 64 GiB");
    assert.equal(within(row("batch")).getByTestId("pool-memory-limit").textContent, "no limit");
    assert.equal(within(row("batch")).queryByTestId("pool-static"), null, "an elastic pool has no replicas");
  });

  it("shows a static pool's actual vs desired nodes, and that Karpenter never consolidates it", async () => {
    const pools = [
      {
        name: "fixed",
        nodes: 3,
        nodesByCapacityType: { "on-demand": 3 },
        vcpu: 12,
        memoryBytes: 48 * 2 ** 30,
        costPerHour: 0.6,
        costPerMonth: 438,
        costByCapacityType: { "on-demand": 0.6 },
        priceSources: { kwok: 3 },
        oldestPriceAsOf: null,
        limits: { cpu: null, memoryBytes: null },
        limitUsage: { cpu: null, memory: null },
        consolidationPolicy: "WhenEmptyOrUnderutilized",
        consolidateAfter: "0s",
        capacityTypes: ["on-demand"],
        thrashing: "none",
        thrashingFlagged: false,
        warmNodes: 0,
        static: { desiredNodes: 2, actualNodes: 3 },
      } satisfies NodePoolDto,
    ];
    mockFetch([
      [/\/series\?/, () => [200, { from: 0, to: 0, step: 60, nodePool: null, points: [], gaps: [] }]],
    ]);
    render(<NodePools ctx={ctxFor({ live: { overview: undefined as never, nodePools: pools } })} />);
    const [row] = await screen.findAllByTestId("pool-row");
    assert.equal(within(row ?? document.body).getByTestId("pool-static").textContent, "static 3/2");
    assert.match(row?.textContent ?? "", /never \(static\)/);
  });
});
