// Issue 31's Must show for Wave's policy resources on the shared rig:
//   - a SpotPolicy applied on a Deployment that already runs → the split converges, and the CR's
//     status (written by the webhook's repair leader) shows target = actual, Ready
//   - the webhook decides from its own SpotPolicy informer with core stopped (no core runs here:
//     its policies URL is a closed port), also for pods created after the policy
//   - a WarmupPolicy → a warm node in its NodePool, and the CR's status says so
//   - a bad CR (threshold -1) refused by the apiserver with the schema's message (minimum)
//   - a user bound to wave-policy-edit in namespace A creates a SpotPolicy there and is refused
//     in namespace B (real requests with impersonation: kubectl --as sends Impersonate-User)
// `kubectl get spotpolicies -A` is printed for the report. Own namespaces and NodePools.
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { clientFromKubeconfig } from "../../src/kube/clientnode/kubeconfig.ts";
import type { Pod } from "../../src/objects/kube.ts";
import { ASSIGNMENT_LABEL, DO_NOT_DISRUPT_OWNER_ANNOTATION, isWarmupPod } from "../../src/objects/wave.ts";
import { CAPACITY_TYPE_LABEL } from "../../src/objects/karpenter.ts";
import { generateDevCerts } from "../../src/webhook/certs.ts";
import { buildWebhookConfiguration } from "../../src/webhook/webhook-config.ts";
import { createWarmupActor, policyResources } from "../../src/cli/warmup-actor.ts";
import { followCluster, followPolicies } from "../../src/state/follow.ts";
import { scopedView } from "../../src/warmup/view.ts";
import { runController } from "../../src/warmup/run.ts";
import { VolatilePolicyMemory } from "../../src/warmup/policy-set.ts";
import { realClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";
import type { PriceProvider } from "../../src/pricing/types.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  kubeconfigPath,
  kubectl,
  kubectlRaw,
  markE2eWebhookConfig,
  remove,
  requireRig,
  sweepStaleWebhookConfigs,
  waitFor,
  withStateOnFailure,
} from "./harness.ts";
import { applyTaintedPool, FOUR_VCPU, POOL_LABEL } from "./pools.ts";
import { startReplica, stopChild, type Replica } from "./spot-rig.ts";
import { installPolicyRoles, installWaveCrds } from "./wave-crds.ts";

const E2E_OWNER = "policy-crds";
const APP = "web";
const kube = clientFromKubeconfig(kubeconfigPath);
const suffix = randomBytes(3).toString("hex");
const spotPool = `crd-spot-${suffix}`;
const warmPool = `crd-warm-${suffix}`;
const namespaces: string[] = [];
const spawned: ChildProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];
let ns = "";
let waveNs = "";
let replica: Replica | undefined;

const isLive = (p: Pod): boolean =>
  p.metadata.deletionTimestamp === undefined &&
  p.status?.phase !== "Succeeded" &&
  p.status?.phase !== "Failed";

async function split(): Promise<{
  live: number;
  running: number;
  onDemand: number;
  spot: number;
  labelled: number;
}> {
  const pods = (await kube.list("Pod", { namespace: ns, labelSelector: `app=${APP}` })).items.filter(isLive);
  const nodes = new Map(
    (await kube.list("Node", {})).items.map((n) => [
      n.metadata.name ?? "",
      n.metadata.labels?.[CAPACITY_TYPE_LABEL],
    ]),
  );
  const cap = (p: Pod): string | undefined => nodes.get(p.spec.nodeName ?? "");
  return {
    live: pods.length,
    running: pods.filter((p) => p.status?.phase === "Running").length,
    onDemand: pods.filter((p) => cap(p) === "on-demand").length,
    spot: pods.filter((p) => cap(p) === "spot").length,
    labelled: pods.filter((p) => p.metadata.labels?.[ASSIGNMENT_LABEL] !== undefined).length,
  };
}

function deployment(replicas: number): object {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: APP, namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: APP } },
      template: {
        metadata: { labels: { app: APP } },
        spec: {
          nodeSelector: { [POOL_LABEL]: spotPool },
          tolerations: [{ key: POOL_LABEL, operator: "Equal", value: spotPool, effect: "NoSchedule" }],
          terminationGracePeriodSeconds: 0,
          containers: [
            { name: "app", image: "pause:3.10", resources: { requests: { cpu: "10m", memory: "16Mi" } } },
          ],
        },
      },
    },
  };
}

const spotPolicy = (namespace: string, name: string, threshold: number, target = APP): object => ({
  apiVersion: "wave.sh/v1alpha1",
  kind: "SpotPolicy",
  metadata: { name, namespace },
  spec: { targetRef: { kind: "Deployment", name: target }, threshold, strategy: "Prefer" },
});

before(async () => {
  await requireRig();
  await sweepStaleWebhookConfigs(E2E_OWNER);
  await installWaveCrds();
  await installPolicyRoles();
  ns = await createNamespace("crd-a");
  waveNs = await createNamespace("crd-wave");
  namespaces.push(ns, waveNs);
});

after(async () => {
  for (const c of spawned) await stopChild(c);
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  for (const n of namespaces) await deleteNamespace(n).catch(() => undefined);
  for (const p of [spotPool, warmPool]) await remove("nodepools.karpenter.sh", p).catch(() => undefined);
  await remove("kwoknodeclasses.karpenter.kwok.sh", warmPool).catch(() => undefined);
});

// Ranges are the CRD's schema (minimum/maximum, issue 44), no longer CEL rules: the message is the
// apiserver's own for the field.
test("a bad SpotPolicy (threshold -1) is refused by the apiserver with the schema's message", async () => {
  const r = await kubectlRaw(["apply", "-f", "-"], JSON.stringify(spotPolicy(ns, "bad", -1)));
  assert.notEqual(r.code, 0, "the apiserver refused it");
  assert.match(r.stderr, /spec\.threshold in body should be greater than or equal to 0/);
  console.log(`# refused: ${r.stderr.trim().replaceAll("\n", " ")}`);
  const wr = await kubectlRaw(
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "wave.sh/v1alpha1",
      kind: "WarmupPolicy",
      metadata: { name: `bad-${suffix}` },
      spec: { nodePool: warmPool, enabled: true, ttlSeconds: 5 },
    }),
  );
  assert.match(wr.stderr, /spec\.ttlSeconds in body should be greater than or equal to 30/);
});

test("a user bound to wave-policy-edit in namespace A creates a SpotPolicy there and is refused in B", async () => {
  const b = await createNamespace("crd-b");
  namespaces.push(b);
  const user = `crd-e2e-${suffix}@example.test`;
  await apply({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: "policy-editors", namespace: ns },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "wave-policy-edit" },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
  });
  // RBAC bindings take effect at once, but the authorizer's cache may lag a moment.
  const inA = await waitFor(
    "the impersonated user may create a SpotPolicy in A",
    async () => {
      const r = await kubectlRaw(
        ["--as", user, "create", "-f", "-"],
        JSON.stringify(spotPolicy(ns, "by-alice", 1, "api")),
      );
      return r.code === 0 ? r.stdout : undefined;
    },
    { timeoutMs: 30_000 },
  );
  assert.match(inA, /spotpolicy\.wave\.sh\/by-alice created/);
  const inB = await kubectlRaw(
    ["--as", user, "create", "-f", "-"],
    JSON.stringify(spotPolicy(b, "by-alice", 1, "api")),
  );
  assert.notEqual(inB.code, 0);
  assert.match(inB.stderr, /forbidden/i);
  assert.match(inB.stderr, /cannot create resource "spotpolicies"/);
  // Editors write the spec, never Wave's status.
  const status = await kubectlRaw([
    "--as",
    user,
    "auth",
    "can-i",
    "patch",
    "spotpolicies",
    "--subresource=status",
    "-n",
    ns,
  ]);
  assert.equal(status.stdout.trim(), "no");
  console.log(`# impersonated ${user}: A → ${inA.trim()}; B → ${inB.stderr.trim()}`);
  const del = await kubectlRaw(["--as", user, "delete", "spotpolicy", "by-alice", "-n", ns]);
  assert.equal(del.code, 0, del.stderr);
});

test("a SpotPolicy on a running Deployment converges, its status shows target = actual; the webhook decides without core", async () => {
  // The workload runs before Wave and its policy, all of it on on-demand nodes; then the pool
  // offers spot too, so the policy (2 on-demand) has 2 pods to move.
  const keep = { consolidateAfter: "Never" };
  await applyTaintedPool(spotPool, { capacityTypes: ["on-demand"], disruption: keep });
  await apply(deployment(4));
  await waitFor("4 pods Running on on-demand nodes", async () => (await split()).onDemand === 4, {
    timeoutMs: 180_000,
  });
  await applyTaintedPool(spotPool, { capacityTypes: ["spot", "on-demand"], disruption: keep });
  const tlsDir = mkdtempSync(join(tmpdir(), "wave-crd-e2e-"));
  cleanups.push(async () => {
    await Promise.resolve();
    rmSync(tlsDir, { recursive: true, force: true });
  });
  const certs = await generateDevCerts({ dir: tlsDir, hosts: ["localhost", "127.0.0.1"] });
  replica = await startReplica({
    name: "webhook-0",
    // Core is stopped: nothing listens there. The webhook reads the SpotPolicy resources.
    policiesUrl: "http://127.0.0.1:9/api/v1/policies/spot",
    tlsDir,
    waveNamespace: waveNs,
    viewerToken: randomBytes(18).toString("hex"),
    deadlineMs: 2500,
    spawned,
    env: { WAVE_SPOT_POLICY_SOURCE: "crd" },
  });
  const config = buildWebhookConfiguration({
    name: `wave-crd-${suffix}`,
    caPem: certs.caPem,
    waveNamespace: waveNs,
    url: `https://127.0.0.1:${replica.port}/mutate`,
    timeoutSeconds: 3,
  });
  const hook = config.webhooks?.[0];
  assert.ok(hook);
  hook.namespaceSelector = {
    matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: [ns] }],
  };
  markE2eWebhookConfig(config, E2E_OWNER, [ns, waveNs]);
  await kubectl(["create", "-f", "-"], JSON.stringify(config));
  cleanups.push(() => remove("mutatingwebhookconfiguration", `wave-crd-${suffix}`));

  await withStateOnFailure(
    "spot policy CR",
    async () =>
      `${JSON.stringify(await split())}\n${await kubectl(["get", "spotpolicies", "-n", ns, "-o", "yaml"]).catch(String)}\n` +
      (replica?.output.slice(-30).join("\n") ?? ""),
    async () => {
      const t0 = Date.now();
      await kubectl(["apply", "-f", "-"], JSON.stringify(spotPolicy(ns, "web", 2)));
      const converged = await waitFor(
        "2 pods on on-demand nodes, 2 on spot, and the status saying so",
        async () => {
          const s = await split();
          const cr = await kube.get("SpotPolicy", "web", ns);
          const st = cr.status;
          const ready = st?.conditions?.find((c) => c.type === "Ready")?.status;
          return s.onDemand === 2 &&
            s.spot === 2 &&
            s.running === 4 &&
            st?.targetOnDemand === 2 &&
            st.onDemand === 2 &&
            st.targetSpot === 2 &&
            st.spot === 2 &&
            ready === "True" &&
            st.observedGeneration === cr.metadata.generation
            ? { s, st }
            : undefined;
        },
        { timeoutMs: 300_000, intervalMs: 2_000 },
      );
      const evictions = (await kube.list("Event", { namespace: ns })).items.filter(
        (e) => e.reason === "WaveSpotRepair" && /evicting/.test(e.message ?? ""),
      ).length;
      console.log(
        `# converged in ${((Date.now() - t0) / 1000).toFixed(1)} s, ${evictions} eviction Event(s): ${JSON.stringify(converged.s)}`,
      );
      console.log(`# status ${JSON.stringify(converged.st)}`);

      // New pods are decided at admission from the informer (no core anywhere): scale to 6.
      await kubectl(["scale", "deployment", APP, "-n", ns, "--replicas=6"]);
      await waitFor(
        "6 pods, all placed by the webhook, status target = actual (2 on-demand, 4 spot)",
        async () => {
          const s = await split();
          const st = (await kube.get("SpotPolicy", "web", ns)).status;
          return s.running === 6 &&
            s.labelled === 6 &&
            s.onDemand === 2 &&
            s.spot === 4 &&
            st?.targetOnDemand === 2 &&
            st.onDemand === 2 &&
            st.targetSpot === 4 &&
            st.spot === 4
            ? s
            : undefined;
        },
        { timeoutMs: 240_000, intervalMs: 2_000 },
      );
      const out = await kubectl(["get", "spotpolicies", "-A"]);
      console.log(`# kubectl get spotpolicies -A\n${out.trimEnd().replace(/^/gm, "# ")}`);
      assert.match(out, /TARGET\s+ON-DEMAND\s+SPOT\s+WANT-OD\s+WANT-SPOT\s+READY/);
    },
  );
});

test("a WarmupPolicy → a warm node in its NodePool, and its status says so", async () => {
  await apply({
    apiVersion: "karpenter.kwok.sh/v1alpha1",
    kind: "KWOKNodeClass",
    metadata: { name: warmPool },
    spec: { nodeRegistrationDelay: "5s" },
  });
  await applyTaintedPool(warmPool, {
    nodeClass: warmPool,
    requirements: [FOUR_VCPU],
    disruption: { consolidateAfter: "Never" },
  });
  // A full node: a 3-CPU pod on a 4-vCPU node leaves no room for another → warmup warms one.
  await kube.create(
    "Pod",
    {
      metadata: { name: "big", namespace: ns, labels: { app: "warm" } },
      spec: {
        nodeSelector: { [POOL_LABEL]: warmPool },
        tolerations: [{ key: POOL_LABEL, operator: "Equal", value: warmPool, effect: "NoSchedule" }],
        terminationGracePeriodSeconds: 0,
        containers: [
          { name: "app", image: "pause:3.10", resources: { requests: { cpu: "3", memory: "1Gi" } } },
        ],
      },
    },
    { namespace: ns },
  );
  await waitFor(
    "the workload pod Running",
    async () => (await kube.get("Pod", "big", ns)).status?.phase === "Running",
    { timeoutMs: 180_000 },
  );
  // Warmup as it runs beside the agent: informers into a state, the WarmupPolicies in it (only
  // this test's, the rig is shared), the controller on the test's pool, the status writer.
  const stop = new AbortController();
  const state = await followCluster({ client: kube, signal: stop.signal, clock: realClock });
  const crs = followPolicies({ client: kube, state, signal: stop.signal, clock: realClock });
  const resources = policyResources(state, crs.WarmupPolicy.synced, waveNs);
  const noPrices: PriceProvider = { price: () => undefined };
  const actor = createWarmupActor({
    kube,
    view: scopedView(state, warmPool),
    prices: noPrices,
    clock: realClock,
    log: silentLogger,
    namespace: waveNs,
    memory: new VolatilePolicyMemory(),
    report: () => undefined,
    resources: { ...resources, list: () => resources.list().filter((p) => p.spec.nodePool === warmPool) },
  });
  const running = runController(actor.controller, {
    clock: realClock,
    signal: stop.signal,
    triggers: actor.triggers,
  });
  const statusing = actor.statuses?.run(stop.signal, 2_000);
  cleanups.push(async () => {
    stop.abort();
    await running.catch(() => undefined);
    await statusing?.catch(() => undefined);
    await remove("warmuppolicies.wave.sh", warmPool).catch(() => undefined);
  });
  await kubectl(
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "wave.sh/v1alpha1",
      kind: "WarmupPolicy",
      metadata: { name: warmPool },
      spec: { nodePool: warmPool, enabled: true, maxWarmNodes: 1, prePull: false, ttlSeconds: 600 },
    }),
  );
  const warm = await waitFor(
    "a warm node in the pool (Wave's do-not-disrupt mark) and the WarmupPolicy's status: warm, 1 warm node",
    async () => {
      const nodes = (await kube.list("Node", { labelSelector: `${POOL_LABEL}=${warmPool}` })).items;
      const marked = nodes.filter(
        (n) => n.metadata.annotations?.[DO_NOT_DISRUPT_OWNER_ANNOTATION] !== undefined,
      );
      const pods = (await kube.list("Pod", { namespace: waveNs })).items.filter(isWarmupPod);
      const cr = await kube.get("WarmupPolicy", warmPool);
      return marked.length === 1 &&
        pods.some((p) => p.spec.nodeName) &&
        cr.status?.warmNodes === 1 &&
        cr.status.state === "warm"
        ? { node: marked[0]?.metadata.name, status: cr.status }
        : undefined;
    },
    { timeoutMs: 240_000, intervalMs: 2_000 },
  );
  console.log(`# warm node ${String(warm.node)}; status ${JSON.stringify(warm.status)}`);
  console.log(
    `# kubectl get warmuppolicies\n${(await kubectl(["get", "warmuppolicies", warmPool])).trimEnd().replace(/^/gm, "# ")}`,
  );
});
