import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { machineObjects, nodePool, pod } from "../dashboard/testkit.ts";
import type { Node, Pod } from "../objects/kube.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import {
  ASSIGNMENT_LABEL,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_VALUE,
  LAST_WARMUP_AT_ANNOTATION,
} from "../objects/wave.ts";
import { DEFAULT_POLICY } from "../warmup/policy.ts";
import { buildNodeDetail } from "./node.ts";
import { buildSpotView, poolOffersSpot, spotProgress } from "./spot.ts";
import type { SpotRepair } from "../core/store/store.ts";
import { buildWarmupView, startSamples } from "./warmup.ts";

const T0 = Date.parse("2026-03-02T12:00:00Z");
const iso = (ms: number): string => new Date(ms).toISOString();
const prices = new KwokPriceProvider();

function started(name: string, nodeName: string, createdAt: number, readyAfterS: number): Pod {
  const p = pod(name, nodeName, "500m", "512Mi");
  p.metadata.creationTimestamp = iso(createdAt);
  p.status = {
    phase: "Running",
    conditions: [{ type: "Ready", status: "True", lastTransitionTime: iso(createdAt + readyAfterS * 1000) }],
  };
  return p;
}

function nodeAt(name: string, createdAt: number, extra: Partial<Node["metadata"]> = {}): Node {
  const n = machineObjects({
    name,
    pool: "general",
    instanceType: "c-4x-amd64-linux",
    capacityType: "on-demand",
    cpu: "4",
    memory: "16Gi",
    created: iso(createdAt),
  }).node;
  assert.ok(n);
  n.metadata = { ...n.metadata, ...extra };
  return n;
}

describe("warmup view", () => {
  it("measures time saved from the pool's own cold starts, not a fixed estimate", () => {
    const old = nodeAt("old", T0 - 3_600_000);
    const cold1 = nodeAt("cold-1", T0 - 600_000);
    const cold2 = nodeAt("cold-2", T0 - 500_000);
    const warm = nodeAt("warm-1", T0 - 400_000);
    const nodes = new Map([old, cold1, cold2, warm].map((n) => [n.metadata.name ?? "", n]));
    const pods = [
      started("a", "cold-1", T0 - 620_000, 31), // waited for its node: cold, 31 s
      started("b", "cold-2", T0 - 520_000, 35), // cold, 35 s
      started("c", "warm-1", T0 - 100_000, 3), // landed on the warm node: 3 s
      started("d", "old", T0 - 60_000, 1), // found room on an old node: neither
    ];
    const s = startSamples(pods, nodes, new Set(["warm-1"]));
    assert.deepEqual(s, { cold: [31, 35], warm: [3] });

    const view = buildWarmupView({
      clusterId: "c",
      state: { nodePools: () => [nodePool("general")], nodes: () => [...nodes.values()], pods: () => pods },
      policies: new Map([["general", { ...DEFAULT_POLICY, enabled: true }]]),
      defaults: DEFAULT_POLICY,
      events: [
        { clusterId: "c", pool: "general", type: "created", at: T0 - 450_000, pod: "w" },
        { clusterId: "c", pool: "general", type: "hit", at: T0 - 100_000, node: "warm-1" },
        { clusterId: "c", pool: "general", type: "miss", at: T0 - 50_000, reason: "ttl", pod: "w2" },
      ],
      lifecycle: [
        {
          clusterId: "c",
          nodeClaim: "warm-1-nc",
          nodeClaimUid: "u",
          nodePool: "general",
          nodeName: "warm-1",
          instanceType: "c-4x-amd64-linux",
          capacityType: "on-demand",
          phase: "Launched",
          at: T0 - 400_000,
        },
      ],
      prices,
      now: T0,
      from: T0 - 3_600_000,
      to: T0,
    });
    const g = view.pools[0];
    assert.ok(g);
    assert.equal(g.coldStartSeconds, 33);
    assert.equal(g.warmStartSeconds, 3);
    assert.equal(g.timeSavedSeconds, 30);
    assert.deepEqual([g.hits, g.misses, g.created], [1, 1, 1]);
    assert.deepEqual(g.missesByReason, { ttl: 1 });
    // warm-1 was warm from its launch (T0 − 400 s) to the hit (T0 − 100 s): 300 s at its price.
    const price = prices.price("c-4x-amd64-linux", "on-demand")?.usdPerHour ?? 0;
    assert.ok(price > 0);
    assert.ok(Math.abs(g.warmCostUsd - (price * 300) / 3600) < 1e-9);
    assert.equal(g.state, "idle");
  });

  it("says why a pool is not warming", () => {
    const n = nodeAt("n1", T0 - 3_600_000);
    const small = pod("small", "n1", "100m", "128Mi");
    const base = {
      clusterId: "c",
      defaults: DEFAULT_POLICY,
      events: [],
      lifecycle: [],
      prices,
      now: T0,
      from: T0 - 3_600_000,
      to: T0,
    };
    const state = { nodePools: () => [nodePool("general")], nodes: () => [n], pods: () => [small] };
    const off = buildWarmupView({ ...base, state, policies: new Map() }).pools[0];
    assert.equal(off?.blocker, "disabled");
    assert.equal(off.configured, false);
    const on = new Map([["general", { ...DEFAULT_POLICY, enabled: true }]]);
    assert.equal(buildWarmupView({ ...base, state, policies: on }).pools[0]?.blocker, "fits-existing-node");
    const big = pod("big", undefined, "3900m", "1Gi", "Pending");
    const full = { ...state, pods: () => [pod("hog", "n1", "3", "1Gi"), big] };
    const cooling = nodePool("general");
    cooling.metadata.annotations = { [LAST_WARMUP_AT_ANNOTATION]: iso(T0 - 60_000) };
    const v = buildWarmupView({ ...base, state: { ...full, nodePools: () => [cooling] }, policies: on });
    assert.equal(v.pools[0]?.blocker, "cooldown");
    assert.equal(buildWarmupView({ ...base, state: full, policies: on }).pools[0]?.blocker, null);
  });
});

describe("spot placement view", () => {
  const rsPod = (name: string, node: string | undefined, assigned?: string): Pod => {
    const p = pod(name, node, "1", "1Gi");
    p.metadata.namespace = "shop";
    p.metadata.labels = {
      "pod-template-hash": "abc12",
      ...(assigned ? { [ASSIGNMENT_LABEL]: assigned } : {}),
    };
    p.metadata.ownerReferences = [
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-abc12", uid: "u", controller: true },
    ];
    return p;
  };
  const machine = (name: string, ct: "spot" | "on-demand"): Node => {
    const n = machineObjects({
      name,
      pool: "general",
      instanceType: "c-4x-amd64-linux",
      capacityType: ct,
      cpu: "4",
    }).node;
    assert.ok(n);
    return n;
  };

  it("counts target vs actual, savings against on-demand, fallbacks and warnings", () => {
    const pools = [
      nodePool("general", {
        template: {
          spec: {
            requirements: [{ key: "karpenter.sh/capacity-type", operator: "In", values: ["on-demand"] }],
          },
        },
      }),
    ];
    const pods = [
      rsPod("web-1", "od", "on-demand"),
      rsPod("web-2", "sp", "spot"),
      rsPod("web-3", "od", "spot"), // Prefer's fallback
      rsPod("web-4", undefined, "spot"),
    ];
    const v = buildSpotView({
      clusterId: "c",
      state: {
        nodePools: () => pools,
        nodes: () => [machine("od", "on-demand"), machine("sp", "spot")],
        pods: () => pods,
      },
      policies: [
        {
          workload: { namespace: "shop", kind: "Deployment", name: "web" },
          threshold: 1,
          strategy: "Require",
        },
        {
          workload: { namespace: "shop", kind: "Deployment", name: "gone" },
          threshold: 2,
          strategy: "Prefer",
        },
      ],
      prices,
      now: T0,
    });
    const web = v.workloads.find((w) => w.workload.name === "web");
    assert.ok(web);
    assert.deepEqual(web.target, { onDemand: 1, spot: 3 });
    assert.deepEqual(web.actual, { onDemand: 2, spot: 1, pending: 1 });
    assert.equal(web.fallbacks, 1);
    const od = prices.price("c-4x-amd64-linux", "on-demand")?.usdPerHour ?? 0;
    const sp = prices.price("c-4x-amd64-linux", "spot")?.usdPerHour ?? 0;
    assert.ok(
      Math.abs(web.savedPerHour - (od - sp) / 4) < 1e-9,
      "one spot pod holding a quarter of its node",
    );
    assert.deepEqual(
      web.warnings.map((w) => w.kind),
      ["require-without-spot", "fallback"],
    );
    assert.equal(web.items.length, 4);
    const gone = v.workloads.find((w) => w.workload.name === "gone");
    assert.deepEqual(
      gone?.warnings.map((w) => w.kind),
      ["workload-not-found"],
    );
    assert.equal(poolOffersSpot(nodePool("x")), false);
  });

  it("warns when the workload's own spec pins the capacity type, not when Wave's assignment does", () => {
    const bySelector = rsPod("web-1", "od");
    bySelector.spec.nodeSelector = { "karpenter.sh/capacity-type": "on-demand" };
    const byAffinity = rsPod("web-2", "sp");
    byAffinity.spec.affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: "karpenter.sh/capacity-type", operator: "In", values: ["spot"] }] },
          ],
        },
      },
    };
    // Wave's own patch carries the same affinity, with its assignment label: not the workload's pin.
    const placed = rsPod("web-3", "sp", "spot");
    placed.spec.affinity = byAffinity.spec.affinity;
    const view = (pods: Pod[]) =>
      buildSpotView({
        clusterId: "c",
        state: {
          nodePools: () => [nodePool("general")],
          nodes: () => [machine("od", "on-demand"), machine("sp", "spot")],
          pods: () => pods,
        },
        policies: [
          {
            workload: { namespace: "shop", kind: "Deployment", name: "web" },
            threshold: 1,
            strategy: "Prefer",
          },
        ],
        prices,
        now: T0,
      }).workloads.find((w) => w.workload.name === "web");
    const pinned = view([bySelector, byAffinity, placed])?.warnings.find(
      (w) => w.kind === "pinned-by-workload",
    );
    assert.equal(
      pinned?.message,
      "2 pod(s) pin karpenter.sh/capacity-type in their own spec: Wave leaves them as they are",
    );
    assert.deepEqual(
      view([placed])?.warnings.map((w) => w.kind),
      [],
    );
  });

  it("shows each workload's late answers over the range, 0 without any, and the cluster's total", () => {
    const v = buildSpotView({
      clusterId: "c",
      state: {
        nodePools: () => [nodePool("general")],
        nodes: () => [machine("od", "on-demand")],
        pods: () => [rsPod("web-1", "od", "on-demand")],
      },
      policies: [
        {
          workload: { namespace: "shop", kind: "Deployment", name: "web" },
          threshold: 1,
          strategy: "Prefer",
        },
        {
          workload: { namespace: "shop", kind: "Deployment", name: "api" },
          threshold: 1,
          strategy: "Prefer",
        },
      ],
      prices,
      now: T0,
      lateAnswers: [
        { workload: "shop/Deployment/web", count: 4 },
        // A workload whose policy is gone: not listed, still in the cluster's total.
        { workload: "old/Deployment/batch", count: 2 },
      ],
    });
    const by = Object.fromEntries(v.workloads.map((w) => [w.workload.name, w.lateAnswers]));
    assert.deepEqual(by, { api: 0, web: 4 });
    assert.equal(v.totals.lateAnswers, 6);
  });

  describe("the repair's progress on a running workload (issue 28)", () => {
    const policy = {
      workload: { namespace: "shop", kind: "Deployment" as const, name: "web" },
      threshold: 3,
      strategy: "Prefer" as const,
    };
    const row = (at: number, action: string, message = "m"): SpotRepair => ({
      clusterId: "c",
      event: `e${at}`,
      workload: "shop/Deployment/web",
      action,
      pod: "shop/p",
      type: action === "EvictBlocked" ? "Warning" : "Normal",
      message,
      at,
    });
    const since = T0 - 60_000;

    it("adopting: what is left to move, the evictions done since the policy changed, and the next in 5 s", () => {
      const rows = [row(since - 1_000, "Evict"), row(since + 2_000, "Adopt"), row(T0 - 2_000, "Evict")];
      assert.deepEqual(
        spotProgress({ policy, actualOnDemand: 1, targetOnDemand: 3, rows, since, now: T0 }),
        { mode: "on", toMove: 2, done: 1, planned: 0, nextAt: T0 + 3_000 },
        "the eviction before the policy changed is not counted; the next one a cooldown after the last",
      );
      assert.equal(
        spotProgress({ policy, actualOnDemand: 3, targetOnDemand: 3, rows, since, now: T0 }).nextAt,
        null,
        "at its target: nothing next",
      );
      assert.equal(
        spotProgress({ policy, actualOnDemand: 0, targetOnDemand: 3, rows: [], since, now: T0 - 59_000 })
          .nextAt,
        since + 5_000,
        "before any action: the policy change plus the grace",
      );
      const blocked = [
        row(T0 - 1_000, "EvictBlocked", "… — blocked by a PodDisruptionBudget, will retry in 20 s"),
      ];
      assert.equal(
        spotProgress({ policy, actualOnDemand: 0, targetOnDemand: 3, rows: blocked, since, now: T0 }).nextAt,
        T0 + 19_000,
        "a refused eviction: the retry it announced",
      );
    });

    it("dry-run: the planned evictions, none next; off: none next", () => {
      const rows = [row(T0 - 5_000, "PlanEvict"), row(T0 - 5_000, "PlanEvict")];
      assert.deepEqual(
        spotProgress({
          policy: { ...policy, repair: "dry-run" },
          actualOnDemand: 6,
          targetOnDemand: 3,
          rows,
          since,
          now: T0,
        }),
        { mode: "dry-run", toMove: 3, done: 0, planned: 2, nextAt: null },
      );
      assert.equal(
        spotProgress({
          policy: { ...policy, repair: false },
          actualOnDemand: 6,
          targetOnDemand: 3,
          rows,
          since,
          now: T0,
        }).mode,
        "off",
      );
    });

    it("is part of each policy's workload in the view, from the policy's last change", () => {
      const v = buildSpotView({
        clusterId: "c",
        state: {
          nodePools: () => [nodePool("general")],
          nodes: () => [machine("od", "on-demand"), machine("sp", "spot")],
          pods: () => [rsPod("web-1", "sp"), rsPod("web-2", "sp"), rsPod("web-3", "od", "on-demand")],
        },
        policies: [{ ...policy, repair: "dry-run" }],
        prices,
        now: T0,
        repairs: [row(since - 1, "PlanEvict"), row(since + 1, "PlanEvict")],
        policySince: new Map([["shop/Deployment/web", since]]),
      });
      const web = v.workloads.find((w) => w.workload.name === "web");
      assert.ok(web);
      assert.equal(web.policy?.repair, "dry-run");
      assert.deepEqual(web.progress, { mode: "dry-run", toMove: 2, done: 0, planned: 1, nextAt: null });
    });
  });
});

describe("node detail", () => {
  it("orders the timeline with durations and names who set do-not-disrupt", () => {
    const n = nodeAt("n1", T0, {
      annotations: {
        "karpenter.sh/do-not-disrupt": "true",
        [DO_NOT_DISRUPT_OWNER_ANNOTATION]: DO_NOT_DISRUPT_OWNER_VALUE,
      },
    });
    const row = (phase: "Launched" | "Registered" | "Initialized", at: number) => ({
      clusterId: "c",
      nodeClaim: "n1-nc",
      nodeClaimUid: "u",
      nodePool: "general",
      phase,
      at,
    });
    const d = buildNodeDetail({
      row: undefined,
      node: n,
      nodeClaim: undefined,
      pods: [],
      lifecycle: [row("Initialized", T0 + 40_000), row("Launched", T0), row("Registered", T0 + 30_000)],
      prices,
    });
    assert.deepEqual(
      d.timeline.map((t) => [t.phase, t.sincePreviousSeconds]),
      [
        ["Launched", null],
        ["Registered", 30],
        ["Initialized", 10],
      ],
    );
    assert.equal(d.doNotDisruptBy, "wave-warmup");
    assert.equal(d.price.source, "kwok");
  });
});
