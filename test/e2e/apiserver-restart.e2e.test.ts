// Fault acceptance on the rig: the apiserver Wave's agent watches dies and comes back. The shared
// rig's own apiserver must stay up (others' tests use it), so this test runs a second
// kube-apiserver on the same etcd — a real HA pair — points Wave at that one, kills it with
// SIGKILL, changes the cluster through the rig's apiserver while it is down, restarts it on the same
// port, and requires core's view of this test's NodePool (NodeClaims, Nodes, Pods) to equal the
// cluster's again within 30 s of the apiserver answering /readyz.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, openSync, rmSync, writeFileSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { apiserverArgs, rigKubeconfig } from "../../hack/rig/cluster.ts";
import { binDir, freePorts, readState, tailFile } from "../../hack/rig/lib.ts";
import { startWave, type Started } from "../../src/cli/start.ts";
import { DEFAULTS } from "../../src/config/config.ts";
import { createLogger } from "../../src/shared/log.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  kubectl,
  kubectlRaw,
  list,
  remove,
  requireRig,
  sleep,
  waitFor,
  withRigLogsOnFailure,
} from "./harness.ts";
import { applyTaintedPool } from "./pools.ts";

const CLUSTER = "e2e-apiserver-restart";
const POOL_LABEL = "wave.dev/e2e-pool";
const RECOVERY_GOAL_MS = 30_000;

let ns = "";
let pool = "";
let wave: Started | undefined;
let tmp = "";
let port = 0;
let apiserver: ChildProcess | undefined;

/** Start the second apiserver on `port`; resolves once /readyz answers ok, with that moment. */
async function startSecondApiserver(): Promise<number> {
  const state = readState();
  const etcdPort = state?.ports["etcdPort"];
  assert.ok(etcdPort, "the rig's state.json names its etcd port");
  const logPath = join(tmp, "kube-apiserver-2.log");
  const fd = openSync(logPath, "a");
  apiserver = spawn(
    join(binDir, "kube-apiserver"),
    [
      ...apiserverArgs({ etcdUrl: `http://127.0.0.1:${etcdPort}`, port, certDir: join(tmp, "certs") }),
      // The rig's apiserver owns the `kubernetes` Service endpoints; a second one with another
      // port would flip them back and forth.
      "--endpoint-reconciler-type=none",
    ],
    { stdio: ["ignore", fd, fd] },
  );
  closeSync(fd);
  const child = apiserver;
  let exited = false;
  child.once("exit", () => (exited = true));
  return waitFor(
    `the second kube-apiserver on :${port} to be ready (log ${logPath}: ${tailFile(logPath, 5)})`,
    async () => {
      if (exited) throw new Error(`kube-apiserver exited: ${tailFile(logPath, 20)}`);
      const r = await kubectlRaw(["--kubeconfig", join(tmp, "kubeconfig"), "get", "--raw", "/readyz"]);
      return r.code === 0 && r.stdout.trim() === "ok" ? Date.now() : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 200 },
  );
}

async function killSecondApiserver(): Promise<void> {
  const child = apiserver;
  apiserver = undefined;
  if (!child || child.exitCode !== null) return;
  const gone = new Promise<void>((ok) => child.once("exit", () => ok()));
  child.kill("SIGKILL");
  await gone;
}

/** This test's slice of the cluster as names, read through the rig's own apiserver. */
async function clusterView(): Promise<string> {
  const selector = `karpenter.sh/nodepool=${pool}`;
  const claims = await list("nodeclaims.karpenter.sh", { selector });
  const nodes = await list("nodes", { selector });
  const pods = await list("pods", { namespace: ns });
  return view(
    claims.map((c) => c.metadata.name),
    nodes.map((n) => n.metadata.name),
    pods.map((p) => p.metadata.name),
  );
}

/** The same slice as Wave's core holds it (fed by the agent through the second apiserver). */
function coreView(): string {
  const state = wave?.hub.get(CLUSTER)?.state;
  if (!state) return "(no cluster in core yet)";
  const inPool = (o: { metadata: { labels?: Record<string, string> } }): boolean =>
    o.metadata.labels?.["karpenter.sh/nodepool"] === pool;
  return view(
    state
      .nodeClaims()
      .filter(inPool)
      .map((c) => c.metadata.name),
    state
      .nodes()
      .filter(inPool)
      .map((n) => n.metadata.name),
    state
      .pods()
      .filter((p) => p.metadata.namespace === ns)
      .map((p) => p.metadata.name),
  );
}

function view(claims: (string | undefined)[], nodes: (string | undefined)[], pods: (string | undefined)[]) {
  const s = (xs: (string | undefined)[]): string => xs.map(String).sort().join(",");
  return `claims=[${s(claims)}] nodes=[${s(nodes)}] pods=[${s(pods)}]`;
}

/** Polls until core's view equals the cluster's; returns when that first held. */
async function converged(description: string, timeoutMs: number): Promise<number> {
  return waitFor(
    description,
    async () => {
      const cluster = await clusterView();
      const core = coreView();
      if (core !== cluster) throw new Error(`core ${core} ≠ cluster ${cluster}`);
      return Date.now();
    },
    { timeoutMs, intervalMs: 100 },
  );
}

before(async () => {
  await requireRig();
  tmp = mkdtempSync(join(tmpdir(), "wave-e2e-apiserver-"));
  [port] = (await freePorts(1)) as [number];
  writeFileSync(join(tmp, "kubeconfig"), JSON.stringify(rigKubeconfig(port)), { mode: 0o600 });
  ns = await createNamespace("e2e-apirestart");
  pool = `${ns}-pool`;
  await applyTaintedPool(pool, { disruption: { consolidationPolicy: "WhenEmpty", consolidateAfter: "10m" } });
  await apply({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          nodeSelector: { [POOL_LABEL]: pool },
          tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
          terminationGracePeriodSeconds: 0,
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { labelSelector: { matchLabels: { app: "web" } }, topologyKey: "kubernetes.io/hostname" },
              ],
            },
          },
          containers: [{ name: "pause", image: "pause:3.10", resources: { requests: { cpu: "1" } } }],
        },
      },
    },
  });
  await startSecondApiserver();
});

after(async () => {
  await wave?.stop();
  await killSecondApiserver();
  if (ns !== "") await deleteNamespace(ns);
  if (pool !== "") await remove("nodepools.karpenter.sh", pool);
  if (tmp !== "") rmSync(tmp, { recursive: true, force: true });
});

test(
  "apiserver restart e2e: the agent recovers and core converges within 30 s of the apiserver's return",
  { timeout: 200_000 },
  () =>
    withRigLogsOnFailure(async () => {
      wave = await startWave(
        {
          ...DEFAULTS,
          kubeconfig: join(tmp, "kubeconfig"),
          clusterId: CLUSTER,
          namespace: ns,
          port: 0,
          grpcPort: 0,
          webhookPort: 0,
          dataDir: tmp,
          logLevel: "error",
        },
        {},
        { log: createLogger({ level: "error", base: { app: "wave-e2e" } }) },
      );
      const log = (m: string): void => void process.stderr.write(`[e2e apiserver-restart] ${m}\n`);

      // Before the fault: one Running pod on one node of the pool, and core agrees.
      await waitFor(
        "1 NodeClaim of the pool with a Ready node",
        async () =>
          (await kubectl(["get", "pods", "-n", ns, "-o", "jsonpath={.items[*].status.phase}"])) === "Running",
        { timeoutMs: 90_000 },
      );
      await converged("core to see the pool's first node through the second apiserver", 30_000);
      const before = await clusterView();
      log(`before the fault: ${before}`);

      // The apiserver dies. Through the rig's apiserver the pool grows to 3 nodes meanwhile.
      const killedAt = Date.now();
      await killSecondApiserver();
      await kubectl(["scale", "deployment", "web", "-n", ns, "--replicas=3"]);
      await waitFor(
        "3 Running pods on 3 nodes while Wave's apiserver is down",
        async () =>
          (await kubectl(["get", "pods", "-n", ns, "-o", "jsonpath={.items[*].status.phase}"])) ===
          "Running Running Running",
        { timeoutMs: 90_000 },
      );
      // Keep it down long enough for the informers to back off several times.
      const downFor = Date.now() - killedAt;
      if (downFor < 15_000) await sleep(15_000 - downFor);
      assert.equal(coreView(), before, "core cannot have seen changes while its apiserver was dead");
      const after3 = await clusterView();
      assert.notEqual(after3, before);
      log(`apiserver down for ${((Date.now() - killedAt) / 1000).toFixed(1)} s; cluster now ${after3}`);

      // It comes back on the same port: core must converge within 30 s of /readyz.
      const readyAt = await startSecondApiserver();
      const convergedAt = await converged(
        `core to converge within ${RECOVERY_GOAL_MS / 1000} s after the apiserver returned`,
        RECOVERY_GOAL_MS,
      );
      const recoveryMs = convergedAt - readyAt;
      log(`apiserver ready → core converged in ${(recoveryMs / 1000).toFixed(1)} s (goal ≤ 30 s)`);
      assert.ok(recoveryMs <= RECOVERY_GOAL_MS);
      assert.equal(wave.hub.get(CLUSTER)?.connected, true, "the agent's stream to core is still connected");
    }),
);
