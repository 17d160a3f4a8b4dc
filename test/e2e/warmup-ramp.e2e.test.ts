// Warmup you can believe (issue 38), on the rig, every figure read through Wave's API (agent →
// gRPC → core → API: `startWave` in this process). A NodePool of the test's own whose
// KWOKNodeClass registers nodes 30 s after launch, and a Deployment ramped up step by step:
//   cold  ramp 1: its pod waits for a new node (≥ the registration delay);
//   warm  warmup on through the API: Wave's warmup pod gets a NEW node (its NodeClaim created after
//         the warmup began), protected; ramp 2: the new pod lands there and the API reports a hit
//         for that pod, its start equal to the pod's own pending → Ready, since = the warmup's
//         start, and the warm cost = KWOK price × (hit − max(launch, warmup start)) to 1e-6;
//   race  the next warmup pod waits while Karpenter launches its node; ramp back to 1 frees the old
//         node (its pod goes first, by pod-deletion-cost), the scheduler binds the warmup pod
//         there, and Wave removes it: no hit, no miss, no warm cost, no protection.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test, type TestContext } from "node:test";
import type { LifecycleEventDto, WarmupPoolDto, WarmupViewDto } from "../../src/dashboard/dto.ts";
import { startWave, type Started } from "../../src/cli/start.ts";
import { DEFAULTS } from "../../src/config/config.ts";
import { clientFromKubeconfig } from "../../src/kube/clientnode/kubeconfig.ts";
import type { ClientNodeKube } from "../../src/kube/clientnode/client.ts";
import { readyAt, startSeconds } from "../../src/karpenter/pod-start.ts";
import { DO_NOT_DISRUPT_ANNOTATION, NODE_POOL_LABEL } from "../../src/objects/karpenter.ts";
import type { Pod } from "../../src/objects/kube.ts";
import { CREATED_AT_ANNOTATION, parseTime, WARMUP_POOL_LABEL } from "../../src/objects/wave.ts";
import { createLogger } from "../../src/shared/log.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  kubeconfigPath,
  kubectl,
  list,
  remove,
  requireRig,
  waitFor,
  withStateOnFailure,
  type KubeList,
  type KubeObject,
} from "./harness.ts";
import { applyTaintedPool, FOUR_VCPU, kwokOnDemand, POOL_LABEL } from "./pools.ts";
import { installWaveCrds } from "./wave-crds.ts";

const CLUSTER = "e2e-warmup-ramp";
const REGISTRATION_DELAY_S = 30;
const DELETION_COST = "controller.kubernetes.io/pod-deletion-cost";

let ns = "";
let waveNs = "";
let pool = "";
let dataDir = "";
let wave: Started | undefined;
let client: ClientNodeKube;

async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  assert.ok(wave);
  const method = init.method ?? "GET";
  const res = await fetch(new URL(`api/v1/clusters/${CLUSTER}/${path}`, wave.url), {
    method,
    headers: {
      authorization: `Bearer ${method === "GET" ? wave.tokens.viewer : wave.tokens.admin}`,
      ...(init.body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await res.text();
  assert.equal(res.status, 200, `${method} ${path}: ${res.status} ${text}`);
  return (text === "" ? undefined : JSON.parse(text)) as T;
}

let t0 = 0;
const poolView = async (): Promise<WarmupPoolDto | undefined> =>
  (await api<WarmupViewDto>(`warmup?from=${t0 - 60_000}`)).pools.find((p) => p.nodePool === pool);

/** The ramp: 3-vCPU pods on 4-vCPU nodes of the pool, so two never share a node. */
const ramp = (replicas: number): object => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "ramp", namespace: ns },
  spec: {
    replicas,
    selector: { matchLabels: { app: "ramp" } },
    template: {
      metadata: { labels: { app: "ramp" } },
      spec: {
        nodeSelector: { [POOL_LABEL]: pool },
        tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
        terminationGracePeriodSeconds: 0,
        containers: [
          {
            name: "app",
            image: "example.test/warmup-ramp/app:1.0",
            resources: { requests: { cpu: "3", memory: "1Gi" } },
          },
        ],
      },
    },
  },
});

const rampPods = async (): Promise<Pod[]> =>
  (await client.list("Pod", { namespace: ns, labelSelector: "app=ramp" })).items.filter(
    (p) => p.metadata.deletionTimestamp === undefined,
  );
const running = (p: Pod): boolean => p.status?.phase === "Running" && readyAt(p) !== undefined;
const warmupPods = async (): Promise<Pod[]> =>
  (
    await client.list("Pod", { namespace: waveNs, labelSelector: `${WARMUP_POOL_LABEL}=${pool}` })
  ).items.filter(
    (p) => p.metadata.deletionTimestamp === undefined && p.metadata.labels?.["wave.sh/warmup"] === "true",
  );
const claimOf = async (node: string) =>
  (await client.list("NodeClaim")).items.find((c) => c.status?.nodeName === node);
const poolClaims = async () =>
  (await client.list("NodeClaim")).items.filter((c) => c.metadata.labels?.[NODE_POOL_LABEL] === pool);
const marked = (o: { metadata: { annotations?: Record<string, string> } } | undefined): boolean =>
  o?.metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION] === "true";

async function dump(): Promise<string> {
  const pods = [...(await rampPods().catch(() => [])), ...(await warmupPods().catch(() => []))];
  const claims = await poolClaims().catch(() => []);
  return [
    `pods: ${pods.map((p) => `${p.metadata.name ?? ""}@${p.spec.nodeName ?? "-"}:${p.status?.phase ?? "?"}`).join(" ")}`,
    `nodeclaims: ${claims.map((c) => `${c.metadata.name ?? ""}→${c.status?.nodeName ?? "-"} created ${c.metadata.creationTimestamp ?? ""} ${JSON.stringify(c.metadata.annotations ?? {})}`).join("\n  ")}`,
    `api: ${JSON.stringify(await poolView().catch((e: unknown) => String(e)))}`,
  ].join("\n");
}

before(async () => {
  await requireRig();
  await installWaveCrds();
  client = clientFromKubeconfig(kubeconfigPath);
  ns = await createNamespace("warmup-ramp");
  waveNs = await createNamespace("warmup-ramp-wave");
  pool = ns;
  await apply({
    apiVersion: "karpenter.kwok.sh/v1alpha1",
    kind: "KWOKNodeClass",
    metadata: { name: pool },
    spec: { nodeRegistrationDelay: `${REGISTRATION_DELAY_S}s` },
  });
  // On-demand 4-vCPU nodes (one price formula); never consolidated while the test runs, so the
  // node the race frees stays and no node is replaced under the figures.
  await applyTaintedPool(pool, {
    nodeClass: pool,
    capacityTypes: ["on-demand"],
    requirements: [FOUR_VCPU],
    disruption: { consolidationPolicy: "WhenEmpty", consolidateAfter: "Never" },
  });
  dataDir = mkdtempSync(join(tmpdir(), "wave-e2e-warmup-ramp-"));
  wave = await startWave(
    {
      ...DEFAULTS,
      kubeconfig: kubeconfigPath,
      clusterId: CLUSTER,
      namespace: waveNs,
      port: 0,
      grpcPort: 0,
      webhookPort: 0,
      dataDir,
      logLevel: "warn",
    },
    {},
    { log: createLogger({ level: "warn", base: { app: "wave-e2e-warmup-ramp" } }) },
  );
});

after(async () => {
  if (wave) await api(`policies/warmup/${pool}`, { method: "DELETE" }).catch(() => undefined);
  await wave?.stop();
  if (dataDir !== "") rmSync(dataDir, { recursive: true, force: true });
  if (ns !== "") await deleteNamespace(ns);
  if (waveNs !== "") await deleteNamespace(waveNs);
  if (pool === "") return;
  for (const wp of await list("warmuppolicies.wave.sh").catch(() => []))
    if (wp.spec?.["nodePool"] === pool) await remove("warmuppolicies.wave.sh", wp.metadata.name);
  await remove("nodepools.karpenter.sh", pool);
  await waitFor(`NodeClaims of ${pool} gone`, async () => (await poolClaims()).length === 0, {
    timeoutMs: 90_000,
    intervalMs: 1_000,
  }).catch((e: unknown) => process.stderr.write(`# cleanup: ${String(e)}\n`));
  // Its Nodes too: one whose NodeClaim went first can stay behind, and a later test on the shared
  // rig would count a NodePool that no longer exists (core lists the pools of the nodes it sees).
  const poolNodes = (): Promise<KubeObject[]> => list("nodes", { selector: `${NODE_POOL_LABEL}=${pool}` });
  const gone = await waitFor(`Nodes of ${pool} gone`, async () => (await poolNodes()).length === 0, {
    timeoutMs: 30_000,
    intervalMs: 1_000,
  }).catch(() => false);
  if (!gone) for (const n of await poolNodes()) await remove("node", n.metadata.name);
  await remove("kwoknodeclasses.karpenter.kwok.sh", pool);
});

/** Ramp step 1, warmup off: the pod waits for a new node. Returns that node. */
async function coldStep(t: TestContext): Promise<string> {
  t0 = Date.now();
  await apply(ramp(1));
  const a = await waitFor("ramp 1: its pod Running", async () => (await rampPods()).find(running), {
    timeoutMs: 150_000,
    intervalMs: 500,
  });
  const cold = startSeconds(a) ?? NaN;
  t.diagnostic(`cold start (ramp 1): ${cold} s on ${a.spec.nodeName ?? "?"}`);
  assert.ok(cold >= REGISTRATION_DELAY_S, `a cold start waits for node registration (${cold} s)`);
  await waitFor(
    "core to see the pool (warmup off: no policy yet)",
    async () => (await poolView())?.blocker === "disabled",
    { timeoutMs: 60_000, intervalMs: 500 },
  );
  return a.spec.nodeName ?? "";
}

/** Warmup on: Wave's warmup pod gets a node Karpenter launched for it, and protects it. */
async function warmStep(t: TestContext, node1: string) {
  await api(`policies/warmup/${pool}`, {
    method: "PUT",
    body: { enabled: true, maxWarmNodes: 1, ttlSeconds: 900, cooldownSeconds: 0, prePull: false },
  });
  const w1 = await waitFor("Wave's warmup pod", async () => (await warmupPods())[0], {
    timeoutMs: 60_000,
    intervalMs: 250,
  });
  const since = parseTime(w1.metadata.annotations?.[CREATED_AT_ANNOTATION]);
  assert.ok(since !== undefined, "the warmup pod carries its start");
  const node2 = await waitFor(
    "the warmup pod bound to a node",
    async () => (await client.get("Pod", w1.metadata.name ?? "", waveNs)).spec.nodeName,
    { timeoutMs: 120_000, intervalMs: 500 },
  );
  assert.notEqual(node2, node1, "the warmup pod did not take the ramp's node");
  const claim = await claimOf(node2);
  const claimCreated = parseTime(claim?.metadata.creationTimestamp) ?? 0;
  assert.ok(
    claimCreated >= Math.floor(since / 1000) * 1000,
    `Karpenter launched ${node2} for the warmup: NodeClaim created ${claim?.metadata.creationTimestamp ?? "?"} ≥ warmup start ${new Date(since).toISOString()}`,
  );
  await waitFor(
    `do-not-disrupt on ${node2} and its NodeClaim`,
    async () => marked(await client.get("Node", node2)) && marked(await claimOf(node2)),
    { timeoutMs: 30_000, intervalMs: 250 },
  );
  const warm = await waitFor(
    `the API to list ${node2} warm, with its price`,
    async () => (await poolView())?.warmNodes.find((w) => w.name === node2 && w.costPerHour !== null),
    { timeoutMs: 30_000, intervalMs: 250 },
  );
  const instanceType =
    (await client.get("Node", node2)).metadata.labels?.["node.kubernetes.io/instance-type"] ?? "";
  const price = kwokOnDemand(instanceType);
  assert.ok(
    Math.abs((warm.costPerHour ?? NaN) - price) < 1e-9,
    `API price ${warm.costPerHour} = KWOK ${price}`,
  );
  t.diagnostic(
    `warm node ${node2} (${instanceType}, $${price}/h), warmup began ${new Date(since).toISOString()}`,
  );
  return { node2, claim: claim?.metadata.name ?? "", since, price };
}

/** Ramp step 2: the new pod lands on the warm node; the API's hit is that pod, its start, its cost. */
async function hitStep(t: TestContext, w: { node2: string; claim: string; since: number; price: number }) {
  const before = new Set((await rampPods()).map((p) => p.metadata.name));
  await apply(ramp(2));
  const b = await waitFor(
    "ramp 2: the new pod Running",
    async () => (await rampPods()).find((p) => !before.has(p.metadata.name) && running(p)),
    { timeoutMs: 60_000, intervalMs: 200 },
  );
  assert.equal(b.spec.nodeName, w.node2, "the ramp's next pod landed on the warm node");
  const start = startSeconds(b) ?? NaN;
  const key = `${ns}/${b.metadata.name ?? ""}`;
  const view = await waitFor(
    "the API to report the hit",
    async () => {
      const v = await poolView();
      return v?.hits === 1 && v.recentHits.length === 1 ? v : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
  const hit = view.recentHits[0];
  assert.ok(hit);
  t.diagnostic(`hit: ${JSON.stringify(hit)}; the pod's own start ${start} s`);
  assert.equal(hit.pod, key, "the hit names the ramp's pod");
  assert.equal(hit.node, w.node2);
  assert.equal(hit.since, w.since, "since = the warmup's start");
  assert.ok(hit.seconds !== null && Math.abs(hit.seconds - start) <= 1, `start ${hit.seconds} ≈ ${start} s`);
  assert.ok(start < REGISTRATION_DELAY_S / 2, `a warm start, not a cold one (${start} s)`);
  assert.equal(view.warmStartSeconds, hit.seconds, "the page's warm median is that one start");
  assert.ok(hit.at >= (readyAt(b) ?? Infinity), "counted once the pod was Ready");
  // Warm cost: the node's price from max(launch, warmup start) to the hit. The launch is its
  // NodeClaim's Launched step as core stored it (that row names no node yet: Karpenter sets the
  // node name at registration, 30 s later here).
  const rows = await api<LifecycleEventDto[]>(`events?from=${t0 - 60_000}&pool=${pool}&limit=1000`);
  const launch = rows.find((r) => r.nodeClaim === w.claim && r.phase === "Launched")?.at ?? NaN;
  const registered = rows.find((r) => r.nodeClaim === w.claim && r.phase === "Registered")?.at ?? NaN;
  assert.ok(Number.isFinite(launch), `core stored ${w.claim}'s launch`);
  assert.ok(launch >= Math.floor(w.since / 1000) * 1000, "launched after the warmup began");
  t.diagnostic(
    `${w.claim}: launched ${launch}, registered ${registered} (${(registered - launch) / 1000} s later)`,
  );
  const expected = (w.price * (hit.at - Math.max(launch, w.since))) / 3_600_000;
  t.diagnostic(
    `warm cost: API ${view.warmCostUsd} vs ${w.price} × (${hit.at} − max(${launch}, ${w.since})) = ${expected}`,
  );
  assert.ok(Math.abs(view.warmCostUsd - expected) <= 1e-6, `warm cost ${view.warmCostUsd} = ${expected}`);
  assert.ok(expected > 0);
  return view.warmCostUsd;
}

/** The next warmup pod lands on an older node: removed, counted nothing. */
async function raceStep(t: TestContext, node1: string, cost: number): Promise<void> {
  const w2 = await waitFor(
    "the next warmup pod, pending",
    async () => {
      const p = (await warmupPods())[0];
      return p && p.spec.nodeName === undefined ? p : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
  const since = parseTime(w2.metadata.annotations?.[CREATED_AT_ANNOTATION]) ?? 0;
  await waitFor(
    "Karpenter launching a node for it",
    async () =>
      (await poolClaims()).some(
        (c) => (parseTime(c.metadata.creationTimestamp) ?? 0) >= Math.floor(since / 1000) * 1000,
      ),
    { timeoutMs: 30_000, intervalMs: 250 },
  );
  const onNode1 = (await rampPods()).find((p) => p.spec.nodeName === node1);
  assert.ok(onNode1, `a ramp pod on ${node1}`);
  await client.patch(
    "Pod",
    onNode1.metadata.name ?? "",
    { metadata: { annotations: { [DELETION_COST]: "-1000" } } },
    { namespace: ns },
  );
  await apply(ramp(1));
  const name = w2.metadata.name ?? "";
  const scheduled = await waitFor(
    `the scheduler to bind ${name}`,
    async () => {
      const ev = (
        JSON.parse(
          await kubectl([
            "get",
            "events",
            "-n",
            waveNs,
            "--field-selector",
            `involvedObject.name=${name},reason=Scheduled`,
            "-o",
            "json",
          ]),
        ) as KubeList
      ).items[0];
      return ev ? String(ev["message"]) : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
  assert.match(scheduled, new RegExp(`to ${node1}$`), `bound to the freed older node (${scheduled})`);
  await waitFor(
    `Wave to remove ${name}`,
    async () => (await warmupPods()).every((p) => p.metadata.name !== name),
    {
      timeoutMs: 30_000,
      intervalMs: 250,
    },
  );
  t.diagnostic(`race: ${name} ${scheduled.replace(/^Successfully assigned \S+ /, "")}; removed by Wave`);
  // Counted nothing: once core's view has no warmup pod, the counts and cost are what they were.
  const v = await waitFor(
    "the API to drop the warmup pod",
    async () => {
      const p = await poolView();
      return p && p.warmupPods.length === 0 && p.created === 2 ? p : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
  assert.deepEqual([v.hits, v.misses, v.recentHits.length], [1, 0, 1], "no hit, no miss for it");
  assert.equal(v.warmCostUsd, cost, "no warm cost for it");
  assert.deepEqual(v.warmNodes, [], "no warm node");
  assert.equal(marked(await client.get("Node", node1)), false, `${node1} not protected`);
}

test(
  "warmup ramp (rig): a warm node launched for Wave, the ramp's pod a hit with its own start; a warmup pod on an older node counts nothing; warm cost = price × warm time",
  { timeout: 280_000 },
  (t) =>
    withStateOnFailure("warmup-ramp state", dump, async () => {
      const node1 = await coldStep(t);
      const warm = await warmStep(t, node1);
      const cost = await hitStep(t, warm);
      await raceStep(t, node1, cost);
    }),
);
