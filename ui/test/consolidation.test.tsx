// Issue 34 in the console: the Consolidation page (blocked nodes by reason and cost, sums, filters,
// fixes), the node drawer's "Can Karpenter disrupt it?" and the overview's pending pods.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import type {
  BlockerDto,
  ConsolidationViewDto,
  NodeDetailDto,
  NodeDisruptionDto,
  PendingViewDto,
} from "../../src/dashboard/dto.ts";
import { Consolidation, fixesOf } from "../src/pages/Consolidation.tsx";
import { NodeDrawer } from "../src/pages/NodeDrawer.tsx";
import { PendingPods } from "../src/pages/Pending.tsx";
import { parseRoute } from "../src/route.ts";
import { ctxFor, mockFetch, NOW } from "./helpers.tsx";

afterEach(() => {
  cleanup();
  location.hash = "";
});

const pdbPatch = `kubectl patch poddisruptionbudget ledger -n payments --type merge -p '{"spec":{"minAvailable":1}}'`;
const pdb: BlockerDto = {
  reason: "pdb",
  blocking: true,
  waiting: false,
  message: "PodDisruptionBudget payments/ledger allows 0 disruptions (2 of 2 pods must stay)",
  object: { kind: "PodDisruptionBudget", namespace: "payments", name: "ledger" },
  pods: ["payments/ledger-a"],
  until: null,
  source: "state",
  fix: {
    title: "Let the PDB allow one disruption",
    detail: "minAvailable 2 → 1",
    target: { kind: "PodDisruptionBudget", namespace: "payments", name: "ledger" },
    patch: { spec: { minAvailable: 1 } },
    kubectl: pdbPatch,
  },
};
const budget: BlockerDto = {
  reason: "budget",
  blocking: true,
  waiting: false,
  message: "NodePool gpu's budget allows 0 disruptions now (schedule 0 9 * * *, 2h)",
  object: { kind: "NodePool", namespace: null, name: "gpu" },
  pods: [],
  until: NOW + 3_600_000,
  source: "state",
  fix: {
    title: "Narrow the budget's window",
    detail: "",
    target: { kind: "NodePool", namespace: null, name: "gpu" },
    patch: { spec: {} },
    kubectl: `kubectl patch nodepool gpu --type merge -p '{"spec":{}}'`,
  },
};
const node = (name: string, pool: string, blockers: BlockerDto[], savings: number): NodeDisruptionDto => ({
  node: name,
  nodeClaim: `${pool}-x`,
  nodePool: pool,
  disruptable: blockers.every((b) => !b.blocking),
  blocked: blockers.some((b) => b.blocking) && savings > 0,
  waiting: false,
  static: false,
  empty: savings > 1,
  costPerHour: savings || 0.19,
  savingsPerHour: savings,
  action: savings > 0 ? "delete" : null,
  replacement: null,
  blockers,
  events: [],
});
const view: ConsolidationViewDto = {
  clusterId: "prod",
  at: NOW,
  karpenterVersion: "v1.15.0",
  nodes: 12,
  blockedNodes: 3,
  blockedCostPerHour: 2.59,
  waitingNodes: 0,
  staticNodes: 0,
  staticPools: [],
  byPool: [
    { nodePool: "general", nodes: 8, blockedNodes: 2, blockedCostPerHour: 0.38 },
    { nodePool: "gpu", nodes: 4, blockedNodes: 1, blockedCostPerHour: 2.21 },
  ],
  byReason: [
    { reason: "pdb", blockedNodes: 2, blockedCostPerHour: 0.38 },
    { reason: "budget", blockedNodes: 1, blockedCostPerHour: 2.21 },
  ],
  byPoolReason: [
    { nodePool: "general", reason: "pdb", blockedNodes: 2, blockedCostPerHour: 0.38 },
    { nodePool: "gpu", reason: "budget", blockedNodes: 1, blockedCostPerHour: 2.21 },
  ],
  items: [
    node("gpu-node", "gpu", [budget], 2.21),
    node("ledger-1", "general", [pdb], 0.19),
    node("ledger-2", "general", [pdb], 0.19),
    node("free", "general", [], 0),
    // Held by the PDB but consolidating it would save nothing: not blocked, not listed (issue 43).
    node("held-zero", "general", [pdb], 0),
  ],
};

describe("Consolidation page", () => {
  it("shows blocked nodes by reason and cost, the sums per pool and reason, and one copyable fix per patch", async () => {
    const calls = mockFetch([[/\/consolidation/, () => [200, view]]]);
    render(<Consolidation ctx={ctxFor({ route: parseRoute("#/consolidation?cluster=prod") })} />);
    const rows = await screen.findAllByTestId("blocked-row");
    assert.equal(rows.length, 3, "the node Karpenter may disrupt is not listed");
    assert.match(rows[0]?.textContent ?? "", /gpu-node.*NodePool budget 0.*\$2\.21/, "costliest first");
    assert.equal(screen.getByTestId("consolidation-blocked").textContent, "3");
    assert.equal(screen.getByTestId("consolidation-cost").textContent, "$2.59");
    assert.match(
      screen.getByTestId("consolidation-cost").parentElement?.textContent ?? "",
      /if the blockers were lifted.*consolidation could save \$2\.59\/h.*planned together, each spare room used once/,
    );
    assert.equal(screen.getByTestId("consolidation-top").textContent, "NodePool budget 0");
    const sums = screen.getAllByTestId("pool-reason-row").map((r) => r.textContent);
    assert.deepEqual(sums, ["gpuNodePool budget 01$2.21", "generalPDB allows 02$0.380"]);
    const fixes = screen.getAllByTestId("fix");
    assert.equal(fixes.length, 2, "the PDB blocking two nodes is one fix");
    const pdbFix = fixes.find((f) => f.dataset["reason"] === "pdb");
    assert.ok(pdbFix);
    assert.match(pdbFix.textContent, /blocks 2 nodes ledger-1, ledger-2/);
    assert.equal(within(pdbFix).getByTestId("fix-patch").textContent, pdbPatch);
    let copied = "";
    Object.defineProperty(navigator, "clipboard", {
      value: { writeText: (t: string) => ((copied = t), Promise.resolve()) },
      configurable: true,
    });
    fireEvent.click(within(pdbFix).getByText("Copy"));
    assert.equal(copied, pdbPatch);
    assert.equal(
      await within(pdbFix)
        .findByText("Copied")
        .then((e) => e.tagName),
      "BUTTON",
    );
    assert.ok(calls.some((c) => c.url.endsWith("/consolidation")));
  });

  it("filters by pool and reason through the URL and asks core for them", async () => {
    const ctx = ctxFor({ route: parseRoute("#/consolidation?cluster=prod&pool=general&reason=pdb") });
    const calls = mockFetch([
      [
        /\/consolidation\?nodePool=general&reason=pdb$/,
        () => [200, { ...view, items: view.items.filter((n) => n.nodePool === "general") }],
      ],
    ]);
    render(<Consolidation ctx={ctx} />);
    assert.equal((await screen.findAllByTestId("blocked-row")).length, 2);
    assert.equal(calls.length, 1);
    assert.deepEqual(
      screen.getAllByTestId("pool-reason-row").map((r) => r.textContent),
      ["generalPDB allows 02$0.380"],
    );
    fireEvent.change(screen.getByLabelText("filter by reason"), { target: { value: "budget" } });
    assert.deepEqual(ctx.went.at(-1), { params: { pool: "general", reason: "budget" } });
    fireEvent.click(screen.getAllByTestId("blocked-row")[0] as HTMLElement);
    assert.deepEqual(ctx.went.at(-1), { node: "ledger-1" });
    assert.equal(parseRoute("#/consolidation?pool=gpu").page, "consolidation", "a deep link");
  });

  it("says so when nothing blocks consolidation", async () => {
    mockFetch([
      [
        /\/consolidation/,
        () => [
          200,
          { ...view, blockedNodes: 0, blockedCostPerHour: 0, byReason: [], byPoolReason: [], items: [] },
        ],
      ],
    ]);
    render(<Consolidation ctx={ctxFor({ route: parseRoute("#/consolidation") })} />);
    assert.ok(await screen.findByText(/Karpenter may disrupt every node/));
    assert.equal(fixesOf([]).length, 0);
  });

  it("states a static pool's sentence, not as a blocker, with no fix", async () => {
    const message = "static: Karpenter keeps 3 nodes and never consolidates them";
    const staticView: ConsolidationViewDto = {
      ...view,
      staticNodes: 3,
      staticPools: [{ nodePool: "fixed", nodes: 3, replicas: 3, message }],
    };
    mockFetch([[/\/consolidation/, () => [200, staticView]]]);
    render(<Consolidation ctx={ctxFor({ route: parseRoute("#/consolidation") })} />);
    const li = await screen.findByTestId("static-pool");
    assert.match(li.textContent, /fixed static: Karpenter keeps 3 nodes and never consolidates them/);
    assert.ok(screen.getByText(/3 in static pools/), "the card counts them apart");
    assert.ok(!screen.getByTestId("consolidation-fixes").textContent.includes("fixed"), "no fix for it");
  });
});

describe("Node drawer: can Karpenter disrupt it?", () => {
  it("answers no, with each blocker, its object, when it lifts, the fix, and Karpenter's own Events", async () => {
    const d: NodeDetailDto = {
      node: null,
      nodeClaim: "gpu-x",
      gone: false,
      timeline: [],
      pods: [],
      price: { usdPerHour: 2.21, source: "static", asOf: null, pricedBy: "static", listUsdPerHour: null },
      labels: { "karpenter.sh/nodepool": "gpu" },
      taints: [],
      doNotDisruptBy: null,
      annotations: {},
      disruption: {
        ...node("gpu-node", "gpu", [budget], 2.21),
        events: [
          {
            at: NOW - 60_000,
            reason: "DisruptionBlocked",
            message: "No allowed disruptions for disruption reason Empty due to blocking budget",
            count: 3,
            object: { kind: "NodePool", namespace: null, name: "gpu" },
          },
        ],
      },
    };
    mockFetch([[/nodes\/gpu-node/, () => [200, d]]]);
    render(<NodeDrawer ctx={ctxFor()} name="gpu-node" />);
    const section = await screen.findByTestId("drawer-disruption");
    assert.match(
      screen.getByTestId("drawer-disruptable").textContent,
      /no · 1 blocker.*save \$2\.21\/h \(empty: delete\)/,
    );
    const b = within(section).getByTestId("blocker");
    assert.equal(b.dataset["reason"], "budget");
    assert.match(b.textContent, /NodePool budget 0.*NodePool gpu.*lifts/);
    assert.equal(within(b).getByTestId("blocker-patch").textContent, budget.fix?.kubectl);
    assert.match(
      within(section).getByTestId("drawer-karpenter-events").textContent,
      /DisruptionBlocked \(NodePool\) No allowed disruptions for disruption reason Empty due to blocking budget ×3/,
    );
  });

  it("answers yes for a node nothing blocks", async () => {
    const d = {
      node: null,
      nodeClaim: "general-x",
      gone: false,
      timeline: [],
      pods: [],
      price: { usdPerHour: 0.19, source: "static", asOf: null, pricedBy: "static", listUsdPerHour: null },
      labels: {},
      taints: [],
      doNotDisruptBy: null,
      annotations: {},
      disruption: node("free", "general", [], 0),
    } satisfies NodeDetailDto;
    mockFetch([[/nodes\/free/, () => [200, d]]]);
    render(<NodeDrawer ctx={ctxFor()} name="free" />);
    assert.match((await screen.findByTestId("drawer-disruptable")).textContent, /yes.*not under-used/);
  });
});

describe("Overview: pending pods", () => {
  it("lists each pending pod with how long it waited and Karpenter's reasons per NodePool", async () => {
    const pending: PendingViewDto = {
      clusterId: "prod",
      at: NOW,
      pods: [
        {
          namespace: "data",
          name: "indexer-1",
          since: NOW - 600_000,
          waitingSeconds: 600,
          reasons: [
            {
              nodePool: null,
              kind: "taint",
              key: "wave.sh/arch=arm64:NoSchedule",
              text: "does not tolerate the taint wave.sh/arch=arm64:NoSchedule",
              detail: "did not tolerate taint (taint=wave.sh/arch=arm64:NoSchedule)",
              fix: null,
              costPerHour: null,
            },
            {
              nodePool: "spot-heavy",
              kind: "limit",
              key: null,
              text: "NodePool spot-heavy: at its limits",
              detail: "all available instance types exceed limits for nodepool (NodePool=spot-heavy)",
              fix: null,
              costPerHour: null,
            },
          ],
          nominatedTo: null,
          lastEvent: null,
        },
        {
          namespace: "shop",
          name: "web-2",
          since: NOW - 5_000,
          waitingSeconds: 5,
          reasons: [],
          nominatedTo: "nodeclaim/general-abc",
          lastEvent: null,
        },
      ],
      byPoolReason: [],
    };
    render(<PendingPods view={{ data: pending, error: undefined, loading: false }} />);
    const rows = await screen.findAllByTestId("pending-row");
    assert.equal(rows.length, 2);
    assert.match(
      rows[0]?.textContent ?? "",
      /data\/indexer-1.*10 min.*taint.*wave\.sh\/arch=arm64.*pool at its limit.*spot-heavy/,
    );
    assert.match(rows[1]?.textContent ?? "", /a node is on its way: nodeclaim\/general-abc/);
  });
});
