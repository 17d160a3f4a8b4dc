import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ClusterHub } from "../core/hub/hub.ts";
import { openStore } from "../core/store/open.ts";
import { buildOverview } from "../dashboard/views.ts";
import { cluster, nodePool, pod } from "../dashboard/testkit.ts";
import type { Event, Pod } from "../objects/kube.ts";
import { createPricing } from "../pricing/setup.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { Registry } from "../shared/metrics.ts";
import type { SpotPolicy } from "../policy/spot.ts";
import { registerDashboardMetrics } from "./collector.ts";
import { buildSpotView } from "../views/spot.ts";
import { deliver } from "../core/hub/testing.ts";

/** value of the one sample of `name` whose labels include `labels`. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.split(" ").at(-1));
  }
  return undefined;
}
const sum = (text: string, name: string, labels: Record<string, string> = {}): number =>
  text
    .split("\n")
    .filter(
      (l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)),
    )
    .reduce((s, l) => s + Number(l.split(" ").at(-1)), 0);

function owned(name: string, node: string | undefined, deployment: string): Pod {
  const p = pod(name, node, "1", "1Gi");
  p.metadata.namespace = "shop";
  p.metadata.labels = { "pod-template-hash": "abc12" };
  p.metadata.ownerReferences = [
    {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      name: `${deployment}-abc12`,
      uid: `rs-${deployment}`,
      controller: true,
    },
  ];
  return p;
}

/** shop/web (Deployment) under Prefer, threshold 1: the placement tests' policy. */
const WEB_POLICY: SpotPolicy = {
  workload: { namespace: "shop", kind: "Deployment", name: "web" },
  threshold: 1,
  strategy: "Prefer",
};

async function setup(policies: SpotPolicy[] = []) {
  const clock = new FakeClock(Date.UTC(2026, 5, 1));
  const store = await openStore({ backend: "sqlite", path: ":memory:" }, { log: silentLogger });
  const hub = new ClusterHub(store, clock);
  const entry = hub.ensure("c1");
  entry.connected = true;
  entry.lastSeen = clock.now();
  const { nodes, nodeClaims } = cluster([
    {
      name: "a",
      pool: "general",
      instanceType: "m5.large",
      capacityType: "spot",
      zone: "us-east-1a",
      cpu: "2",
    },
    {
      name: "b",
      pool: "general",
      instanceType: "m5.large",
      capacityType: "on-demand",
      zone: "us-east-1a",
      cpu: "2",
    },
    {
      name: "c",
      pool: "batch",
      instanceType: "m5.xlarge",
      capacityType: "spot",
      zone: "us-east-1b",
      cpu: "4",
    },
  ]);
  entry.state.batch(() => {
    entry.state.replaceAll("NodePool", [nodePool("general"), nodePool("batch")]);
    entry.state.replaceAll("NodeClaim", nodeClaims);
    entry.state.replaceAll("Node", nodes);
    entry.state.replaceAll("Pod", [
      owned("web-1", "a", "web"),
      owned("web-2", "b", "web"),
      owned("web-3", "c", "web"),
      owned("web-4", undefined, "web"),
      pod("bare", "a", "500m", "1Gi"),
    ]);
  });
  const prices = createPricing({ clock }).provider;
  const registry = new Registry();
  const m = registerDashboardMetrics(registry, {
    hub,
    prices,
    now: () => clock.now(),
    spotPolicies: () => Promise.resolve(policies),
  });
  return { hub, entry, prices, registry, m, clock, close: () => store.close() };
}

describe("dashboard figures in /metrics", () => {
  it("exposes nodes, cost and spot ratio per cluster and pool equal to the API's overview", async () => {
    const s = await setup();
    try {
      const text = await s.registry.render();
      const o = buildOverview({
        clusterId: "c1",
        state: s.entry.state,
        prices: s.prices,
        now: s.clock.now(),
      });
      assert.equal(sum(text, "wave_nodes", { cluster: "c1" }), o.nodes);
      assert.equal(
        sum(text, "wave_nodes", { nodepool: "general", capacity_type: "spot", instance_type: "m5.large" }),
        1,
      );
      assert.ok(
        Math.abs(sum(text, "wave_nodepool_cost_per_hour_dollars", { cluster: "c1" }) - o.costPerHour) < 1e-9,
      );
      assert.ok(o.costPerHour > 0);
      for (const basis of ["nodes", "vcpu", "cost"] as const)
        assert.ok(
          Math.abs((sample(text, "wave_spot_ratio", { basis }) ?? NaN) - o.spotRatio[basis]) < 1e-9,
          basis,
        );
      assert.ok(
        Math.abs(sum(text, "wave_nodepool_spot_savings_per_hour_dollars") - o.spotSavingsPerHour) < 1e-9,
        "savings per hour",
      );
      assert.equal(sample(text, "wave_cluster_connected", { cluster: "c1" }), 1);
      assert.equal(
        sample(text, "wave_nodepool_resource_requested", { nodepool: "general", resource_type: "cpu" }),
        2.5,
      );
      assert.equal(sample(text, "wave_nodepool_thrashing", { nodepool: "batch" }), 0);
      assert.equal(sample(text, "wave_pending_pods", { cluster: "c1" }), 1);
      // Zero series so panels and alerts see every pool before anything happens.
      assert.equal(
        sample(text, "wave_disruptions_total", { nodepool: "general", reason: "Underutilized" }),
        0,
      );
      assert.equal(sample(text, "wave_warmup_misses_total", { nodepool: "batch", reason: "ttl" }), 0);
      assert.doesNotMatch(text, /wave_spot_placement_pods\{/, "no policies, no placement series");
    } finally {
      await s.close();
    }
  });

  it("counts pods on a node without a capacity-type label, or one not known yet, as the Spot page does", async () => {
    const policy = WEB_POLICY;
    const s = await setup([policy]);
    try {
      // A node outside Karpenter (no karpenter.sh/capacity-type), and a pod bound to a node the
      // state has not seen yet: both run somewhere, neither is pending.
      const unlabeled = cluster([
        {
          name: "mng",
          pool: "general",
          instanceType: "m5.large",
          capacityType: "on-demand",
          zone: "us-east-1a",
          cpu: "2",
        },
      ]).nodes[0];
      if (!unlabeled) throw new Error("node");
      delete unlabeled.metadata.labels?.["karpenter.sh/capacity-type"];
      s.entry.state.apply("Node", "add", unlabeled);
      s.entry.state.apply("Pod", "update", owned("web-4", "mng", "web"));
      s.entry.state.apply("Pod", "add", owned("web-5", "not-yet-seen", "web"));
      const text = await s.registry.render();
      const page = buildSpotView({
        clusterId: "c1",
        state: s.entry.state,
        policies: [policy],
        prices: s.prices,
        now: s.clock.now(),
      }).workloads.find((w) => w.workload.name === "web");
      const w = { namespace: "shop", workload: "web" };
      const metrics = {
        onDemand: sample(text, "wave_spot_placement_pods", { ...w, capacity_type: "on-demand" }),
        spot: sample(text, "wave_spot_placement_pods", { ...w, capacity_type: "spot" }),
        pending: sample(text, "wave_spot_placement_pods", { ...w, capacity_type: "pending" }),
      };
      const actual = page?.actual;
      assert.deepEqual(actual, { onDemand: 3, spot: 2, pending: 0 });
      assert.deepEqual(metrics, actual);
    } finally {
      await s.close();
    }
  });

  it("counts a policy workload's pods by capacity type and follows changes", async () => {
    const policy = WEB_POLICY;
    const s = await setup([policy]);
    try {
      let text = await s.registry.render();
      const w = { namespace: "shop", workload: "web" };
      assert.equal(sample(text, "wave_spot_placement_pods", { ...w, capacity_type: "spot" }), 2);
      assert.equal(sample(text, "wave_spot_placement_pods", { ...w, capacity_type: "on-demand" }), 1);
      assert.equal(sample(text, "wave_spot_placement_pods", { ...w, capacity_type: "pending" }), 1);
      assert.equal(sample(text, "wave_spot_placement_target_on_demand_pods", w), 1);
      assert.equal(sample(text, "wave_spot_repair_events_total", { cluster: "c1", namespace: "shop" }), 0);
      // The pending pod lands on the on-demand node; one spot pod finishes.
      s.entry.state.apply("Pod", "update", owned("web-4", "b", "web"));
      const done = owned("web-3", "c", "web");
      done.status = { phase: "Succeeded" };
      s.entry.state.apply("Pod", "update", done);
      text = await s.registry.render();
      assert.equal(sample(text, "wave_spot_placement_pods", { ...w, capacity_type: "spot" }), 1);
      assert.equal(sample(text, "wave_spot_placement_pods", { ...w, capacity_type: "on-demand" }), 2);
      assert.equal(sample(text, "wave_spot_placement_pods", { ...w, capacity_type: "pending" }), 0);
    } finally {
      await s.close();
    }
  });

  it("feeds counters from ingested batches: disruptions, lifecycle durations and spot repairs", async () => {
    const s = await setup();
    try {
      const step = (type: string, at: string, extra: Record<string, string> = {}) => ({
        id: `nc1-${type}`,
        type: type as "Launched",
        at,
        nodeClaim: "nc1",
        uid: "u1",
        nodePool: "general",
        capacityType: "spot",
        source: "condition" as const,
        ...extra,
      });
      const eventUpsert = (object: Event & { metadata: { name: string; namespace: string } }) => ({
        op: "upsert" as const,
        kind: "Event" as const,
        key: `${object.metadata.namespace}/${object.metadata.name}`,
        observedAt: 0,
        object,
      });
      const batch = {
        clusterId: "c1",
        sessionId: "s",
        sequence: 1,
        receivedAt: s.clock.now(),
        lifecycle: [
          step("Launched", "2026-06-01T00:00:00Z"),
          step("Registered", "2026-06-01T00:00:20Z"),
          step("Initialized", "2026-06-01T00:00:30Z"),
          step("Disrupted", "2026-06-01T01:00:00Z", { reason: "Underutilized" }),
        ],
        changes: [
          eventUpsert({
            metadata: { name: "r1", namespace: "shop", uid: "e1" },
            involvedObject: { kind: "Pod", namespace: "shop", name: "web-1" },
            reason: "WaveSpotRepair",
            count: 2,
          }),
          // The webhook's late answers share the repair's component but are no repair.
          eventUpsert({
            metadata: { name: "l1", namespace: "shop", uid: "e2" },
            involvedObject: { kind: "Deployment", namespace: "shop", name: "web" },
            reason: "WaveSpotLateAnswer",
            reportingComponent: "wave-spot-repair",
            count: 5,
          }),
        ],
      };
      await deliver(s.hub, batch);
      await deliver(s.hub, { ...batch, sequence: 2 }); // a resend counts nothing twice
      const text = await s.registry.render();
      assert.equal(
        sample(text, "wave_disruptions_total", { nodepool: "general", reason: "Underutilized" }),
        1,
      );
      const l = { nodepool: "general", capacity_type: "spot" };
      assert.equal(
        sample(text, "wave_nodeclaim_phase_duration_seconds_sum", {
          ...l,
          transition: "launched_to_registered",
        }),
        20,
      );
      assert.equal(
        sample(text, "wave_nodeclaim_phase_duration_seconds_sum", {
          ...l,
          transition: "launched_to_initialized",
        }),
        30,
      );
      assert.equal(sample(text, "wave_spot_repair_events_total", { namespace: "shop" }), 2);
      s.m.events.warmup("c1", { type: "miss", pool: "general", at: 0, reason: "ttl" });
      s.m.events.warmup("c1", { type: "hit", pool: "general", at: 0, node: "a" }, 85);
      const t2 = await s.registry.render();
      assert.equal(sample(t2, "wave_warmup_misses_total", { nodepool: "general", reason: "ttl" }), 1);
      assert.equal(sample(t2, "wave_warmup_time_saved_seconds_total", { nodepool: "general" }), 85);
    } finally {
      await s.close();
    }
  });
});
