// The policy API over the custom resources, end to end in one process (ADR 0018): core's routes,
// the ingest stream, a real agent (runAgent: informers + server-side apply) and the in-memory
// apiserver. An API edit becomes the SpotPolicy with field manager wave-console and the caller's
// identity; a field another manager owns is a 409 that changes nothing, unless forced; the CRs
// the agent streams are what the API reads.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { RunningAgent } from "../agent/run.ts";
import { build } from "../api/app.ts";
import { policyRoutes } from "../api/routes/policies.ts";
import { consoleRoutes } from "../api/routes/console.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { IngestCore } from "../core/ingest/core.ts";
import { startIngestServer } from "../core/ingest/server.ts";
import { within } from "../core/ingest/testing.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { SpotPolicyResource } from "../objects/policy-crds.ts";
import { realClock } from "../shared/clock.ts";
import { AGENT_TOKEN, applyFromGit, deploymentSpec, startTestAgent } from "./policy-crs.test-helper.ts";
import { silentLogger } from "../shared/log.ts";
import { policyCrAccess } from "./parts.ts";

const tokens = { admin: "a-token", viewer: "v-token" };
const A = { authorization: "Bearer a-token", "content-type": "application/json" };

let dir: string;
let store: Store;
let hub: ClusterHub;
let app: FastifyInstance;
let kube: MemoryKube;
let agent: RunningAgent;
let closeServer: () => Promise<void>;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-policy-sync-"));
  store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  hub = new ClusterHub(store, realClock);
  const ingest = new IngestCore({ sink: hub, coreVersion: "test", policyEditTimeoutMs: 10_000 });
  const server = await startIngestServer({ core: ingest, port: 0, host: "127.0.0.1", tokens: [AGENT_TOKEN] });
  closeServer = () => server.close();
  kube = new MemoryKube();
  agent = await startTestAgent(kube, server.port);
  app = await build({
    tokens,
    plugins: [
      policyRoutes({ store, defaultClusterId: "c1", crs: policyCrAccess(hub, ingest.edits) }),
      consoleRoutes({ hub, prices: new KwokPriceProvider(), now: () => Date.now(), policySource: "crs" }),
    ],
  });
  await within(
    10_000,
    agent.agent.until((a) => a.status === "streaming"),
    "agent streaming",
  );
});

after(async () => {
  await app.close();
  await agent.stop();
  await closeServer();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

/** Waits until core's state of c1 holds a SpotPolicy matching `pred` (streamed by the agent). */
async function inCore(pred: (cr: SpotPolicyResource) => boolean): Promise<void> {
  await within(
    10_000,
    (async () => {
      while (!hub.state("c1").spotPolicies().some(pred)) await new Promise((r) => setTimeout(r, 20));
    })(),
    "the CR in core's state",
  );
}

describe("policy API over the SpotPolicy CRs", () => {
  it("a PUT applies the SpotPolicy with field manager wave-console and the caller's identity", async () => {
    const res = await app.inject({
      method: "PUT",
      url: "/api/v1/clusters/c1/policies/spot/Deployment/shop/web",
      headers: { ...A, "x-wave-client": "ui" },
      payload: { threshold: 2, strategy: "Prefer", percentAboveBase: 10 },
    });
    assert.equal(res.statusCode, 200, res.body);
    const cr = await kube.get("SpotPolicy", "web", "shop");
    assert.deepEqual(
      cr.spec,
      deploymentSpec("web", { threshold: 2, strategy: "Prefer", percentAboveBase: 10 }),
    );
    assert.deepEqual(
      cr.metadata.managedFields?.map((m) => `${m.manager}/${m.operation}`),
      ["wave-console/Apply"],
    );
    assert.equal(cr.metadata.annotations?.["wave.sh/changed-by"], "token:admin");
    assert.equal(cr.metadata.annotations["wave.sh/changed-via"], "ui");

    // The agent streams the CR; the API reads it back from core's state.
    await inCore((c) => c.metadata.name === "web");
    const set = await app.inject({ method: "GET", url: "/api/v1/clusters/c1/policies/spot", headers: A });
    assert.deepEqual(
      set
        .json<{ policies: { workload: { name: string }; threshold: number }[] }>()
        .policies.map((p) => [p.workload.name, p.threshold]),
      [["web", 2]],
    );
  });

  it("a field another manager owns: 409 'managed by argocd-controller: change it in Git', nothing changes; force takes it", async () => {
    await applyFromGit(kube, "api");
    await inCore((c) => c.metadata.name === "api");
    const before = await kube.get("SpotPolicy", "api", "shop");
    const url = "/api/v1/clusters/c1/policies/spot/Deployment/shop/api";
    const refused = await app.inject({
      method: "PUT",
      url,
      headers: A,
      payload: { threshold: 5, strategy: "Require" },
    });
    assert.equal(refused.statusCode, 409, refused.body);
    assert.match(
      refused.json<{ message: string }>().message,
      /\.spec\.threshold managed by argocd-controller: change it in Git/,
    );
    assert.deepEqual(await kube.get("SpotPolicy", "api", "shop"), before);

    const forced = await app.inject({
      method: "PUT",
      url: `${url}?force=true`,
      headers: A,
      payload: { threshold: 5, strategy: "Require" },
    });
    assert.equal(forced.statusCode, 200, forced.body);
    const after = await kube.get("SpotPolicy", "api", "shop");
    assert.equal(after.spec.threshold, 5);
    assert.ok(after.metadata.managedFields?.some((m) => m.manager === "wave-console"));
  });

  it("the console's spot page reads the policies from the CRs", async () => {
    await inCore((c) => c.metadata.name === "api" && c.spec.threshold === 5);
    const res = await app.inject({ method: "GET", url: "/api/v1/clusters/c1/spot-placement", headers: A });
    assert.equal(res.statusCode, 200, res.body);
    const view = res.json<{ workloads: { workload: { name: string }; policy?: { threshold: number } }[] }>();
    assert.deepEqual(
      view.workloads
        .filter((w) => w.policy)
        .map((w) => [w.workload.name, w.policy?.threshold])
        .sort(),
      [
        ["api", 5],
        ["web", 2],
      ],
    );
  });

  it("the old route still writes the CR, and says it is deprecated", async () => {
    const res = await app.inject({
      method: "PUT",
      url: "/api/v1/policies/warmup/general",
      headers: A,
      payload: { enabled: true, maxWarmNodes: 2, maxCostPerHour: 0.5 },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers["deprecation"], "true");
    const cr = await kube.get("WarmupPolicy", "general");
    assert.equal(cr.spec.nodePool, "general");
    assert.equal(cr.spec.maxWarmNodes, 2);
    assert.equal(cr.spec.maxCostPerHour, "0.50");
  });

  it("DELETE removes the CR", async () => {
    const res = await app.inject({
      method: "DELETE",
      url: "/api/v1/clusters/c1/policies/spot/Deployment/shop/web",
      headers: { authorization: A.authorization },
    });
    assert.equal(res.statusCode, 204, res.body);
    await assert.rejects(kube.get("SpotPolicy", "web", "shop"), /not found/);
  });

  it("read your write: a PUT or DELETE answers once core's state shows it, so the next read agrees", async () => {
    const spot = "/api/v1/clusters/c1/policies/spot";
    const thresholds = async () =>
      (await app.inject({ method: "GET", url: spot, headers: A }))
        .json<{ policies: { workload: { name: string }; threshold: number }[] }>()
        .policies.filter((p) => p.workload.name === "cart")
        .map((p) => p.threshold);
    for (const threshold of [4, 6]) {
      const put = await app.inject({
        method: "PUT",
        url: `${spot}/Deployment/shop/cart`,
        headers: A,
        payload: { threshold, strategy: "Prefer" },
      });
      assert.equal(put.statusCode, 200, put.body);
      assert.deepEqual(await thresholds(), [threshold], "the set read right after the PUT");
    }
    const warm = async () =>
      (await app.inject({ method: "GET", url: "/api/v1/clusters/c1/policies/warmup", headers: A }))
        .json<{ nodePool: string; policy: { maxWarmNodes: number } }[]>()
        .filter((p) => p.nodePool === "arm64")
        .map((p) => p.policy.maxWarmNodes);
    const wput = await app.inject({
      method: "PUT",
      url: "/api/v1/clusters/c1/policies/warmup/arm64",
      headers: A,
      payload: { enabled: true, maxWarmNodes: 3 },
    });
    assert.equal(wput.statusCode, 200, wput.body);
    assert.deepEqual(await warm(), [3], "the warmup policy read right after the PUT");
    const del = await app.inject({
      method: "DELETE",
      url: `${spot}/Deployment/shop/cart`,
      headers: { authorization: A.authorization },
    });
    assert.equal(del.statusCode, 204, del.body);
    assert.deepEqual(await thresholds(), [], "gone from the set right after the DELETE");
  });

  it("a cluster whose agent is not connected: 503 with a clear message, nothing stored", async () => {
    const res = await app.inject({
      method: "PUT",
      url: "/api/v1/clusters/c2/policies/spot/Deployment/shop/web",
      headers: A,
      payload: { threshold: 1, strategy: "Prefer" },
    });
    assert.equal(res.statusCode, 503, res.body);
    assert.match(res.json<{ message: string }>().message, /agent of cluster c2 is not connected/);
    assert.deepEqual(await store.listPolicies("c2", "spot"), []);
  });
});
