// GET …/consolidation, …/pending and the node drawer's disruption section over core's real hub
// (objects delivered as ingest delivers them), and /metrics giving the very same figures.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { ClusterHub } from "../../core/hub/hub.ts";
import { deliver, deliverSnapshot } from "../../core/hub/testing.ts";
import { openStore } from "../../core/store/open.ts";
import type { Store } from "../../core/store/store.ts";
import type { ConsolidationViewDto, NodeDetailDto, PendingViewDto } from "../../dashboard/dto.ts";
import { clusterExplanations } from "../../dashboard/consolidation/view.ts";
import { cluster, nodePool, pod } from "../../dashboard/testkit.ts";
import type { Event, Pod, PodDisruptionBudget } from "../../objects/kube.ts";
import { KwokPriceProvider } from "../../pricing/kwok.ts";
import { FakeClock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import { Registry } from "../../shared/metrics.ts";
import { registerDashboardMetrics } from "../../metrics/collector.ts";
import type { WireObject } from "../../wire/wire.ts";
import { build } from "../app.ts";
import { consoleRoutes } from "./console.ts";

const NOW = Date.parse("2026-03-02T12:00:00Z");
const V = { authorization: "Bearer v-token" };
const prices = new KwokPriceProvider();

let store: Store;
let app: FastifyInstance;
let hub: ClusterHub;
let registry: Registry;

function owned(name: string, node: string | undefined, labels: Record<string, string> = {}): Pod {
  const p = pod(name, node, "500m", "1Gi", node ? "Running" : "Pending");
  p.metadata.labels = labels;
  p.metadata.creationTimestamp = new Date(NOW - 120_000).toISOString();
  p.metadata.ownerReferences = [
    { apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", uid: "u", controller: true },
  ];
  return p;
}

before(async () => {
  const clock = new FakeClock(NOW);
  store = await openStore({ backend: "sqlite", path: ":memory:" }, { log: silentLogger });
  hub = new ClusterHub(store, clock);
  await hub.clusterConnected({
    clusterId: "c1",
    kubernetesVersion: "v1.34.1",
    karpenterVersion: "v1.8.2",
    agentVersion: "test",
    sessionId: "s1",
    connectedAt: NOW - 5000,
  });
  const { nodes, nodeClaims } = cluster(
    ["a", "b", "c", "d"].map((name) => ({
      name,
      pool: name === "d" ? "frozen" : "general",
      instanceType: "c-4x-amd64-linux",
      capacityType: "on-demand" as const,
      zone: "test-zone-a",
      cpu: "4",
    })),
  );
  for (const n of nodes) n.metadata.labels = { ...n.metadata.labels, "karpenter.sh/initialized": "true" };
  const dnd = owned("batch-1", "a");
  dnd.metadata.annotations = { "karpenter.sh/do-not-disrupt": "true" };
  const pdb: PodDisruptionBudget = {
    metadata: { name: "db", namespace: "default" },
    spec: { selector: { matchLabels: { app: "db" } }, minAvailable: 1 },
    status: { disruptionsAllowed: 0 },
  };
  const blocked: Event = {
    metadata: { name: "c.blocked", namespace: "default" },
    involvedObject: { kind: "Node", name: "c" },
    reason: "DisruptionBlocked",
    message: `pdb "default/db" prevents pod evictions`,
    lastTimestamp: new Date(NOW - 60_000).toISOString(),
    source: { component: "karpenter" },
  };
  const failed: Event = {
    metadata: { name: "stuck.1", namespace: "default" },
    involvedObject: { kind: "Pod", namespace: "default", name: "stuck" },
    reason: "FailedScheduling",
    message: `Failed to schedule pod, incompatible with nodepool "general", daemonset overhead={}, incompatible requirements, key example.com/rack, example.com/rack In [r9] not in example.com/rack In [r1]`,
    lastTimestamp: new Date(NOW - 30_000).toISOString(),
    source: { component: "karpenter" },
  };
  const snapshot: WireObject[] = [
    { kind: "NodePool", object: nodePool("general", { disruption: { consolidateAfter: "1m" } }) },
    {
      kind: "NodePool",
      object: nodePool("frozen", { disruption: { consolidateAfter: "1m", budgets: [{ nodes: "0" }] } }),
    },
    ...nodeClaims.map((object): WireObject => ({ kind: "NodeClaim", object })),
    ...nodes.map((object): WireObject => ({ kind: "Node", object })),
    { kind: "Pod", object: dnd },
    { kind: "Pod", object: owned("db-0", "c", { app: "db" }) },
    { kind: "Pod", object: owned("stuck", undefined) },
    { kind: "PodDisruptionBudget", object: pdb },
    { kind: "Event", object: blocked },
    { kind: "Event", object: failed },
  ];
  await deliverSnapshot(hub, NOW, snapshot);
  // The apiserver's TTL deletes the Events: core keeps them.
  await deliver(hub, {
    clusterId: "c1",
    sessionId: "s1",
    sequence: 2,
    receivedAt: NOW,
    changes: [blocked, failed].map((object) => ({
      op: "delete" as const,
      kind: "Event" as const,
      key: `default/${object.metadata.name ?? ""}`,
      object,
      observedAt: NOW,
    })),
    lifecycle: [],
  });
  app = await build({
    tokens: { admin: "a-token", viewer: "v-token" },
    plugins: [consoleRoutes({ hub, prices, now: () => clock.now() })],
  });
  registry = new Registry();
  registerDashboardMetrics(registry, {
    hub,
    prices,
    now: () => clock.now(),
    spotPolicies: () => Promise.resolve([]),
  });
});

after(async () => {
  await app.close();
  await store.close();
});

const get = async <T>(url: string): Promise<T> => {
  const r = await app.inject({ url, headers: V });
  assert.equal(r.statusCode, 200, r.body);
  return r.json<T>();
};

function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.split(" ").at(-1));
  }
  return undefined;
}

describe("consolidation routes", () => {
  it("lists each blocked node with its reason, object and savings, summed per pool and reason", async () => {
    const v = await get<ConsolidationViewDto>("/api/v1/clusters/c1/consolidation");
    const reasons = new Map(
      v.items.map((n) => [n.node, n.blockers.map((b) => `${b.reason}:${b.object.kind}/${b.object.name}`)]),
    );
    assert.deepEqual(reasons.get("a"), ["do-not-disrupt-pod:Pod/batch-1"]);
    assert.deepEqual(reasons.get("c"), ["pdb:PodDisruptionBudget/db"]);
    assert.deepEqual(reasons.get("d"), ["budget:NodePool/frozen"]);
    assert.deepEqual(reasons.get("b"), []);
    // c-4x: 0.025 × 4 + 0.001 × 8 GiB = 0.1086 $/h; pods fit elsewhere, so each blocked node saves all.
    const price = 0.025 * 4 + (0.001 * 8 * 2 ** 30) / 1e9;
    assert.ok(Math.abs(v.blockedCostPerHour - 3 * price) < 1e-9, String(v.blockedCostPerHour));
    assert.equal(v.blockedNodes, 3);
    assert.deepEqual(
      v.byPool.map((p) => [p.nodePool, p.nodes, p.blockedNodes]),
      [
        ["general", 3, 2],
        ["frozen", 1, 1],
      ],
    );
    // Karpenter's Event on c, deleted from the apiserver, is still shown.
    assert.equal(v.items.find((n) => n.node === "c")?.events[0]?.reason, "DisruptionBlocked");
    const filtered = await get<ConsolidationViewDto>("/api/v1/clusters/c1/consolidation?reason=pdb");
    assert.deepEqual(
      filtered.items.map((n) => n.node),
      ["c"],
    );
    assert.equal(filtered.blockedNodes, 3, "filters narrow the list, not the sums");
  });

  it("shows the same figures in /metrics", async () => {
    const v = await get<ConsolidationViewDto>("/api/v1/clusters/c1/consolidation");
    const text = await registry.render();
    for (const p of v.byPool) {
      assert.equal(
        sample(text, "wave_nodepool_consolidation_blocked_nodes", { cluster: "c1", nodepool: p.nodePool }),
        p.blockedNodes,
      );
      const cost = sample(text, "wave_nodepool_consolidation_blocked_cost_per_hour_dollars", {
        cluster: "c1",
        nodepool: p.nodePool,
      });
      assert.ok(Math.abs((cost ?? NaN) - p.blockedCostPerHour) < 1e-9, p.nodePool);
    }
    for (const r of v.byPoolReason) {
      const l = { cluster: "c1", nodepool: r.nodePool, reason: r.reason };
      assert.equal(sample(text, "wave_consolidation_blocked_nodes", l), r.blockedNodes);
      assert.ok(
        Math.abs(
          (sample(text, "wave_consolidation_blocked_cost_per_hour_dollars", l) ?? NaN) - r.blockedCostPerHour,
        ) < 1e-9,
      );
    }
    assert.equal(
      sample(text, "wave_pending_pods_by_reason", {
        cluster: "c1",
        nodepool: "general",
        reason: "requirement",
      }),
      1,
    );
  });

  it("the routes and /metrics read one assembly: clusterExplanations", async () => {
    const c = hub.get("c1");
    assert.ok(c);
    const one = clusterExplanations(c, hub, prices, NOW);
    // The routes answer exactly its views…
    assert.deepEqual(await get<ConsolidationViewDto>("/api/v1/clusters/c1/consolidation"), one.consolidation);
    assert.deepEqual(await get<PendingViewDto>("/api/v1/clusters/c1/pending"), one.pending);
    // …and /metrics holds exactly its sums, one series each, none beside them.
    const text = await registry.render();
    const series = (name: string): string[] =>
      text
        .split("\n")
        .filter((l) => l.startsWith(`${name}{`))
        .sort();
    const line = (name: string, labels: Record<string, string>, value: number): string =>
      `${name}{${Object.entries({ cluster: "c1", ...labels })
        .map(([k, v]) => `${k}="${v}"`)
        .join(",")}} ${value}`;
    const expect = (rows: string[]): string[] => rows.sort();
    assert.deepEqual(
      series("wave_nodepool_consolidation_blocked_nodes"),
      expect(
        one.consolidation.byPool.map((p) =>
          line("wave_nodepool_consolidation_blocked_nodes", { nodepool: p.nodePool }, p.blockedNodes),
        ),
      ),
    );
    assert.deepEqual(
      series("wave_consolidation_blocked_cost_per_hour_dollars"),
      expect(
        one.consolidation.byPoolReason.map((r) =>
          line(
            "wave_consolidation_blocked_cost_per_hour_dollars",
            { nodepool: r.nodePool, reason: r.reason },
            r.blockedCostPerHour,
          ),
        ),
      ),
    );
    assert.deepEqual(
      series("wave_pending_pods_by_reason"),
      expect(
        one.pending.byPoolReason.map((r) =>
          line("wave_pending_pods_by_reason", { nodepool: r.nodePool ?? "", reason: r.kind }, r.pods),
        ),
      ),
    );
    assert.ok(one.consolidation.byPool.length > 0 && one.pending.byPoolReason.length > 0);
  });

  it("explains pending pods per NodePool with their wait", async () => {
    const v = await get<PendingViewDto>("/api/v1/clusters/c1/pending");
    assert.equal(v.pods.length, 1);
    const [stuck] = v.pods;
    assert.ok(stuck);
    assert.equal(stuck.waitingSeconds, 120);
    assert.deepEqual(
      stuck.reasons.map((r) => [r.nodePool, r.kind, r.key]),
      [["general", "requirement", "example.com/rack"]],
    );
  });

  it("gives the node drawer its disruption section", async () => {
    const d = await get<NodeDetailDto>("/api/v1/clusters/c1/nodes/a");
    assert.ok(d.disruption);
    assert.equal(d.disruption.disruptable, false);
    assert.equal(d.disruption.blockers[0]?.reason, "do-not-disrupt-pod");
  });

  it("answers 404 for an unknown cluster", async () => {
    const r = await app.inject({ url: "/api/v1/clusters/nope/consolidation", headers: V });
    assert.equal(r.statusCode, 404);
  });
});
