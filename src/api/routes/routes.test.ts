import { createLogger } from "../../shared/log.ts";
import { TESTED_KARPENTER } from "../../karpenter/compat.ts";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { fixtures } from "../../../test/fixtures/karpenter/load.ts";
import { ClusterHub } from "../../core/hub/hub.ts";
import type { IngestBatch } from "../../core/ingest/sink.ts";
import { openStore } from "../../core/store/open.ts";
import type { Store } from "../../core/store/store.ts";
import { machineObjects, pod } from "../../dashboard/testkit.ts";
import { KwokPriceProvider } from "../../pricing/kwok.ts";
import { FakeClock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import type { WireObject } from "../../wire/wire.ts";
import { build } from "../app.ts";
import type {
  ClusterDto,
  DisruptionCountsDto,
  DisruptionDto,
  LifecycleEventDto,
  LiveDto,
  NodeListDto,
  NodePoolDto,
  OverviewDto,
  SeriesDto,
  SpotPolicySetDto,
  ThrashingDto,
  WarmupPolicyDto,
} from "../../dashboard/dto.ts";
import { dashboardRoutes, newestRows } from "./dashboard.ts";
import { policyRoutes } from "./policies.ts";
import { deliver } from "../../core/hub/testing.ts";
import { getOk } from "../inject.test-helper.ts";

const tokens = { admin: "a-token", viewer: "v-token" };
const V = { authorization: "Bearer v-token" };
const A = { authorization: "Bearer a-token" };
const NOW = Date.parse("2026-03-02T12:00:00Z");
const GIB = 2 ** 30;
const C4X_SPOT = 0.7 * (0.025 * 4 + (0.001 * 8 * GIB) / 1e9);

let dir: string;
let store: Store;
let hub: ClusterHub;
let clock: FakeClock;
let app: FastifyInstance;
let seq = 0;
const policyChanges: string[] = [];
const logLines: string[] = [];

function batch(clusterId: string, snapshot: WireObject[]): IngestBatch {
  return {
    clusterId,
    sessionId: "s1",
    sequence: ++seq,
    receivedAt: clock.now(),
    snapshot,
    changes: [],
    lifecycle: [],
  };
}

const clusterObjects = (): WireObject[] => [
  { kind: "NodePool", object: fixtures.nodePool() },
  { kind: "NodeClaim", object: fixtures.nodeClaim("initialized") },
  { kind: "Node", object: fixtures.node("initialized") },
  { kind: "Pod", object: pod("web-1", "festive-hopper-2913848191", "500m", "1Gi") },
];

const c1Info = {
  clusterId: "c1",
  kubernetesVersion: "v1.34.1",
  karpenterVersion: "v1.8.2",
  agentVersion: "0.1.0",
  sessionId: "s1",
  connectedAt: NOW - 5000,
};

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-routes-"));
  store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  clock = new FakeClock(NOW);
  hub = new ClusterHub(store, clock);
  await hub.clusterConnected(c1Info);
  await deliver(hub, batch("c1", clusterObjects()));
  hub.ensure("sim", true);
  // History: 4 short-lived c-4x NodeClaims (3 min each) in the last 15 minutes, and older events.
  const lifecycle = [];
  const disruptions = [];
  for (let i = 0; i < 4; i++) {
    const launched = NOW - 15 * 60_000 + i * 180_000;
    const base = {
      clusterId: "c1",
      nodeClaim: `nc-${i}`,
      nodeClaimUid: `u-${i}`,
      nodePool: "default",
      instanceType: "c-4x-amd64-linux",
      capacityType: "spot",
    };
    lifecycle.push({ ...base, phase: "Launched" as const, at: launched });
    lifecycle.push({ ...base, phase: "Disrupted" as const, reason: "Underutilized", at: launched + 180_000 });
    lifecycle.push({
      ...base,
      phase: "Terminated" as const,
      reason: "Underutilized",
      at: launched + 190_000,
    });
    disruptions.push({ ...base, reason: "Underutilized", at: launched + 180_000, source: "event" as const });
  }
  lifecycle.push({
    clusterId: "c1",
    nodeClaim: "old",
    nodeClaimUid: "u-old",
    nodePool: "batch",
    phase: "Launched" as const,
    at: NOW - 3 * 3_600_000,
  });
  const point = (ts: number, capacityType: string, nodes: number, cost: number) => ({
    kind: "point" as const,
    clusterId: "c1",
    nodePool: "default",
    capacityType,
    ts,
    resolutionMs: 60_000,
    nodes,
    vcpu: nodes * 4,
    memoryBytes: nodes * 8 * GIB,
    costPerHour: cost,
    nodesMax: nodes,
    samples: 1,
  });
  const t = Math.floor((NOW - 3_600_000) / 60_000) * 60_000;
  await store.write({
    lifecycle,
    disruptions,
    series: [
      point(t, "spot", 2, 0.15),
      point(t, "on-demand", 1, 0.1),
      { kind: "gap", clusterId: "c1", ts: t + 60_000, until: t + 600_000, resolutionMs: 60_000 },
      point(t + 600_000, "spot", 3, 0.2),
    ],
  });
  app = await build({
    tokens,
    plugins: [
      dashboardRoutes({
        hub,
        prices: new KwokPriceProvider(),
        now: () => clock.now(),
        warmupStats: (id) => (id === "c1" ? { hits: 2, misses: 1, timeSavedSeconds: 170 } : undefined),
        log: createLogger({ write: (line) => void logLines.push(line) }),
      }),
      policyRoutes({
        store,
        defaultClusterId: "c1",
        now: () => clock.now(),
        onChange: (kind, key, cluster) => void policyChanges.push(`${cluster}/${kind}:${key}`),
      }),
    ],
  });
});

after(async () => {
  await app.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const get = <T>(url: string): Promise<T> => getOk<T>(app, url, V);

describe("dashboard routes", () => {
  it("lists clusters with connection state and versions", async () => {
    const cs = await get<ClusterDto[]>("/api/v1/clusters");
    assert.deepEqual(
      cs.map((c) => [
        c.id,
        c.simulated,
        c.connected,
        c.kubernetesVersion,
        c.karpenterVersion,
        c.agentVersion,
      ]),
      [
        ["c1", false, true, "v1.34.1", "v1.8.2", "0.1.0"],
        ["sim", true, false, null, null, null],
      ],
    );
    // No agent told core which Karpenter runs: its controller pod does.
    const sim = hub.ensure("sim", true).state;
    const controller = {
      metadata: {
        name: "karpenter-7d9f",
        namespace: "kube-system",
        labels: { "app.kubernetes.io/name": "karpenter" },
      },
      spec: { containers: [{ name: "controller", image: "public.ecr.aws/karpenter/controller:1.8.2" }] },
    };
    sim.apply("Pod", "add", controller);
    try {
      const withPod = await get<ClusterDto[]>("/api/v1/clusters");
      assert.equal(withPod.find((c) => c.id === "sim")?.karpenterVersion, "v1.8.2");
      assert.equal(withPod.find((c) => c.id === "sim")?.karpenterSupport.status, "tested");
      assert.equal(withPod.find((c) => c.id === "sim")?.karpenterSupport.warning, null);
    } finally {
      sim.apply("Pod", "delete", controller);
    }
    // Not detected: said so (no log line — Karpenter outside pods is normal on some clusters).
    const none = (await get<ClusterDto[]>("/api/v1/clusters")).find((c) => c.id === "sim");
    assert.equal(none?.karpenterSupport.status, "unknown");
    assert.match(none.karpenterSupport.warning ?? "", /not detected/);
    // A release older than the tested range: API field, and one warning in the log however often
    // the list is polled.
    const old = { ...controller, metadata: { ...controller.metadata, name: "karpenter-old" } };
    old.spec = { containers: [{ name: "controller", image: "public.ecr.aws/karpenter/controller:1.0.8" }] };
    sim.apply("Pod", "add", old);
    try {
      logLines.length = 0;
      for (let i = 0; i < 3; i++) {
        const s = (await get<ClusterDto[]>("/api/v1/clusters")).find((c) => c.id === "sim")?.karpenterSupport;
        assert.equal(s?.status, "older");
        assert.equal(s.oldestTested, TESTED_KARPENTER.oldest);
        assert.match(s.warning ?? "", /v1\.0\.8 is older than the releases Wave is tested with/);
      }
      const warnings = logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.deepEqual(
        warnings.map((w) => [w["level"], w["msg"], w["cluster"], w["karpenterVersion"]]),
        [["warn", "Karpenter release outside the tested range", "sim", "v1.0.8"]],
      );
    } finally {
      sim.apply("Pod", "delete", old);
    }

    // A quiet but open stream stays connected; only the stream's end disconnects.
    await clock.advance(61_000);
    try {
      const quiet = await get<ClusterDto[]>("/api/v1/clusters");
      assert.equal(quiet[0]?.connected, true, "silent for a minute on an open stream");
      hub.clusterDisconnected("c1");
      const later = await get<ClusterDto[]>("/api/v1/clusters");
      assert.equal(later[0]?.connected, false, "stream ended");
    } finally {
      clock = new FakeClock(NOW); // later tests read at NOW again
      await hub.clusterConnected(c1Info);
    }
  });

  it("serves the overview and node pools with KWOK prices and history", async () => {
    const o = await get<OverviewDto>("/api/v1/clusters/c1/overview");
    assert.equal(o.nodes, 1);
    assert.equal(o.nodePools, 1);
    assert.ok(Math.abs(o.costPerHour - C4X_SPOT) < 1e-9);
    assert.deepEqual(o.priceSources, { kwok: 1 });
    assert.equal(o.spotRatio.nodes, 1);
    assert.equal(o.requested.cpu, 0.5);
    assert.equal(o.disruptionsLastHour, 4);
    assert.deepEqual(o.thrashingPools, ["default"]);
    // The window's warm cost and bounds are core's (none given here: 0).
    assert.deepEqual(o.warmup, {
      warmNodes: 0,
      costPerHour: 0,
      hits: 2,
      misses: 1,
      timeSavedSeconds: 170,
      warmCostUsd: 0,
      from: 0,
      to: 0,
    });
    const pools = await get<NodePoolDto[]>("/api/v1/clusters/c1/nodepools");
    assert.deepEqual(
      pools.map((p) => [p.name, p.nodes, p.thrashing, p.consolidateAfter]),
      [["default", 1, "high", "30s"]],
    );
    assert.deepEqual(pools[0]?.nodesByCapacityType, { spot: 1 });
  });

  it("lists nodes with query validation", async () => {
    const list = await get<NodeListDto>(
      "/api/v1/clusters/c1/nodes?capacityType=spot&sort=cost&desc=true&limit=10",
    );
    assert.equal(list.total, 1);
    assert.equal(list.items[0]?.name, "festive-hopper-2913848191");
    assert.equal(list.items[0].priceSource, "kwok");
    assert.equal((await get<NodeListDto>("/api/v1/clusters/c1/nodes?pool=none")).total, 0);
    const bad = await app.inject({ url: "/api/v1/clusters/c1/nodes?sort=colour", headers: V });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json<{ message: string }>().message, /sort/);
    assert.equal(
      (await app.inject({ url: "/api/v1/clusters/c1/nodes?limit=0", headers: V })).statusCode,
      400,
    );
  });

  it("shares one serialized node table per state version and query, and shows a change at once", async () => {
    const state = hub.get("c1")?.state;
    assert.ok(state);
    const first = await app.inject({ url: "/api/v1/clusters/c1/nodes", headers: V });
    const again = await app.inject({ url: "/api/v1/clusters/c1/nodes", headers: V });
    assert.equal(first.statusCode, 200);
    assert.match(first.headers["content-type"] ?? "", /application\/json/);
    assert.equal(again.body, first.body);
    assert.equal(first.json<NodeListDto>().total, 1);
    const other = await get<NodeListDto>("/api/v1/clusters/c1/nodes?pool=elsewhere");
    assert.equal(other.total, 0, "another query is another answer");
    const extra = machineObjects({ name: "cache-1", pool: "default", instanceType: "c-2x-amd64-linux" });
    assert.ok(extra.node);
    state.apply("Node", "add", extra.node);
    try {
      const after = await get<NodeListDto>("/api/v1/clusters/c1/nodes");
      assert.deepEqual(
        after.items.map((n) => n.name),
        ["cache-1", "festive-hopper-2913848191"],
      );
    } finally {
      state.apply("Node", "delete", extra.node);
    }
    assert.equal((await get<NodeListDto>("/api/v1/clusters/c1/nodes")).total, 1);
  });

  it("sorts, filters and pages the node table on core, as the console's node table asks", async () => {
    const state = hub.get("c1")?.state;
    assert.ok(state);
    // Beside the KWOK fixture node (pool default, spot, 0.5 of 3.9 cores requested).
    const extra = [
      {
        spec: { name: "web-a", capacityType: "on-demand" as const, instanceType: "c-2x-amd64-linux" },
        cpu: "1500m",
      },
      { spec: { name: "web-b", capacityType: "spot" as const, instanceType: "c-2x-amd64-linux" } },
      {
        spec: { name: "odd-1", capacityType: "on-demand" as const, instanceType: "x9.weird", cpu: "4" },
        cpu: "1",
      },
    ].map(({ spec, cpu }) => ({
      ...machineObjects({ pool: "web", cpu: "2", ...spec }),
      pod: cpu ? pod(`${spec.name}-pod`, spec.name, cpu, "1Gi") : undefined,
    }));
    state.batch(() => {
      for (const m of extra) {
        if (m.nodeClaim) state.apply("NodeClaim", "add", m.nodeClaim);
        if (m.node) state.apply("Node", "add", m.node);
        if (m.pod) state.apply("Pod", "add", m.pod);
      }
    });
    const names = async (q: string): Promise<[string[], number, number]> => {
      const l = await get<NodeListDto>(`/api/v1/clusters/c1/nodes?${q}`);
      return [l.items.map((n) => n.name), l.total, l.totalBeforeQuery];
    };
    try {
      // cpu: requested over allocatable, busiest first; a page of it.
      assert.deepEqual(await names("sort=cpuUse&desc=true"), [
        ["web-a", "odd-1", "festive-hopper-2913848191", "web-b"],
        4,
        4,
      ]);
      assert.deepEqual(await names("sort=cpuUse&desc=true&limit=2&offset=1"), [
        ["odd-1", "festive-hopper-2913848191"],
        4,
        4,
      ]);
      // Price source, then name: the KWOK-priced nodes before the one no price is known for.
      assert.deepEqual((await names("sort=priceSource"))[0], [
        "festive-hopper-2913848191",
        "web-a",
        "web-b",
        "odd-1",
      ]);
      // The text filter matches what the table shows: pool, capacity type, price source…
      assert.deepEqual(await names("q=WEB"), [["odd-1", "web-a", "web-b"], 3, 4]);
      assert.deepEqual(await names("q=on-demand"), [["odd-1", "web-a"], 2, 4]);
      assert.deepEqual(await names("q=unknown"), [["odd-1"], 1, 4]);
      // …and counts before it within the pool asked for.
      assert.deepEqual(await names("pool=web&q=spot"), [["web-b"], 1, 3]);
      const bad = await app.inject({ url: "/api/v1/clusters/c1/nodes?offset=-1", headers: V });
      assert.equal(bad.statusCode, 400);
    } finally {
      state.batch(() => {
        for (const m of extra) {
          if (m.pod) state.apply("Pod", "delete", m.pod);
          if (m.node) state.apply("Node", "delete", m.node);
          if (m.nodeClaim) state.apply("NodeClaim", "delete", m.nodeClaim);
        }
      });
    }
    assert.equal((await get<NodeListDto>("/api/v1/clusters/c1/nodes")).total, 1);
  });

  it("answers an unknown cluster with 404 and a clear message", async () => {
    for (const path of [
      "overview",
      "nodepools",
      "nodes",
      "events",
      "disruptions",
      "thrashing",
      "series",
      "stream",
    ]) {
      const r = await app.inject({ url: `/api/v1/clusters/nope/${path}`, headers: V });
      assert.equal(r.statusCode, 404, path);
      assert.deepEqual(r.json(), { error: "not_found", message: 'no cluster with id "nope"' });
    }
  });

  it("serves lifecycle events and disruptions newest first, with limits and filters", async () => {
    const events = await get<LifecycleEventDto[]>("/api/v1/clusters/c1/events?limit=3");
    assert.deepEqual(
      events.map((e) => [e.nodeClaim, e.phase]),
      [
        ["nc-3", "Terminated"],
        ["nc-3", "Disrupted"],
        ["nc-2", "Terminated"],
      ],
    );
    assert.equal(events[0]?.reason, "Underutilized");
    const batchPool = await get<LifecycleEventDto[]>("/api/v1/clusters/c1/events?pool=batch");
    assert.deepEqual(
      batchPool.map((e) => e.nodeClaim),
      ["old"],
    );
    const recent = await get<LifecycleEventDto[]>(
      `/api/v1/clusters/c1/events?from=${NOW - 3_600_000}&limit=1000`,
    );
    assert.equal(recent.length, 12);
    const ds = await get<DisruptionDto[]>("/api/v1/clusters/c1/disruptions?limit=50");
    assert.deepEqual(
      ds.map((d) => d.nodeClaim),
      ["nc-3", "nc-2", "nc-1", "nc-0"],
    );
    const bad = await app.inject({ url: `/api/v1/clusters/c1/events?from=10&to=5`, headers: V });
    assert.equal(bad.statusCode, 400);
  });

  it("counts a range's disruptions exactly while the list stops at its limit", async () => {
    hub.ensure("many", true);
    const rows = Array.from({ length: 1485 }, (_, i) => ({
      clusterId: "many",
      nodeClaim: `m-${i}`,
      nodePool: i % 4 === 0 ? "batch" : "default",
      reason: i % 2 === 0 ? "Underutilized" : "Empty",
      at: NOW - 20 * 3_600_000 + i * 1000,
      source: "event" as const,
    }));
    await store.write({ disruptions: rows });
    const list = await get<DisruptionDto[]>("/api/v1/clusters/many/disruptions?limit=1000");
    assert.equal(list.length, 1000, "the list is a page");
    const counts = await get<DisruptionCountsDto>("/api/v1/clusters/many/disruptions/counts");
    assert.equal(counts.total, 1485, "the count is exact");
    assert.deepEqual(
      counts.counts.map((c) => [c.nodePool, c.reason, c.count]),
      [
        ["batch", "Underutilized", rows.filter((r) => r.nodePool === "batch").length],
        ["default", "Empty", rows.filter((r) => r.reason === "Empty").length],
        [
          "default",
          "Underutilized",
          rows.filter((r) => r.nodePool === "default" && r.reason === "Underutilized").length,
        ],
      ],
    );
    const batch = await get<DisruptionCountsDto>(
      `/api/v1/clusters/many/disruptions/counts?pool=batch&from=${NOW - 20 * 3_600_000}&to=${NOW - 20 * 3_600_000 + 4000}`,
    );
    assert.equal(batch.total, 1);
    const bad = await app.inject({ url: "/api/v1/clusters/many/disruptions/counts?limit=5", headers: V });
    assert.equal(bad.statusCode, 400);
  });

  it("keeps the newest rows when a range spans more than one store page", async () => {
    const rows = Array.from({ length: 12_345 }, (_, i) => ({ at: Math.floor(i / 3), k: String(i) }));
    const fetch = (from: number, limit: number) =>
      Promise.resolve(rows.filter((r) => r.at >= from).slice(0, limit));
    const out = await newestRows(fetch, 0, 4, (r) => r.k);
    assert.deepEqual(
      out.map((r) => r.k),
      ["12341", "12342", "12343", "12344"],
    );
    const all = await newestRows(fetch, 0, Infinity, (r) => r.k);
    assert.equal(all.length, 12_345);
    assert.equal(new Set(all.map((r) => r.k)).size, 12_345);
  });

  it("reports thrashing from stored history", async () => {
    const [t] = await get<ThrashingDto[]>("/api/v1/clusters/c1/thrashing");
    assert.ok(t);
    assert.equal(t.nodePool, "default");
    assert.equal(t.severity, "high");
    // 3 cycles over the pool's 1.5 nodes on average (its node now and the churning one):
    // turnover 2 (33.3) + 3 generations (30) + 3 of 4 launches undid a removal (15) = 78.
    assert.equal(t.score, 78);
    assert.deepEqual(
      t.evidence.map((e) => e.lifetimeSeconds),
      [180, 180, 180],
    );
    assert.ok(t.advice.length > 0);
  });

  it("serves the series summed over capacity types with gaps", async () => {
    const s = await get<SeriesDto>("/api/v1/clusters/c1/series?window=7200");
    assert.equal(s.step, 60_000);
    assert.equal(s.to - s.from, 7_200_000);
    assert.deepEqual(
      s.points.map((p) => [p.nodes, p.spotNodes, p.vcpu]),
      [
        [3, 2, 12],
        [3, 3, 12],
      ],
    );
    assert.ok(Math.abs((s.points[0]?.costPerHour ?? 0) - 0.25) < 1e-9);
    assert.equal(s.gaps.length, 1);
    assert.equal(
      (await get<SeriesDto>("/api/v1/clusters/c1/series?window=7200&pool=other")).points.length,
      0,
    );
    assert.equal(
      (await app.inject({ url: "/api/v1/clusters/c1/series?window=1", headers: V })).statusCode,
      400,
    );
  });

  it("requires a token and documents every route", async () => {
    assert.equal((await app.inject({ url: "/api/v1/clusters" })).statusCode, 401);
    assert.equal((await app.inject({ url: "/openapi.json" })).statusCode, 401);
    const doc = (await app.inject({ url: "/openapi.json", headers: V })).json<{
      paths: Record<string, unknown>;
    }>();
    for (const p of [
      "/api/v1/clusters",
      "/api/v1/clusters/{id}/nodes",
      "/api/v1/clusters/{id}/series",
      "/api/v1/policies/spot/{kind}/{namespace}/{name}",
      "/api/v1/clusters/{id}/policies/spot/{kind}/{namespace}/{name}",
      "/api/v1/clusters/{id}/policies/warmup/{pool}",
    ]) {
      assert.ok(p in doc.paths, p);
    }
  });
});

describe("live stream", () => {
  it("sends a snapshot at once and another after a change", async () => {
    const live = await build({
      tokens,
      plugins: [
        dashboardRoutes({ hub, prices: new KwokPriceProvider(), now: () => clock.now(), liveThrottleMs: 50 }),
      ],
    });
    await live.listen({ port: 0, host: "127.0.0.1" });
    const addr = live.server.address();
    assert.ok(addr && typeof addr === "object");
    const ac = new AbortController();
    try {
      const unauth = await fetch(`http://127.0.0.1:${addr.port}/api/v1/clusters/c1/stream`);
      assert.equal(unauth.status, 401);
      const res = await fetch(`http://127.0.0.1:${addr.port}/api/v1/clusters/c1/stream`, {
        headers: V,
        signal: ac.signal,
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /text\/event-stream/);
      assert.ok(res.body);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      const nextSnapshot = async (): Promise<LiveDto> => {
        for (;;) {
          const end = buf.indexOf("\n\n");
          if (end >= 0) {
            const frame = buf.slice(0, end);
            buf = buf.slice(end + 2);
            if (!frame.includes("event: snapshot")) continue;
            const data = frame
              .split("\n")
              .filter((l) => l.startsWith("data: "))
              .map((l) => l.slice(6))
              .join("\n");
            return JSON.parse(data) as LiveDto;
          }
          const { value, done } = await reader.read();
          assert.ok(!done, "stream ended");
          buf += value;
        }
      };
      const first = await nextSnapshot();
      assert.equal(first.overview.nodes, 1);
      const extra = machineObjects({
        name: "n2",
        pool: "default",
        instanceType: "c-2x-amd64-linux",
        capacityType: "on-demand",
      });
      assert.ok(extra.node && extra.nodeClaim);
      await deliver(
        hub,
        batch("c1", [
          ...clusterObjects(),
          { kind: "NodeClaim", object: extra.nodeClaim },
          { kind: "Node", object: extra.node },
        ]),
      );
      const second = await nextSnapshot();
      assert.equal(second.overview.nodes, 2);
      assert.equal(second.nodePools[0]?.nodes, 2);
    } finally {
      ac.abort();
      await live.close();
    }
  });
});

describe("policy routes", () => {
  const put = (url: string, payload: unknown, headers = A) =>
    app.inject({ method: "PUT", url, headers, payload: payload as object });

  it("holds a watch on the spot set until the set changes (webhook long poll)", async () => {
    const first = await get<SpotPolicySetDto>("/api/v1/policies/spot");
    const held = app.inject({
      method: "GET",
      url: `/api/v1/policies/spot?watch=true&revision=${first.revision}&timeoutSeconds=20`,
      headers: V,
    });
    const ok = await put("/api/v1/policies/spot/Deployment/shop/watched", {
      threshold: 1,
      strategy: "Require",
    });
    assert.equal(ok.statusCode, 200, ok.body);
    const res = await held;
    assert.equal(res.statusCode, 200, res.body);
    const set = res.json<SpotPolicySetDto>();
    assert.notEqual(set.revision, first.revision, "answered with the changed set");
    assert.ok(set.policies.some((p) => p.workload.name === "watched"));
    const stale = await app.inject({
      method: "GET",
      url: "/api/v1/policies/spot?watch=true&revision=0000&timeoutSeconds=20",
      headers: V,
    });
    assert.equal(
      stale.json<SpotPolicySetDto>().revision,
      set.revision,
      "a stale revision is answered at once",
    );
    assert.equal(
      (
        await app.inject({
          method: "DELETE",
          url: "/api/v1/policies/spot/Deployment/shop/watched",
          headers: A,
        })
      ).statusCode,
      204,
    );
  });

  it("stores a spot policy and serves it as the webhook's SpotPolicySet", async () => {
    const url = "/api/v1/policies/spot/Deployment/shop/web";
    assert.equal((await put(url, { threshold: 2, strategy: "Prefer" }, V)).statusCode, 403);
    assert.equal(
      (await app.inject({ method: "PUT", url, payload: { threshold: 2, strategy: "Prefer" } })).statusCode,
      401,
    );
    const ok = await put(url, { threshold: 2, strategy: "Prefer", percentAboveBase: 50 });
    assert.equal(ok.statusCode, 200, ok.body);
    const set = await get<SpotPolicySetDto>("/api/v1/policies/spot");
    assert.equal(set.apiVersion, "wave.sh/v1alpha1");
    assert.equal(set.kind, "SpotPolicySet");
    assert.deepEqual(set.policies, [
      {
        workload: { namespace: "shop", kind: "Deployment", name: "web" },
        threshold: 2,
        strategy: "Prefer",
        percentAboveBase: 50,
      },
    ]);
    assert.match(set.revision, /^[0-9a-f]{16}$/);
    assert.deepEqual(policyChanges.slice(-1), ["c1/spot:shop/Deployment/web"]);
    const rec = await store.getPolicy("c1", "spot", "shop/Deployment/web");
    assert.equal(rec?.updatedAt, NOW);
  });

  it("rejects bad spot policies with 400 and keeps the stored one", async () => {
    const url = "/api/v1/policies/spot/Deployment/shop/web";
    const bad = await put(url, { threshold: 1, strategy: "Sometimes" });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json<{ message: string }>().message, /strategy/);
    const unknown = await put(url, { threshold: 1, strategy: "Require", treshold: 3 });
    assert.equal(unknown.statusCode, 400);
    assert.match(unknown.json<{ message: string }>().message, /treshold: unknown field/);
    const badName = await put("/api/v1/policies/spot/Deployment/Shop_NS/web", {
      threshold: 1,
      strategy: "Require",
    });
    assert.equal(badName.statusCode, 400);
    assert.match(badName.json<{ message: string }>().message, /namespace/);
    assert.equal(
      (await put("/api/v1/policies/spot/Pod/shop/web", { threshold: 1, strategy: "Require" })).statusCode,
      400,
    );
    const set = await get<SpotPolicySetDto>("/api/v1/policies/spot");
    assert.equal(set.policies[0]?.threshold, 2);
  });

  it('takes repair: true, false or "dry-run" (plan only, issue 28) and rejects anything else', async () => {
    const url = "/api/v1/policies/spot/Deployment/shop/preview";
    const dry = await put(url, { threshold: 2, strategy: "Require", repair: "dry-run" });
    assert.equal(dry.statusCode, 200, dry.body);
    assert.equal(dry.json<{ repair?: unknown }>().repair, "dry-run");
    const served = (await get<SpotPolicySetDto>("/api/v1/policies/spot")).policies;
    assert.equal(served.find((p) => p.workload.name === "preview")?.repair, "dry-run");
    assert.equal(
      (await put(url, { threshold: 2, strategy: "Require", repair: false })).json<{ repair?: unknown }>()
        .repair,
      false,
    );
    const bad = await put(url, { threshold: 2, strategy: "Require", repair: "later" });
    assert.equal(bad.statusCode, 400);
    assert.equal((await app.inject({ method: "DELETE", url, headers: A })).statusCode, 204);
  });

  it("keeps fallbackWindowSeconds in the PUT answer and the served set (the response schema holds it)", async () => {
    const url = "/api/v1/policies/spot/Deployment/shop/fallback";
    const ok = await put(url, { threshold: 1, strategy: "Prefer", fallbackWindowSeconds: 900 });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json<{ fallbackWindowSeconds?: number }>().fallbackWindowSeconds, 900);
    const served = (await get<SpotPolicySetDto>("/api/v1/policies/spot")).policies;
    assert.equal(served.find((p) => p.workload.name === "fallback")?.fallbackWindowSeconds, 900);
    assert.equal((await app.inject({ method: "DELETE", url, headers: A })).statusCode, 204);
  });

  it("deletes spot policies", async () => {
    const url = "/api/v1/policies/spot/Deployment/shop/web";
    assert.equal((await app.inject({ method: "DELETE", url, headers: V })).statusCode, 403);
    assert.equal((await app.inject({ method: "DELETE", url, headers: A })).statusCode, 204);
    assert.equal((await app.inject({ method: "DELETE", url, headers: A })).statusCode, 404);
    assert.deepEqual((await get<SpotPolicySetDto>("/api/v1/policies/spot")).policies, []);
  });

  it("stores, lists and deletes warmup policies, validated by the controller's rules", async () => {
    const url = "/api/v1/policies/warmup/default";
    assert.equal((await put(url, { enabled: true }, V)).statusCode, 403);
    const ok = await put(url, { enabled: true, maxWarmNodes: 2, maxCostPerHour: 1.5 });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(ok.json<WarmupPolicyDto>().policy, {
      enabled: true,
      maxWarmNodes: 2,
      ttlSeconds: 600,
      cooldownSeconds: 300,
      maxCostPerHour: 1.5,
      prePull: true,
      prePullDeadlineSeconds: 300,
    });
    const bad = await put(url, { enabled: true, ttlSeconds: 5, ttlSecond: 60 });
    assert.equal(bad.statusCode, 400);
    const msg = bad.json<{ message: string }>().message;
    assert.match(msg, /ttlSeconds: expected an integer from 30/);
    assert.match(msg, /ttlSecond: unknown field/);
    const list = await get<WarmupPolicyDto[]>("/api/v1/policies/warmup");
    assert.deepEqual(
      list.map((p) => [p.nodePool, p.policy.maxWarmNodes, p.updatedAt]),
      [["default", 2, NOW]],
    );
    assert.deepEqual(policyChanges.slice(-1), ["c1/warmup:default"]);
    assert.equal((await app.inject({ method: "DELETE", url, headers: A })).statusCode, 204);
    assert.equal((await app.inject({ method: "DELETE", url, headers: A })).statusCode, 404);
    assert.deepEqual(await get<WarmupPolicyDto[]>("/api/v1/policies/warmup"), []);
  });

  it("keeps each cluster's policies apart; the routes without a cluster act on the default one", async () => {
    const body = { threshold: 1, strategy: "Require" };
    const a = await put("/api/v1/clusters/east/policies/spot/Deployment/shop/api", body);
    assert.equal(a.statusCode, 200, a.body);
    assert.deepEqual(policyChanges.slice(-1), ["east/spot:shop/Deployment/api"]);
    const west = await put("/api/v1/clusters/west/policies/warmup/general", { enabled: true });
    assert.equal(west.statusCode, 200, west.body);
    const east = await get<SpotPolicySetDto>("/api/v1/clusters/east/policies/spot");
    assert.deepEqual(
      east.policies.map((p) => [p.workload.name, p.threshold]),
      [["api", 1]],
    );
    // A policy of east is nobody else's: not west's, not the default cluster's (c1).
    assert.deepEqual((await get<SpotPolicySetDto>("/api/v1/clusters/west/policies/spot")).policies, []);
    const legacy = await app.inject({ url: "/api/v1/policies/spot", headers: V });
    assert.deepEqual(legacy.json<SpotPolicySetDto>().policies, []);
    assert.equal(legacy.headers["deprecation"], "true");
    assert.equal(legacy.headers["link"], '</api/v1/clusters/c1/policies/spot>; rel="successor-version"');
    assert.deepEqual(await get<WarmupPolicyDto[]>("/api/v1/clusters/east/policies/warmup"), []);
    assert.deepEqual(
      (await get<WarmupPolicyDto[]>("/api/v1/clusters/west/policies/warmup")).map((p) => p.nodePool),
      ["general"],
    );
    // The default cluster through either path is the same set.
    await put("/api/v1/policies/warmup/default", { enabled: true });
    assert.deepEqual(
      (await get<WarmupPolicyDto[]>("/api/v1/clusters/c1/policies/warmup")).map((p) => p.nodePool),
      ["default"],
    );
    assert.equal(
      (await app.inject({ method: "DELETE", url: "/api/v1/clusters/c1/policies/warmup/default", headers: A }))
        .statusCode,
      204,
    );
    assert.equal(
      (await put("/api/v1/clusters/Bad_Id/policies/warmup/general", { enabled: true })).statusCode,
      400,
      "a cluster id agents could not use",
    );
    for (const url of [
      "/api/v1/clusters/east/policies/spot/Deployment/shop/api",
      "/api/v1/clusters/west/policies/warmup/general",
    ])
      assert.equal((await app.inject({ method: "DELETE", url, headers: A })).statusCode, 204);
  });
});
