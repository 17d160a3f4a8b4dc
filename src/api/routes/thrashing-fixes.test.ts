// One advice, every path (issue 27 finding 2): GET …/thrashing/fixes lists exactly the advice
// GET …/thrashing gives — the same Karpenter-version check (consolidationPolicy: Balanced only on
// v1.14+, src/karpenter/compat.ts karpenterAccepts) and the same "Wave's own warmup caused this"
// fix — and POST …/thrashing/apply applies only what the list offers. Core's app (inject) with
// the dashboard and console routes, two clusters churning alike: one on Karpenter v1.8, one on v1.15.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { fixtures } from "../../../test/fixtures/karpenter/load.ts";
import { ClusterHub } from "../../core/hub/hub.ts";
import { connectTestCluster, deliverSnapshot } from "../../core/hub/testing.ts";
import { openStore } from "../../core/store/open.ts";
import type { LifecycleEvent, Store, StoredWarmupEvent } from "../../core/store/store.ts";
import type { ThrashingDto, ThrashingFixesDto } from "../../dashboard/dto.ts";
import { karpenterAccepts } from "../../karpenter/compat.ts";
import { KwokPriceProvider } from "../../pricing/kwok.ts";
import { FakeClock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import { build } from "../app.ts";
import { consoleRoutes } from "./console.ts";
import { dashboardRoutes } from "./dashboard.ts";

const NOW = Date.parse("2026-03-02T12:00:00Z");
const tokens = { admin: "a-token", viewer: "v-token" };
const ADMIN = { authorization: `Bearer ${tokens.admin}` };
const VIEWER = { authorization: `Bearer ${tokens.viewer}` };
const VERSIONS = { old: "v1.8.2", new: "v1.15.0" } as const;

let dir: string;
let store: Store;
let app: FastifyInstance;
const patched: [string, string, Record<string, unknown>][] = [];

/**
 * sigs#2388 in pool "default" (WhenEmptyOrUnderutilized): one node after another, each replaced by
 * the same instance type a minute after Karpenter consolidates it at 5 minutes old; the first two
 * were Wave's warm nodes, released unused.
 */
function churn(clusterId: string): { lifecycle: LifecycleEvent[]; warmup: StoredWarmupEvent[] } {
  const lifecycle: LifecycleEvent[] = [];
  const warmup: StoredWarmupEvent[] = [];
  for (let i = 0; i < 6; i++) {
    const at = NOW - 30 * 60_000 + i * 6 * 60_000;
    const base = {
      clusterId,
      nodeClaim: `nc-${String(i)}`,
      nodeClaimUid: `${clusterId}-u-${String(i)}`,
      nodePool: "default",
      nodeName: `node-${String(i)}`,
      instanceType: "c-4x-amd64-linux",
      capacityType: "on-demand",
    };
    lifecycle.push({ ...base, phase: "Launched", at });
    if (i === 5) continue;
    lifecycle.push({ ...base, phase: "Disrupted", reason: "Underutilized", at: at + 5 * 60_000 });
    lifecycle.push({ ...base, phase: "Terminated", reason: "Underutilized", at: at + 5 * 60_000 + 20_000 });
    if (i < 2)
      warmup.push({
        clusterId,
        pool: "default",
        type: "miss",
        reason: "ttl",
        node: base.nodeName,
        at: at + 4 * 60_000,
      });
  }
  return { lifecycle, warmup };
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-thrash-fixes-"));
  store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  const clock = new FakeClock(NOW);
  const hub = new ClusterHub(store, clock);
  for (const [id, karpenterVersion] of Object.entries(VERSIONS)) {
    await connectTestCluster(hub, NOW - 5000, { clusterId: id, karpenterVersion, sessionId: `s-${id}` });
    const pool = fixtures.nodePool();
    pool.spec.disruption = { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "0s" };
    await deliverSnapshot(hub, NOW, [{ kind: "NodePool", object: pool }], {
      clusterId: id,
      sessionId: `s-${id}`,
    });
    const { lifecycle, warmup } = churn(id);
    await store.write({ lifecycle });
    await store.writeWarmupEvents(warmup);
  }
  const deps = { hub, prices: new KwokPriceProvider(), now: () => clock.now() };
  app = await build({
    tokens,
    plugins: [
      dashboardRoutes(deps),
      consoleRoutes({
        ...deps,
        // Core "runs" both clusters here, so an Apply is offered wherever a fix has a patch.
        nodePools: {
          clusterId: "old",
          patch: (pool, patch) => {
            patched.push(["old", pool, patch]);
            return Promise.resolve();
          },
        },
      }),
    ],
  });
});

after(async () => {
  await app.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

async function get<T>(url: string): Promise<T> {
  const res = await app.inject({ url, headers: VIEWER });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<T>();
}

describe("thrashing fixes: one advice for /thrashing, /thrashing/fixes and apply", () => {
  for (const [id, version] of Object.entries(VERSIONS)) {
    it(`on Karpenter ${version}: the fixes are /thrashing's advice, each with its patch`, async () => {
      const [thrashing, fixes] = await Promise.all([
        get<ThrashingDto[]>(`/api/v1/clusters/${id}/thrashing`),
        get<ThrashingFixesDto[]>(`/api/v1/clusters/${id}/thrashing/fixes`),
      ]);
      const flagged = thrashing.filter((t) => t.severity === "medium" || t.severity === "high");
      assert.deepEqual(
        flagged.map((t) => t.nodePool),
        ["default"],
      );
      assert.deepEqual(
        fixes.map((f) => [f.nodePool, f.severity, f.fixes.map((x) => `${x.title}: ${x.detail}`)]),
        flagged.map((t) => [t.nodePool, t.severity, t.advice]),
      );
      const titles = fixes.flatMap((f) => f.fixes.map((x) => x.title));
      // Wave's own warm nodes were part of the churn: said first, on every path.
      assert.match(titles[0] ?? "", /Wave's own warmup caused/);
      assert.ok(thrashing[0]?.evidence.some((e) => e.cause === "warmup"));
      const balanced = titles.some((t) => t.includes("Balanced"));
      assert.equal(balanced, karpenterAccepts(version, "consolidationPolicy: Balanced"), titles.join(" | "));
      assert.equal(balanced, id === "new", `Balanced needs v1.14+: ${version}`);
    });
  }

  it("apply refuses what the cluster's Karpenter does not accept (Balanced on v1.8)", async () => {
    patched.length = 0;
    const res = await app.inject({
      method: "POST",
      url: "/api/v1/clusters/old/thrashing/apply",
      headers: ADMIN,
      payload: { nodePool: "default", title: "Use consolidationPolicy: Balanced" },
    });
    assert.equal(res.statusCode, 409, res.body);
    assert.equal(res.json<{ error: string }>().error, "no_such_fix");
    assert.deepEqual(patched, []);
  });

  it("karpenterAccepts: Balanced from v1.14 on; an undetected version may have it", () => {
    const accepts = (v: string | undefined) => karpenterAccepts(v, "consolidationPolicy: Balanced");
    for (const v of ["v1.14.0", "1.14", "v1.15.0-rc.1", "v2.0.0"]) assert.equal(accepts(v), true, v);
    for (const v of ["v1.8.2", "v1.8-sim", "v1.13.9", "v0.37.0"]) assert.equal(accepts(v), false, v);
    assert.equal(accepts(undefined), true);
    assert.equal(accepts("main"), true);
  });
});
