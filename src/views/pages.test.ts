import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { addMachine, machineObjects, nodePool, pod } from "../dashboard/testkit.ts";
import type { Node, Pod } from "../objects/kube.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { CompositePriceProvider } from "../pricing/composite.ts";
import { StaticPriceProvider, loadStaticPriceTable } from "../pricing/static.ts";
import { priceLookup } from "../dashboard/figures/price.ts";
import { savingsRates } from "../dashboard/figures/savings.ts";
import { buildOverview } from "../dashboard/views.ts";
import { ClusterState } from "../state/cluster.ts";
import { Value } from "@sinclair/typebox/value";
import type { TSchema } from "@sinclair/typebox";
import { NodeDetailSchema, SpotViewSchema, WarmupViewSchema } from "../dashboard/dto.ts";

/**
 * The view matches its DTO schema exactly: the route serializes with the schema, so a field the
 * builder adds and the schema lacks would be dropped from the API without a word.
 */
function conforms(schema: TSchema, value: unknown): void {
  const errors = [...Value.Errors(schema, value)].map((e) => `${e.path}: ${e.message}`);
  assert.deepEqual(errors, []);
}
import {
  ASSIGNMENT_LABEL,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_VALUE,
  LAST_WARMUP_AT_ANNOTATION,
} from "../objects/wave.ts";
import { DEFAULT_POLICY } from "../policy/warmup.ts";
import { buildNodeDetail } from "./node.ts";
import { buildSpotView, poolOffersSpot } from "./spot.ts";
import { spotProgress } from "./spot-repair.ts";
import type { SpotRepair } from "../core/store/store.ts";
import { buildWarmupView } from "./warmup.ts";

const T0 = Date.parse("2026-03-02T12:00:00Z");
const iso = (ms: number): string => new Date(ms).toISOString();
const prices = new KwokPriceProvider();

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
  it("sums the hits' stored time saved, shows both medians, and charges warm time only", () => {
    const warm = nodeAt("warm-1", T0 - 400_000);
    const nodes = new Map([[warm.metadata.name ?? "", warm]]);
    const cold = (pod: string, seconds: number, at: number) => ({ pool: "general", pod, at, seconds });
    const view = buildWarmupView({
      clusterId: "c",
      coldStarts: [cold("apps/a", 31, T0 - 590_000), cold("apps/b", 35, T0 - 485_000)],
      state: { nodePools: () => [nodePool("general")], nodes: () => [...nodes.values()], pods: () => [] },
      policies: new Map([["general", { ...DEFAULT_POLICY, enabled: true }]]),
      defaults: DEFAULT_POLICY,
      events: [
        { clusterId: "c", pool: "general", type: "created", at: T0 - 450_000, pod: "w" },
        // Warm since T0 − 450 s, launched at T0 − 400 s: warm time is launch → hit.
        {
          clusterId: "c",
          pool: "general",
          type: "hit",
          at: T0 - 100_000,
          node: "warm-1",
          pod: "apps/c",
          since: T0 - 450_000,
          seconds: 3,
          saved: 30,
        },
        {
          clusterId: "c",
          pool: "general",
          type: "hit",
          at: T0 - 90_000,
          node: "gone-1",
          pod: "apps/e",
          since: T0 - 300_000,
        },
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
        {
          clusterId: "c",
          nodeClaim: "old-nc",
          nodeClaimUid: "u2",
          nodePool: "general",
          nodeName: "gone-1",
          instanceType: "c-4x-amd64-linux",
          capacityType: "on-demand",
          phase: "Launched",
          // Launched 11 h before its warmup began: only the warm time counts.
          at: T0 - 11 * 3_600_000,
        },
      ],
      prices,
      now: T0,
      from: T0 - 3_600_000,
      to: T0,
    });
    conforms(WarmupViewSchema, view);
    const g = view.pools[0];
    assert.ok(g);
    assert.deepEqual(
      [g.coldStartSeconds, g.coldStartSamples, g.warmStartSeconds, g.warmStartSamples],
      [33, 2, 3, 1],
    );
    assert.equal(g.warmNotFaster, false);
    // What core stored per hit, summed: the unmeasured hit saved nothing.
    assert.equal(g.timeSavedSeconds, 30);
    assert.equal(g.hitsCredited, 1);
    assert.deepEqual([g.hits, g.misses, g.created], [2, 1, 1]);
    assert.deepEqual(g.missesByReason, { ttl: 1 });
    // Each hit as stored, newest first: the pod, its start, its warm time's start, what it saved.
    assert.deepEqual(g.recentHits, [
      { at: T0 - 90_000, node: "gone-1", pod: "apps/e", since: T0 - 300_000, seconds: null, saved: null },
      { at: T0 - 100_000, node: "warm-1", pod: "apps/c", since: T0 - 450_000, seconds: 3, saved: 30 },
    ]);
    // warm-1: launch (T0 − 400 s) → hit (T0 − 100 s) = 300 s; gone-1: since (T0 − 300 s) → hit = 210 s.
    const price = prices.price("c-4x-amd64-linux", "on-demand")?.usdPerHour ?? 0;
    assert.ok(price > 0);
    assert.ok(Math.abs(g.warmCostUsd - (price * 510) / 3600) < 1e-9);
    assert.equal(g.state, "idle");
  });

  it("charges a warm node from its claim's launch, which names no node yet", () => {
    // Karpenter sets a NodeClaim's node name at registration: its Launched row has none.
    const row = (phase: "Launched" | "Registered", at: number, nodeName?: string) => ({
      clusterId: "c",
      nodeClaim: "warm-nc",
      nodeClaimUid: "u-warm",
      nodePool: "general",
      ...(nodeName === undefined ? {} : { nodeName }),
      instanceType: "c-4x-amd64-linux",
      capacityType: "on-demand",
      phase,
      at,
    });
    const view = buildWarmupView({
      clusterId: "c",
      coldStarts: [],
      state: {
        nodePools: () => [nodePool("general")],
        nodes: () => [nodeAt("warm-1", T0 - 370_000)],
        pods: () => [],
      },
      policies: new Map([["general", { ...DEFAULT_POLICY, enabled: true }]]),
      defaults: DEFAULT_POLICY,
      events: [
        {
          clusterId: "c",
          pool: "general",
          type: "hit",
          at: T0 - 100_000,
          node: "warm-1",
          pod: "apps/c",
          since: T0 - 410_000,
          seconds: 1,
        },
      ],
      lifecycle: [row("Launched", T0 - 400_000), row("Registered", T0 - 370_000, "warm-1")],
      prices,
      now: T0,
      from: T0 - 3_600_000,
      to: T0,
    });
    const price = prices.price("c-4x-amd64-linux", "on-demand")?.usdPerHour ?? 0;
    // Launch (T0 − 400 s) → hit (T0 − 100 s): 300 s, not the 270 s from its registration.
    assert.ok(Math.abs((view.pools[0]?.warmCostUsd ?? 0) - (price * 300) / 3600) < 1e-12);
  });

  it("says why a pool is not warming", () => {
    const n = nodeAt("n1", T0 - 3_600_000);
    const small = pod("small", "n1", "100m", "128Mi");
    const base = {
      clusterId: "c",
      coldStarts: [],
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

describe("warmup view's price of the next warm node", () => {
  it("prices the node a warmup would launch where the pool's nodes run, so the cost cap sees it", () => {
    // An AWS cluster priced from the static table: a lookup needs a region, which only a zone gives.
    const aws = new CompositePriceProvider({ static: new StaticPriceProvider(loadStaticPriceTable()) });
    const onDemand = aws.price("m5.large", "on-demand", "us-east-1a")?.usdPerHour;
    assert.ok(onDemand !== undefined && onDemand > 0);
    const n = machineObjects({
      name: "n1",
      pool: "general",
      instanceType: "m5.large",
      capacityType: "on-demand",
      zone: "us-east-1a",
      cpu: "2",
      memory: "8Gi",
      created: iso(T0 - 3_600_000),
    }).node;
    assert.ok(n);
    const state = {
      nodePools: () => [nodePool("general")],
      nodes: () => [n],
      pods: () => [pod("hog", "n1", "1900m", "1Gi"), pod("big", undefined, "1500m", "1Gi", "Pending")],
    };
    const view = (maxCostPerHour: number | null) =>
      buildWarmupView({
        clusterId: "c",
        coldStarts: [],
        state,
        policies: new Map([["general", { ...DEFAULT_POLICY, enabled: true, maxCostPerHour }]]),
        defaults: DEFAULT_POLICY,
        events: [],
        lifecycle: [],
        prices: aws,
        now: T0,
        from: T0 - 3_600_000,
        to: T0,
      }).pools[0];
    const open = view(null);
    assert.equal(open?.newNodeInstanceType, "m5.large");
    assert.equal(open.newNodeCostPerHour, onDemand, "the editor's preview has a price");
    assert.equal(open.blocker, null);
    // A cap below one node's price refuses the warmup (it used to count the node as $0).
    const capped = view(onDemand / 2);
    assert.equal(capped?.blocker, "cost-cap");
  });

  it("prices a type about to launch in the cheapest place it may land, else where the cluster runs", () => {
    const aws = new CompositePriceProvider({ static: new StaticPriceProvider(loadStaticPriceTable()) });
    const east = aws.price("m5.large", "on-demand", "us-east-1a")?.usdPerHour;
    const lookup = priceLookup(aws, () => [{ zone: "us-east-1b" }]);
    assert.equal(lookup("m5.large", "on-demand"), east, "the cluster's places when the pool has none");
    assert.equal(lookup("m5.large", "on-demand", [{ zone: "us-east-1a" }]), east);
    assert.equal(aws.price("m5.large", "on-demand"), undefined, "no place, no price: why a place is needed");
  });
});

/** A pod of the ReplicaSet `${app}-abc12` in namespace shop, on `node`, as Wave's webhook `assigned` it. */
function rsPod(name: string, node: string | undefined, assigned?: string, app = "web"): Pod {
  const p = pod(name, node, "1", "1Gi");
  p.metadata.namespace = "shop";
  p.metadata.labels = {
    "pod-template-hash": "abc12",
    ...(assigned ? { [ASSIGNMENT_LABEL]: assigned } : {}),
  };
  p.metadata.ownerReferences = [
    { apiVersion: "apps/v1", kind: "ReplicaSet", name: `${app}-abc12`, uid: "u", controller: true },
  ];
  return p;
}

/** A 4-CPU node of `pool` on capacity type `ct`. */
function machine(name: string, ct: "spot" | "on-demand", pool = "general"): Node {
  const n = machineObjects({ name, pool, instanceType: "c-4x-amd64-linux", capacityType: ct, cpu: "4" }).node;
  assert.ok(n);
  return n;
}

/** A spot policy of the Deployment shop/`name`. */
const spotPolicy = (name: string, threshold: number, strategy: "Prefer" | "Require") => ({
  workload: { namespace: "shop", kind: "Deployment" as const, name },
  threshold,
  strategy,
});

describe("spot placement view", () => {
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
      policies: [spotPolicy("web", 1, "Require"), spotPolicy("gone", 2, "Prefer")],
      prices,
      now: T0,
    });
    conforms(SpotViewSchema, v);
    const web = v.workloads.find((w) => w.workload.name === "web");
    assert.ok(web);
    assert.deepEqual(web.target, { onDemand: 1, spot: 3 });
    assert.deepEqual(web.actual, { onDemand: 2, spot: 1, pending: 1 });
    assert.equal(web.onDemandNow, 1);
    assert.equal(web.fallbacks, 0, "no Fallback action in range");
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
        policies: [spotPolicy("web", 1, "Prefer")],
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
      policies: [spotPolicy("web", 1, "Prefer"), spotPolicy("api", 1, "Prefer")],
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
        { mode: "on", toMove: 2, done: 1, planned: 0, nextAt: T0 + 3_000, blocker: null },
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
        { mode: "dry-run", toMove: 3, done: 0, planned: 2, nextAt: null, blocker: null },
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
      assert.deepEqual(web.progress, {
        mode: "dry-run",
        toMove: 2,
        done: 0,
        planned: 1,
        nextAt: null,
        blocker: null,
      });
    });
  });
});

describe("spot placement view: one count per figure", () => {
  const capacity = (ct: string) => ({
    template: {
      spec: { requirements: [{ key: "karpenter.sh/capacity-type", operator: "In" as const, values: [ct] }] },
    },
  });
  const pools = [nodePool("od", capacity("on-demand")), nodePool("spot", capacity("spot"))];
  const nodes = [machine("od-1", "on-demand", "od"), machine("sp-1", "spot", "spot")];
  /** The spot view of the pools `od` and `spot`, one node each, with `pods`, at T0. */
  const inCluster = (
    pods: Pod[],
    input: Omit<Parameters<typeof buildSpotView>[0], "clusterId" | "state" | "prices" | "now">,
  ) =>
    buildSpotView({
      clusterId: "c",
      state: { nodePools: () => pools, nodes: () => nodes, pods: () => pods },
      prices,
      now: T0,
      ...input,
    });
  const require = spotPolicy("web", 1, "Require");
  const fallback = (i: number) => ({
    clusterId: "c",
    event: `e-${i}`,
    workload: "shop/Deployment/web",
    action: "Fallback",
    pod: `shop/web-${i}`,
    type: "Normal" as const,
    message: "spot unavailable",
    at: T0 - 60_000 + i,
  });

  it("counts fallbacks from the repair's Fallback actions, the same rows as the self-heal column", () => {
    const v = inCluster([rsPod("web-1", "od-1", "on-demand"), rsPod("web-2", "sp-1", "spot")], {
      policies: [{ ...require, strategy: "Prefer" }],
      repairs: [...Array.from({ length: 14 }, (_, i) => fallback(i)), { ...fallback(99), action: "Evict" }],
      from: T0 - 3_600_000,
      to: T0,
    });
    conforms(SpotViewSchema, v);
    const web = v.workloads[0];
    assert.equal(web?.repairs.byAction["Fallback"], 14);
    assert.equal(web.fallbacks, 14);
    assert.equal(web.onDemandNow, 0, "every moved pod is back on spot");
    assert.equal(v.totals.fallbacks, 14);
  });

  it("counts managed pods over the workloads with a policy only", () => {
    const v = inCluster(
      [
        rsPod("web-1", "od-1", "on-demand"),
        rsPod("web-2", "sp-1", "spot"),
        rsPod("other-1", "od-1", undefined, "other"),
        rsPod("other-2", "od-1", undefined, "other"),
      ],
      {
        policies: [require],
      },
    );
    assert.equal(v.workloads.length, 2, "the workload without a policy is listed");
    assert.deepEqual([v.totals.workloads, v.totals.pods, v.totals.onDemand, v.totals.spot], [1, 2, 1, 1]);
    const web = v.workloads.find((w) => w.workload.name === "web");
    assert.equal(v.totals.savedPerHour, web?.savedPerHour);
  });

  it("does not warn Require without spot while its spot pods run on spot and its base on an on-demand pool", () => {
    const view = (pods: Pod[]) =>
      buildSpotView({
        clusterId: "c",
        state: { nodePools: () => pools, nodes: () => nodes, pods: () => pods },
        policies: [require],
        prices,
        now: T0,
      }).workloads[0];
    const healthy = view([rsPod("web-1", "od-1", "on-demand"), rsPod("web-2", "sp-1", "spot")]);
    assert.deepEqual(healthy?.nodePools, ["od", "spot"]);
    assert.deepEqual(healthy.warnings, []);
    // A spot pod stuck on the on-demand-only pool: that one cannot be placed as Require asks.
    const stuck = view([rsPod("web-1", "od-1", "on-demand"), rsPod("web-2", "od-1", "spot")]);
    assert.deepEqual(
      stuck?.warnings.map((w) => [w.kind, w.message]),
      [
        ["require-without-spot", "Require, but NodePool od offers no spot: its spot pods cannot schedule"],
        ["fallback", "1 pod(s) assigned spot run on on-demand (Prefer's fallback: no spot capacity)"],
      ],
    );
  });
});

describe("savings: one definition per scope", () => {
  it("gives a workload the same $/h saved on the Spot page as the savings history, and nodes more", () => {
    const s = new ClusterState();
    s.apply("NodePool", "add", nodePool("general"));
    const spotNode = addMachine(s, {
      name: "sp-1",
      pool: "general",
      instanceType: "c-4x-amd64-linux",
      capacityType: "spot",
      cpu: "4",
      memory: "8Gi",
    });
    assert.ok(spotNode.node && spotNode.nodeClaim);
    // A memory-heavy pod: its share is its CPU request's (1 of 4), as the history counts it.
    const p = pod("web-1", "sp-1", "1", "6Gi");
    p.metadata.namespace = "shop";
    p.metadata.labels = { "pod-template-hash": "abc12" };
    p.metadata.ownerReferences = [
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-abc12", uid: "u", controller: true },
    ];
    s.apply("Pod", "add", p);
    const view = buildSpotView({
      clusterId: "c",
      state: s,
      policies: [spotPolicy("web", 0, "Prefer")],
      prices,
      now: T0,
    });
    const rates = savingsRates(s, prices);
    const history = rates.workloads.get("shop/Deployment/web");
    assert.ok(history);
    const web = view.workloads[0];
    assert.ok(web);
    assert.ok(Math.abs(web.savedPerHour - (history.onDemandPerHour - history.actualPerHour)) < 1e-12);
    const overview = buildOverview({ clusterId: "c", state: s, prices, now: T0 });
    assert.ok(overview.spotSavingsPerHour > view.totals.savedPerHour, "nodes' savings ⊇ workloads' share");
    const pool = rates.pools.get("general");
    assert.ok(
      pool && Math.abs(overview.spotSavingsPerHour - (pool.onDemandPerHour - pool.actualPerHour)) < 1e-12,
    );
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
    conforms(NodeDetailSchema, d);
    assert.equal(d.doNotDisruptBy, "wave-warmup");
    assert.equal(d.price.source, "kwok");
  });
});
