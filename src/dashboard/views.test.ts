import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fixtures } from "../../test/fixtures/karpenter/load.ts";
import type { SeriesRow } from "../core/history/series.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { ClusterState } from "../state/cluster.ts";
import { DO_NOT_DISRUPT_OWNER_ANNOTATION, DO_NOT_DISRUPT_OWNER_VALUE } from "../objects/wave.ts";
import type { DisruptionRecord, LifecycleRecord } from "./history.ts";
import { addMachine, machineObjects, pod } from "./testkit.ts";
import { Value } from "@sinclair/typebox/value";
import { LiveSchema, NodeSchema, NodePoolSchema, OverviewSchema, ThrashingSchema } from "./dto.ts";
import type { TSchema } from "@sinclair/typebox";
import {
  buildLive,
  buildNodeList,
  buildNodePools,
  buildOverview,
  buildSeries,
  disruptionDtos,
  lifecycleDtos,
  poolSamplesOf,
  thrashingDtos,
  thrashingReports,
  type ViewInput,
} from "./views.ts";

const GIB = 2 ** 30;
const close = (actual: number, expected: number, what: string): void =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} ≠ ${expected}`);

// KWOK prices by hand: on-demand = 0.025 × vCPU + 0.001 × memoryBytes / 1e9, spot = 0.7 × that.
// c-4x: 4 vCPU, 8 GiB; m-2x: 2 vCPU, 16 GiB.
const C4X_OD = 0.025 * 4 + (0.001 * 8 * GIB) / 1e9;
const C4X_SPOT = 0.7 * C4X_OD;
const M2X_OD = 0.025 * 2 + (0.001 * 16 * GIB) / 1e9;
const NOW = Date.parse("2026-03-02T12:00:00Z");
const KWOK_NODE = "festive-hopper-2913848191";
/** A spot c-4x of pool default, as the KWOK fixture's node (give it a name). */
const C4X_SPOT_MACHINE = {
  pool: "default",
  instanceType: "c-4x-amd64-linux",
  capacityType: "spot",
  zone: "test-zone-a",
  cpu: "4",
  memory: "8Gi",
} as const;

/** The KWOK fixtures (a spot c-4x in pool default) plus an on-demand m-2x Wave holds warm. */
function state(): ClusterState {
  const s = new ClusterState();
  s.apply("NodePool", "add", fixtures.nodePool());
  s.apply("NodeClaim", "add", fixtures.nodeClaim("initialized"));
  s.apply("Node", "add", fixtures.node("initialized"));
  const warm = machineObjects({
    name: "warm-1",
    pool: "default",
    instanceType: "m-2x-amd64-linux",
    capacityType: "on-demand",
    zone: "test-zone-b",
    cpu: "2",
    memory: "16Gi",
    created: "2026-03-02T11:00:00Z",
  });
  assert.ok(warm.node && warm.nodeClaim);
  warm.node.metadata.annotations = {
    "karpenter.sh/do-not-disrupt": "true",
    [DO_NOT_DISRUPT_OWNER_ANNOTATION]: DO_NOT_DISRUPT_OWNER_VALUE,
  };
  s.apply("NodeClaim", "add", warm.nodeClaim);
  s.apply("Node", "add", warm.node);
  s.apply("Pod", "add", pod("web-1", KWOK_NODE, "500m", "1Gi"));
  s.apply("Pod", "add", pod("web-2", "warm-1", "250m", "512Mi"));
  s.apply("Pod", "add", pod("waiting", undefined, "1", "1Gi"));
  return s;
}

function input(extra: Partial<ViewInput> = {}): ViewInput {
  return { clusterId: "c1", state: state(), prices: new KwokPriceProvider(), now: NOW, ...extra };
}

/** Four c-4x NodeClaims, each consolidated 3 minutes after launch and replaced at once. */
function churn(): { events: LifecycleRecord[]; disruptions: DisruptionRecord[] } {
  const events: LifecycleRecord[] = [];
  const disruptions: DisruptionRecord[] = [];
  const t0 = NOW - 15 * 60_000;
  for (let i = 0; i < 4; i++) {
    const base = { nodeClaim: `nc-${i}`, nodePool: "default", instanceType: "c-4x-amd64-linux" };
    const launched = t0 + i * 180_000;
    events.push({ ...base, phase: "Launched", at: launched });
    events.push({ ...base, phase: "Disrupted", reason: "Underutilized", at: launched + 180_000 });
    events.push({ ...base, phase: "Terminated", reason: "Underutilized", at: launched + 190_000 });
    disruptions.push({
      nodeClaim: base.nodeClaim,
      nodePool: "default",
      reason: "Underutilized",
      at: launched + 180_000,
    });
  }
  return { events, disruptions };
}

describe("dashboard views", () => {
  it("overview: cost, spot share and savings from KWOK prices", () => {
    const o = buildOverview(
      input({
        disruptions: [
          { nodeClaim: "a", nodePool: "default", reason: "Empty", at: NOW - 30 * 60_000 },
          { nodeClaim: "b", nodePool: "default", reason: "Empty", at: NOW - 2 * 3_600_000 },
        ],
      }),
    );
    assert.equal(o.clusterId, "c1");
    assert.equal(o.at, NOW);
    assert.equal(o.nodes, 2);
    assert.equal(o.nodePools, 1);
    assert.equal(o.pendingPods, 1);
    close(o.costPerHour, C4X_SPOT + M2X_OD, "cost/h");
    close(o.costPerMonth, (C4X_SPOT + M2X_OD) * 730, "cost/month");
    assert.deepEqual(o.priceSources, { kwok: 2 });
    close(o.spotRatio.nodes, 0.5, "spot share of nodes");
    close(o.spotRatio.cost, C4X_SPOT / (C4X_SPOT + M2X_OD), "spot share of cost");
    // vCPU by the one size function (the larger of capacity and allocatable): the KWOK node's
    // capacity says 2350m, its allocatable 3900m; the warm node 2 cores.
    close(o.spotRatio.vcpu, 3.9 / 5.9, "spot share of vCPU");
    close(o.spotSavingsPerHour, C4X_OD - C4X_SPOT, "spot savings");
    close(o.requested.cpu, 0.75, "requested cores");
    assert.equal(o.requested.memoryBytes, 1.5 * GIB);
    // The KWOK node's allocatable is 3900m / 8182Mi; the warm node's 2 / 16Gi.
    close(o.allocatable.cpu, 5.9, "allocatable cores");
    assert.equal(o.allocatable.memoryBytes, 8182 * 2 ** 20 + 16 * GIB);
    assert.equal(o.disruptionsLastHour, 1);
    assert.deepEqual(o.thrashingPools, []);
    assert.equal(o.warmup.warmNodes, 1);
    close(o.warmup.costPerHour, M2X_OD, "warm cost");
    assert.deepEqual([o.warmup.hits, o.warmup.misses, o.warmup.timeSavedSeconds], [0, 0, 0]);
    const fed = buildOverview(input({ warmup: { hits: 3, misses: 1, timeSavedSeconds: 255 } }));
    assert.deepEqual([fed.warmup.warmNodes, fed.warmup.hits, fed.warmup.misses], [1, 3, 1]);
  });

  it("a change to the state shows in the next view (the machine index follows every change)", () => {
    const s = state();
    const at = (extra: Partial<ViewInput> = {}): ViewInput => ({ ...input(extra), state: s });
    assert.equal(buildOverview(at()).nodes, 2);
    assert.equal(buildNodeList(at()).total, 2, "same version: same machines");
    const more = addMachine(s, { ...C4X_SPOT_MACHINE, name: "late-1", created: "2026-03-02T11:30:00Z" });
    assert.ok(more.node && more.nodeClaim);
    s.apply("Pod", "add", pod("late-pod", "late-1", "1", "1Gi"));
    const o = buildOverview(at());
    assert.equal(o.nodes, 3);
    close(o.requested.cpu, 1.75, "requested cores with the new pod");
    close(o.costPerHour, 2 * C4X_SPOT + M2X_OD, "cost/h after the new node");
    assert.deepEqual(
      buildNodePools(at()).map((p) => p.nodes),
      [3],
    );
    s.apply("Node", "delete", more.node);
    s.apply("NodeClaim", "delete", more.nodeClaim);
    assert.equal(buildNodeList(at()).total, 2);
  });

  it("node pools: per capacity type, limits against Karpenter's own accounting", () => {
    const [p, ...rest] = buildNodePools(input());
    assert.equal(rest.length, 0);
    assert.ok(p);
    assert.equal(p.name, "default");
    assert.equal(p.nodes, 2);
    assert.deepEqual(p.nodesByCapacityType, { spot: 1, "on-demand": 1 });
    // Node size is max(capacity, allocatable): 3.9 cores (KWOK echoes requests as capacity) + 2.
    close(p.vcpu, 5.9, "vcpu");
    assert.equal(p.memoryBytes, 8182 * 2 ** 20 + 16 * GIB);
    close(p.costPerHour, C4X_SPOT + M2X_OD, "pool cost");
    close(p.costByCapacityType.spot ?? -1, C4X_SPOT, "spot cost");
    close(p.costByCapacityType["on-demand"] ?? -1, M2X_OD, "on-demand cost");
    // spec.limits cpu 1k, memory 1000Gi; status.resources cpu 12, memory 24Gi.
    assert.deepEqual(p.limits, { cpu: 1000, memoryBytes: 1000 * GIB });
    close(p.limitUsage.cpu ?? -1, 0.012, "cpu limit usage");
    close(p.limitUsage.memory ?? -1, 0.024, "memory limit usage");
    assert.equal(p.consolidationPolicy, "WhenEmptyOrUnderutilized");
    assert.equal(p.consolidateAfter, "30s");
    assert.equal(p.thrashing, "none");
    assert.equal(p.warmNodes, 1);
    assert.ok(p.capacityTypes.length > 0);
  });

  it("nodes: joined rows, warm and do-not-disrupt marks, filter, sort and paging", () => {
    const all = buildNodeList(input());
    assert.equal(all.total, 2);
    const kwok = all.items.find((n) => n.name === KWOK_NODE);
    const warm = all.items.find((n) => n.name === "warm-1");
    assert.ok(kwok && warm);
    assert.equal(kwok.nodeClaim, "default-8kzvq");
    assert.equal(kwok.capacityType, "spot");
    assert.equal(kwok.zone, "test-zone-a");
    assert.equal(kwok.priceSource, "kwok");
    close(kwok.costPerHour, C4X_SPOT, "node cost");
    close(kwok.cpu.allocatable, 3.9, "node allocatable");
    close(kwok.cpu.requested, 0.5, "node requested");
    assert.equal(kwok.pods, 1);
    assert.deepEqual([kwok.warm, kwok.doNotDisrupt], [false, false]);
    assert.deepEqual([warm.warm, warm.doNotDisrupt], [true, true]);
    assert.equal(warm.createdAt, Date.parse("2026-03-02T11:00:00Z"));

    assert.deepEqual(
      buildNodeList(input(), { capacityType: "spot" }).items.map((n) => n.name),
      [KWOK_NODE],
    );
    assert.deepEqual(
      buildNodeList(input(), { q: "M-2X" }).items.map((n) => n.name),
      ["warm-1"],
    );
    const byCost = buildNodeList(input(), { sort: "cost", desc: true });
    assert.deepEqual(
      byCost.items.map((n) => n.name),
      M2X_OD > C4X_SPOT ? ["warm-1", KWOK_NODE] : [KWOK_NODE, "warm-1"],
    );
    const page = buildNodeList(input(), { sort: "cost", desc: true, limit: 1, offset: 1 });
    assert.equal(page.total, 2);
    assert.deepEqual(
      page.items.map((n) => n.name),
      [byCost.items[1]?.name],
    );
    assert.equal(buildNodeList(input(), { pool: "other" }).total, 0);
  });

  it("thrashing: a churning pool is flagged everywhere with evidence and advice", () => {
    const h = churn();
    const s = state();
    const reports = thrashingReports({ pools: s.nodePools(), ...h, now: NOW });
    const [t] = thrashingDtos(reports);
    assert.ok(t);
    assert.equal(t.nodePool, "default");
    // 3 cycles (nc-0..2, each launched again by the next; nc-3 was not) in a pool of 1 node on
    // average: turnover 3 (50) + 3 generations (30) + 3 of 4 launches only undid a removal (15).
    assert.equal(t.score, 95);
    assert.equal(t.severity, "high");
    assert.equal(t.evidence.length, 3);
    for (const e of t.evidence) {
      assert.equal(e.lifetimeSeconds, 180);
      assert.equal(e.reason, "Underutilized");
      assert.equal(e.instanceType, "c-4x-amd64-linux");
      assert.equal(e.terminatedAt, e.createdAt + 190_000);
    }
    assert.ok(t.advice.length > 0 && t.advice.every((a) => typeof a === "string" && a.length > 0));
    assert.match(t.summary, /high thrashing/);

    const live = buildLive({
      clusterId: "c1",
      state: s,
      prices: new KwokPriceProvider(),
      now: NOW,
      thrashing: reports,
      disruptions: h.disruptions,
    });
    assert.deepEqual(live.overview.thrashingPools, ["default"]);
    assert.equal(live.overview.disruptionsLastHour, 4);
    assert.equal(live.nodePools[0]?.thrashing, "high");
  });

  it("history rows: newest first, empty strings as null", () => {
    const rows = lifecycleDtos([
      { clusterId: "c1", nodeClaim: "a", nodeClaimUid: "u", nodePool: "", phase: "Launched", at: 1 },
      {
        clusterId: "c1",
        nodeClaim: "a",
        nodeClaimUid: "u",
        nodePool: "p",
        phase: "Terminated",
        reason: "Empty",
        at: 5,
      },
    ]);
    assert.deepEqual(
      rows.map((r) => [r.phase, r.nodePool, r.reason]),
      [
        ["Terminated", "p", "Empty"],
        ["Launched", null, null],
      ],
    );
    assert.deepEqual(
      disruptionDtos([
        { nodeClaim: "x", nodePool: "p", reason: "Drifted", at: 1 },
        { nodeClaim: "y", nodePool: "p", reason: "Empty", at: 2 },
      ]).map((d) => d.nodeClaim),
      ["y", "x"],
    );
  });

  it("series: sums capacity types and pools per bucket, keeps gaps", () => {
    const pt = (
      ts: number,
      nodePool: string,
      capacityType: string,
      nodes: number,
      vcpu: number,
      cost: number,
    ): SeriesRow => ({
      kind: "point",
      clusterId: "c1",
      nodePool,
      capacityType,
      ts,
      resolutionMs: 60_000,
      nodes,
      vcpu,
      memoryBytes: 0,
      costPerHour: cost,
      nodesMax: nodes,
      samples: 1,
    });
    const rows: SeriesRow[] = [
      pt(60_000, "a", "spot", 2, 8, 0.2),
      pt(60_000, "a", "on-demand", 1, 4, 0.15),
      pt(60_000, "b", "spot", 3, 6, 0.05),
      { kind: "gap", clusterId: "c1", ts: 120_000, until: 300_000, resolutionMs: 60_000 },
      pt(300_000, "a", "on-demand", 1, 4, 0.15),
    ];
    const all = buildSeries(rows, { from: 0, to: 360_000, step: 60_000 });
    assert.deepEqual(all.gaps, [{ from: 120_000, to: 300_000 }]);
    assert.equal(all.nodePool, null);
    assert.equal(all.points.length, 2);
    const [p0, p1] = all.points;
    assert.deepEqual([p0?.t, p0?.nodes, p0?.spotNodes, p0?.vcpu], [60_000, 6, 5, 18]);
    close(p0?.costPerHour ?? -1, 0.4, "bucket cost");
    assert.deepEqual([p1?.t, p1?.nodes, p1?.spotNodes], [300_000, 1, 0]);
    const a = buildSeries(rows, { from: 0, to: 360_000, step: 60_000, nodePool: "a" });
    assert.deepEqual(
      a.points.map((p) => [p.nodes, p.spotNodes]),
      [
        [3, 2],
        [1, 0],
      ],
    );
    assert.equal(a.gaps.length, 1);
  });
});

describe("the history chart's samples", () => {
  it("count, size and price the overview's machines: a launching NodeClaim counts, KWOK nodes' allocatable sizes them", () => {
    const s = state();
    // A NodeClaim Karpenter launched whose Node has not registered yet: it already costs money.
    const launching = machineObjects({ ...C4X_SPOT_MACHINE, name: "launching-1", unregistered: true });
    assert.ok(launching.nodeClaim);
    s.apply("NodeClaim", "add", launching.nodeClaim);
    // A node whose capacity under-reports (as KWOK's do): sized by the larger allocatable.
    const under = addMachine(s, {
      name: "under-1",
      pool: "batch",
      instanceType: "m-2x-amd64-linux",
      capacityType: "on-demand",
      cpu: "1",
      allocatableCpu: "2",
      memory: "16Gi",
    });
    assert.ok(under.node && under.nodeClaim);
    const prices = new KwokPriceProvider();
    const overview = buildOverview({ clusterId: "c1", state: s, prices, now: NOW });
    const pools = buildNodePools({ clusterId: "c1", state: s, prices, now: NOW });
    const samples = poolSamplesOf(s, prices);
    const sum = (pick: (x: { nodes: number; costPerHour: number; vcpu: number }) => number) =>
      samples.reduce((a, x) => a + pick(x), 0);
    assert.equal(
      sum((x) => x.nodes),
      overview.nodes,
    );
    assert.equal(overview.nodes, 4);
    close(
      sum((x) => x.costPerHour),
      overview.costPerHour,
      "cost per hour",
    );
    for (const p of pools) {
      const mine = samples.filter((x) => x.nodePool === p.name);
      assert.equal(
        mine.reduce((a, x) => a + x.nodes, 0),
        p.nodes,
        p.name,
      );
      close(
        mine.reduce((a, x) => a + x.vcpu, 0),
        p.vcpu,
        `${p.name} vCPU`,
      );
      close(
        mine.reduce((a, x) => a + x.costPerHour, 0),
        p.costPerHour,
        `${p.name} cost`,
      );
    }
  });
});

describe("the node table's rows and their schema", () => {
  it("match NodeSchema exactly (the route serializes with it: a field it lacks would be dropped)", () => {
    const rows = buildNodeList(input()).items;
    assert.ok(rows.length > 0);
    for (const r of rows)
      assert.deepEqual(
        [...Value.Errors(NodeSchema, r)].map((e) => `${e.path}: ${e.message}`),
        [],
      );
  });
});

describe("every figure DTO against its one schema", () => {
  const errors = (schema: TSchema, v: unknown): string[] =>
    [...Value.Errors(schema, v)].map((e) => `${e.path}: ${e.message}`);

  it("overview, pools, the live snapshot and thrashing match their closed TypeBox schemas", () => {
    const s = state();
    const h = churn();
    const reports = thrashingReports({ pools: s.nodePools(), ...h, now: NOW });
    const i = input({ state: s, thrashing: reports, disruptions: h.disruptions });
    assert.deepEqual(errors(OverviewSchema, buildOverview(i)), []);
    const pools = buildNodePools(i);
    assert.ok(pools.length > 0);
    for (const p of pools) assert.deepEqual(errors(NodePoolSchema, p), []);
    assert.deepEqual(errors(LiveSchema, buildLive(i)), []);
    const dtos = thrashingDtos(reports);
    assert.ok(dtos.some((d) => d.evidence.length > 0));
    for (const d of dtos) assert.deepEqual(errors(ThrashingSchema, d), []);
  });

  it("a field the schema lacks is caught (the route would drop it)", () => {
    const o = { ...buildOverview(input()), extra: 1 };
    assert.deepEqual(errors(OverviewSchema, o), ["/extra: Unexpected property"]);
  });
});
