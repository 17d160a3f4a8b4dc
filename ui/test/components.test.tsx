// The console's components rendered in happy-dom (see ADR 0013): what a user sees and can do.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import type {
  LiveDto,
  NodeDetailDto,
  NodeDto,
  NodeListDto,
  OverviewDto,
  SavingsDto,
  SavingsLineDto,
  SpotViewDto,
  SpotWorkloadDto,
  ThrashingDto,
  ThrashingFixesDto,
  WarmupPoolDto,
  WarmupViewDto,
} from "../../src/dashboard/dto.ts";
import { App } from "../src/App.tsx";
import { takeEarly } from "../src/api.ts";
import { startEarly } from "../src/early.ts";
import { NodeDrawer } from "../src/pages/NodeDrawer.tsx";
import { Nodes } from "../src/pages/Nodes.tsx";
import { countsByReason } from "../src/pages/Disruptions.tsx";
import { Spot } from "../src/pages/Spot.tsx";
import { Thrashing } from "../src/pages/Thrashing.tsx";
import { Warmup } from "../src/pages/Warmup.tsx";
import { spotPreview, warmupPreview } from "../src/pages/policy.ts";
import { Table, type Column } from "../src/Table.tsx";
import { cluster, ctxFor, mockFetch, NOW } from "./helpers.tsx";
import { Versions } from "../src/Versions.tsx";
import { Connection, catchUpPercent, connectionSuffix } from "../src/Connection.tsx";
import { DEFAULT_POLICY } from "../../src/policy/warmup.ts";

afterEach(() => {
  cleanup();
  sessionStorage.clear();
  location.hash = "";
});

const pool = (over: Partial<WarmupPoolDto> = {}): WarmupPoolDto => ({
  nodePool: "general",
  policy: { ...DEFAULT_POLICY, enabled: true },
  configured: true,
  state: "warm",
  blocker: "max-warm-nodes",
  blockerDetail: "1 of 1 warm nodes in use",
  warmupPods: [{ name: "wave-warmup-general-1", node: "n-warm", createdAt: NOW - 60_000 }],
  warmNodes: [
    {
      name: "n-warm",
      ageSeconds: 60,
      ttlLeftSeconds: 540,
      costPerHour: 0.19,
      waiting: true,
      images: [
        { image: "app:1", status: "pulled" },
        { image: "side:2", status: "pulling" },
      ],
    },
  ],
  created: 3,
  hits: 2,
  misses: 1,
  missesByReason: { ttl: 1 },
  imagesPulled: 4,
  pullFailures: 0,
  coldStartSeconds: 31,
  coldStartSamples: 5,
  warmStartSeconds: 3,
  warmStartSamples: 2,
  timeSavedSeconds: 56,
  warmNotFaster: false,
  hitsCredited: 2,
  recentHits: [],
  warmCostUsd: 0.12,
  warmCostPerHourNow: 0.19,
  newNodeCostPerHour: 0.19,
  newNodeInstanceType: "c-4x-amd64-linux",
  unusedStreak: 0,
  cooldownSecondsNow: 300,
  ...over,
});

const warmupView = (pools: WarmupPoolDto[]): WarmupViewDto => ({
  clusterId: "prod",
  at: NOW,
  from: NOW - 3_600_000,
  to: NOW,
  pools,
});

describe("Table", () => {
  interface Row {
    name: string;
    n: number;
  }
  const cols: Column<Row>[] = [
    { key: "name", label: "name", value: (r) => r.name },
    { key: "n", label: "count", numeric: true, value: (r) => r.n },
  ];

  it("sorts by a header button (keyboard-reachable) and reports it with aria-sort", () => {
    render(
      <Table
        label="Things"
        columns={cols}
        rows={[
          { name: "b", n: 1 },
          { name: "a", n: 3 },
          { name: "c", n: 2 },
        ]}
        rowKey={(r) => r.name}
        empty="none"
      />,
    );
    const names = (): string[] =>
      screen
        .getAllByRole("row")
        .slice(1)
        .map((r) => within(r).getAllByRole("cell")[0]?.textContent ?? "");
    assert.deepEqual(names(), ["a", "b", "c"]);
    const count = screen.getByRole("button", { name: /count/ });
    assert.equal(count.closest("th")?.getAttribute("aria-sort"), "none");
    fireEvent.click(count);
    assert.equal(count.closest("th")?.getAttribute("aria-sort"), "descending", "numbers sort largest first");
    assert.deepEqual(names(), ["a", "c", "b"]);
    fireEvent.click(count);
    assert.equal(count.closest("th")?.getAttribute("aria-sort"), "ascending");
  });

  it("filters over the columns' values and says why it is empty", () => {
    render(
      <Table
        label="Things"
        columns={cols}
        rows={[
          { name: "alpha", n: 1 },
          { name: "beta", n: 2 },
        ]}
        rowKey={(r) => r.name}
        empty="none"
      />,
    );
    fireEvent.change(screen.getByLabelText("filter things"), { target: { value: "alp" } });
    assert.equal(screen.getAllByRole("row").length, 2);
    assert.ok(screen.getByText("(1 of 2)"));
    fireEvent.change(screen.getByLabelText("filter things"), { target: { value: "zzz" } });
    assert.ok(screen.getByText(/Nothing matches/));
    cleanup();
    render(
      <Table
        label="Things"
        columns={cols}
        rows={[]}
        rowKey={(r) => r.name}
        empty="No things: the agent sent none."
      />,
    );
    assert.ok(screen.getByText("No things: the agent sent none."));
  });

  it("keeps only the visible rows of 5,000 in the DOM", () => {
    const rows = Array.from({ length: 5000 }, (_, i) => ({
      name: `node-${String(i).padStart(4, "0")}`,
      n: i,
    }));
    render(
      <Table
        label="Nodes"
        columns={cols}
        rows={rows}
        rowKey={(r) => r.name}
        empty="none"
        virtualAbove={60}
      />,
    );
    assert.ok(screen.getByText("(5,000)"));
    assert.ok(screen.getAllByRole("row").length < 40, "virtualized");
  });
});

const nodeDto = (name: string, over: Partial<NodeDto> = {}): NodeDto => ({
  name,
  nodePool: "general",
  nodeClaim: `${name}-claim`,
  instanceType: "m5.large",
  capacityType: "on-demand",
  zone: "us-east-1a",
  ready: true,
  createdAt: NOW - 3_600_000,
  cpu: { allocatable: 2, requested: 1 },
  memoryBytes: { allocatable: 8 * 2 ** 30, requested: 2 ** 30 },
  pods: 3,
  costPerHour: 0.096,
  priceSource: "live",
  priceAsOf: new Date(NOW - 120_000).toISOString(),
  pricedBy: "live",
  listPricePerHour: null,
  doNotDisrupt: false,
  warm: false,
  ...over,
});

describe("Nodes page", () => {
  const node = nodeDto;

  it("shows each node's price source and its age, fallbacks tagged", async () => {
    const items = [
      node("n-live", {}),
      node("n-table", { priceSource: "static", priceAsOf: "2026-01-15T00:00:00Z", costPerHour: 0.5 }),
      node("n-kwok", { priceSource: "kwok", priceAsOf: null, costPerHour: 0.3 }),
      node("n-none", { priceSource: "unknown", priceAsOf: null, costPerHour: 0 }),
      node("n-overlay", {
        priceSource: "kwok",
        priceAsOf: null,
        costPerHour: 0.21,
        pricedBy: "overlay savings-plan -30%",
        listPricePerHour: 0.3,
      }),
    ];
    const calls = mockFetch([
      [
        /\/nodes\?/,
        (c) => {
          // Core filters (q); the table shows what it answers.
          const q = new URL(c.url, "http://wave.test/").searchParams.get("q");
          const kept = q ? items.filter((n) => n.priceSource === q) : items;
          const answer: NodeListDto = { total: kept.length, totalBeforeQuery: items.length, items: kept };
          return [200, answer];
        },
      ],
    ]);
    render(<Nodes ctx={ctxFor({ route: { ...ctxFor().route, page: "nodes" } })} />);
    await screen.findAllByTestId("node-row");
    const cell = (name: string): HTMLElement => {
      const row = screen.getAllByTestId("node-row").find((r) => r.textContent.startsWith(name));
      assert.ok(row, `a row for ${name}`);
      return within(row).getByTestId("price-source");
    };
    assert.equal(cell("n-live").textContent, "live 2m");
    assert.equal(cell("n-live").querySelector(".tag")?.className.trim(), "tag", "live: not tagged");
    assert.equal(cell("n-table").textContent, "static 47d");
    assert.match(cell("n-table").title, /^fallback: Wave's shipped price table, as of 2026-01-15/);
    assert.equal(cell("n-table").querySelector(".tag")?.className, "tag medium", "a fallback is tagged");
    assert.equal(cell("n-kwok").textContent, "kwok");
    assert.equal(cell("n-none").textContent, "unpriced");
    assert.equal(cell("n-none").querySelector(".tag")?.className, "tag bad");
    // Karpenter's price under a NodeOverlay: which overlay, and the list price beside it.
    assert.equal(cell("n-overlay").textContent, "kwok · overlay savings-plan -30% (list $0.300/h)");
    // The $/h cell marks a fallback price too (the price column hides below 1100 px).
    const costOf = (name: string): string =>
      screen
        .getAllByTestId("node-row")
        .find((r) => r.textContent.startsWith(name))
        ?.querySelector("sup.fallback")?.textContent ?? "";
    assert.equal(costOf("n-table"), "*");
    assert.equal(costOf("n-live"), "");
    // Filtered by core: the text goes out as q once typing pauses, and the count says "x of y".
    fireEvent.change(screen.getByLabelText("filter nodes"), { target: { value: "static" } });
    await waitFor(() => assert.equal(screen.getAllByTestId("node-row").length, 1));
    assert.equal(
      within(screen.getByTestId("node-row")).getByTestId("price-source").textContent,
      "static 47d",
    );
    assert.equal(screen.getByTestId("node-table").querySelector("h2 .count")?.textContent, "(1 of 5)");
    assert.match(calls.at(-1)?.url ?? "", /[?&]q=static(&|$)/);
  });

  it("asks core for the rows in view only: sorted, and the next window as it scrolls", async () => {
    const TOTAL = 5000;
    const all = Array.from({ length: TOTAL }, (_, i) =>
      node(`n-${String(i).padStart(4, "0")}`, { costPerHour: (TOTAL - i) / 1000 }),
    );
    const calls = mockFetch([
      [
        /\/nodes\?/,
        (c) => {
          const p = new URL(c.url, "http://wave.test/").searchParams;
          const rows = p.get("sort") === "name" && p.get("desc") === "true" ? [...all].reverse() : all;
          const offset = Number(p.get("offset"));
          const items = rows.slice(offset, offset + Number(p.get("limit")));
          const answer: NodeListDto = { total: TOTAL, totalBeforeQuery: TOTAL, items };
          return [200, answer];
        },
      ],
    ]);
    render(<Nodes ctx={ctxFor({ route: { ...ctxFor().route, page: "nodes" } })} />);
    await screen.findAllByTestId("node-row");
    assert.equal(screen.getByTestId("node-table").querySelector("h2 .count")?.textContent, "(5,000)");
    assert.ok(screen.getAllByTestId("node-row").length <= 22, "only the rows in view are in the DOM");
    const asked = new URL(calls[0]?.url ?? "", "http://wave.test/").searchParams;
    assert.deepEqual(
      [asked.get("sort"), asked.get("desc"), asked.get("limit"), asked.get("offset")],
      ["cost", "true", "100", "0"],
      "the first screen: the 100 most expensive nodes, not all 5,000",
    );
    // A header sorts on core: name descending puts the last node first.
    fireEvent.click(screen.getByRole("button", { name: /^node/ }));
    fireEvent.click(screen.getByRole("button", { name: /^node/ }));
    await waitFor(() => assert.match(screen.getAllByTestId("node-row")[0]?.textContent ?? "", /^n-4999/));
    assert.equal(
      screen.getByRole("button", { name: /^node/ }).closest("th")?.getAttribute("aria-sort"),
      "descending",
    );
    // Scrolling to row 3,000 asks for the window around it and shows its rows.
    const scroller = screen.getByTestId("node-table").querySelector(".scroll");
    assert.ok(scroller);
    scroller.scrollTop = 3000 * 30;
    fireEvent.scroll(scroller);
    await waitFor(() => assert.match(screen.getAllByTestId("node-row")[0]?.textContent ?? "", /^n-1999/));
    const last = new URL(calls.at(-1)?.url ?? "", "http://wave.test/").searchParams;
    assert.equal(last.get("offset"), "2950");
    assert.equal(last.get("limit"), "100");
  });
});

describe("Warmup page", () => {
  it("shows state, why not warming, measured start times and each warm node's pre-pull", async () => {
    mockFetch([[/warmup\?/, () => [200, warmupView([pool()])]]]);
    render(<Warmup ctx={ctxFor()} />);
    await screen.findByTestId("warmup-pool");
    assert.equal(screen.getByTestId("warmup-state").textContent, "warm");
    assert.match(
      screen.getByTestId("warmup-blocker").textContent,
      /^no further warmup: max warm nodes reached/,
    );
    assert.match(
      screen.getByTestId("pool-start-times").textContent,
      /cold 31 s \(median of 5\).*warm 3 s.*saved 56 s \(2 of 2 hits, each: the pool's cold start in the 24 h before it minus its own start\)/,
    );
    const row = screen.getByTestId("warm-node-row");
    assert.match(row.textContent, /n-warm60 s9 min\$0\.190/);
    assert.match(row.textContent, /✓ app:1.*↻ side:2/);
    assert.equal(screen.getByTestId("warmup-saved").textContent, "56 s");
  });

  it("lets a viewer see everything but asks for the admin token to edit", async () => {
    const calls = mockFetch([[/warmup\?/, () => [200, warmupView([pool()])]]]);
    const ctx = ctxFor({ role: "viewer" });
    render(<Warmup ctx={ctx} />);
    fireEvent.click(await screen.findByRole("button", { name: "Edit (admin)" }));
    assert.deepEqual(ctx.asked, ["edit the warmup policy of general"]);
    assert.equal(screen.queryByRole("form"), null, "no editor for a viewer");
    assert.ok(calls.every((c) => c.method === "GET"));
  });

  it("edits as admin with validation and a preview, then PUTs the policy", async () => {
    const calls = mockFetch([
      [/GET .*warmup\?/, () => [200, warmupView([pool()])]],
      [
        /PUT .*policies\/warmup\/general/,
        (c) => [200, { nodePool: "general", policy: c.body, updatedAt: NOW }],
      ],
    ]);
    const refreshed: number[] = [];
    render(<Warmup ctx={ctxFor({ role: "admin", refresh: () => refreshed.push(1) })} />);
    fireEvent.click(await screen.findByRole("button", { name: "Edit policy" }));
    const form = screen.getByRole("form", { name: "warmup policy for general" });
    fireEvent.change(within(form).getByLabelText("max warm nodes"), { target: { value: "3" } });
    assert.match(
      screen.getByTestId("warmup-preview").textContent,
      /up to 3 warm nodes \(c-4x-amd64-linux\), at most \+\$0\.570\/h/,
    );
    fireEvent.change(within(form).getByLabelText(/^TTL \(s\)/), { target: { value: "5" } });
    assert.ok(within(form).getByText("a whole number from 30 to 86,400"));
    assert.equal(within(form).getByRole<HTMLButtonElement>("button", { name: "Save" }).disabled, true);
    fireEvent.change(within(form).getByLabelText(/^TTL \(s\)/), { target: { value: "900" } });
    fireEvent.click(within(form).getByRole("button", { name: "Save" }));
    await waitFor(() => assert.equal(refreshed.length, 1));
    const put = calls.find((c) => c.method === "PUT");
    assert.deepEqual(put?.body, { ...pool().policy, maxWarmNodes: 3, ttlSeconds: 900 });
  });

  it("deletes a pool's warmup policy as admin: DELETE on the pool's route, then refresh", async () => {
    const calls = mockFetch([
      [/GET .*warmup\?/, () => [200, warmupView([pool()])]],
      [/DELETE .*policies\/warmup\/general$/, () => [204, null]],
    ]);
    const refreshed: number[] = [];
    const admin = ctxFor({ role: "admin", refresh: () => refreshed.push(1) });
    render(<Warmup ctx={admin} />);
    fireEvent.click(await screen.findByRole("button", { name: "Edit policy" }));
    const form = screen.getByRole("form", { name: "warmup policy for general" });
    fireEvent.click(within(form).getByRole("button", { name: "Delete policy" }));
    await waitFor(() => assert.equal(refreshed.length, 1));
    assert.equal(
      screen.queryByRole("form", { name: "warmup policy for general" }),
      null,
      "the editor closed",
    );
    assert.deepEqual(
      calls.filter((c) => c.method !== "GET").map((c) => `${c.method} ${c.url}`),
      ["DELETE api/v1/clusters/prod/policies/warmup/general"],
    );
    assert.deepEqual(admin.asked, []);
    cleanup();
    // A pool without a saved policy has nothing to delete.
    mockFetch([[/GET .*warmup\?/, () => [200, warmupView([pool({ configured: false })])]]]);
    render(<Warmup ctx={ctxFor({ role: "admin" })} />);
    fireEvent.click(await screen.findByRole("button", { name: /policy/ }));
    assert.ok(screen.getByRole("form", { name: "warmup policy for general" }));
    assert.equal(screen.queryByRole("button", { name: "Delete policy" }), null);
  });

  it("says so when warm starts were not faster, and never a 'not warming' beside a warming badge", async () => {
    mockFetch([
      [
        /warmup\?/,
        () => [
          200,
          warmupView([
            pool({ warmNotFaster: true, hitsCredited: 1, hits: 4, state: "warming", blocker: "in-flight" }),
          ]),
        ],
      ],
    ]);
    render(<Warmup ctx={ctxFor()} />);
    await screen.findByTestId("warmup-pool");
    assert.match(
      screen.getByTestId("pool-saved-how").textContent,
      /warm starts were not faster than cold ones: only 1 of 4 hits/,
    );
    assert.equal(screen.getByTestId("warmup-state").textContent, "warming");
    assert.doesNotMatch(screen.getByTestId("warmup-blocker").textContent, /not warming/);
  });

  it("never previews a negative count, and says why Save is off", async () => {
    const p = pool();
    assert.equal(
      warmupPreview(p, { ...p.policy, maxWarmNodes: -1 }),
      "no warm node (max warm nodes 0), +$0.000/h",
    );
    assert.equal(
      warmupPreview(p, { ...p.policy, maxCostPerHour: 0.1 }),
      "no warm node: the cost cap $0.100/h is below one node's price $0.190/h (c-4x-amd64-linux)",
    );
    mockFetch([[/GET .*warmup\?/, () => [200, warmupView([pool()])]]]);
    render(<Warmup ctx={ctxFor({ role: "admin" })} />);
    fireEvent.click(await screen.findByRole("button", { name: "Edit policy" }));
    const form = screen.getByRole("form", { name: "warmup policy for general" });
    fireEvent.change(within(form).getByLabelText("max warm nodes"), { target: { value: "-1" } });
    assert.match(
      screen.getByTestId("warmup-preview").textContent,
      /^Save is off until the marked field is fixed: maxWarmNodes/,
    );
    assert.doesNotMatch(screen.getByTestId("warmup-preview").textContent, /-1|−/);
  });

  it("previews the cost cap's effect", () => {
    const p = pool();
    assert.equal(
      warmupPreview(p, { ...p.policy, maxWarmNodes: 5, maxCostPerHour: 0.4 }),
      "up to 2 warm nodes (c-4x-amd64-linux), at most +$0.380/h",
    );
    assert.match(
      warmupPreview(p, { ...p.policy, enabled: false }),
      /1 warm node\(s\) released, −\$0\.190\/h/,
    );
  });
});

const web: SpotWorkloadDto = {
  workload: { namespace: "shop", kind: "Deployment", name: "web" },
  policy: { threshold: 2, strategy: "Prefer" },
  pods: 12,
  target: { onDemand: 2, spot: 10 },
  actual: { onDemand: 2, spot: 9, pending: 1 },
  fallbacks: 0,
  onDemandNow: 0,
  costPerHour: 1.0,
  savedPerHour: 1.2,
  podCostPerHour: { onDemand: 0.2, spot: 0.06 },
  nodePools: ["general"],
  warnings: [{ kind: "require-without-spot", message: "Require, but NodePool general offers no spot" }],
  items: [
    {
      namespace: "shop",
      name: "web-1",
      node: "n1",
      capacityType: "spot",
      assigned: "spot",
      phase: "Running",
      note: null,
      costPerHour: 0.06,
    },
  ],
  repairs: {
    total: 3,
    byAction: { Evict: 2, EvictBlocked: 1 },
    recent: [
      {
        at: NOW - 60_000,
        action: "EvictBlocked",
        pod: "shop/web-3",
        type: "Warning",
        message: "a PodDisruptionBudget blocks the eviction",
      },
      {
        at: NOW - 120_000,
        action: "Evict",
        pod: "shop/web-2",
        type: "Normal",
        message: "on spot, its slot is on-demand",
      },
    ],
  },
  progress: null,
  lateAnswers: 0,
};
const spotView: SpotViewDto = {
  clusterId: "prod",
  at: NOW,
  from: NOW - 3_600_000,
  to: NOW,
  workloads: [web],
  totals: {
    workloads: 1,
    pods: 12,
    onDemand: 2,
    spot: 9,
    savedPerHour: 1.2,
    fallbacks: 0,
    onDemandNow: 0,
    repairs: 3,
    lateAnswers: 0,
  },
};

/** The Spot placement page's route at a preset range. */
const spotRoute = (params: Record<string, string>, range: "1h" | "6h" = "1h") => ({
  page: "spot" as const,
  cluster: "prod",
  range: { kind: "preset" as const, id: range },
  node: undefined,
  params,
});

/** The Spot page's table row whose text names `name`. */
function spotRow(name: string): HTMLElement {
  const r = screen.getAllByTestId("spot-row").find((x) => x.textContent.includes(name));
  assert.ok(r, `a row for ${name}`);
  return r;
}

describe("Spot placement page", () => {
  it("shows target vs actual per workload and, opened, its pods and warnings", async () => {
    mockFetch([[/spot-placement/, () => [200, spotView]]]);
    render(
      <Spot
        ctx={ctxFor({
          route: {
            page: "spot",
            cluster: "prod",
            range: { kind: "preset", id: "1h" },
            node: undefined,
            params: { workload: "shop/Deployment/web" },
          },
        })}
      />,
    );
    const row = await screen.findByTestId("spot-row");
    assert.equal(within(row).getByTestId("spot-target").textContent, "2 / 10");
    assert.match(within(row).getByTestId("spot-actual").textContent, /^2 \/ 9 \+1 pending$/);
    const detail = screen.getByTestId("spot-detail");
    assert.ok(within(detail).getByText(/offers no spot/));
    assert.ok(within(detail).getByText("web-1"));
  });

  it("warns about a workload whose own YAML pins a capacity type, and shows each workload's fallbacks", async () => {
    const pinned: SpotWorkloadDto = {
      ...web,
      workload: { namespace: "shop", kind: "StatefulSet", name: "db" },
      pods: 3,
      target: { onDemand: 2, spot: 1 },
      actual: { onDemand: 3, spot: 0, pending: 0 },
      fallbacks: 1,
      onDemandNow: 1,
      warnings: [
        {
          kind: "pinned-by-workload",
          message: "2 pod(s) pin karpenter.sh/capacity-type in their own spec: Wave leaves them as they are",
        },
        {
          kind: "fallback",
          message: "1 pod(s) assigned spot run on on-demand (Prefer's fallback: no spot capacity)",
        },
      ],
      repairs: { total: 0, byAction: {}, recent: [] },
    };
    const view: SpotViewDto = {
      ...spotView,
      workloads: [{ ...web, warnings: [] }, pinned],
      totals: { ...spotView.totals, fallbacks: 1 },
    };
    mockFetch([[/spot-placement/, () => [200, view]]]);
    const route = spotRoute({ workload: "shop/StatefulSet/db" });
    render(<Spot ctx={ctxFor({ route })} />);
    await screen.findAllByTestId("spot-row");
    const row = spotRow;
    // In the table: the warning's kind as a tag (its message on hover) and the fallback count.
    const tag = within(row("db")).getByText("pinned-by-workload");
    assert.match(tag.getAttribute("title") ?? "", /pin karpenter\.sh\/capacity-type in their own spec/);
    assert.equal(within(row("db")).getByTestId("spot-fallbacks").textContent, "1");
    assert.equal(within(row("web")).getByTestId("spot-fallbacks").textContent, "0");
    assert.equal(within(row("web")).queryByText("pinned-by-workload"), null);
    assert.equal(screen.getByTestId("spot-total-fallbacks").textContent, "1");
    // Opened: each warning in full.
    const notes = within(screen.getByTestId("spot-detail"))
      .getAllByRole("note")
      .map((n) => n.textContent);
    assert.deepEqual(notes, [
      "⚠ 2 pod(s) pin karpenter.sh/capacity-type in their own spec: Wave leaves them as they are",
      "⚠ 1 pod(s) assigned spot run on on-demand (Prefer's fallback: no spot capacity)",
    ]);
  });

  it("shows each workload's late answers: — for none, the count highlighted, what it means on hover", async () => {
    const late: SpotWorkloadDto = {
      ...web,
      workload: { namespace: "shop", kind: "StatefulSet", name: "db" },
      warnings: [],
      lateAnswers: 7,
    };
    const view: SpotViewDto = {
      ...spotView,
      workloads: [{ ...web, warnings: [] }, late],
      totals: { ...spotView.totals, lateAnswers: 9 },
    };
    mockFetch([[/spot-placement/, () => [200, view]]]);
    const route = spotRoute({});
    render(<Spot ctx={ctxFor({ route })} />);
    await screen.findAllByTestId("spot-row");
    const cell = (name: string): HTMLElement => within(spotRow(name)).getByTestId("spot-late-answers");
    assert.equal(cell("web").textContent, "—", "none: a dash, not highlighted");
    assert.equal(cell("web").classList.contains("warn"), false);
    assert.equal(cell("db").textContent, "7");
    assert.equal(cell("db").classList.contains("warn"), true, "non-zero is highlighted");
    assert.match(cell("db").getAttribute("title") ?? "", /^7 pod\(s\) answered late in range\./);
    // The header explains it: placed by the scheduler without Wave's affinity, corrected later.
    const header = screen.getByRole("columnheader", { name: /late answers/ });
    const why = header.getAttribute("title") ?? "";
    assert.match(why, /without Wave's capacity-type affinity/);
    assert.match(why, /scheduler placed it/);
    assert.match(why, /next rollout or by the repair/);
    // The cluster's total (workloads no longer listed included), highlighted when non-zero.
    const total = screen.getByTestId("spot-total-late-answers");
    assert.equal(total.textContent, "9");
    assert.ok(total.closest(".card")?.classList.contains("warn"));
    // Sortable like the other counts.
    fireEvent.click(within(header).getByRole("button"));
    assert.match(screen.getAllByTestId("spot-row")[0]?.textContent ?? "", /db/, "most late answers first");
  });

  it("writes a workload one way, as the CLI does, breakable only after a slash (issue 43)", async () => {
    mockFetch([[/spot-placement/, () => [200, spotView]]]);
    render(<Spot ctx={ctxFor({ route: spotRoute({ workload: "shop/Deployment/web" }) })} />);
    const row = await screen.findByTestId("spot-row");
    const name = row.querySelector(".workload");
    assert.ok(name);
    assert.equal(name.textContent, "deployment/shop/web");
    assert.equal(name.getAttribute("title"), "deployment/shop/web");
    assert.equal(name.querySelectorAll("wbr").length, 2, "a break opportunity after each slash only");
    assert.match(screen.getByTestId("spot-detail").textContent, /deployment\/shop\/web/);
  });

  it("shows the repair's self-heal actions per workload over the picked range", async () => {
    const calls = mockFetch([[/spot-placement/, () => [200, spotView]]]);
    const route = spotRoute({ workload: "shop/Deployment/web" }, "6h");
    render(<Spot ctx={ctxFor({ route })} />);
    const row = await screen.findByTestId("spot-row");
    assert.equal(within(row).getByTestId("spot-repairs").textContent, "3");
    assert.equal(screen.getByTestId("spot-total-repairs").textContent, "3");
    // The range picker's range reaches the API (a preset: from, rounded to the minute).
    assert.match(calls[0]?.url ?? "", new RegExp(`spot-placement\\?from=${NOW - 6 * 3_600_000}&workload=`));
    const list = screen.getByTestId("spot-repair-list");
    assert.equal(within(list).getByTestId("spot-repair-total").textContent, "3");
    assert.equal(
      within(list).getByTestId("spot-repair-counts").textContent,
      "3 in range: Evict 2 · EvictBlocked 1 · the newest 2 listed",
    );
    const rows = within(list).getAllByTestId("spot-repair-row");
    assert.deepEqual(
      rows.map((r) =>
        within(r)
          .getAllByRole("cell")
          .slice(1)
          .map((c) => c.textContent),
      ),
      [
        ["EvictBlocked", "shop/web-3", "a PodDisruptionBudget blocks the eviction"],
        ["Evict", "shop/web-2", "on spot, its slot is on-demand"],
      ],
      "newest first",
    );
    cleanup();
    mockFetch([
      [
        /spot-placement/,
        () => [
          200,
          { ...spotView, workloads: [{ ...web, repairs: { total: 0, byAction: {}, recent: [] } }] },
        ],
      ],
    ]);
    render(<Spot ctx={ctxFor({ route })} />);
    assert.ok(await screen.findByText(/No self-heal actions in this range/));
  });

  it("shows a running workload's adoption per workload: pods to move, the next eviction, the evictions done; dry-run's plan", async () => {
    const adopting: SpotWorkloadDto = {
      ...web,
      warnings: [],
      progress: {
        mode: "on",
        toMove: 2,
        done: 1,
        planned: 0,
        nextAt: NOW + 5_000,
        blocker: {
          kind: "pdb",
          object: "shop/web",
          message:
            "PodDisruptionBudget shop/web allows 0 disruptions: the repair's evictions are refused until it allows one",
        },
      },
    };
    const preview: SpotWorkloadDto = {
      ...web,
      workload: { namespace: "shop", kind: "Deployment", name: "api" },
      policy: { threshold: 2, strategy: "Require", repair: "dry-run" },
      warnings: [],
      progress: { mode: "dry-run", toMove: 4, done: 0, planned: 4, nextAt: null, blocker: null },
    };
    mockFetch([[/spot-placement/, () => [200, { ...spotView, workloads: [adopting, preview] }]]]);
    render(<Spot ctx={ctxFor({ route: spotRoute({}) })} />);
    await screen.findAllByTestId("spot-row");
    assert.equal(
      within(spotRow("web")).getByTestId("spot-progress").textContent,
      "adopting: 2 of 12 pods to move, next in 5 s · 1 eviction done",
    );
    // A stuck row names what holds it (issue 43).
    assert.equal(
      within(spotRow("web")).getByTestId("spot-blocker").textContent,
      "blocked PodDisruptionBudget shop/web allows 0 disruptions: the repair's evictions are refused until it allows one",
    );
    assert.equal(within(spotRow("api")).queryByTestId("spot-blocker"), null);
    assert.equal(
      within(spotRow("api")).getByTestId("spot-progress").textContent,
      "dry-run: 4 of 12 pods would move, 4 evictions planned, none done",
    );
  });

  it("previews a threshold change as pods on-demand and $/h", () => {
    assert.equal(
      spotPreview(web, { threshold: 3, strategy: "Prefer" }),
      "3 of 12 pods on-demand, 9 on spot, +$0.140/h → $1.14/h",
    );
    assert.equal(
      spotPreview(web, { threshold: 0, strategy: "Prefer", percentAboveBase: 50 }),
      "6 of 12 pods on-demand, 6 on spot, +$0.560/h → $1.56/h",
    );
  });

  it("creates a policy as admin and asks a viewer for the admin token", async () => {
    const calls = mockFetch([
      [/GET .*spot-placement/, () => [200, spotView]],
      [/PUT .*policies\/spot\/Deployment\/shop\/api/, (c) => [200, c.body]],
    ]);
    const viewer = ctxFor();
    render(<Spot ctx={viewer} />);
    fireEvent.click(await screen.findByRole("button", { name: "New policy (admin)" }));
    assert.deepEqual(viewer.asked, ["create spot policies"]);
    cleanup();
    render(<Spot ctx={ctxFor({ role: "admin" })} />);
    fireEvent.click(await screen.findByRole("button", { name: "New policy" }));
    const form = screen.getByRole("form", { name: "spot policy" });
    fireEvent.change(within(form).getByLabelText("namespace"), { target: { value: "shop" } });
    fireEvent.change(within(form).getByLabelText("name"), { target: { value: "api" } });
    fireEvent.change(within(form).getByLabelText("on-demand base (threshold)"), { target: { value: "4" } });
    fireEvent.change(within(form).getByLabelText("strategy"), { target: { value: "Require" } });
    fireEvent.click(within(form).getByRole("button", { name: "Save" }));
    await waitFor(() => assert.ok(calls.some((c) => c.method === "PUT")));
    assert.deepEqual(calls.find((c) => c.method === "PUT")?.body, { threshold: 4, strategy: "Require" });
  });

  it("a field managed elsewhere: shows core's 409 'managed by argocd-controller: change it in Git', and forcing re-sends with force=true", async () => {
    const calls = mockFetch([
      [/GET .*spot-placement/, () => [200, spotView]],
      [/PUT .*policies\/spot\/Deployment\/shop\/api\?force=true/, (c) => [200, c.body]],
      [
        /PUT .*policies\/spot\/Deployment\/shop\/api/,
        () => [
          409,
          {
            error: "conflict",
            message:
              ".spec.threshold managed by argocd-controller: change it in Git (or force the edit to take the field over)",
          },
        ],
      ],
    ]);
    const refreshed: number[] = [];
    render(<Spot ctx={ctxFor({ role: "admin", refresh: () => refreshed.push(1) })} />);
    fireEvent.click(await screen.findByRole("button", { name: "New policy" }));
    const form = screen.getByRole("form", { name: "spot policy" });
    fireEvent.change(within(form).getByLabelText("namespace"), { target: { value: "shop" } });
    fireEvent.change(within(form).getByLabelText("name"), { target: { value: "api" } });
    fireEvent.change(within(form).getByLabelText("on-demand base (threshold)"), { target: { value: "4" } });
    fireEvent.click(within(form).getByRole("button", { name: "Save" }));
    const alert = await within(form).findByRole("alert");
    assert.match(alert.textContent, /\.spec\.threshold managed by argocd-controller: change it in Git/);
    assert.equal(refreshed.length, 0, "nothing changed: no refresh, the editor stays open");
    fireEvent.click(within(form).getByRole("button", { name: "Force (take the field over)" }));
    await waitFor(() => assert.equal(refreshed.length, 1));
    const puts = calls.filter((c) => c.method === "PUT").map((c) => c.url.replace(/^.*policies/, ""));
    assert.deepEqual(puts, ["/spot/Deployment/shop/api", "/spot/Deployment/shop/api?force=true"]);
  });

  it("deletes a spot policy as admin: DELETE on the workload's route, then refresh; a viewer is asked for the admin token", async () => {
    const route = spotRoute({ workload: "shop/Deployment/web" });
    let answer: [number, unknown] = [403, { message: "an admin token is required" }];
    const calls = mockFetch([
      [/GET .*spot-placement/, () => [200, spotView]],
      [/DELETE /, () => answer],
    ]);
    // A viewer cannot open the editor: the admin sign-in is asked for, nothing is sent.
    const viewer = ctxFor({ route });
    render(<Spot ctx={viewer} />);
    fireEvent.click(await screen.findByRole("button", { name: "Edit (admin)" }));
    assert.deepEqual(viewer.asked, ["edit spot policies"]);
    assert.equal(screen.queryByRole("button", { name: "Delete policy" }), null);
    cleanup();
    // An admin whose token core refuses (403) is asked to sign in again; nothing is refreshed.
    const refreshed: number[] = [];
    const admin = ctxFor({ role: "admin", route, refresh: () => refreshed.push(1) });
    render(<Spot ctx={admin} />);
    fireEvent.click(await screen.findByRole("button", { name: "Edit policy" }));
    const form = screen.getByRole("form", { name: "spot policy" });
    fireEvent.click(within(form).getByRole("button", { name: "Delete policy" }));
    await waitFor(() => assert.deepEqual(admin.asked, ["delete spot policies"]));
    assert.equal(refreshed.length, 0);
    assert.ok(screen.getByRole("form", { name: "spot policy" }), "the editor stays open");
    // Accepted: the page reloads and the editor closes.
    answer = [204, null];
    fireEvent.click(within(form).getByRole("button", { name: "Delete policy" }));
    await waitFor(() => assert.equal(refreshed.length, 1));
    assert.equal(screen.queryByRole("form", { name: "spot policy" }), null, "the editor closed");
    const deletes = calls.filter((c) => c.method === "DELETE");
    assert.equal(deletes.length, 2);
    assert.ok(deletes.every((c) => c.url === "api/v1/clusters/prod/policies/spot/Deployment/shop/web"));
    assert.equal(calls.filter((c) => c.method === "PUT").length, 0, "a delete saves nothing");
  });
});

describe("What-if in the policy editors", () => {
  const side = (costPerHour: number, spotShare: number, onDemand: number) => ({
    policy: { spot: [], warmup: {} },
    costPerHour,
    costPerMonth: costPerHour * 730,
    spotShare,
    nodeHours: { spot: 1, onDemand: 1 },
    podStart: { count: 12, p50Ms: 2000, p95Ms: 61_000, maxMs: 70_000 },
    pendingAtEnd: 0,
    spotInterruptions: 0,
    nodeClaimsCreated: 3,
    now: {
      costPerHour,
      nodes: { spot: 2, onDemand: onDemand > 0 ? 1 : 0 },
      pools: { general: { costPerHour, nodes: 3 } },
      workloads: { "shop/Deployment/api": { onDemand, spot: 6 - onDemand, pending: 0 } },
    },
  });
  const report = {
    clusterId: "prod",
    from: NOW - 86_400_000,
    to: NOW,
    historyBuckets: 1440,
    catalog: "aws",
    bootDelayMs: 60_000,
    spotInterruptionRate: 0.01,
    workloads: ["shop/Deployment/api"],
    skipped: [],
    current: side(0.5, 1, 0),
    candidate: side(0.62, 0.7, 2),
    tookMs: 900,
  };

  it("replays the draft spot policy on the last 24 h and shows both sides, saving nothing", async () => {
    const calls = mockFetch([
      [/GET .*spot-placement/, () => [200, spotView]],
      [/POST .*clusters\/prod\/whatif$/, () => [200, report]],
    ]);
    render(<Spot ctx={ctxFor({ role: "admin" })} />);
    fireEvent.click(await screen.findByRole("button", { name: "New policy" }));
    const form = screen.getByRole("form", { name: "spot policy" });
    fireEvent.change(within(form).getByLabelText("namespace"), { target: { value: "shop" } });
    fireEvent.change(within(form).getByLabelText("name"), { target: { value: "api" } });
    fireEvent.change(within(form).getByLabelText("on-demand base (threshold)"), { target: { value: "2" } });
    fireEvent.click(within(form).getByRole("button", { name: /What if/ }));
    const table = await screen.findByRole("table", { name: "what-if result" });
    assert.deepEqual(calls.find((c) => c.method === "POST")?.body, {
      spot: [
        {
          workload: { namespace: "shop", kind: "Deployment", name: "api" },
          threshold: 2,
          strategy: "Prefer",
        },
      ],
    });
    const row = (label: string): string[] =>
      Array.from(within(table).getByRole("rowheader", { name: label }).parentElement?.children ?? []).map(
        (c) => c.textContent,
      );
    assert.deepEqual(row("cost/h (average)"), ["cost/h (average)", "$0.500", "$0.620"]);
    assert.deepEqual(row("spot share"), ["spot share", "100 %", "70 %"]);
    assert.deepEqual(row("pod start p95"), ["pod start p95", "61.0 s", "61.0 s"]);
    assert.deepEqual(row("deployment/shop/api pods on-demand / spot now"), [
      "deployment/shop/api pods on-demand / spot now",
      "0 / 6",
      "2 / 4",
    ]);
    assert.match(table.textContent, /24\.0 h of this cluster replayed .*1440 history buckets/);
    assert.equal(calls.filter((c) => c.method === "PUT").length, 0, "a what-if saves nothing");
  });

  it("shows core's reason when the what-if is refused", async () => {
    mockFetch([
      [/GET .*spot-placement/, () => [200, spotView]],
      [
        /POST .*whatif$/,
        () => [400, { message: "spot: the cluster has no live pod of deployment/shop/nope" }],
      ],
    ]);
    render(<Spot ctx={ctxFor({ role: "admin" })} />);
    fireEvent.click(await screen.findByRole("button", { name: "New policy" }));
    const form = screen.getByRole("form", { name: "spot policy" });
    fireEvent.change(within(form).getByLabelText("namespace"), { target: { value: "shop" } });
    fireEvent.change(within(form).getByLabelText("name"), { target: { value: "nope" } });
    fireEvent.click(within(form).getByRole("button", { name: /What if/ }));
    assert.match(
      (await within(form).findByRole("alert")).textContent,
      /no live pod of deployment\/shop\/nope/,
    );
  });
});

describe("Realized savings on the overview", () => {
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
    spotSavingsPerHour: 0.2,
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
  const line = (name: string, actualUsd: number, onDemandUsd: number): SavingsLineDto => ({
    name,
    actualUsd,
    onDemandUsd,
    savedUsd: onDemandUsd - actualUsd,
    savedShare: (onDemandUsd - actualUsd) / onDemandUsd,
  });
  /** Core's answer for [from, to): a day's figures, or a week's (seven times as much). */
  const savingsFor = (from: number, to: number): SavingsDto => {
    const k = to - from >= 7 * 86_400_000 ? 7 : 1;
    return {
      from,
      to,
      total: line("total", 6 * k, 10 * k),
      pools: [line("general", 4 * k, 8 * k), line("batch", 2 * k, 2 * k)],
      workloads: [line("shop/Deployment/web", 1.5 * k, 6 * k)],
    };
  };

  it("shows /savings per pool and per workload for the header's range, and follows the range picker", async () => {
    const asked: { from: number; to: number }[] = [];
    const calls = mockFetch([
      [/api\/v1\/clusters$/, () => [200, [cluster]]],
      [
        /api\/v1\/whoami$/,
        () => [200, { role: "viewer", subject: "token:viewer", groups: [], source: "token" }],
      ],
      [
        /\/savings\?/,
        (c) => {
          const q = new URL(c.url, "http://wave.test/").searchParams;
          const w = { from: Number(q.get("from")), to: Number(q.get("to")) };
          asked.push(w);
          return [200, savingsFor(w.from, w.to)];
        },
      ],
      [/\/series\?/, () => [200, { from: 0, to: 0, step: 60, nodePool: null, points: [], gaps: [] }]],
      [/\/disruptions\?/, () => [200, []]],
    ]);
    // The live stream sends one snapshot and stays open.
    const mocked = globalThis.fetch;
    globalThis.fetch = (input, init) => {
      if (typeof input !== "string" || !input.endsWith("/stream")) return mocked(input, init);
      const live: LiveDto = { overview, nodePools: [] };
      const body = new ReadableStream<Uint8Array>({
        start: (c) => c.enqueue(new TextEncoder().encode(`data: ${JSON.stringify(live)}\n\n`)),
      });
      return Promise.resolve(new Response(body, { status: 200 }));
    };
    location.hash = "#/overview?cluster=prod&range=24h";
    render(<App />);
    const total = await screen.findByTestId("savings-total");
    assert.equal(total.textContent, "$4.00 saved (40%) — $6.00 spent vs $10.00 all on-demand");
    assert.equal(asked.length, 1);
    assert.equal(asked[0] && asked[0].to - asked[0].from, 86_400_000, "the header's 24 h");
    const cells = (testid: string): string[][] =>
      within(screen.getByTestId(testid))
        .getAllByRole("row")
        .slice(1)
        .map((r) =>
          within(r)
            .getAllByRole("cell")
            .map((c) => c.textContent),
        );
    assert.deepEqual(cells("savings-pools"), [
      ["general", "$4.00", "50%", "$4.00", "$8.00"],
      ["batch", "$0.000", "0%", "$2.00", "$2.00"],
    ]);
    assert.deepEqual(cells("savings-workloads"), [["shop/Deployment/web", "$4.50", "75%", "$1.50", "$6.00"]]);
    assert.equal(screen.getByTestId("savings-range").textContent, "last 24h");
    // The header's range picker moves the savings with the rest of the page.
    fireEvent.change(screen.getByRole("combobox", { name: "time range" }), { target: { value: "7d" } });
    await waitFor(() =>
      assert.equal(
        screen.getByTestId("savings-total").textContent,
        "$28.00 saved (40%) — $42.00 spent vs $70.00 all on-demand",
      ),
    );
    const week = asked.at(-1);
    assert.equal(week && week.to - week.from, 7 * 86_400_000, "the picked 7 d");
    assert.deepEqual(cells("savings-pools")[0], ["general", "$28.00", "50%", "$28.00", "$56.00"]);
    assert.equal(screen.getByTestId("savings-range").textContent, "last 7d");
    assert.ok(calls.every((c) => !c.url.includes("/savings") || c.url.startsWith("api/v1/clusters/prod/")));
  });
});

describe("token prompt", () => {
  it("asks for a token instead of showing a raw 401", async () => {
    mockFetch([
      [/api\/v1\//, () => [401, { error: "unauthorized", message: "a valid bearer token is required" }]],
    ]);
    render(<App />);
    assert.ok(await screen.findByText("Wave's API needs a token to show this cluster."));
    assert.equal(screen.queryByText(/401|bearer token is required/), null);
  });
});

describe("console shell", () => {
  it("starts the cluster in the URL at once: the page asks for its data before the cluster list answers", async () => {
    let answerClusters: (() => void) | undefined;
    const asked: string[] = [];
    const json = (body: unknown): Response => new Response(JSON.stringify(body), { status: 200 });
    globalThis.fetch = (input: string | URL | Request) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      asked.push(url);
      if (url.endsWith("api/v1/clusters"))
        return new Promise<Response>((resolve) => {
          answerClusters = () => resolve(json([cluster]));
        });
      if (url.endsWith("api/v1/whoami"))
        return Promise.resolve(
          json({ role: "viewer", subject: "token:viewer", groups: [], source: "token" }),
        );
      if (url.includes("/stream")) return new Promise<Response>(() => undefined);
      const list: NodeListDto = { total: 1, totalBeforeQuery: 1, items: [nodeDto("n-1")] };
      return Promise.resolve(json(list));
    };
    location.hash = "#/nodes?cluster=prod";
    render(<App />);
    await screen.findByTestId("node-row");
    assert.ok(answerClusters, "the cluster list was asked for");
    assert.ok(
      asked.some((u) => u.startsWith("api/v1/clusters/prod/nodes?")),
      "the node list went out while the cluster list was still pending",
    );
    assert.equal(screen.queryByText(/Kubernetes v1\.34\.1/), null, "versions wait for the list");
    answerClusters();
    assert.ok(await screen.findByText(/Kubernetes v1\.34\.1 · Karpenter v1\.8\.2/));
  });

  it("switches cluster from the header: the URL's cluster= changes and the page asks the other cluster's API", async () => {
    const staging = { ...cluster, id: "staging", kubernetesVersion: "v1.33.0" };
    const nodesOf: Record<string, NodeDto[]> = {
      prod: [nodeDto("prod-n1"), nodeDto("prod-n2")],
      staging: [nodeDto("staging-n1", { instanceType: "c7g.xlarge" })],
    };
    const calls = mockFetch([
      [/api\/v1\/clusters$/, () => [200, [cluster, staging]]],
      [
        /api\/v1\/whoami$/,
        () => [200, { role: "viewer", subject: "token:viewer", groups: [], source: "token" }],
      ],
      [
        /api\/v1\/clusters\/[^/]+\/nodes\?/,
        (c) => {
          const id = /clusters\/([^/]+)\/nodes/.exec(c.url)?.[1] ?? "";
          const items = nodesOf[id] ?? [];
          const answer: NodeListDto = { total: items.length, totalBeforeQuery: items.length, items };
          return [200, answer];
        },
      ],
    ]);
    // The live stream never answers: the page's figures come from the node list alone.
    const mocked = globalThis.fetch;
    globalThis.fetch = (input, init) =>
      typeof input === "string" && input.endsWith("/stream")
        ? new Promise<Response>(() => undefined)
        : mocked(input, init);
    location.hash = "#/nodes?cluster=prod";
    render(<App />);
    await waitFor(() => assert.equal(screen.getAllByTestId("node-row").length, 2));
    const select = screen.getByRole<HTMLSelectElement>("combobox", { name: "cluster" });
    await waitFor(() =>
      assert.deepEqual(
        Array.from(select.options, (o) => o.value),
        ["prod", "staging"],
      ),
    );
    const before = calls.length;
    fireEvent.change(select, { target: { value: "staging" } });
    await waitFor(() => assert.match(location.hash, /[?&]cluster=staging(&|$)/));
    assert.match(location.hash, /^#\/nodes\?/, "the same page");
    await waitFor(() => assert.match(screen.getAllByTestId("node-row")[0]?.textContent ?? "", /^staging-n1/));
    const rows = screen.getAllByTestId("node-row");
    assert.equal(rows.length, 1);
    assert.match(rows[0]?.textContent ?? "", /c7g\.xlarge/);
    assert.equal(screen.queryByText(/^prod-n/), null, "no row of the first cluster is left");
    assert.equal(screen.getByRole<HTMLSelectElement>("combobox", { name: "cluster" }).value, "staging");
    assert.ok(
      await screen.findByText(/Kubernetes v1\.33\.0/),
      "the header shows the other cluster's versions",
    );
    const after = calls
      .slice(before)
      .map((c) => c.url)
      .filter((u) => /clusters\/[^/]+\//.test(u));
    assert.ok(after.length > 0, "the page asked for data after the switch");
    assert.ok(
      after.every((u) => u.startsWith("api/v1/clusters/staging/")),
      `every request after the switch goes to staging: ${after.join(", ")}`,
    );
  });
});

describe("early requests (boot.ts)", () => {
  it("starts the page's requests before the console's code runs; the page takes each answer once", async () => {
    const asked: { url: string; auth: string | null }[] = [];
    const json = (body: unknown): Response => new Response(JSON.stringify(body), { status: 200 });
    globalThis.fetch = (input: string | URL | Request, init?: RequestInit) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      asked.push({ url, auth: new Headers(init?.headers).get("authorization") });
      if (url.endsWith("api/v1/clusters")) return Promise.resolve(json([cluster]));
      if (url.endsWith("api/v1/whoami"))
        return Promise.resolve(
          json({ role: "viewer", subject: "token:viewer", groups: [], source: "token" }),
        );
      if (url.endsWith("/stream")) return new Promise<Response>(() => undefined);
      const list: NodeListDto = { total: 1, totalBeforeQuery: 1, items: [nodeDto("n-1")] };
      return Promise.resolve(json(list));
    };
    location.hash = "#/nodes?cluster=prod&pool=general&token=secret";
    startEarly(NOW);
    const nodes = "api/v1/clusters/prod/nodes?sort=cost&desc=true&limit=100&offset=0&pool=general";
    assert.deepEqual(
      asked.map((a) => a.url),
      ["api/v1/clusters", "api/v1/whoami", "api/v1/clusters/prod/stream", nodes],
    );
    assert.ok(asked.every((a) => a.auth === "Bearer secret"));
    assert.equal(location.hash.includes("token"), false, "the token left the URL");
    // A request with another token is not answered from them.
    assert.equal(takeEarly(nodes, "other"), undefined);
    render(<App />);
    await screen.findByTestId("node-row");
    assert.equal(asked.filter((a) => a.url === nodes).length, 1, "the node list was asked for once");
    assert.equal(asked.filter((a) => a.url.endsWith("/stream")).length, 1, "the stream was opened once");
    assert.equal(takeEarly(nodes, "secret"), undefined, "an early answer is taken once");
  });
});

/** The misconfigured batch pool's thrashing report. */
const batchReport = (evidence: ThrashingDto["evidence"]): ThrashingDto => ({
  nodePool: "batch",
  severity: "high",
  flagged: true,
  score: 74,
  summary: "batch: 3 nodes removed young",
  evidence,
  advice: ["Raise consolidateAfter to 15m: nodes live 0.6 min"],
});

describe("Node drawer and thrashing", () => {
  it("shows the lifecycle with durations, the price source and who set do-not-disrupt", async () => {
    const d: NodeDetailDto = {
      node: null,
      nodeClaim: "general-abc",
      gone: false,
      timeline: [
        { phase: "Launched", at: NOW - 60_000, sincePreviousSeconds: null, reason: null },
        { phase: "Registered", at: NOW - 30_000, sincePreviousSeconds: 30, reason: null },
      ],
      pods: [
        { namespace: "shop", name: "web-1", phase: "Running", cpu: 0.5, memoryBytes: 2 ** 29, wave: "spot" },
      ],
      price: { usdPerHour: 0.19, source: "kwok", asOf: "2026-03-01", pricedBy: "kwok", listUsdPerHour: null },
      labels: { "karpenter.sh/nodepool": "general" },
      taints: [{ key: "dedicated", value: "gpu", effect: "NoSchedule" }],
      doNotDisruptBy: "wave-warmup",
      annotations: {},
      disruption: null,
    };
    mockFetch([[/nodes\/n1/, () => [200, d]]]);
    render(<NodeDrawer ctx={ctxFor()} name="n1" />);
    const tl = await screen.findByTestId("drawer-timeline");
    assert.match(tl.textContent, /Launched.*Registered.*\+30 s/);
    assert.match(screen.getByTestId("drawer-price").textContent, /\$0\.190\/h · source kwok/);
    assert.match(screen.getByTestId("drawer-dnd").textContent, /Wave's warmup/);
    assert.ok(screen.getByText("dedicated=gpu:NoSchedule"));
  });

  it("gives the thrashing fix as a copyable kubectl patch", async () => {
    const r = batchReport([
      {
        nodeClaim: "batch-1",
        instanceType: "c6i",
        createdAt: NOW - 60_000,
        terminatedAt: NOW,
        lifetimeSeconds: 35,
        reason: "Empty",
        cause: null,
      },
    ]);
    const kubectl = `kubectl patch nodepool batch --type merge -p '{"spec":{"disruption":{"consolidateAfter":"15m"}}}'`;
    const fixes: ThrashingFixesDto[] = [
      {
        nodePool: "batch",
        severity: "high",
        canApply: false,
        applied: null,
        fixes: [{ title: "Raise consolidateAfter to 15m", detail: "nodes live 0.6 min", kubectl }],
      },
    ];
    mockFetch([
      [/thrashing\/fixes/, () => [200, fixes]],
      [/thrashing$/, () => [200, [r]]],
    ]);
    let copied = "";
    Object.defineProperty(navigator, "clipboard", {
      value: { writeText: (t: string) => ((copied = t), Promise.resolve()) },
      configurable: true,
    });
    render(<Thrashing ctx={ctxFor()} />);
    assert.equal((await screen.findByTestId("kubectl-patch")).textContent, kubectl);
    fireEvent.click(screen.getByRole("button", { name: "Copy" }));
    await waitFor(() => assert.equal(copied, kubectl));
    assert.equal(screen.getAllByTestId("evidence-row").length, 1);
    assert.equal(screen.queryByRole("button", { name: /Apply/ }), null, "a real cluster: no Apply");
  });

  it("lists the evidence newest first, and after a fix says when the score clears instead of advising (issue 43)", async () => {
    const ev = (nodeClaim: string, createdAt: number) => ({
      nodeClaim,
      instanceType: "c6i",
      createdAt,
      terminatedAt: createdAt + 35_000,
      lifetimeSeconds: 35,
      reason: "Empty",
      cause: null,
    });
    const r = batchReport([
      ev("batch-a", NOW - 20 * 60_000),
      ev("batch-z", NOW - 60_000),
      ev("batch-m", NOW - 9 * 60_000),
    ]);
    const fixes: ThrashingFixesDto[] = [
      {
        nodePool: "batch",
        severity: "high",
        canApply: true,
        applied: {
          title: "Raise consolidateAfter to 15m",
          at: NOW - 5 * 60_000,
          clearsBy: NOW + 25 * 60_000,
        },
        fixes: [],
      },
    ];
    mockFetch([
      [/thrashing\/fixes/, () => [200, fixes]],
      [/thrashing$/, () => [200, [r]]],
    ]);
    render(<Thrashing ctx={ctxFor()} />);
    const note = await screen.findByTestId("fix-in-effect");
    assert.match(note.textContent, /Fix applied at .*Raise consolidateAfter to 15m/);
    assert.match(note.textContent, /last 30 minutes.*expected to clear by .*\(in 25 min\)/);
    assert.equal(screen.queryByText("What to do"), null);
    assert.doesNotMatch(document.body.textContent, /tune the settings/);
    const rows = screen.getAllByTestId("evidence-row").map((row) => row.textContent);
    assert.deepEqual(
      rows.map((t) => /batch-[a-z]/.exec(t)?.[0]),
      ["batch-z", "batch-m", "batch-a"],
      "newest first",
    );
  });

  it("applies a fix on the simulated cluster after a confirmation, as admin only", async () => {
    const r = batchReport([]);
    const title = "Raise consolidateAfter to 15m";
    const kubectl = `kubectl patch nodepool batch --type merge -p '{"spec":{"disruption":{"consolidateAfter":"15m"}}}'`;
    const fixes: ThrashingFixesDto[] = [
      {
        nodePool: "batch",
        severity: "high",
        canApply: true,
        applied: null,
        fixes: [{ title, detail: "", kubectl }],
      },
    ];
    let answer: [number, unknown] = [
      409,
      { error: "no_such_fix", message: "NodePool batch is not thrashing now" },
    ];
    const calls = mockFetch([
      [/POST .*thrashing\/apply$/, () => answer],
      [/thrashing\/fixes/, () => [200, fixes]],
      [/thrashing$/, () => [200, [r]]],
    ]);
    // A viewer is asked to sign in as admin; nothing is sent.
    const viewer = ctxFor();
    const { unmount } = render(<Thrashing ctx={viewer} />);
    fireEvent.click(await screen.findByRole("button", { name: "Apply (admin)" }));
    assert.deepEqual(viewer.asked, [`apply "${title}" to NodePool batch`]);
    unmount();
    // An admin confirms the exact patch first; a refusal is shown, then a success.
    const admin = ctxFor({ role: "admin" });
    render(<Thrashing ctx={admin} />);
    fireEvent.click(await screen.findByRole("button", { name: "Apply…" }));
    const confirm = screen.getByRole("group", { name: "apply the fix to batch" });
    assert.ok(confirm.textContent.includes(kubectl), confirm.textContent);
    assert.equal(calls.filter((c) => c.method === "POST").length, 0, "nothing sent before confirming");
    fireEvent.click(screen.getByRole("button", { name: "Apply patch" }));
    assert.match((await screen.findByRole("alert")).textContent, /not thrashing now/);
    answer = [200, { nodePool: "batch", title, kubectl }];
    fireEvent.click(screen.getByRole("button", { name: "Apply patch" }));
    assert.match((await screen.findByTestId("fix-applied")).textContent, /Applied to NodePool batch/);
    const posts = calls.filter((c) => c.method === "POST");
    assert.equal(posts.length, 2);
    const [, sent] = posts;
    assert.ok(sent);
    assert.deepEqual(sent.body, { nodePool: "batch", title });
    assert.match(sent.url, /api\/v1\/clusters\/prod\/thrashing\/apply$/);
  });

  it("counts disruptions by reason per pool", () => {
    const m = countsByReason([
      { nodePool: "p", reason: "Empty", count: 1 },
      { nodePool: "p", reason: "Drifted", count: 1 },
      { nodePool: "q", reason: "Empty", count: 1 },
    ]);
    assert.deepEqual(m.reasons, ["Drifted", "Empty"]);
    assert.deepEqual(m.pools[0], { pool: "p", counts: { Empty: 1, Drifted: 1 }, total: 2 });
  });
});

describe("Karpenter versions in the header", () => {
  it("shows the detected version and warns only outside the tested range", () => {
    const tested = { oldestTested: "v1.6.4", newestTested: "v1.15.0" };
    render(
      <Versions
        cluster={{
          ...cluster,
          karpenterVersion: "v1.16.0",
          karpenterSupport: { ...tested, status: "newer", warning: "Karpenter v1.16.0 is newer than…" },
        }}
      />,
    );
    assert.match(screen.getByTestId("versions").textContent, /Karpenter v1\.16\.0/);
    const tag = screen.getByTestId("karpenter-untested");
    assert.match(tag.textContent, /v1\.16\.0 untested · Wave is tested with v1\.6\.4–v1\.15\.0/);
    assert.equal(tag.getAttribute("title"), "Karpenter v1.16.0 is newer than…");
    cleanup();
    render(<Versions cluster={cluster} />);
    assert.match(screen.getByTestId("versions").textContent, /Karpenter v1\.8\.2/);
    assert.equal(screen.queryByTestId("karpenter-untested"), null);
    cleanup();
    render(
      <Versions
        cluster={{
          ...cluster,
          karpenterVersion: null,
          karpenterSupport: { ...tested, status: "unknown", warning: "not detected" },
        }}
      />,
    );
    assert.match(screen.getByTestId("versions").textContent, /Karpenter \?/);
    assert.equal(screen.getByTestId("versions").getAttribute("title"), "not detected");
    assert.equal(screen.queryByTestId("karpenter-untested"), null);
  });
});

describe("agent stream in the header", () => {
  it("says catching up (with progress) while the simulated cluster generates its past, not disconnected", () => {
    const catchingUp = { from: NOW - 86_400_000, at: NOW - 21_600_000, until: NOW };
    render(<Connection cluster={{ ...cluster, simulated: true, connected: false, catchingUp }} now={NOW} />);
    assert.match(screen.getByTestId("catching-up").textContent, /generating the past day · 75 %/);
    assert.equal(screen.queryByTestId("agent-disconnected"), null);
    assert.equal(connectionSuffix({ connected: false, catchingUp }), " (catching up)");
    cleanup();
    render(<Connection cluster={{ ...cluster, connected: false, lastSeen: NOW - 120_000 }} now={NOW} />);
    assert.match(
      screen.getByTestId("agent-disconnected").textContent,
      /agent disconnected · last data 2m ago/,
    );
    assert.equal(screen.queryByTestId("catching-up"), null);
    assert.equal(connectionSuffix({ connected: false, catchingUp: null }), " (disconnected)");
    cleanup();
    render(<Connection cluster={cluster} now={NOW} />);
    assert.equal(screen.queryByTestId("agent-disconnected"), null);
    assert.equal(screen.queryByTestId("catching-up"), null);
    assert.equal(connectionSuffix(cluster), "");
  });
  it("shows a cluster whose snapshot core refused at a bound: a badge with the reason, also while reconnected", () => {
    const rejected = {
      at: NOW - 60_000,
      bound: "snapshot_bytes",
      message: "snapshot exceeds 268435456 bytes of objects; rejected",
    };
    render(<Connection cluster={{ ...cluster, connected: false, rejected }} now={NOW} />);
    const badge = screen.getByTestId("agent-rejected");
    assert.equal(
      badge.textContent,
      "snapshot rejected: snapshot exceeds 268435456 bytes of objects; rejected",
    );
    assert.equal(badge.getAttribute("role"), "alert");
    assert.match(badge.getAttribute("title") ?? "", /60s ago.*backs off and retries/);
    assert.equal(screen.queryByTestId("agent-disconnected"), null);
    assert.equal(connectionSuffix({ connected: false, catchingUp: null, rejected }), " (rejected)");
    cleanup();
    // The agent is back on a stream (HelloAck) but its snapshot is not accepted yet: still rejected.
    const objectBound = {
      at: NOW,
      bound: "object_bytes",
      message: "delta 4: object of 4000000 bytes exceeds 3145728 bytes",
    };
    render(<Connection cluster={{ ...cluster, rejected: objectBound }} now={NOW} />);
    assert.match(
      screen.getByTestId("agent-rejected").textContent,
      /^object rejected: delta 4: object of 4000000 bytes/,
    );
  });

  it("lists the refused cluster as rejected in the header's picker, with the badge", async () => {
    const rejected = {
      at: NOW,
      bound: "snapshot_bytes",
      message: "snapshot exceeds 65536 bytes of objects; rejected",
    };
    const json = (body: unknown): Response => new Response(JSON.stringify(body), { status: 200 });
    globalThis.fetch = (input: string | URL | Request) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      if (url.endsWith("api/v1/clusters"))
        return Promise.resolve(json([{ ...cluster, connected: false, rejected }]));
      if (url.endsWith("api/v1/whoami"))
        return Promise.resolve(
          json({ role: "viewer", subject: "token:viewer", groups: [], source: "token" }),
        );
      if (url.includes("/stream")) return new Promise<Response>(() => undefined);
      const list: NodeListDto = { total: 1, totalBeforeQuery: 1, items: [nodeDto("n-1")] };
      return Promise.resolve(json(list));
    };
    location.hash = "#/nodes?cluster=prod";
    render(<App />);
    const badge = await screen.findByTestId("agent-rejected");
    assert.equal(badge.textContent, "snapshot rejected: snapshot exceeds 65536 bytes of objects; rejected");
    const picker = screen.getByRole("combobox", { name: "cluster" });
    assert.equal(within(picker).getByRole("option").textContent, "prod (rejected)");
  });

  it("bounds the progress", () => {
    assert.equal(catchUpPercent({ from: 10, at: 5, until: 20 }), 0);
    assert.equal(catchUpPercent({ from: 10, at: 25, until: 20 }), 100);
    assert.equal(catchUpPercent({ from: 10, at: 10, until: 10 }), 100);
  });
});
