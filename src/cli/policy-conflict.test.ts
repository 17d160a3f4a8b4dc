// Issue 43 (5): two SpotPolicies on one workload — one from Git, one from the console — read the
// same way by every reader of core: the set core serves (and a webhook pulling it), the Spot page
// and its API, the what-if, /metrics and `wave start`'s in-process webhook and repair. The rule
// (src/policy/in-force.ts): the one created first decides; the other is in conflict, and every
// other workload keeps its policy. Core's hub (SQLite store) seeded as the agent streams it.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { build } from "../api/app.ts";
import { policyRoutes } from "../api/routes/policies.ts";
import { consoleRoutes } from "../api/routes/console.ts";
import { whatifRoutes } from "../api/routes/whatif.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { connectTestCluster, deliverSnapshot } from "../core/hub/testing.ts";
import { IngestCore } from "../core/ingest/core.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import type { SpotViewDto, WhatifReportDto } from "../dashboard/dto.ts";
import type { Pod } from "../objects/kube.ts";
import type { SpotPolicyResource, WarmupPolicyResource } from "../objects/policy-crds.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { FakeClock } from "../shared/clock.ts";
import { Registry } from "../shared/metrics.ts";
import { silentLogger } from "../shared/log.ts";
import { clusterWhatif } from "../sim/cluster-whatif.ts";
import { kwokTestPool } from "../sim/pool.test-helper.ts";
import { InMemoryPolicySource, PullPolicySource } from "../webhook/policy-source.ts";
import { spotPolicyName, warmupPoliciesOf, warmupPolicyName } from "../console/policy-crs.ts";
import { dashboardMetrics, policyCrAccess } from "./parts.ts";
import { loadSpotPolicies } from "./start.ts";
import { run } from "./main.ts";
import { captureIo as io } from "../../test/support/io.ts";

const NOW = Date.UTC(2026, 11, 7, 12);
const V = { authorization: "Bearer v-token" };
const web = { namespace: "shop", kind: "Deployment" as const, name: "web" };
const api = { ...web, name: "api" };

const spotCr = (name: string, target: string, threshold: number, created: string): SpotPolicyResource => ({
  apiVersion: "wave.sh/v1alpha1",
  kind: "SpotPolicy",
  metadata: { name, namespace: "shop", creationTimestamp: created, resourceVersion: "1" },
  spec: { targetRef: { kind: "Deployment", name: target }, threshold, strategy: "Prefer" },
});

const pod = (app: string, i: number): Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name: `${app}-7d9f-${String(i)}`,
    namespace: "shop",
    uid: `${app}-${String(i)}`,
    resourceVersion: "1",
    labels: { app, "pod-template-hash": "7d9f" },
    ownerReferences: [
      { apiVersion: "apps/v1", kind: "ReplicaSet", name: `${app}-7d9f`, uid: `rs-${app}`, controller: true },
    ],
    creationTimestamp: "2026-12-07T10:00:00Z",
  },
  spec: {
    containers: [{ name: "c", image: "pause", resources: { requests: { cpu: "500m", memory: "256Mi" } } }],
  },
  status: { phase: "Pending" },
});

let dir: string;
let store: Store;
let hub: ClusterHub;
let clock: FakeClock;
const apps: FastifyInstance[] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-policy-conflict-"));
  store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  clock = new FakeClock(NOW);
  hub = new ClusterHub(store, clock);
  await connectTestCluster(hub, NOW - 3_600_000);
  await deliverSnapshot(hub, NOW, [
    { kind: "NodePool", object: kwokTestPool("flex", { cpu: "16", consolidateAfter: "30s" }) },
    ...Array.from({ length: 6 }, (_, i) => ({ kind: "Pod" as const, object: pod("web", i) })),
    ...Array.from({ length: 3 }, (_, i) => ({ kind: "Pod" as const, object: pod("api", i) })),
    // From Git a day ago; then from the console an hour ago, under a name that sorts first and
    // arriving last (a reader that keeps the last one per workload would pick it).
    { kind: "SpotPolicy", object: spotCr("web-git", "web", 2, "2026-12-06T12:00:00Z") },
    { kind: "SpotPolicy", object: spotCr("api", "api", 1, "2026-12-06T12:00:00Z") },
    { kind: "SpotPolicy", object: spotCr("a-console", "web", 5, "2026-12-07T11:00:00Z") },
  ]);
  // The CRs are the truth once the stored policies became CRs (ADR 0018).
  await store.markPolicyMigration({ clusterId: "c1", at: NOW - 3_600_000, created: 0, existed: 0 });
});

after(async () => {
  for (const a of apps) await a.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

async function app(plugins: Parameters<typeof build>[0]["plugins"]): Promise<FastifyInstance> {
  const a = await build({ tokens: { admin: "a-token", viewer: "v-token" }, plugins });
  apps.push(a);
  return a;
}

describe("two SpotPolicies on one workload: every reader takes the one created first", () => {
  it("core's pull endpoint serves one policy per workload, and a webhook pulling it installs the set", async () => {
    const ingest = new IngestCore({ sink: hub, coreVersion: "test" });
    const core = await app([
      policyRoutes({ store, defaultClusterId: "c1", crs: policyCrAccess(hub, ingest.edits) }),
    ]);
    const url = await core.listen({ port: 0, host: "127.0.0.1" });
    const source = PullPolicySource.fromUrl(`${url}/api/v1/clusters/c1/policies/spot`, {
      clock,
      headers: V,
    });
    assert.equal(await source.refresh(), true, source.lastError);
    assert.equal(source.lookup(web)?.threshold, 2, "web-git, created first, decides");
    assert.equal(source.lookup(api)?.threshold, 1, "the other workload keeps its policy");
    assert.equal(source.size, 2);
    // The API says which one is left out, and why (`wave spot list` prints it under the table).
    const set = await (await fetch(`${url}/api/v1/clusters/c1/policies/spot`, { headers: V })).json();
    assert.deepEqual(
      (set as { conflicts?: { policy: string; decidedBy: string; workload: string }[] }).conflicts?.map(
        (c) => [c.policy, c.decidedBy, c.workload],
      ),
      [["shop/a-console", "shop/web-git", "shop/Deployment/web"]],
    );
    const out = io();
    const args = ["--server", url, "--admin-token", "a-token", "--cluster-id", "c1", "-o", "table"];
    assert.equal(await run(["spot", "list", ...args], out), 0, out.stderr.join(""));
    assert.deepEqual(out.stdout.join("").split("\n").slice(1), [
      "deployment/shop/api  1          Prefer    0             on",
      "deployment/shop/web  2          Prefer    0             on",
      "not in force: shop/a-console: Deployment shop/web already has SpotPolicy shop/web-git, created first, which decides: this one is not in force",
      "",
    ]);
  });

  it("the Spot page and its API: the winner's policy and target, a policy-conflict warning naming both", async () => {
    const pages = await app([
      consoleRoutes({ hub, prices: new KwokPriceProvider(), now: () => clock.now(), policySource: "crs" }),
    ]);
    const res = await pages.inject({ method: "GET", url: "/api/v1/clusters/c1/spot-placement", headers: V });
    assert.equal(res.statusCode, 200, res.body);
    const rows = res.json<SpotViewDto>().workloads;
    const w = rows.find((r) => r.workload.name === "web");
    assert.equal(w?.policy?.threshold, 2);
    assert.deepEqual(w.target, { onDemand: 2, spot: 4 });
    const warning = w.warnings.find((x) => x.kind === "policy-conflict");
    assert.match(
      warning?.message ?? "",
      /shop\/web-git, created first, decides; shop\/a-console is not in force/,
    );
    const a = rows.find((r) => r.workload.name === "api");
    assert.equal(a?.policy?.threshold, 1);
    assert.deepEqual(a.warnings, []);
  });

  it("the what-if starts from the winner's policy, once per workload", async () => {
    const whatif = await app([
      whatifRoutes({
        hub,
        now: () => clock.now(),
        policySource: "crs",
        run: (input) => clusterWhatif(input),
      }),
    ]);
    const res = await whatif.inject({
      method: "POST",
      url: "/api/v1/clusters/c1/whatif",
      headers: V,
      payload: { spot: [{ workload: api, threshold: 0, strategy: "Prefer" }], spotInterruptionRate: 0 },
    });
    assert.equal(res.statusCode, 200, res.body);
    const current = res.json<WhatifReportDto>().current.policy.spot;
    assert.deepEqual(
      current.map((p) => [p.workload.name, p.threshold]),
      [
        ["api", 1],
        ["web", 2],
      ],
    );
  });

  it("/metrics: the workload's on-demand target is the winner's", async () => {
    const metrics = new Registry();
    dashboardMetrics({ metrics, hub, prices: new KwokPriceProvider(), store, clock });
    const text = await metrics.render();
    const line = (name: string): string | undefined =>
      text
        .split("\n")
        .find(
          (l) =>
            l.startsWith("wave_spot_placement_target_on_demand_pods{") && l.includes(`workload="${name}"`),
        );
    assert.match(line("web") ?? "", / 2$/);
    assert.match(line("api") ?? "", / 1$/);
  });

  it("`wave start`: its in-process webhook and repair get the set, not the previous one kept for a refused set", async () => {
    const source = new InMemoryPolicySource();
    await loadSpotPolicies({ store, hub }, "c1", source, silentLogger, { json: "", migrated: false });
    assert.equal(source.lookup(web)?.threshold, 2);
    assert.equal(source.lookup(api)?.threshold, 1);
  });
});

describe("an edit or delete through Wave (API, console, `wave spot set`) acts on the policy in force", () => {
  it("names the SpotPolicy created first, whatever order core holds them in", () => {
    const git = spotCr("web-git", "web", 2, "2026-12-06T12:00:00Z");
    const console_ = spotCr("a-console", "web", 5, "2026-12-07T11:00:00Z");
    assert.equal(spotPolicyName(web, [console_, git]), "web-git");
    assert.equal(spotPolicyName(web, [git, console_]), "web-git");
  });

  it("names the WarmupPolicy created first", () => {
    const wcr = (name: string, created: string): WarmupPolicyResource => ({
      apiVersion: "wave.sh/v1alpha1",
      kind: "WarmupPolicy",
      metadata: { name, creationTimestamp: created },
      spec: { nodePool: "general", enabled: true },
    });
    assert.equal(
      warmupPolicyName("general", [
        wcr("a-console", "2026-12-07T11:00:00Z"),
        wcr("general-git", "2026-12-06T12:00:00Z"),
      ]),
      "general-git",
    );
  });
});

describe("two WarmupPolicies naming one NodePool", () => {
  const warmupCr = (name: string, maxWarmNodes: number, created: string): WarmupPolicyResource => ({
    apiVersion: "wave.sh/v1alpha1",
    kind: "WarmupPolicy",
    metadata: { name, creationTimestamp: created },
    spec: { nodePool: "general", enabled: true, maxWarmNodes },
  });

  it("core (the set it sends the agent, the pages): the one created first, the other in conflict", () => {
    const r = warmupPoliciesOf([
      warmupCr("general-git", 1, "2026-12-06T12:00:00Z"),
      warmupCr("a-console", 4, "2026-12-07T11:00:00Z"),
    ]);
    assert.deepEqual(
      r.policies.map((p) => [p.nodePool, p.name, p.policy.maxWarmNodes]),
      [["general", "general-git", 1]],
    );
    assert.deepEqual(
      r.conflicts.map((c) => [c.key, c.winner]),
      [["a-console", "general-git"]],
    );
  });
});
