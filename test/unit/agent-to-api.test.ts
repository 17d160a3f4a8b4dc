// The real path a user's view depends on: objects in the cluster → the agent's informers and
// trimming → the gRPC wire → core's ingest and ClusterHub state → the API. Views tested on
// hand-built core state once passed while the agent dropped the very annotation they read (warm
// nodes never showed): this test builds nothing on core's side by hand.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { fixtures } from "../fixtures/karpenter/load.ts";
import { runAgent, type RunningAgent } from "../../src/agent/run.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { IngestCore } from "../../src/core/ingest/core.ts";
import { startIngestServer } from "../../src/core/ingest/server.ts";
import { openStore } from "../../src/core/store/open.ts";
import type { Store } from "../../src/core/store/store.ts";
import { build } from "../../src/api/app.ts";
import type {
  NodeDetailDto,
  NodeListDto,
  NodePoolDto,
  OverviewDto,
  SpotViewDto,
  WarmupViewDto,
} from "../../src/dashboard/dto.ts";
import { consoleRoutes } from "../../src/api/routes/console.ts";
import { dashboardRoutes } from "../../src/api/routes/dashboard.ts";
import { DO_NOT_DISRUPT_ANNOTATION } from "../../src/objects/karpenter.ts";
import { MemoryKube } from "../../src/kube/memory/memory.ts";
import { KwokPriceProvider } from "../../src/pricing/kwok.ts";
import { FakeClock, flushMicrotasks, realClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";
import {
  CREATED_AT_ANNOTATION,
  DEADLINE_ANNOTATION,
  DO_NOT_DISRUPT_NAMESPACE_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_VALUE,
  NOTE_ANNOTATION,
  PREPULL_IMAGE_ANNOTATION,
  PREPULL_LABEL,
  WARMUP_POOL_LABEL,
} from "../../src/objects/wave.ts";
import { repairEvent } from "../../src/webhook/events.ts";
import type { Allocator } from "../../src/webhook/allocator.ts";
import { LateAnswerRecorder } from "../../src/webhook/late-events.ts";
import { InMemoryPolicySource } from "../../src/webhook/policy-source.ts";
import { review } from "../../src/webhook/review.ts";
import { reviewFor } from "../../src/webhook/test-helpers.ts";

const V = { authorization: "Bearer v" };
const CLUSTER = "pipe";

let dir: string;
let store: Store;
let hub: ClusterHub;
let kube: MemoryKube;
let server: Awaited<ReturnType<typeof startIngestServer>>;
let agent: RunningAgent;
let app: FastifyInstance;

/** Polls core's state (the agent streams asynchronously) until `pred` holds; fails after 20 s. */
async function until(what: string, pred: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!pred()) {
    assert.ok(Date.now() < deadline, `${what} reached core within 20 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const warmMarks = {
  [DO_NOT_DISRUPT_ANNOTATION]: "true",
  [DO_NOT_DISRUPT_OWNER_ANNOTATION]: DO_NOT_DISRUPT_OWNER_VALUE,
  [DO_NOT_DISRUPT_NAMESPACE_ANNOTATION]: "wave",
  [CREATED_AT_ANNOTATION]: "2026-03-02T11:58:00Z",
  [DEADLINE_ANNOTATION]: "2026-03-02T12:08:00Z",
};

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-agent-api-"));
  store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  hub = new ClusterHub(store, realClock);
  server = await startIngestServer({
    core: new IngestCore({ sink: hub }),
    port: 0,
    host: "127.0.0.1",
    tokens: ["t"],
  });
  kube = new MemoryKube();
  const pool = fixtures.nodePool();
  const claim = fixtures.nodeClaim("initialized");
  const node = fixtures.node("initialized");
  // As the warmup controller leaves a warm node: Karpenter's do-not-disrupt plus Wave's owner mark.
  node.metadata.annotations = { ...node.metadata.annotations, ...warmMarks };
  claim.metadata.annotations = { ...claim.metadata.annotations, ...warmMarks };
  for (const [kind, obj] of [
    ["NodePool", pool],
    ["NodeClaim", claim],
    ["Node", node],
  ] as const) {
    delete obj.metadata.resourceVersion;
    await kube.create(kind, obj);
  }
  // A pre-pull pod (its image is only in an annotation) and a spot-placed pod with the webhook's note.
  await kube.create(
    "Pod",
    {
      metadata: {
        name: "prepull-1",
        namespace: "wave",
        labels: { [PREPULL_LABEL]: "true", [WARMUP_POOL_LABEL]: pool.metadata.name ?? "" },
        annotations: {
          [PREPULL_IMAGE_ANNOTATION]: "registry.example/app:1.0",
          "unrelated/big": "x".repeat(4000),
        },
      },
      spec: {
        nodeName: node.metadata.name,
        containers: [{ name: "pull", image: "registry.example/app:1.0" }],
      },
    },
    { namespace: "wave" },
  );
  // The pool's workload: its image is what the warm node pre-pulls.
  await kube.create(
    "Pod",
    {
      metadata: { name: "app-1", namespace: "shop" },
      spec: {
        nodeName: node.metadata.name,
        containers: [
          { name: "app", image: "registry.example/app:1.0", resources: { requests: { cpu: "100m" } } },
        ],
      },
      status: { phase: "Running" },
    },
    { namespace: "shop" },
  );
  await kube.create(
    "Pod",
    {
      metadata: { name: "web-1", namespace: "shop", annotations: { [NOTE_ANNOTATION]: "no policy" } },
      spec: { containers: [{ name: "web", image: "web:1" }] },
    },
    { namespace: "shop" },
  );
  agent = await runAgent({
    kube,
    log: silentLogger,
    coreUrl: `http://127.0.0.1:${server.port}`,
    token: "t",
    clusterId: CLUSTER,
    agentVersion: "0.1.0",
  });
  app = await build({
    tokens: { admin: "a", viewer: "v" },
    plugins: [
      dashboardRoutes({ hub, prices: new KwokPriceProvider(), now: () => Date.now() }),
      consoleRoutes({ hub, prices: new KwokPriceProvider(), now: () => Date.now() }),
    ],
  });
  // The snapshot reaches core in parts, kind by kind (Nodes, Pods, NodePools, NodeClaims, …), and
  // each part is applied as it lands: wait for the last kind the tests read, not just the pods.
  const claimName = claim.metadata.name ?? "";
  await until("the cluster", () => {
    const s = hub.get(CLUSTER)?.state;
    return (s?.pods().length ?? 0) >= 3 && s?.nodeClaim(claimName) !== undefined;
  });
});

after(async () => {
  await app.close();
  await agent.stop();
  await server.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe("agent → wire → core → API", { timeout: 60_000 }, () => {
  it("reports a node Wave holds warm as warm, in the node table, the pools and the overview", async () => {
    const name = fixtures.node("initialized").metadata.name ?? "";
    const nodes = (
      await app.inject({ url: `/api/v1/clusters/${CLUSTER}/nodes`, headers: V })
    ).json<NodeListDto>();
    const row = nodes.items.find((n) => n.name === name);
    assert.ok(row, `node ${name} listed`);
    assert.equal(row.doNotDisrupt, true);
    assert.equal(row.warm, true, "Wave's owner mark survived the agent's trimming");
    // The price column's source (ADR 0011): what the provider answered for the node's type.
    const quote = new KwokPriceProvider().price(
      row.instanceType ?? "",
      (row.capacityType ?? "on-demand") as "on-demand" | "spot",
      row.zone ?? undefined,
    );
    assert.equal(row.priceSource, quote?.source ?? "unknown");
    assert.equal(row.costPerHour, quote?.usdPerHour ?? 0);
    const overview = (
      await app.inject({ url: `/api/v1/clusters/${CLUSTER}/overview`, headers: V })
    ).json<OverviewDto>();
    assert.equal(overview.warmup.warmNodes, 1);
    assert.ok(overview.warmup.costPerHour > 0, "the warm node's price is counted");
    const pools = (await app.inject({ url: `/api/v1/clusters/${CLUSTER}/nodepools`, headers: V })).json<
      NodePoolDto[]
    >();
    assert.equal(pools.find((p) => p.name === fixtures.nodePool().metadata.name)?.warmNodes, 1);
  });

  it("shows the warm node on the Warmup page with its pre-pull progress, and in the node drawer", async () => {
    const name = fixtures.node("initialized").metadata.name ?? "";
    const pool = fixtures.nodePool().metadata.name ?? "";
    const view = (
      await app.inject({ url: `/api/v1/clusters/${CLUSTER}/warmup`, headers: V })
    ).json<WarmupViewDto>();
    const p = view.pools.find((x) => x.nodePool === pool);
    assert.ok(p, "the pool is listed");
    assert.deepEqual(
      p.warmNodes.map((w) => w.name),
      [name],
    );
    assert.equal(p.state, "warming", "a pre-pull is in flight");
    // The pending shop/web-1 is tied to the pool too (it fits the pool's template): its image waits.
    assert.deepEqual(p.warmNodes[0]?.images, [
      { image: "registry.example/app:1.0", status: "pulling" },
      { image: "web:1", status: "pending" },
    ]);
    assert.notEqual(p.warmNodes[0].ttlLeftSeconds, null, "TTL read off the deadline annotation");
    const detail = (
      await app.inject({ url: `/api/v1/clusters/${CLUSTER}/nodes/${name}`, headers: V })
    ).json<NodeDetailDto>();
    assert.equal(detail.doNotDisruptBy, "wave-warmup");
    assert.equal(detail.node?.warm, true);
  });

  it("keeps Wave's own annotations that views read (pre-pull image, spot note) and drops others", () => {
    const state = hub.get(CLUSTER)?.state;
    assert.ok(state);
    const prepull = state.pod("wave", "prepull-1")?.metadata.annotations ?? {};
    assert.equal(prepull[PREPULL_IMAGE_ANNOTATION], "registry.example/app:1.0");
    assert.equal(prepull["unrelated/big"], undefined, "large foreign annotations dropped");
    assert.equal(state.pod("shop", "web-1")?.metadata.annotations?.[NOTE_ANNOTATION], "no policy");
    const claim = state.nodeClaim(fixtures.nodeClaim("initialized").metadata.name ?? "");
    assert.equal(claim?.metadata.annotations?.[DO_NOT_DISRUPT_OWNER_ANNOTATION], DO_NOT_DISRUPT_OWNER_VALUE);
  });

  it("follows the warm mark's removal (a hit or expiry) to the API", async () => {
    const name = fixtures.node("initialized").metadata.name ?? "";
    const claimName = fixtures.nodeClaim("initialized").metadata.name ?? "";
    // As the controller releases a warm node: both marks come off the Node and its NodeClaim.
    for (const [kind, n] of [
      ["Node", name],
      ["NodeClaim", claimName],
    ] as const) {
      const cur = await kube.get(kind, n);
      const annotations = Object.fromEntries(
        Object.entries(cur.metadata.annotations ?? {}).filter(
          ([k]) => k !== DO_NOT_DISRUPT_OWNER_ANNOTATION && k !== DO_NOT_DISRUPT_ANNOTATION,
        ),
      );
      await kube.replace(kind, { ...cur, metadata: { ...cur.metadata, annotations } });
    }
    await until("the unmarked node and claim", () => {
      const s = hub.get(CLUSTER)?.state;
      return (
        s !== undefined &&
        s.node(name)?.metadata.annotations?.[DO_NOT_DISRUPT_OWNER_ANNOTATION] === undefined &&
        s.nodeClaim(claimName)?.metadata.annotations?.[DO_NOT_DISRUPT_OWNER_ANNOTATION] === undefined
      );
    });
    const nodes = (
      await app.inject({ url: `/api/v1/clusters/${CLUSTER}/nodes`, headers: V })
    ).json<NodeListDto>();
    assert.equal(nodes.items.find((n) => n.name === name)?.warm, false);
  });

  it("counts the spot repair's self-heal actions per workload over the range (Events → store → API)", async () => {
    await store.putPolicy(
      CLUSTER,
      "spot",
      "shop/Deployment/web",
      {
        workload: { namespace: "shop", kind: "Deployment", name: "web" },
        threshold: 1,
        strategy: "Prefer",
      },
      Date.now(),
    );
    const t0 = Date.now();
    const pod = {
      metadata: { name: "web-1", namespace: "shop", uid: "pod-uid-1" },
      spec: { containers: [] },
    };
    const made = (action: string, message: string, type: "Normal" | "Warning", at: number) =>
      repairEvent({
        pod,
        workload: "shop/Deployment/web",
        message,
        type,
        action,
        instance: "wave-webhook-0",
        now: at,
      });
    // As the repair records them (src/webhook/repair.ts): an eviction, then a blocked one.
    await kube.create("Event", made("Evict", "runs on spot, its slot is on-demand", "Normal", t0 - 60_000), {
      namespace: "shop",
    });
    await kube.create(
      "Event",
      made("EvictBlocked", "a PodDisruptionBudget blocks the eviction", "Warning", t0 - 30_000),
      { namespace: "shop" },
    );
    // Not a repair: an unrelated Event in the same namespace is not forwarded, nor stored.
    await kube.create(
      "Event",
      {
        metadata: { name: "web-1.pulled", namespace: "shop" },
        involvedObject: { kind: "Pod", namespace: "shop", name: "web-1" },
        reason: "Pulled",
        message: "shop/Deployment/web: looks like one but is the kubelet's",
        source: { component: "kubelet" },
      },
      { namespace: "shop" },
    );
    const range = `from=${t0 - 3_600_000}&to=${t0 + 60_000}`;
    const view = async (q: string): Promise<SpotViewDto> =>
      (
        await app.inject({ url: `/api/v1/clusters/${CLUSTER}/spot-placement?${q}`, headers: V })
      ).json<SpotViewDto>();
    const deadline = Date.now() + 20_000;
    let v = await view(range);
    while (v.totals.repairs < 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      v = await view(range);
    }
    const web = v.workloads.find((w) => w.workload.name === "web");
    assert.ok(web, "the workload with a policy is listed");
    assert.equal(web.repairs.total, 2);
    assert.deepEqual(web.repairs.byAction, { Evict: 1, EvictBlocked: 1 }, "the action survived trimming");
    assert.deepEqual(
      web.repairs.recent.map((r) => [r.action, r.pod, r.type, r.message]),
      [
        ["EvictBlocked", "shop/web-1", "Warning", "a PodDisruptionBudget blocks the eviction"],
        ["Evict", "shop/web-1", "Normal", "runs on spot, its slot is on-demand"],
      ],
      "newest first, the workload prefix taken off the message",
    );
    assert.equal(v.totals.repairs, 2, "the kubelet's Event is not a repair");
    // The range picker: a range that ends before the first repair counts none.
    const before = await view(`from=${t0 - 3_600_000}&to=${t0 - 90_000}`);
    assert.equal(before.workloads.find((w) => w.workload.name === "web")?.repairs.total, 0);
    // Kept by core, not read from the cluster: gone from the apiserver, still counted.
    for (const e of (await kube.list("Event", { namespace: "shop" })).items)
      await kube.delete("Event", e.metadata.name ?? "", { namespace: "shop" });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await view(range)).totals.repairs, 2);
    assert.equal((await store.spotRepairs({ clusterId: CLUSTER, from: 0, to: t0 + 60_000 })).length, 2);
  });

  it("counts the webhook's late answers per workload over the range (review → Event → agent → core → API)", async () => {
    const web = { namespace: "shop", kind: "Deployment" as const, name: "web" };
    await store.putPolicy(
      CLUSTER,
      "spot",
      "shop/Deployment/web",
      { workload: web, threshold: 1, strategy: "Prefer" },
      Date.now(),
    );
    // The webhook as `wave webhook` wires it: its recorder writes Events through its kube client.
    const lateAnswers = new LateAnswerRecorder({
      write: (e) => kube.create("Event", e, { namespace: e.metadata.namespace ?? "" }),
      logger: silentLogger,
      instance: "wave-webhook-0",
    });
    // Three admissions whose ledger answers after the deadline: each pod went out unchanged (the
    // scheduler places it without Wave's affinity), then its slot was granted: a late answer.
    const clock = new FakeClock(Date.now());
    let release = (): void => undefined;
    const gate = new Promise<void>((res) => (release = res));
    const slow: Allocator = {
      allocate: () => gate.then(() => ({ capacity: "spot" }) as Awaited<ReturnType<Allocator["allocate"]>>),
    };
    const deps = {
      policies: new InMemoryPolicySource({
        apiVersion: "wave.sh/v1alpha1",
        kind: "SpotPolicySet",
        policies: [{ workload: web, threshold: 1, strategy: "Prefer" as const }],
      }),
      allocator: slow,
      clock,
      deadlineMs: 1_000,
      lateAnswers,
    };
    const answers = [1, 2, 3].map((i) => review(reviewFor("deployment-pod-generatename", i).request, deps));
    await flushMicrotasks();
    await clock.advance(1_000);
    const out = await Promise.all(answers);
    const patches = out.map((a) => Buffer.from(a.response.patch ?? "", "base64").toString("utf8"));
    assert.ok(
      patches.every((p) => !p.includes("karpenter.sh/capacity-type")),
      "answered at the deadline without Wave's affinity",
    );
    release();
    await flushMicrotasks();
    const t0 = Date.now();
    const view = async (q: string): Promise<SpotViewDto> =>
      (
        await app.inject({ url: `/api/v1/clusters/${CLUSTER}/spot-placement?${q}`, headers: V })
      ).json<SpotViewDto>();
    const range = `from=${t0 - 3_600_000}&to=${t0 + 60_000}`;
    const repairsBefore = (await view(range)).totals.repairs;
    await lateAnswers.drain(t0);
    const events = (await kube.list("Event", { namespace: "shop" })).items.filter(
      (e) => e.reason === "WaveSpotLateAnswer",
    );
    assert.deepEqual(
      events.map((e) => [e.involvedObject.kind, e.involvedObject.name, e.count]),
      [["Deployment", "web", 3]],
      "one Event on the workload for the three",
    );

    const deadline = Date.now() + 20_000;
    let v = await view(range);
    while (v.totals.lateAnswers < 3 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      v = await view(range);
    }
    assert.equal(v.workloads.find((w) => w.workload.name === "web")?.lateAnswers, 3);
    assert.equal(v.totals.lateAnswers, 3);
    assert.equal(v.totals.repairs, repairsBefore, "not counted as repairs");
    // The range picker: a range that ends before the Event (stamped in whole seconds) counts none.
    const before = await view(`from=${t0 - 3_600_000}&to=${t0 - 1_000}`);
    assert.equal(before.workloads.find((w) => w.workload.name === "web")?.lateAnswers, 0);
    assert.equal(before.totals.lateAnswers, 0);
  });
});
