// The what-if route through Fastify's inject(): core's hub and store (SQLite) as the agent and the
// samplers fill them, the simulator's real replay behind it.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { ClusterHub } from "../../core/hub/hub.ts";
import { openStore } from "../../core/store/open.ts";
import type { Store } from "../../core/store/store.ts";
import type { WhatifReportDto } from "../../dashboard/dto.ts";
import type { Pod } from "../../objects/kube.ts";
import { FakeClock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import { clusterWhatif } from "../../sim/cluster-whatif.ts";
import { build } from "../app.ts";
import { observedBootMs, observedCadence, observedTemplateChanges, whatifRoutes } from "./whatif.ts";
import { seeded } from "../../shared/random.ts";
import { connectTestCluster, deliverSnapshot } from "../../core/hub/testing.ts";
import { kwokTestPool } from "../../sim/pool.test-helper.ts";

const NOW = Date.parse("2026-12-03T12:00:00Z");
const MIN = 60_000;
const V = { authorization: "Bearer v-token" };

const pool = kwokTestPool("flex", { cpu: "4", consolidateAfter: "30s" });
const apiPod = (i: number): Pod => ({
  metadata: {
    name: `api-5c8d-${i}`,
    namespace: "shop",
    creationTimestamp: new Date(NOW - 30 * MIN).toISOString(),
    labels: { app: "api", "pod-template-hash": "5c8d" },
    ownerReferences: [
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: "api-5c8d", uid: "rs", controller: true },
    ],
  },
  spec: { containers: [{ name: "api", resources: { requests: { cpu: "500m", memory: "256Mi" } } }] },
  status: { phase: "Pending" },
});

let dir: string;
let store: Store;
let app: FastifyInstance;
/** The same core with the policies in force read from the cluster's resources (issue 31). */
let crApp: FastifyInstance;
let runs = 0;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-whatif-"));
  store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  const clock = new FakeClock(NOW);
  const hub = new ClusterHub(store, clock);
  await connectTestCluster(hub, NOW - 3_600_000);
  await deliverSnapshot(hub, NOW, [
    { kind: "NodePool", object: pool },
    ...Array.from({ length: 6 }, (_, i) => ({ kind: "Pod" as const, object: apiPod(i) })),
    // What a console edit or GitOps made of the policy since the migration: threshold 1.
    {
      kind: "SpotPolicy" as const,
      object: {
        apiVersion: "wave.sh/v1alpha1",
        kind: "SpotPolicy",
        metadata: { name: "api", namespace: "shop" },
        spec: { targetRef: { kind: "Deployment", name: "api" }, threshold: 1, strategy: "Prefer" },
      },
    },
  ]);
  // The last 20 minutes: 2 pods, then 6 from 10 minutes ago.
  await store.writeWorkloadPods(
    Array.from({ length: 20 }, (_, i) => ({
      clusterId: "c1",
      workload: "shop/Deployment/api",
      ts: NOW - (20 - i) * MIN,
      stepMs: MIN,
      pods: i < 10 ? 2 : 6,
    })),
  );
  await store.putPolicy(
    "c1",
    "spot",
    "shop/Deployment/api",
    { workload: { kind: "Deployment", namespace: "shop", name: "api" }, threshold: 0, strategy: "Prefer" },
    NOW,
  );
  // Core's what-if route over this hub; `crs`: the policies read from the cluster's CRs.
  const whatifApp = (o: { policySource?: "crs"; run: Parameters<typeof whatifRoutes>[0]["run"] }) =>
    build({
      tokens: { admin: "a-token", viewer: "v-token" },
      plugins: [whatifRoutes({ hub, now: () => clock.now(), ...o })],
    });
  app = await whatifApp({
    run: (input) => {
      runs++;
      return clusterWhatif(input);
    },
  });
  crApp = await whatifApp({ policySource: "crs", run: (input) => clusterWhatif(input) });
});

after(async () => {
  await crApp.close();
  await app.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const post = (body: unknown, id = "c1") =>
  app.inject({ method: "POST", url: `/api/v1/clusters/${id}/whatif`, headers: V, payload: body as object });

void describe("POST /api/v1/clusters/:id/whatif", () => {
  void it("replays the cluster's stored pod counts under its stored policy and the candidate", async () => {
    const res = await post({
      spot: [
        {
          workload: { kind: "Deployment", namespace: "shop", name: "api" },
          threshold: 2,
          strategy: "Prefer",
        },
      ],
      spotInterruptionRate: 0,
    });
    assert.equal(res.statusCode, 200, res.body);
    const r = res.json<WhatifReportDto>();
    assert.equal(r.clusterId, "c1");
    assert.equal(r.catalog, "kwok");
    assert.equal(r.historyBuckets, 20);
    assert.equal(r.from, NOW - 20 * MIN);
    assert.deepEqual(r.workloads, ["shop/Deployment/api"]);
    assert.equal(r.current.policy.spot[0]?.threshold, 0, "the stored policy is the current one");
    assert.deepEqual(r.current.now.workloads["shop/Deployment/api"], { onDemand: 0, spot: 6, pending: 0 });
    assert.deepEqual(r.candidate.now.workloads["shop/Deployment/api"], { onDemand: 2, spot: 4, pending: 0 });
    assert.ok(r.candidate.now.costPerHour > r.current.now.costPerHour);
    assert.ok(Math.abs(r.candidate.costPerMonth - r.candidate.costPerHour * 730) < 1e-9);
    assert.equal(r.current.spotShare, 1);
    assert.ok(r.candidate.spotShare > 0 && r.candidate.spotShare < 1);
    assert.ok(r.candidate.podStart.count >= 4, "the scale-up from 2 to 6 pods is measured");
  });

  void it("starts from the cluster's SpotPolicy resources once they are the truth, not the store", async () => {
    const body = { warmup: { flex: { enabled: true } }, spotInterruptionRate: 0 };
    const res = await crApp.inject({
      method: "POST",
      url: "/api/v1/clusters/c1/whatif",
      headers: V,
      payload: body,
    });
    assert.equal(res.statusCode, 200, res.body);
    const r = res.json<WhatifReportDto>();
    assert.equal(r.current.policy.spot[0]?.threshold, 1, "the resource's threshold, not the stored 0");
    assert.equal(r.current.now.workloads["shop/Deployment/api"]?.onDemand, 1);
  });

  void it("answers bad bodies with 400 and a reason, before any replay", async () => {
    const before = runs;
    const cases: [unknown, RegExp][] = [
      [{}, /nothing to compare/],
      [
        {
          spot: [
            {
              workload: { kind: "Deployment", namespace: "shop", name: "api" },
              threshold: -1,
              strategy: "Prefer",
            },
          ],
        },
        /invalid spot candidate: spot\[0\]\.threshold/,
      ],
      [{ warmup: { flex: { maxWarmNodes: "two" } } }, /maxWarmNodes/],
      [{ warmup: { flex: { ttlSeconds: 1 } } }, /invalid warmup candidate for flex: ttlSeconds/],
      [{ warmup: { flex: {} }, windowHours: 48 }, /windowHours/],
      [{ warmup: { flex: {} }, colour: "blue" }, /must NOT have additional properties/],
    ];
    for (const [body, why] of cases) {
      const res = await post(body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.match(res.json<{ message: string }>().message, why);
    }
    assert.equal(runs, before);
  });

  void it("names what the cluster has when the candidate targets something it does not", async () => {
    const res = await post({ warmup: { gpu: { enabled: true } } });
    assert.equal(res.statusCode, 400);
    assert.match(res.json<{ message: string }>().message, /no NodePool gpu \(NodePools: flex\)/);
    const spot = await post({
      spot: [
        {
          workload: { kind: "Deployment", namespace: "shop", name: "web" },
          threshold: 1,
          strategy: "Prefer",
        },
      ],
    });
    assert.equal(spot.statusCode, 400);
    assert.match(
      spot.json<{ message: string }>().message,
      /no live pod of deployment\/shop\/web.*shop\/Deployment\/api/,
    );
  });

  void it("needs a token, and a cluster core knows", async () => {
    const anon = await app.inject({ method: "POST", url: "/api/v1/clusters/c1/whatif", payload: {} });
    assert.equal(anon.statusCode, 401);
    assert.equal((await post({ warmup: { flex: {} } }, "nope")).statusCode, 404);
  });
});

void describe("the cluster's own boot time", () => {
  void it("is the median Launched → Initialized (else Registered) of its recorded NodeClaims", () => {
    const ev = (uid: string, phase: string, at: number) => ({ nodeClaimUid: uid, phase, at });
    assert.equal(
      observedBootMs([
        ev("a", "Launched", 0),
        ev("a", "Registered", 2_000),
        ev("a", "Initialized", 3_100),
        ev("b", "Launched", 10_000),
        ev("b", "Registered", 14_000),
        ev("c", "Launched", 20_000),
        ev("c", "Initialized", 80_000),
        ev("d", "Initialized", 5_000), // launched before the window: no boot to measure
      ]),
      4_000,
    );
    assert.equal(observedBootMs([]), undefined);
    assert.equal(observedBootMs([ev("a", "Launched", 0), ev("a", "Initialized", 10)]), 1000, "at least 1 s");
  });
});

void describe("the cluster's own control-loop period", () => {
  const H = 3_600_000;
  /** A lifecycle step (a launch, a boot, a removal: any phase) at each time. */
  const at = (times: number[]) => times.map((t) => ({ at: t }));

  void it("is the step of a cluster whose events fall on a grid (a fast-forwarded simulator), hour by hour", () => {
    const random = seeded(3);
    const times: number[] = [];
    // Two hours in 150 s steps (a few events each step, some steps without), then an hour of a
    // real cluster: events anywhere, a few seconds to minutes apart.
    for (let t = 0; t < 2 * H; t += 150_000) {
      if (random() < 0.15) continue;
      for (let k = 0; k < 3; k++) times.push(t + Math.floor(random() * 300)); // same step, ms apart
    }
    for (let t = 2 * H; t < 3 * H; t += 1000 + Math.floor(random() * 90_000)) times.push(t);
    const spans = observedCadence(at(times), 0, 3 * H);
    assert.deepEqual(
      spans.map((s) => [s.from, s.stepMs]),
      [
        [0, 150_000],
        [H, 150_000],
        [2 * H, 1000],
      ],
    );
  });

  void it("follows a step that changes slowly (the fast-forward's last hours) and says 1 s for few events", () => {
    const times: number[] = [];
    let step = 150_000;
    for (let t = 0; t < H; t += step) {
      times.push(t);
      step = Math.max(60_000, Math.round(step * 0.985));
    }
    const [span] = observedCadence(at(times), 0, H);
    assert.ok(span && span.stepMs >= 60_000 && span.stepMs <= 100_000, `step ${span?.stepMs}`);
    // A quiet real cluster: 8 launches an hour, far apart but off any grid.
    const quiet = observedCadence(
      at([0, 410_000, 1_130_000, 1_500_000, 2_222_000, 2_900_000, 3_100_000, 3_500_000]),
      0,
      H,
    );
    assert.deepEqual(quiet, [{ from: 0, stepMs: 1000 }]);
  });

  void it("follows the fast-forward's last hour, whose step shrinks to a sixtieth of the lag, in parts", () => {
    const random = seeded(5);
    const times: number[] = [];
    // The embedded cluster's last hour before real time: a step of lag/60 (60 s → 1 s, whole
    // seconds), an event on nearly every step (95 %, as the embedded day records), ms of jitter; read whole, no grid fits it.
    for (let t = 0; t < H;) {
      if (random() < 0.95) times.push(t + Math.floor(random() * 20));
      t += Math.max(1000, Math.round((H - t) / 60 / 1000) * 1000);
    }
    const spans = observedCadence(at(times), 0, H);
    const ticks = spans.reduce((n, s, i) => n + ((spans[i + 1]?.from ?? H) - s.from) / s.stepMs, 0);
    assert.ok((spans[0]?.stepMs ?? 0) >= 25_000, JSON.stringify(spans));
    // The replay's ticks over the hour: the recorded ~300 steps' order, not 3,600.
    assert.ok(ticks < 1200, `${Math.round(ticks)} ticks: ${JSON.stringify(spans)}`);
  });

  void it("reads the embedded start-up, two minutes at 5 s then 150 s, as such (not continuous)", () => {
    // The embedded day's first recorded hour as core stored it (s from the window's start).
    const start = [27.6, 32.7, 77.7, 82.7, 87.8];
    const times = [...start.map((t) => t * 1000)];
    for (let t = 237_800; t < H; t += 150_000) for (let k = 0; k < 3; k++) times.push(t + k * 20);
    const spans = observedCadence(at(times), 0, H);
    const ticks = spans.reduce((n, s, i) => n + ((spans[i + 1]?.from ?? H) - s.from) / s.stepMs, 0);
    assert.ok(
      spans.every((s) => s.stepMs >= 5000) && ticks < 600,
      `${Math.round(ticks)} ticks: ${JSON.stringify(spans)}`,
    );
    assert.equal(spans.at(-1)?.stepMs, 150_000);
  });

  void it("is 1 s for a busy real cluster, its halves read too", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const random = seeded(seed);
      const times: number[] = [];
      for (let t = 0; t < H; t += 1000 + Math.floor(random() * 30_000)) times.push(t);
      assert.deepEqual(observedCadence(at(times), 0, H), [{ from: 0, stepMs: 1000 }], `seed ${seed}`);
    }
  });

  void it("is 1 s for a real cluster however sparse, with events minutes apart", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const random = seeded(seed);
      const times: number[] = [];
      for (let t = 0; t < 4 * H; t += 20_000 + Math.floor(random() * 600_000)) times.push(t);
      for (const s of observedCadence(at(times), 0, 4 * H))
        assert.equal(s.stepMs, 1000, `seed ${seed} at ${s.from}`);
    }
  });
});

void describe("the cluster's recorded template changes", () => {
  void it("are the first of each run of Drifted disruptions per pool (gaps under 30 min: one rollout)", () => {
    const M = 60_000;
    const d = (nodePool: string, reason: string, at: number) => ({ nodePool, reason, at });
    assert.deepEqual(
      observedTemplateChanges([
        d("arm64", "Drifted", 10 * M),
        d("arm64", "Drifted", 12.5 * M),
        d("arm64", "Empty", 14 * M),
        d("arm64", "Drifted", 30 * M), // a pause mid-rollout: still the same change
        d("gpu", "Drifted", 11 * M),
        d("arm64", "Drifted", 100 * M),
        d("arm64", "Interrupted", 101 * M),
      ]),
      [
        { nodePool: "arm64", at: 10 * M - 1000 },
        { nodePool: "gpu", at: 11 * M - 1000 },
        { nodePool: "arm64", at: 100 * M - 1000 },
      ],
    );
    assert.deepEqual(observedTemplateChanges([d("general", "Underutilized", 5 * M)]), []);
  });
});
