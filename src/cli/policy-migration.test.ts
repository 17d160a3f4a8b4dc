// The one-time migration (issue 31, Build 6) and the CRs' history, in one process: policies a core
// stored become CRs through the cluster's agent when it connects — annotated with where they came
// from, an existing CR never overwritten — the store marks the cluster, and a re-run changes
// nothing. Every CR version streamed is kept and served by GET …/policies/history.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { RunningAgent } from "../agent/run.ts";
import { build } from "../api/app.ts";
import { policyRoutes } from "../api/routes/policies.ts";
import { migrateStoredPolicies } from "../console/policy-migration.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { IngestCore } from "../core/ingest/core.ts";
import { startIngestServer } from "../core/ingest/server.ts";
import { within } from "../core/ingest/testing.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import { MemoryKube } from "../kube/memory/memory.ts";
import { realClock } from "../shared/clock.ts";
import { AGENT_TOKEN, applyFromGit, deploymentSpec, startTestAgent } from "./policy-crs.test-helper.ts";
import { silentLogger } from "../shared/log.ts";
import { policyCrAccess, startPolicySync } from "./parts.ts";

const A = { authorization: "Bearer a-token" };

let dir: string;
let store: Store;
let hub: ClusterHub;
let kube: MemoryKube;
let agent: RunningAgent;
let app: FastifyInstance;
let crs: ReturnType<typeof policyCrAccess>;
const stops: (() => Promise<void>)[] = [];

async function until(pred: () => boolean | Promise<boolean>, what: string): Promise<void> {
  await within(
    10_000,
    (async () => {
      while (!(await pred())) await new Promise((r) => setTimeout(r, 20));
    })(),
    what,
  );
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-policy-migration-"));
  store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  // What an older core stored through its API.
  const storeSpot = (kind: "Deployment" | "StatefulSet", name: string, fields: object) =>
    store.putPolicy(
      "c1",
      "spot",
      `shop/${kind}/${name}`,
      { workload: { namespace: "shop", kind, name }, ...fields },
      1,
    );
  await storeSpot("Deployment", "web", { threshold: 2, strategy: "Prefer", percentAboveBase: 25 });
  await storeSpot("StatefulSet", "db", { threshold: 3, strategy: "Require", repair: false });
  await storeSpot("Deployment", "gitops", { threshold: 9, strategy: "Prefer" });
  await store.putPolicy(
    "c1",
    "warmup",
    "general",
    { enabled: true, maxWarmNodes: 3, maxCostPerHour: 1.25 },
    1,
  );
  kube = new MemoryKube();
  // Already a CR in the cluster (from Git): the migration must leave it as it is.
  await applyFromGit(kube, "gitops");
  hub = new ClusterHub(store, realClock);
  const ingest = new IngestCore({ sink: hub, coreVersion: "test" });
  crs = policyCrAccess(hub, ingest.edits);
  stops.push(startPolicySync({ store, hub, edits: ingest.edits, crs, clock: realClock, log: silentLogger }));
  const server = await startIngestServer({ core: ingest, port: 0, host: "127.0.0.1", tokens: [AGENT_TOKEN] });
  stops.push(() => server.close());
  agent = await startTestAgent(kube, server.port);
  stops.push(() => agent.stop());
  app = await build({
    tokens: { admin: "a-token", viewer: "v-token" },
    plugins: [policyRoutes({ store, defaultClusterId: "c1", crs })],
  });
  stops.push(() => app.close());
});

after(async () => {
  for (const s of stops.reverse()) await s();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe("migration of stored policies to CRs", () => {
  it("turns every stored policy into a CR with the same fields, annotated; an existing CR is left alone", async () => {
    await until(async () => (await store.policyMigration("c1")) !== undefined, "the migration mark");
    const mark = await store.policyMigration("c1");
    assert.equal(mark?.created, 3);
    assert.equal(mark.existed, 1);

    const web = await kube.get("SpotPolicy", "web", "shop");
    assert.deepEqual(
      web.spec,
      deploymentSpec("web", { threshold: 2, strategy: "Prefer", percentAboveBase: 25 }),
    );
    assert.equal(web.metadata.annotations?.["wave.sh/migrated-from"], "core:c1/spot/shop/Deployment/web");
    assert.equal(web.metadata.annotations["wave.sh/changed-via"], "migration");
    const db = await kube.get("SpotPolicy", "db", "shop");
    assert.deepEqual(
      [db.spec.targetRef.kind, db.spec.threshold, db.spec.strategy, db.spec.repair],
      ["StatefulSet", 3, "Require", "Off"],
    );
    const warm = await kube.get("WarmupPolicy", "general");
    assert.deepEqual(
      [warm.spec.nodePool, warm.spec.enabled, warm.spec.maxWarmNodes, warm.spec.maxCostPerHour],
      ["general", true, 3, "1.25"],
    );
    const gitops = await kube.get("SpotPolicy", "gitops", "shop");
    assert.equal(gitops.spec.threshold, 1, "the CR from Git is not overwritten");
    assert.equal(gitops.metadata.annotations?.["wave.sh/migrated-from"], undefined);
  });

  it("a re-run changes nothing (the mark)", async () => {
    const before = await kube.list("SpotPolicy");
    const r = await migrateStoredPolicies({ store, clusterId: "c1", crs, now: () => Date.now() });
    assert.equal(r.status, "already");
    assert.deepEqual((await kube.list("SpotPolicy")).items, before.items);
  });

  it("keeps each streamed CR version: GET …/policies/history", async () => {
    await until(
      async () => (await store.policyRevisions("c1", "SpotPolicy", "shop/web")).length > 0,
      "a revision of shop/web",
    );
    const put = await app.inject({
      method: "PUT",
      url: "/api/v1/clusters/c1/policies/spot/Deployment/shop/web",
      headers: { ...A, "content-type": "application/json" },
      payload: { threshold: 4, strategy: "Prefer" },
    });
    assert.equal(put.statusCode, 200, put.body);
    await until(
      async () => (await store.policyRevisions("c1", "SpotPolicy", "shop/web")).length >= 2,
      "the edit's revision",
    );
    const res = await app.inject({
      method: "GET",
      url: "/api/v1/clusters/c1/policies/history?kind=SpotPolicy&name=shop/web",
      headers: A,
    });
    assert.equal(res.statusCode, 200, res.body);
    const revs = res.json<{ manager: string; changedBy: string; spec: { threshold: number } }[]>();
    assert.deepEqual(
      revs.map((r) => [r.spec.threshold, r.manager, r.changedBy]),
      [
        [4, "wave-console", "token:admin"],
        [2, "wave-console", "wave:migration"],
      ],
    );
  });
});
