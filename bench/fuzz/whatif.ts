// The what-if body's fuzz target (issue 29): `POST /api/v1/clusters/{id}/whatif` on loopback over a
// small cluster in core's hub and store (two KWOK NodePools, two workloads, an hour of pods per
// workload), with the simulator's real replay behind it. Bodies are mostly well-formed candidates
// with every numeric field at, inside and beyond its bounds (spotInterruptionRate 60 with 1 s
// boots was a 500), then mutated or mangled. Any 5xx is a bug: a valid body gets a result or a
// 4xx with a reason.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "../../src/api/app.ts";
import { whatifRoutes, type WhatifRunner } from "../../src/api/routes/whatif.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { deliver } from "../../src/core/hub/testing.ts";
import { openStore } from "../../src/core/store/open.ts";
import type { Store } from "../../src/core/store/store.ts";
import type { NodePool } from "../../src/objects/karpenter.ts";
import type { Pod } from "../../src/objects/kube.ts";
import { FakeClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { seeded } from "../../src/shared/random.ts";
import { clusterWhatif } from "../../src/sim/cluster-whatif.ts";
import { gen, type Json } from "./gen.ts";
import type { TargetResult } from "./targets.ts";

const LOOPBACK = "127.0.0.1";
const VIEWER = "fuzz-viewer-token-0123456789";
const NOW = Date.parse("2026-12-03T12:00:00Z");
const MIN = 60_000;

const kwokPool = (name: string, capacity: string[], cpu: string): NodePool => ({
  metadata: { name },
  spec: {
    disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "30s" },
    template: {
      spec: {
        requirements: [
          { key: "karpenter.sh/capacity-type", operator: "In", values: capacity },
          { key: "karpenter.kwok.sh/instance-cpu", operator: "In", values: [cpu] },
        ],
      },
    },
  },
});

const podOf = (app: string, i: number, cpu: string): Pod => ({
  metadata: {
    name: `${app}-5c8d-${i}`,
    namespace: "shop",
    creationTimestamp: new Date(NOW - 30 * MIN).toISOString(),
    labels: { app, "pod-template-hash": "5c8d" },
    ownerReferences: [
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: `${app}-5c8d`, uid: `rs-${app}`, controller: true },
    ],
  },
  spec: { containers: [{ name: app, resources: { requests: { cpu, memory: "256Mi" } } }] },
  status: { phase: "Pending" },
});

/** Core's hub and store as the agent and the samplers fill them for a small cluster, `hours` of history. */
export async function whatifFixture(hours = 1): Promise<{
  hub: ClusterHub;
  store: Store;
  close: () => Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), "wave-fuzz-whatif-"));
  const store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  const hub = new ClusterHub(store, new FakeClock(NOW));
  await hub.clusterConnected({
    clusterId: "c1",
    kubernetesVersion: "v1.34.1",
    karpenterVersion: "v1.8.2",
    agentVersion: "0.1.0",
    sessionId: "s1",
    connectedAt: NOW - 3_600_000,
  });
  await deliver(hub, {
    clusterId: "c1",
    sessionId: "s1",
    sequence: 1,
    receivedAt: NOW,
    snapshot: [
      { kind: "NodePool", object: kwokPool("flex", ["spot", "on-demand"], "4") },
      { kind: "NodePool", object: kwokPool("steady", ["on-demand"], "8") },
      ...Array.from({ length: 6 }, (_, i) => ({ kind: "Pod" as const, object: podOf("api", i, "500m") })),
      ...Array.from({ length: 2 }, (_, i) => ({ kind: "Pod" as const, object: podOf("web", i, "2") })),
    ],
    changes: [],
    lifecycle: [],
  });
  // Each hour: api steps 2 → 6 → 3 → 6, web 1 → 2.
  const minutes = Math.round(hours * 60);
  await store.writeWorkloadPods(
    Array.from({ length: minutes }, (_, i) => [
      {
        clusterId: "c1",
        workload: "shop/Deployment/api",
        ts: NOW - (minutes - i) * MIN,
        stepMs: MIN,
        pods: i % 60 < 15 ? 2 : i % 60 < 30 ? 6 : i % 60 < 45 ? 3 : 6,
      },
      {
        clusterId: "c1",
        workload: "shop/Deployment/web",
        ts: NOW - (minutes - i) * MIN,
        stepMs: MIN,
        pods: i % 60 < 30 ? 1 : 2,
      },
    ]).flat(),
  );
  return {
    hub,
    store,
    close: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function heapAfterGc(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

/** `n` generated what-if bodies against the route; `run` defaults to the replay in this thread. */
export async function fuzzWhatif(
  n: number,
  seed: number,
  run: WhatifRunner = (input) => clusterWhatif(input),
): Promise<TargetResult> {
  const g = gen(seeded(seed));
  const fx = await whatifFixture();
  const app = await build({
    tokens: { admin: "fuzz-admin-token-0123456789", viewer: VIEWER },
    plugins: [whatifRoutes({ hub: fx.hub, now: () => NOW, run })],
  });
  await app.listen({ host: LOOPBACK, port: 0 });
  const url = `http://${LOOPBACK}:${(app.server.address() as { port: number }).port}/api/v1/clusters/c1/whatif`;
  const statuses: Record<string, number> = {};
  const examples: string[] = [];
  let serverErrors = 0;
  const workload = (): Json => ({
    kind: g.chance(0.9) ? "Deployment" : g.pick(["StatefulSet", "Job"]),
    namespace: g.chance(0.9) ? "shop" : "data",
    name: g.chance(0.9) ? g.pick(["api", "web"]) : "nope",
  });
  const spot = (): Json => ({
    workload: workload(),
    threshold: g.pick([0, 1, 2, 3, 6, 100, 1000]),
    strategy: g.pick(["Prefer", "Require"]),
    ...(g.chance(0.3) ? { percentAboveBase: g.pick([0, 25, 50, 100]) } : {}),
  });
  const warm = (): Json => ({
    enabled: g.chance(0.8),
    ...(g.chance(0.6) ? { maxWarmNodes: g.pick([0, 1, 2, 5, 20]) } : {}),
    ...(g.chance(0.5) ? { ttlSeconds: g.pick([60, 300, 600, 3600, 86400]) } : {}),
    ...(g.chance(0.3) ? { cooldownSeconds: g.pick([0, 60, 300]) } : {}),
    ...(g.chance(0.2) ? { maxCostPerHour: g.pick([0, 0.1, 1.5, 100]) } : {}),
  });
  const body = (): Json => {
    const b: Record<string, Json> = {};
    if (g.chance(0.6)) b.spot = Array.from({ length: 1 + g.int(2) }, spot);
    if (!b.spot || g.chance(0.3)) b.warmup = { [g.chance(0.9) ? g.pick(["flex", "steady"]) : "gpu"]: warm() };
    if (g.chance(0.5)) b.windowHours = g.pick([0.001, 0.1, 0.5, 1, 2, 24, 0, 25, -1]);
    if (g.chance(0.5)) b.bootDelaySeconds = g.pick([1, 1, 5, 60, 3600, 0, 3601, 1.5]);
    if (g.chance(0.6)) b.spotInterruptionRate = g.pick([0, 0.02, 1, 10, 60, 60, 61, -1]);
    if (g.chance(0.5)) b.seed = g.pick([0, 1, 7, 999_999_999, 1_000_000_000, -1]);
    return b;
  };
  const started = performance.now();
  // Measured after a GC, as the other targets do (issue 42): without one, a replay's garbage still
  // uncollected read as 82 MB "kept"; collected, what the route and the replays keep is ~14 MB,
  // the same after 60 inputs as after 200.
  const heapBefore = heapAfterGc();
  // One at a time: a replay takes a CPU, as it does in core.
  for (let i = 0; i < n; i++) {
    const valid = body();
    const roll = g.int(10);
    const payload =
      roll < 6
        ? JSON.stringify(valid)
        : roll < 9
          ? JSON.stringify(g.mutate(valid, 1))
          : g.mangle(JSON.stringify(valid));
    const res = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${VIEWER}`, "content-type": "application/json" },
      body: payload,
    }).catch((err: unknown) => ({ status: 0, text: () => Promise.resolve(String(err)) }));
    const text = await res.text();
    statuses[String(res.status)] = (statuses[String(res.status)] ?? 0) + 1;
    if (res.status >= 500 || res.status === 0) {
      serverErrors++;
      if (examples.length < 5) examples.push(`${payload} → ${res.status} ${text}`.slice(0, 400));
    }
  }
  const ms = performance.now() - started;
  await app.close();
  await fx.close();
  return {
    target: "what-if",
    inputs: n,
    serverErrors,
    statuses,
    examples,
    heapGrowth: heapAfterGc() - heapBefore,
    ms,
  };
}
