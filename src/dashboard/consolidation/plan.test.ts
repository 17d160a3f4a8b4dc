// Issue 43: the blocked cost is a plan (each spare room used once), a wait is not a blocker, a node
// that would save $0 is not blocked, and every NodePool fix comes from the one advisor.
// The asserts narrow as they go (assert.equal asserts its actual); optional chains keep each line readable alone.
/* eslint-disable @typescript-eslint/no-unnecessary-condition */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ClusterState } from "../../state/cluster.ts";
import { machineObjects, nodePool, pod } from "../testkit.ts";
import type { Pod } from "../../objects/kube.ts";
import type { NodePool } from "../../objects/karpenter.ts";
import type { PriceProvider } from "../../pricing/types.ts";
import type { ThrashingReport } from "../thrashing/detect.ts";
import { holdsByPool, poolFieldsOf, withAppliedFix } from "../pool-advice.ts";
import { advisedView } from "./advised.ts";
import { consolidationView } from "./view.ts";

const NOW = Date.parse("2026-06-01T10:00:00Z");
const PRICES: Record<string, number> = { gpu: 1.01, big: 0.4, small: 0.1 };
const prices: PriceProvider = {
  price: (it) =>
    PRICES[it] === undefined ? undefined : { usdPerHour: PRICES[it], source: "static", asOf: "2026-01-01" },
};

interface M {
  name: string;
  type?: "gpu" | "big" | "small";
  pool?: string;
  gpus?: string;
  lastPodEvent?: string;
  consolidatable?: boolean;
}

function world(machines: M[], pods: Pod[], pools: NodePool[]): ClusterState {
  const s = new ClusterState();
  for (const p of pools) s.apply("NodePool", "add", p);
  for (const m of machines) {
    const type = m.type ?? "big";
    const { node, nodeClaim } = machineObjects({
      name: m.name,
      pool: m.pool ?? "default",
      instanceType: type,
      capacityType: "on-demand",
      cpu: type === "small" ? "2" : "4",
      memory: "8Gi",
    });
    if (!node || !nodeClaim) throw new Error("machine");
    node.metadata.labels = { ...node.metadata.labels, "karpenter.sh/initialized": "true" };
    if (m.gpus && node.status?.allocatable)
      node.status.allocatable = { ...node.status.allocatable, "nvidia.com/gpu": m.gpus };
    nodeClaim.status = {
      ...nodeClaim.status,
      conditions: [{ type: "Consolidatable", status: m.consolidatable === false ? "False" : "True" }],
      ...(m.lastPodEvent ? { lastPodEventTime: m.lastPodEvent } : {}),
    };
    s.apply("NodeClaim", "add", nodeClaim);
    s.apply("Node", "add", node);
  }
  for (const p of pods) s.apply("Pod", "add", p);
  return s;
}

function owned(p: Pod, annotations?: Record<string, string>): Pod {
  p.metadata.ownerReferences = [
    { apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", uid: "u", controller: true },
  ];
  if (annotations) p.metadata.annotations = annotations;
  return p;
}

function gpuPod(name: string, node: string, dnd: boolean): Pod {
  const p = owned(pod(name, node, "1", "1Gi"), dnd ? { "karpenter.sh/do-not-disrupt": "true" } : undefined);
  const req = p.spec.containers[0]?.resources?.requests;
  if (req) req["nvidia.com/gpu"] = "1";
  return p;
}

const underused = { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "1m" } as const;
const view = (s: ClusterState) =>
  consolidationView("c", { state: s, prices, events: [], karpenterVersion: "v1.8.2", now: NOW });

describe("blocked cost as a plan (issue 43)", () => {
  it("seven GPU nodes whose pod could each move into the one spare GPU: one of them, not seven", () => {
    // Each held by a do-not-disrupt pod; g-spare is busy with 1 GPU of 2 (not a candidate).
    const names = ["g1", "g2", "g3", "g4", "g5", "g6", "g7"];
    const machines: M[] = [
      ...names.map((name) => ({ name, type: "gpu" as const, pool: "gpu", gpus: "1" })),
      { name: "g-spare", type: "gpu", pool: "gpu", gpus: "2" },
    ];
    const pods = [...names.map((n) => gpuPod(`train-${n}`, n, true)), gpuPod("busy", "g-spare", false)];
    const v = view(world(machines, pods, [nodePool("gpu", { disruption: underused })]));
    const blocked = v.items.filter((n) => n.blocked);
    assert.deepEqual(
      blocked.map((n) => [n.action, n.savingsPerHour]),
      [["delete", 1.01]],
      "each spare room is used once: one node's pod takes the spare GPU",
    );
    assert.equal(v.blockedNodes, 1);
    assert.ok(Math.abs(v.blockedCostPerHour - 1.01) < 1e-9, String(v.blockedCostPerHour));
    // The six others would save nothing with the spare room taken: held, not in the blocked cost.
    const held = v.items.filter((n) => !n.blocked && n.blockers.some((b) => b.blocking));
    assert.equal(held.length, 6);
    assert.ok(held.every((n) => n.savingsPerHour === 0));
  });

  it("the same cluster gives the same plan whatever order its objects arrived in", () => {
    const machines: M[] = [{ name: "a" }, { name: "b" }, { name: "c" }, { name: "spare", type: "small" }];
    const pods = () => [
      owned(pod("pa", "a", "1", "1Gi"), { "karpenter.sh/do-not-disrupt": "true" }),
      owned(pod("pb", "b", "1", "1Gi"), { "karpenter.sh/do-not-disrupt": "true" }),
      owned(pod("pc", "c", "1", "1Gi"), { "karpenter.sh/do-not-disrupt": "true" }),
    ];
    const pools = [nodePool("default", { disruption: underused })];
    const one = view(world(machines, pods(), pools));
    const other = view(world([...machines].reverse(), pods().reverse(), pools));
    assert.equal(one.blockedCostPerHour, other.blockedCostPerHour);
    assert.deepEqual(
      one.items.map((n) => [n.node, n.action, n.savingsPerHour]).sort(),
      other.items.map((n) => [n.node, n.action, n.savingsPerHour]).sort(),
    );
    // The small spare (2 cpu) takes two of the three 1-cpu pods; the third node is replaced.
    const blocked = one.items.filter((n) => n.blocked);
    assert.deepEqual(blocked.map((n) => n.action).sort(), ["delete", "delete", "replace"]);
    assert.ok(Math.abs(one.blockedCostPerHour - (0.4 + 0.4 + 0.3)) < 1e-9, String(one.blockedCostPerHour));
  });
});

describe("waiting is not blocked; $0 is not blocked (issue 43)", () => {
  it("consolidateAfter not elapsed: shown as waiting, no patch, not in the blocked nodes", () => {
    const pools = [nodePool("default", { disruption: { ...underused, consolidateAfter: "1h" } })];
    const s = world(
      [{ name: "a", consolidatable: false, lastPodEvent: "2026-06-01T09:50:00Z" }, { name: "b" }],
      [],
      pools,
    );
    const v = view(s);
    const a = v.items.find((n) => n.node === "a");
    const b = a?.blockers.find((x) => x.reason === "consolidate-after");
    assert.equal(b?.waiting, true);
    assert.equal(b?.blocking, false);
    assert.equal(b?.fix?.patch ?? null, null, "no patch: shortening it brings thrashing back");
    assert.equal(a?.waiting, true);
    assert.equal(a?.blocked, false);
    assert.equal(v.blockedNodes, 0);
    assert.equal(v.blockedCostPerHour, 0);
    assert.equal(v.waitingNodes, 1);
    assert.deepEqual(v.byReason, []);
  });

  it("a blocker on a node that would save $0 is not counted blocked", () => {
    // a: a do-not-disrupt pod using all its 4 cpu; nothing has room and nothing is cheaper.
    const s = world(
      [{ name: "a", type: "small" }],
      [owned(pod("full", "a", "2", "1Gi"), { "karpenter.sh/do-not-disrupt": "true" })],
      [nodePool("default", { disruption: underused })],
    );
    const v = view(s);
    assert.equal(v.items[0]?.savingsPerHour, 0);
    assert.equal(v.items[0]?.blocked, false);
    assert.equal(v.items[0]?.disruptable, false);
    const dnd = v.items[0]?.blockers.find((b) => b.reason === "do-not-disrupt-pod");
    assert.equal(dnd?.fix?.patch, null, "no patch for a change that would buy nothing");
    assert.match(dnd?.fix?.detail ?? "", /Nothing to gain now/);
    assert.equal(v.blockedNodes, 0);
    assert.deepEqual(v.byPoolReason, []);
  });
});

describe("one advisor per NodePool field (issue 43)", () => {
  const thrashing = (pool: string, patch?: Record<string, unknown>): ThrashingReport =>
    ({
      nodePool: pool,
      severity: "high",
      score: 100,
      signals: { cycles: 6 },
      advice: patch ? [{ id: "raise-consolidate-after", title: "Raise", detail: "", patch }] : [],
    }) as unknown as ThrashingReport;

  it("a thrashing pool: no consolidation fix loosens it (policy kept, budget not opened)", () => {
    const pool = nodePool("batch", {
      disruption: { consolidationPolicy: "WhenEmpty", consolidateAfter: "0s", budgets: [{ nodes: "0" }] },
    });
    // c (another pool, room to spare) takes a's pod: consolidating a would save its price.
    const s = world(
      [
        { name: "a", pool: "batch" },
        { name: "b", pool: "batch" },
        { name: "c", pool: "default" },
      ],
      [owned(pod("x", "a", "1", "1Gi"))],
      [pool, nodePool("default", { disruption: underused })],
    );
    const raise = { spec: { disruption: { consolidateAfter: "15m" } } };
    const holds = holdsByPool(s.nodePools(), [thrashing("batch", raise)], NOW);
    const a = advisedView(view(s), s, holds).items.find((n) => n.node === "a");
    for (const reason of ["when-empty", "budget"]) {
      const fix = a?.blockers.find((b) => b.reason === reason)?.fix;
      assert.equal(fix?.patch, null, `${reason}: ${JSON.stringify(fix)}`);
      assert.match(fix?.detail ?? "", /batch churned 6 nodes in the last 30 min/);
    }
    // Without the thrashing hold the same view offers to loosen both.
    const plain = view(s).items.find((n) => n.node === "a");
    assert.ok(plain?.blockers.find((b) => b.reason === "when-empty")?.fix?.patch);
    assert.ok(plain?.blockers.find((b) => b.reason === "budget")?.fix?.patch);
  });

  it("an applied consolidateAfter: the WhenEmpty fix carries the same value, not its own", () => {
    const applied = withAppliedFix(
      { spec: { disruption: { consolidateAfter: "15m" } } },
      "Raise consolidateAfter to 15m",
      NOW - 3_600_000,
    );
    const pool = nodePool("batch", {
      disruption: { consolidationPolicy: "WhenEmpty", consolidateAfter: "15m" },
    });
    pool.metadata.annotations = (applied["metadata"] as { annotations: Record<string, string> }).annotations;
    const s = world(
      [
        { name: "a", pool: "batch" },
        { name: "b", pool: "batch" },
      ],
      [owned(pod("x", "a", "1", "1Gi"))],
      [pool],
    );
    const a = advisedView(view(s), s, holdsByPool(s.nodePools(), [], NOW)).items.find((n) => n.node === "a");
    const patch = a?.blockers.find((b) => b.reason === "when-empty")?.fix?.patch;
    assert.deepEqual(poolFieldsOf(patch), {
      consolidationPolicy: "WhenEmptyOrUnderutilized",
      consolidateAfter: "15m",
    });
  });

  it("a fix Wave applied (recorded on the pool) is never proposed back, for a day", () => {
    const applied = withAppliedFix(
      { spec: { disruption: { consolidationPolicy: "WhenEmpty" } } },
      "Or consolidate only empty nodes (WhenEmpty)",
      NOW - 3_600_000,
    );
    const pool = nodePool("batch", {
      disruption: { consolidationPolicy: "WhenEmpty", consolidateAfter: "1m" },
    });
    pool.metadata.annotations = (applied["metadata"] as { annotations: Record<string, string> }).annotations;
    const s = world(
      [
        { name: "a", pool: "batch" },
        { name: "b", pool: "batch" },
      ],
      [owned(pod("x", "a", "1", "1Gi"))],
      [pool],
    );
    const fixOf = (now: number) =>
      advisedView(view(s), s, holdsByPool(s.nodePools(), [], now))
        .items.find((n) => n.node === "a")
        ?.blockers.find((b) => b.reason === "when-empty")?.fix;
    assert.equal(fixOf(NOW)?.patch, null);
    assert.match(fixOf(NOW)?.detail ?? "", /Wave applied "Or consolidate only empty nodes/);
    assert.equal(
      poolFieldsOf(fixOf(NOW + 24 * 3_600_000)?.patch).consolidationPolicy,
      "WhenEmptyOrUnderutilized",
    );
  });
});
