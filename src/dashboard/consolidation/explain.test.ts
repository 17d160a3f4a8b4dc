// The asserts narrow as they go (assert.equal asserts its actual); optional chains keep each line readable alone.
/* eslint-disable @typescript-eslint/no-unnecessary-condition */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ClusterState } from "../../state/cluster.ts";
import { machineObjects, nodePool, pod } from "../testkit.ts";
import type { Event, Pod, PodDisruptionBudget } from "../../objects/kube.ts";
import type { NodePool } from "../../objects/karpenter.ts";
import type { PriceProvider } from "../../pricing/types.ts";
import { explainNodes } from "./explain.ts";
import { consolidationView } from "./view.ts";
import { pendingView } from "./pending.ts";

const NOW = Date.parse("2026-06-01T10:00:00Z");
const PRICES: Record<string, number> = { big: 0.4, small: 0.1 };
const prices: PriceProvider = {
  price: (it) =>
    PRICES[it] === undefined ? undefined : { usdPerHour: PRICES[it], source: "static", asOf: "2026-01-01" },
};

interface Spec {
  name: string;
  type?: "big" | "small";
  pool?: string;
  initialized?: boolean;
  annotations?: Record<string, string>;
  lastPodEvent?: string;
  consolidatable?: boolean;
  /** GPUs it offers (nvidia.com/gpu allocatable). */
  gpus?: string;
}

function world(o: {
  machines: Spec[];
  pools?: NodePool[];
  pods?: Pod[];
  pdbs?: PodDisruptionBudget[];
}): ClusterState {
  const s = new ClusterState();
  for (const p of o.pools ?? [
    nodePool("default", {
      disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "1m" },
    }),
  ])
    s.apply("NodePool", "add", p);
  for (const m of o.machines) {
    const type = m.type ?? "big";
    const cpu = type === "big" ? "4" : "2";
    const { node, nodeClaim } = machineObjects({
      name: m.name,
      pool: m.pool ?? "default",
      instanceType: type,
      capacityType: "on-demand",
      cpu,
      memory: "8Gi",
    });
    if (!node || !nodeClaim) throw new Error("machine");
    if (m.initialized !== false)
      node.metadata.labels = { ...node.metadata.labels, "karpenter.sh/initialized": "true" };
    if (m.annotations) node.metadata.annotations = m.annotations;
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
  for (const p of o.pods ?? []) s.apply("Pod", "add", p);
  for (const p of o.pdbs ?? []) s.apply("PodDisruptionBudget", "add", p);
  return s;
}

function owned(p: Pod, labels: Record<string, string> = {}): Pod {
  p.metadata.ownerReferences = [
    { apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", uid: "u", controller: true },
  ];
  p.metadata.labels = labels;
  return p;
}

const explain = (s: ClusterState, events: Event[] = []) =>
  explainNodes({ state: s, prices, events, karpenterVersion: "v1.8.2", now: NOW });
const byNode = (s: ClusterState, events: Event[] = []) => new Map(explain(s, events).map((n) => [n.node, n]));

describe("consolidation explainer", () => {
  it("an empty node with nothing in the way: disruptable, saving all of its price", () => {
    const n = byNode(world({ machines: [{ name: "a" }] })).get("a");
    assert.equal(n?.disruptable, true);
    assert.equal(n?.empty, true);
    assert.equal(n?.savingsPerHour, 0.4);
    assert.equal(n?.action, "delete");
    assert.deepEqual(n?.blockers, []);
  });

  it("a do-not-disrupt pod: the pod named, the annotation's removal as the fix", () => {
    const p = owned(pod("web-1", "a", "1", "1Gi"));
    p.metadata.annotations = { "karpenter.sh/do-not-disrupt": "true" };
    const n = byNode(world({ machines: [{ name: "a" }, { name: "b" }], pods: [p] })).get("a");
    assert.equal(n?.disruptable, false);
    const b = n?.blockers[0];
    assert.equal(b?.reason, "do-not-disrupt-pod");
    assert.deepEqual(b?.object, { kind: "Pod", namespace: "default", name: "web-1" });
    assert.deepEqual(b?.fix?.patch, { metadata: { annotations: { "karpenter.sh/do-not-disrupt": null } } });
    assert.equal(
      b?.fix?.kubectl,
      `kubectl patch pod web-1 -n default --type merge -p '{"metadata":{"annotations":{"karpenter.sh/do-not-disrupt":null}}}'`,
    );
    // Its pod fits on b: consolidation would delete a, saving all of its price.
    assert.equal(n?.action, "delete");
    assert.equal(n?.savingsPerHour, 0.4);
  });

  it("a PodDisruptionBudget allowing 0: named, with its pods on the node; one allowing 1 is no blocker", () => {
    const pods = [
      owned(pod("db-0", "a", "1", "1Gi"), { app: "db" }),
      owned(pod("db-1", "b", "1", "1Gi"), { app: "db" }),
    ];
    const pdb = (name: string, allowed: number): PodDisruptionBudget => ({
      metadata: { name, namespace: "default" },
      spec: { selector: { matchLabels: { app: "db" } }, minAvailable: 2 },
      status: { disruptionsAllowed: allowed },
    });
    // c has room for a's pod: consolidating a saves its price, so its fix is offered.
    const machines = [{ name: "a" }, { name: "b" }, { name: "c" }];
    const n = byNode(world({ machines, pods, pdbs: [pdb("db", 0)] })).get("a");
    const b = n?.blockers.find((x) => x.reason === "pdb");
    assert.deepEqual(b?.object, { kind: "PodDisruptionBudget", namespace: "default", name: "db" });
    assert.deepEqual(b?.pods, ["default/db-0"]);
    assert.deepEqual(b?.fix?.patch, { spec: { minAvailable: null, maxUnavailable: 1 } });
    const open = byNode(world({ machines: [{ name: "a" }, { name: "b" }], pods, pdbs: [pdb("db", 1)] })).get(
      "a",
    );
    assert.equal(open?.disruptable, true);
  });

  it("a budget of 0 nodes blocks for good; a scheduled one until its window ends", () => {
    const zero = nodePool("default", { disruption: { consolidateAfter: "1m", budgets: [{ nodes: "0" }] } });
    const n = byNode(world({ machines: [{ name: "a" }], pools: [zero] })).get("a");
    const b = n?.blockers.find((x) => x.reason === "budget");
    assert.equal(b?.until, null);
    assert.deepEqual(b?.object, { kind: "NodePool", namespace: null, name: "default" });
    assert.deepEqual(b?.fix?.patch, { spec: { disruption: { budgets: [{ nodes: "1" }] } } });
    // Business hours 09:00 UTC for 8 h: at 10:00 the window ends at 17:00.
    const hours = nodePool("default", {
      disruption: {
        consolidateAfter: "1m",
        budgets: [{ nodes: "0", schedule: "0 9 * * mon-fri", duration: "8h" }, { nodes: "10%" }],
      },
    });
    const s = byNode(world({ machines: [{ name: "a" }], pools: [hours] })).get("a");
    assert.equal(s?.blockers.find((x) => x.reason === "budget")?.until, Date.parse("2026-06-01T17:00:00Z"));
    // Outside the window (a budget of 10% of 1 node rounds up to 1): no blocker.
    const later = explainNodes({
      state: world({ machines: [{ name: "a" }], pools: [hours] }),
      prices,
      events: [],
      karpenterVersion: undefined,
      now: Date.parse("2026-06-01T18:00:00Z"),
    });
    assert.equal(later[0]?.blockers.length, 0);
  });

  it("WhenEmpty on a node with pods; consolidateAfter with the time left; Never", () => {
    const whenEmpty = nodePool("default", {
      disruption: { consolidationPolicy: "WhenEmpty", consolidateAfter: "1m" },
    });
    const p = owned(pod("w", "a", "1", "1Gi"));
    const n = byNode(world({ machines: [{ name: "a" }, { name: "c" }], pools: [whenEmpty], pods: [p] })).get(
      "a",
    );
    const b = n?.blockers.find((x) => x.reason === "when-empty");
    assert.deepEqual(b?.fix?.patch, {
      spec: { disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "1m" } },
    });
    const slow = nodePool("default", { disruption: { consolidateAfter: "1h" } });
    const c = byNode(
      world({
        machines: [{ name: "a", consolidatable: false, lastPodEvent: "2026-06-01T09:50:00Z" }],
        pools: [slow],
      }),
    ).get("a");
    const ca = c?.blockers.find((x) => x.reason === "consolidate-after");
    assert.equal(ca?.until, Date.parse("2026-06-01T10:50:00Z"));
    assert.match(ca?.message ?? "", /3000 s left/);
    const never = nodePool("default", { disruption: { consolidateAfter: "Never" } });
    assert.equal(
      byNode(world({ machines: [{ name: "a" }], pools: [never] })).get("a")?.blockers[0]?.reason,
      "consolidation-disabled",
    );
  });

  it("not initialized; Wave's warm node; a user's do-not-disrupt on the node", () => {
    const m = byNode(
      world({
        machines: [
          { name: "a", initialized: false },
          {
            name: "w",
            annotations: { "karpenter.sh/do-not-disrupt": "true", "wave.sh/do-not-disrupt-owner": "warmup" },
          },
          { name: "u", annotations: { "karpenter.sh/do-not-disrupt": "true" } },
        ],
      }),
    );
    assert.equal(m.get("a")?.blockers[0]?.reason, "not-initialized");
    assert.equal(m.get("w")?.blockers[0]?.reason, "wave-warm-node");
    assert.equal(m.get("u")?.blockers[0]?.reason, "do-not-disrupt-node");
    assert.match(m.get("u")?.blockers[0]?.fix?.kubectl ?? "", /^kubectl patch node u --type merge/);
  });

  it("a bare pod is a caution, not a blocker", () => {
    const n = byNode(
      world({ machines: [{ name: "a" }, { name: "b" }], pods: [pod("bare", "a", "1", "1Gi")] }),
    ).get("a");
    assert.equal(n?.blockers[0]?.reason, "no-controller");
    assert.equal(n?.blockers[0]?.blocking, false);
    assert.equal(n?.disruptable, true);
  });

  it("Karpenter's Event: a pod that fits nowhere else, named with its requirement", () => {
    const ev: Event = {
      metadata: { name: "a.1", namespace: "default" },
      involvedObject: { kind: "Node", name: "a" },
      reason: "Unconsolidatable",
      message: `not all pods would schedule, default/pinned => incompatible with nodepool "default", incompatible requirements, key example.com/rack, example.com/rack In [r9] not in example.com/rack In [r1]`,
      lastTimestamp: "2026-06-01T09:58:00Z",
      count: 3,
    };
    const n = byNode(world({ machines: [{ name: "a" }] }), [ev]).get("a");
    const b = n?.blockers.find((x) => x.reason === "pods-fit-nowhere");
    assert.deepEqual(b?.object, { kind: "Pod", namespace: "default", name: "pinned" });
    assert.equal(b?.source, "event");
    assert.match(b?.message ?? "", /example\.com\/rack/);
    assert.equal(n?.events[0]?.count, 3);
    // An hour-old Event is shown, no longer read as a blocker.
    const old = { ...ev, lastTimestamp: "2026-06-01T08:00:00Z" };
    const o = byNode(world({ machines: [{ name: "a" }] }), [old]).get("a");
    assert.equal(o?.blockers.length, 0);
    assert.equal(o?.events.length, 1);
  });

  it("an under-used node whose pods fit nowhere else: its price minus the cheapest replacement's", () => {
    // a (big, 4 cpu) runs 1.5 cpu; b (small, 2 cpu) is full: replace a by a small one.
    const pods = [owned(pod("x", "a", "1500m", "1Gi")), owned(pod("y", "b", "2", "1Gi"))];
    const n = byNode(world({ machines: [{ name: "a" }, { name: "b", type: "small" }], pods })).get("a");
    assert.equal(n?.action, "replace");
    assert.deepEqual(n?.replacement, { instanceType: "small", capacityType: "on-demand", usdPerHour: 0.1 });
    assert.ok(Math.abs((n?.savingsPerHour ?? 0) - 0.3) < 1e-9);
  });

  it("a replacement offers what the node's pods ask for, from the node's own pool: a GPU node is not replaced by a cheaper CPU type", () => {
    const train = owned(pod("train", "g", "1", "1Gi"));
    const req = train.spec.containers[0]?.resources?.requests;
    if (req) req["nvidia.com/gpu"] = "1";
    const policy = { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "1m" } as const;
    const s = world({
      pools: [nodePool("gpu", { disruption: policy }), nodePool("default", { disruption: policy })],
      machines: [
        { name: "g", pool: "gpu", gpus: "1" },
        { name: "c", type: "small", pool: "default" },
        { name: "d", pool: "default" },
      ],
      pods: [train, owned(pod("y", "c", "2", "1Gi")), owned(pod("z", "d", "1500m", "7680Mi"))],
    });
    const m = byNode(s);
    // g's pod needs a GPU: small offers none (and runs in another pool) — nothing cheaper replaces g.
    assert.equal(m.get("g")?.action, null);
    assert.equal(m.get("g")?.replacement, null);
    assert.equal(m.get("g")?.savingsPerHour, 0);
    // d (default, 1.5 cpu and 7.5 GiB on a big: no room on g) is still replaced by its own pool's small type.
    assert.equal(m.get("d")?.replacement?.instanceType, "small");
  });

  it("sums blocked nodes and cost per pool and per reason (a node under two reasons counts in both)", () => {
    const p1 = owned(pod("p1", "a", "1", "1Gi"));
    p1.metadata.annotations = { "karpenter.sh/do-not-disrupt": "true" };
    const v = consolidationView("c", {
      state: world({
        machines: [
          { name: "a" },
          { name: "b", annotations: { "karpenter.sh/do-not-disrupt": "true" }, initialized: false },
          { name: "c" },
        ],
        pods: [p1],
      }),
      prices,
      events: [],
      karpenterVersion: undefined,
      now: NOW,
    });
    assert.equal(v.blockedNodes, 2);
    assert.ok(Math.abs(v.blockedCostPerHour - 0.8) < 1e-9);
    assert.deepEqual(
      v.byReason.map((r) => [r.reason, r.blockedNodes]),
      [
        ["do-not-disrupt-node", 1],
        ["do-not-disrupt-pod", 1],
        ["not-initialized", 1],
      ],
    );
    assert.deepEqual(v.byPool, [{ nodePool: "default", nodes: 3, blockedNodes: 2, blockedCostPerHour: 0.8 }]);
    assert.deepEqual(v.items.map((i) => i.node).slice(2), ["c"], "blocked nodes first");
  });
});

describe("pending pods", () => {
  it("names the pools of Karpenter v1.15's unnamed parts, and reads a pool at its limit", () => {
    const tainted = (name: string, extra: Partial<NodePool["spec"]> = {}): NodePool =>
      nodePool(name, {
        template: {
          metadata: { labels: { "e2e/pool": name } },
          spec: { taints: [{ key: "e2e/pool", value: name, effect: "NoSchedule" }] },
        },
        ...extra,
      });
    const pools = [
      nodePool("default"),
      tainted("other"),
      tainted("rack"),
      tainted("limited", { limits: { cpu: "1" } }),
    ];
    const p = pod("p", undefined, "1500m", "64Mi", "Pending");
    p.metadata.creationTimestamp = "2026-06-01T09:59:00Z";
    const msg =
      `Failed to schedule pod, did not tolerate taint (taint=e2e/pool=other:NoSchedule); ` +
      `incompatible requirements, label "example.com/rack" does not have known values; ` +
      // The default pool lacks both labels; Karpenter names either: two parts alike, two pools.
      `incompatible requirements, label "example.com/rack" does not have known values; ` +
      `no instance type has enough resources, requirements=karpenter.sh/nodepool In [limited], e2e/pool In [limited], resources={"cpu":"1500m"}`;
    const failed: Event = {
      metadata: { name: "p.1", namespace: "default" },
      involvedObject: { kind: "Pod", namespace: "default", name: "p" },
      reason: "FailedScheduling",
      message: msg,
      lastTimestamp: "2026-06-01T09:59:30Z",
    };
    const v = pendingView("c", { pods: [p], events: [failed], now: NOW, pools });
    assert.deepEqual(
      v.pods[0]?.reasons.map((r) => [r.nodePool, r.kind, r.key]),
      [
        ["other", "taint", "e2e/pool=other:NoSchedule"],
        ["default", "requirement", "example.com/rack"],
        ["rack", "requirement", "example.com/rack"],
        ["limited", "limit", null],
      ],
    );
  });

  it("reads Karpenter's FailedScheduling per NodePool, with the wait and a later nomination", () => {
    const p = pod("stuck", undefined, "1", "1Gi", "Pending");
    p.metadata.creationTimestamp = "2026-06-01T09:55:00Z";
    const ev = (reason: string, message: string, at: string): Event => ({
      metadata: { name: `stuck.${reason}`, namespace: "default" },
      involvedObject: { kind: "Pod", namespace: "default", name: "stuck" },
      reason,
      message,
      lastTimestamp: at,
    });
    const failed = ev(
      "FailedScheduling",
      `Failed to schedule pod, incompatible with nodepool "gpu", daemonset overhead={"cpu":"100m"}, did not tolerate taint nvidia.com/gpu=true:NoSchedule; incompatible with nodepool "default", daemonset overhead={"cpu":"100m"}, incompatible requirements, key example.com/rack, example.com/rack In [r9] not in example.com/rack In [r1]; all available instance types exceed limits for nodepool: "small"`,
      "2026-06-01T09:59:00Z",
    );
    const v = pendingView("c", { pods: [p], events: [failed], now: NOW });
    const got = v.pods[0];
    assert.equal(got?.waitingSeconds, 300);
    assert.deepEqual(
      got?.reasons.map((r) => [r.nodePool, r.kind, r.key]),
      [
        ["gpu", "taint", "nvidia.com/gpu=true:NoSchedule"],
        ["default", "requirement", "example.com/rack"],
        ["small", "limit", null],
      ],
    );
    assert.equal(got?.nominatedTo, null);
    assert.equal(v.byPoolReason.length, 3);
    const nominated = ev(
      "Nominated",
      "Pod should schedule on: nodeclaim/default-x7k2p",
      "2026-06-01T09:59:30Z",
    );
    assert.equal(
      pendingView("c", { pods: [p], events: [failed, nominated], now: NOW }).pods[0]?.nominatedTo,
      "nodeclaim/default-x7k2p",
    );
  });
});
