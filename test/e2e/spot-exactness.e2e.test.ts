// Spot placement exactness on the rig's real apiserver (issue 6, "200 concurrent / 2 replicas").
// Two `wave webhook` processes — how the Helm chart runs the webhook (2 replicas), each with its
// own SlotAllocator and its own connection to the apiserver — sit behind a small TLS-terminating
// front that hands each admission to the next replica in turn (per-request round robin, what a
// Service with two endpoints does). A real MutatingWebhookConfiguration (url clientConfig, scoped
// to this test's namespace) points at the front; the replicas pull their SpotPolicySet from a
// policy endpoint this test serves, as they pull core's.
//   burst   one Deployment of 200 replicas, threshold 17, Prefer, created at once → exactly 17 pods
//           labelled on-demand with the required on-demand node-affinity term, 183 spot with the
//           spot preference; the ledger Lease holds exactly the 17 on-demand slots; both replicas
//           served a substantial share of the admissions
//   storm   200 AdmissionReviews of another Deployment sent by this test at once (200 in flight:
//           the controller paces the burst above to ~10), round robin over the replicas → exactly
//           17 answered on-demand, and the ledger Lease on the apiserver holds exactly those slots
//   failover one replica SIGKILLed (and taken out of the rotation, as its endpoint would be), scale
//           to 230 → the survivor admits the 30 new pods, all spot: still exactly 17 on-demand
// The pods are deliberately never scheduled: they name a scheduler nobody runs, so kube-scheduler
// never marks them Unschedulable and Karpenter (which only provisions for pods the scheduler
// failed) launches no nodes for them — this test is about admission counting, and 230 pods must
// not cost the shared rig 200 KWOK nodes. Hence no NodePool of its own either.
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { Agent } from "node:https";
import { mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test, type TestContext } from "node:test";
import { kubectlSync } from "../../hack/rig/lib.ts";
import { LEDGER_STATE_ANNOTATION, ledgerLeaseName } from "../../src/webhook/allocator.ts";
import { generateDevCerts } from "../../src/webhook/certs.ts";
import { DELETION_COST_ANNOTATION } from "../../src/webhook/constants.ts";
import { counts, ledgerId, parseLedger, type Ledger } from "../../src/webhook/ledger.ts";
import { POLICY_SET_API_VERSION, type SpotPolicySet } from "../../src/policy/spot.ts";
import { httpsRequest, reviewFor } from "../../src/webhook/test-helpers.ts";
import { buildWebhookConfiguration } from "../../src/webhook/webhook-config.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  get,
  kubectl,
  kubectlRaw,
  list,
  remove,
  requireRig,
  waitFor,
  type KubeObject,
  markE2eWebhookConfig,
  sweepStaleWebhookConfigs,
  withStateOnFailure,
} from "./harness.ts";
import {
  answerOf,
  refused,
  running,
  startFront,
  startReplica,
  stopChild,
  type Admission,
  type Replica,
  type RoundRobinFront,
} from "./spot-rig.ts";
import { ASSIGNMENT_LABEL, LEDGER_LABEL, NOTE_ANNOTATION, SLOT_LABEL } from "../../src/objects/wave.ts";
import { CAPACITY_TYPE_LABEL } from "../../src/objects/karpenter.ts";

const THRESHOLD = 17;
const REPLICAS = 200;
const SCALED = 230;
const APP = "burst";
/** The Deployment whose admissions the test sends itself, all at once (never created as pods). */
const STORM = "storm";
/** Top of the allowed range: the shared rig's apiserver can be slow, and a pod admitted unchanged
 * (the designed fallback) would not show the counting. */
const DEADLINE_MS = 2500;
/** Each replica must have served at least this share of a phase's admissions. */
const MIN_SHARE = 0.25;
/** Owner mark on this test's MutatingWebhookConfiguration (a killed run's is swept by the next). */
const E2E_OWNER = "spot-exactness";
/** A scheduler nobody runs: the pods stay Pending without any scheduling or provisioning work. */
const NO_SCHEDULER = "wave-e2e-unscheduled";

let ns = ""; // the Deployment
let waveNs = ""; // the replicas' namespace: their ledger Lease lives here
let configName = "";
let tlsDir = "";
let caPem = "";
let policyServer: HttpServer | undefined;
let front: RoundRobinFront | undefined;
const replicas: Replica[] = [];
/** Every child started, also one whose start failed (so none outlives the test). */
const spawned: ChildProcess[] = [];
const viewerToken = randomBytes(18).toString("hex");

// ---------------------------------------------------------------------------------------------
// helpers

interface Requirement {
  key: string;
  operator: string;
  values?: string[];
}

interface PodAffinity {
  nodeAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: {
      nodeSelectorTerms?: { matchExpressions?: Requirement[] }[];
    };
    preferredDuringSchedulingIgnoredDuringExecution?: {
      weight: number;
      preference: { matchExpressions?: Requirement[] };
    }[];
  };
}

/** The capacity types each required nodeSelectorTerm allows ("" for a term without one). */
function requiredCapacity(p: KubeObject): string[] {
  const a = p.spec?.["affinity"] as PodAffinity | undefined;
  return (a?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []).map(
    (t) => (t.matchExpressions ?? []).find((r) => r.key === CAPACITY_TYPE_LABEL)?.values?.join(",") ?? "",
  );
}

function preferredCapacity(p: KubeObject): string[] {
  const a = p.spec?.["affinity"] as PodAffinity | undefined;
  return (a?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []).flatMap((t) =>
    (t.preference.matchExpressions ?? [])
      .filter((r) => r.key === CAPACITY_TYPE_LABEL)
      .map((r) => `${t.weight}:${r.values?.join(",") ?? ""}`),
  );
}

const labelsOf = (o: KubeObject): Record<string, string> => o.metadata.labels ?? {};

let seq = 0;

/**
 * An AdmissionReview (the shape the rig's apiserver sends, test/fixtures/admission) for a new pod of
 * Deployment `app` in this test's namespace.
 */
function podReview(app: string, uid: number, dryRun: boolean, ownerUid?: string): string {
  const hash = "5bd499bc46";
  const review = reviewFor("deployment-pod-generatename", uid, (x) => {
    const req = x.request as unknown as { namespace: string; dryRun: boolean; object: KubeObject };
    req.namespace = ns;
    req.dryRun = dryRun;
    const meta = req.object.metadata as KubeObject["metadata"] & {
      generateName?: string;
      ownerReferences?: { name: string }[];
    };
    meta.namespace = ns;
    meta.generateName = `${app}-${hash}-`;
    meta.labels = { app, "pod-template-hash": hash };
    for (const o of meta.ownerReferences ?? []) {
      o.name = `${app}-${hash}`;
      if (ownerUid !== undefined) (o as { uid?: string }).uid = ownerUid;
    }
  });
  return JSON.stringify(review);
}

async function livePods(): Promise<KubeObject[]> {
  const pods = await list("pods", { namespace: ns, selector: `app=${APP}` });
  return pods.filter((p) => p.metadata.deletionTimestamp === undefined);
}

function waitForPods(want: number): Promise<KubeObject[]> {
  return waitFor(
    `${want} pods of ${APP} to be created`,
    async () => {
      const p = await livePods();
      return p.length === want ? p : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 1_000 },
  );
}

function deployment(replicaCount: number): object {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: APP, namespace: ns },
    spec: {
      replicas: replicaCount,
      selector: { matchLabels: { app: APP } },
      template: {
        metadata: { labels: { app: APP } },
        spec: {
          schedulerName: NO_SCHEDULER,
          terminationGracePeriodSeconds: 0,
          // KWOK never pulls or runs images; the pods are never bound anyway.
          containers: [
            { name: "app", image: "pause:3.10", resources: { requests: { cpu: "10m", memory: "16Mi" } } },
          ],
        },
      },
    },
  };
}

/** Pods per assignment; "none" = admitted without one (Wave's fallback or the webhook not called). */
function tally(pods: KubeObject[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of pods) {
    const a = labelsOf(p)[ASSIGNMENT_LABEL] ?? "none";
    out[a] = (out[a] ?? 0) + 1;
  }
  return out;
}

async function readLedger(app: string): Promise<Ledger> {
  const name = ledgerLeaseName(ledgerId({ namespace: ns, kind: "Deployment", name: app }));
  const lease = await get("lease", name, waveNs);
  assert.ok(lease, `ledger Lease ${waveNs}/${name} exists`);
  return parseLedger(lease.metadata.annotations?.[LEDGER_STATE_ANNOTATION] ?? "");
}

/**
 * The counts of `pods` (all `total` of the Deployment's) and the ledger Lease. Whatever the timing:
 * never more than THRESHOLD on-demand pods, each holding a ledger slot, every assigned pod with its
 * constraint. When every pod was placed by a replica — no admission fell back (the replica's
 * deadline) or failed open (the apiserver's 3 s timeout), which only happens when the shared rig is
 * overloaded — exactly THRESHOLD on-demand, the rest spot, and the ledger holds exactly the
 * on-demand slots. Returns whether that exact check ran.
 */
async function assertCounts(
  t: TestContext,
  phase: string,
  pods: KubeObject[],
  total: number,
): Promise<boolean> {
  assert.equal(pods.length, total);
  const ledgerOf = ledgerId({ namespace: ns, kind: "Deployment", name: APP });
  const assigned = pods.filter((p) => labelsOf(p)[ASSIGNMENT_LABEL] !== undefined);
  const onDemand = assigned.filter((p) => labelsOf(p)[ASSIGNMENT_LABEL] === "on-demand");
  for (const p of assigned) {
    const name = p.metadata.name;
    assert.equal(labelsOf(p)[LEDGER_LABEL], ledgerOf, `${name}: carries the workload's ledger id`);
    if (labelsOf(p)[ASSIGNMENT_LABEL] === "on-demand") {
      assert.deepEqual(requiredCapacity(p), ["on-demand"], `${name}: requires on-demand`);
      assert.equal(p.metadata.annotations?.[DELETION_COST_ANNOTATION], "10000", `${name}: deletion cost`);
    } else {
      assert.equal(labelsOf(p)[ASSIGNMENT_LABEL], "spot", `${name}: assigned spot`);
      // Prefer requires spot while spot is available (ADR 0007); the preference is its fallback.
      assert.deepEqual(requiredCapacity(p), ["spot"], `${name}: requires spot`);
      assert.deepEqual(preferredCapacity(p), [], `${name}: no preference outside the fallback window`);
    }
  }
  const slots = assigned.map((p) => labelsOf(p)[SLOT_LABEL]);
  assert.equal(new Set(slots).size, assigned.length, "every placed pod has its own slot");
  assert.ok(onDemand.length <= THRESHOLD, `at most ${THRESHOLD} on-demand pods (${onDemand.length})`);

  const ledger = await readLedger(APP);
  const held = counts(ledger);
  assert.ok(
    held.onDemand <= THRESHOLD && held.spot === 0,
    `ledger within the target: ${JSON.stringify(held)}`,
  );
  const onDemandSlots = onDemand.map((p) => labelsOf(p)[SLOT_LABEL] ?? "").sort();
  for (const slot of onDemandSlots)
    assert.ok(ledger.entries.has(slot), `on-demand slot ${slot} is in the ledger`);

  const unplaced = pods
    .filter((p) => labelsOf(p)[ASSIGNMENT_LABEL] === undefined)
    .map((p) => p.metadata.annotations?.[NOTE_ANNOTATION] ?? "failed open (apiserver timeout)");
  if (unplaced.length > 0) {
    const reasons = [...new Set(unplaced)].join("; ");
    const spot = assigned.length - onDemand.length;
    const line =
      `${phase}: EXACT COUNT NOT ASSESSED — the rig was too slow for ${unplaced.length} of ${total} ` +
      `admissions (${reasons}), admitted unchanged as designed; placed: ${onDemand.length} on-demand ` +
      `(target ${THRESHOLD}), ${spot} spot; checked: ≤ ${THRESHOLD} on-demand, every slot in the ledger`;
    t.diagnostic(line);
    console.log(`# ${line}`);
    return false;
  }
  assert.deepEqual(tally(pods), { "on-demand": THRESHOLD, spot: total - THRESHOLD });
  assert.deepEqual(
    [...ledger.entries.keys()].sort(),
    onDemandSlots,
    "the ledger's slots are the on-demand pods'",
  );
  return true;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
}

/** Sum of an apiserver metric's samples for this test's webhook. */
async function webhookMetric(metric: string): Promise<number> {
  const metrics = await kubectl(["get", "--raw", "/metrics"]);
  let total = 0;
  for (const line of metrics.split("\n"))
    if (line.startsWith(`${metric}{`) && line.includes(`name="${configName}.wave.sh"`))
      total += Number(line.slice(line.lastIndexOf(" ") + 1));
  return total;
}

/** Per-replica counts and latency of this Deployment's real admissions in `batch`; also printed. */
function summarize(t: TestContext, phase: string, batch: Admission[]): Map<string, number> {
  const per = new Map<string, number>();
  for (const a of batch) per.set(a.replica, (per.get(a.replica) ?? 0) + 1);
  const ms = batch.map((a) => a.ms).sort((a, b) => a - b);
  const f = (x: number): string => x.toFixed(1);
  const line =
    `${phase}: ${batch.length} admissions (${[...per].map(([r, n]) => `${r} ${n}`).join(", ")}); ` +
    `latency at the replicas p50 ${f(quantile(ms, 0.5))} ms, p99 ${f(quantile(ms, 0.99))} ms, ` +
    `max ${f(ms.at(-1) ?? NaN)} ms; at most ${front?.maxInFlight ?? 0} in flight at once`;
  t.diagnostic(line);
  console.log(`# ${line}`);
  return per;
}

const burstAdmissions = (from = 0): Admission[] =>
  (front?.admissions ?? [])
    .slice(from)
    .filter((a) => a.namespace === ns && !a.dryRun && a.owner.startsWith(`${APP}-`));

async function dumpState(): Promise<string> {
  const out: string[] = [];
  for (const args of [
    ["get", "deployment,replicaset", "-n", ns, "-o", "wide"],
    ["get", "leases", "-n", waveNs, "-o", "yaml"],
    ["get", "events", "-n", ns, "--sort-by=.lastTimestamp"],
  ]) {
    const r = await kubectlRaw(args);
    out.push(`$ kubectl ${args.join(" ")}\n${r.stdout.slice(-6000)}${r.stderr}`);
  }
  for (const r of replicas)
    out.push(`----- wave webhook ${r.name} (last 30 lines) -----\n${r.output.slice(-30).join("\n")}`);
  return out.join("\n");
}

const diagnosed = <T>(fn: () => Promise<T>): Promise<T> =>
  withStateOnFailure("spot exactness state", dumpState, fn);

function killReplicas(): void {
  for (const c of spawned) if (running(c)) c.kill("SIGKILL");
}

const startReplicaNamed = (name: string, policiesUrl: string): Promise<Replica> =>
  startReplica({
    name,
    policiesUrl,
    tlsDir,
    waveNamespace: waveNs,
    viewerToken,
    deadlineMs: DEADLINE_MS,
    spawned,
  });

/** Ctrl-C or a runner's SIGTERM skips the after hook: the configuration must not outlive us. */
function cleanUpOnSignal(): void {
  for (const signal of ["SIGINT", "SIGTERM"] as const)
    process.once(signal, () => {
      if (configName !== "")
        kubectlSync([
          "delete",
          "mutatingwebhookconfiguration",
          configName,
          "--ignore-not-found",
          "--wait=false",
        ]);
      killReplicas();
      const names = [ns, waveNs].filter((n) => n !== "");
      if (names.length > 0)
        kubectlSync(["delete", "namespace", ...names, "--ignore-not-found", "--wait=false"]);
      process.exit(signal === "SIGINT" ? 130 : 143);
    });
}

// ---------------------------------------------------------------------------------------------

before(async () => {
  await requireRig();
  await sweepStaleWebhookConfigs(E2E_OWNER);
  ns = await createNamespace("spotx-e2e");
  waveNs = await createNamespace("spotx-wave");
  configName = `wave-spot-${ns}`;
  cleanUpOnSignal();

  tlsDir = await mkdtemp(join(tmpdir(), "wave-spotx-e2e-"));
  const certs = await generateDevCerts({ dir: tlsDir, hosts: ["localhost", "127.0.0.1"] });
  caPem = certs.caPem;

  // What core serves the webhooks (GET with the viewer token): one policy, this Deployment.
  const set: SpotPolicySet = {
    apiVersion: POLICY_SET_API_VERSION,
    kind: "SpotPolicySet",
    revision: "e2e-exactness",
    policies: [
      {
        workload: { namespace: ns, kind: "Deployment", name: APP },
        threshold: THRESHOLD,
        strategy: "Prefer",
      },
      {
        workload: { namespace: ns, kind: "Deployment", name: STORM },
        threshold: THRESHOLD,
        strategy: "Prefer",
      },
    ],
  };
  const server = createHttpServer((req, res) => {
    const ok = req.method === "GET" && req.headers.authorization === `Bearer ${viewerToken}`;
    res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
    res.end(ok ? JSON.stringify(set) : JSON.stringify({ error: "unauthorized" }));
  });
  policyServer = server;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const policiesUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/policies/spot`;

  replicas.push(
    ...(await Promise.all([
      startReplicaNamed("webhook-a", policiesUrl),
      startReplicaNamed("webhook-b", policiesUrl),
    ])),
  );

  // Each replica has loaded the policy: a dry-run review of one of the Deployment's pods, sent to
  // it directly, gets an assignment (and writes nothing).
  const agent = new Agent({ keepAlive: false, ca: caPem });
  for (const r of replicas) {
    await waitFor(
      `${r.name} to answer with an assignment (policy loaded)`,
      async () => {
        const res = await httpsRequest(agent, r.port, podReview(APP, seq++, true));
        return res.status === 200 && answerOf(res.body).assigned !== undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
  }
  agent.destroy();

  front = await startFront(certs.certFile, certs.keyFile, caPem, replicas);
  const config = buildWebhookConfiguration({
    name: configName,
    caPem,
    waveNamespace: waveNs,
    url: `https://127.0.0.1:${front.port}/mutate`,
    timeoutSeconds: 3,
  });
  const hook = config.webhooks?.[0];
  assert.ok(hook, "the configuration has a webhook");
  // The rig is shared: only this test's namespace (instead of "all but kube-system and Wave's").
  hook.namespaceSelector = {
    matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: [ns] }],
  };
  markE2eWebhookConfig(config, E2E_OWNER, [ns, waveNs]);
  await kubectl(["create", "-f", "-"], JSON.stringify(config));

  // The apiserver picks the configuration up asynchronously: wait until a dry-run pod reaches us.
  const probe = JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { generateName: "probe-", namespace: ns },
    spec: { schedulerName: NO_SCHEDULER, containers: [{ name: "app", image: "pause:3.10" }] },
  });
  const seen = front.admissions;
  await waitFor(
    "the apiserver to call the webhook (dry-run probe pod)",
    async () => {
      await kubectl(["create", "--dry-run=server", "-f", "-", "-o", "name"], probe);
      return seen.some((a) => a.dryRun && a.namespace === ns);
    },
    { timeoutMs: 30_000 },
  );
});

after(async () => {
  // The configuration first, so the apiserver stops calling the replicas we are about to stop.
  if (configName !== "") await remove("mutatingwebhookconfiguration", configName);
  for (const c of spawned) await stopChild(c);
  await front?.close();
  const policies = policyServer;
  if (policies)
    await new Promise<void>((resolve) => {
      policies.close(() => resolve());
      policies.closeAllConnections();
    });
  // The namespaces take the 230 pods and the ledger Lease with them.
  for (const n of [ns, waveNs]) if (n !== "") await deleteNamespace(n);
  if (tlsDir !== "") await rm(tlsDir, { recursive: true, force: true });
});

test(
  `spot exactness: ${REPLICAS} pods at once through 2 webhook replicas → exactly ${THRESHOLD} on-demand`,
  { timeout: 180_000 },
  (t) =>
    diagnosed(async () => {
      assert.ok(front);
      const metric = "apiserver_admission_webhook_admission_duration_seconds";
      front.maxInFlight = 0;
      const t0 = Date.now();
      await apply(deployment(REPLICAS));
      const pods = await waitForPods(REPLICAS);
      const seconds = (Date.now() - t0) / 1000;
      const batch = burstAdmissions();
      const per = summarize(t, `burst of ${REPLICAS} (all created in ${seconds.toFixed(1)} s)`, batch);
      const [sum, count] = await Promise.all([
        webhookMetric(`${metric}_sum`),
        webhookMetric(`${metric}_count`),
      ]);
      const apiserverLine = `apiserver-observed admission mean ${count > 0 ? ((sum / count) * 1000).toFixed(1) : "n/a"} ms over ${count} calls`;
      t.diagnostic(apiserverLine);
      console.log(`# ${apiserverLine}`);

      const exact = await assertCounts(t, "burst", pods, REPLICAS);

      // Both replicas did a real share of the work, and their answers agree with the pods.
      for (const r of replicas) {
        const n = per.get(r.name) ?? 0;
        assert.ok(
          n >= MIN_SHARE * batch.length,
          `${r.name} served ${n} of ${batch.length} admissions (at least ${MIN_SHARE * 100} % expected)`,
        );
      }
      assert.deepEqual(
        batch.filter((a) => a.status !== 200),
        [],
        "every answer is HTTP 200",
      );
      const onDemandAnswers = batch.filter((a) => a.assigned === "on-demand").length;
      assert.ok(onDemandAnswers <= THRESHOLD, `at most ${THRESHOLD} on-demand answers (${onDemandAnswers})`);
      if (exact) {
        assert.equal(batch.length, REPLICAS, "one admission per pod, all through the front");
        assert.equal(onDemandAnswers, THRESHOLD, "on-demand answers");
        assert.deepEqual(
          batch.filter((a) => a.warned),
          [],
          "no fallback warning",
        );
      }
      const onDemandBy = new Set(batch.filter((a) => a.assigned === "on-demand").map((a) => a.replica));
      t.diagnostic(`on-demand slots granted by: ${[...onDemandBy].join(", ")}`);
    }),
);

test(
  `spot exactness: ${REPLICAS} AdmissionReviews in flight at once over 2 replicas → exactly ${THRESHOLD} on-demand in the Lease`,
  { timeout: 120_000 },
  (t) =>
    diagnosed(async () => {
      // The ReplicaSet controller paces pod creation (its client's rate limit, slow-start batches),
      // so the burst above has only a few admissions in flight at a time. Here the test itself is
      // the apiserver: every review is sent at once, and both replicas race on the real Lease.
      assert.ok(front);
      const port = front.port;
      const from = front.admissions.length;
      front.maxInFlight = 0;
      // The webhook only grants on-demand slots to pods their controller is about to create
      // (issue 16): the storm's ReplicaSet exists with room for 200 pods. Its own pods opt out of
      // the webhook and name a scheduler nobody runs, so they count nowhere and cost nothing.
      const rs = await apply({
        apiVersion: "apps/v1",
        kind: "ReplicaSet",
        metadata: { name: `${STORM}-5bd499bc46`, namespace: ns },
        spec: {
          replicas: REPLICAS,
          selector: { matchLabels: { app: `${STORM}-rs` } },
          template: {
            metadata: { labels: { app: `${STORM}-rs`, "wave.sh/spot-placement": "disabled" } },
            spec: {
              schedulerName: NO_SCHEDULER,
              containers: [{ name: "app", image: "pause:3.10" }],
            },
          },
        },
      });
      const stormOwnerUid = typeof rs.metadata["uid"] === "string" ? rs.metadata["uid"] : "";
      const agent = new Agent({ keepAlive: true, ca: caPem, maxSockets: REPLICAS });
      // Open the connections first (health checks, through the front to the replicas): TLS
      // handshakes one after another would otherwise spread the reviews out in time.
      const health = await Promise.all(
        Array.from({ length: REPLICAS }, () =>
          httpsRequest(agent, port, "", { path: "/healthz", method: "GET" }),
        ),
      );
      assert.ok(
        health.every((h) => h.status === 200),
        "both replicas healthy",
      );
      front.maxInFlight = 0;
      const t0 = performance.now();
      const answers = await Promise.all(
        Array.from({ length: REPLICAS }, () =>
          httpsRequest(agent, port, podReview(STORM, seq++, false, stormOwnerUid)),
        ),
      );
      const ms = performance.now() - t0;
      agent.destroy();
      const batch = front.admissions.slice(from).filter((a) => a.owner.startsWith(`${STORM}-`));
      const per = summarize(t, `storm of ${REPLICAS} (all answered in ${ms.toFixed(0)} ms)`, batch);

      assert.deepEqual(
        answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.body}`),
        [],
        "every review answered 200",
      );
      const decided = answers.map((a) => answerOf(a.body));
      const onDemand = decided.filter((d) => d.assigned === "on-demand");
      const slots = onDemand.map((d) => d.slot ?? "").sort();
      const ledger = await readLedger(STORM);
      const held = counts(ledger);
      // Whatever the timing: never more than THRESHOLD on-demand, each answer's slot in the ledger.
      assert.ok(onDemand.length <= THRESHOLD, `at most ${THRESHOLD} on-demand answers (${onDemand.length})`);
      assert.ok(
        held.onDemand <= THRESHOLD && held.spot === 0,
        `ledger within the target: ${JSON.stringify(held)}`,
      );
      for (const slot of slots)
        assert.ok(ledger.entries.has(slot), `on-demand slot ${slot} is in the ledger`);
      const fellBack = decided.filter((d) => d.warned).length;
      if (fellBack > 0) {
        const line = `storm: EXACT COUNT NOT ASSESSED — ${fellBack} of ${REPLICAS} reviews fell back (replica deadline on a slow rig)`;
        t.diagnostic(line);
        console.log(`# ${line}`);
      } else {
        assert.equal(onDemand.length, THRESHOLD, "on-demand answers");
        assert.equal(
          decided.filter((d) => d.assigned === "spot").length,
          REPLICAS - THRESHOLD,
          "spot answers",
        );
        assert.deepEqual(
          [...ledger.entries.keys()].sort(),
          slots,
          "the ledger's slots are the ones answered on-demand",
        );
      }
      for (const r of replicas) {
        const n = per.get(r.name) ?? 0;
        assert.ok(n >= MIN_SHARE * batch.length, `${r.name} served ${n} of ${batch.length} reviews`);
      }
    }),
);

test(
  `spot exactness: one replica SIGKILLed, scale to ${SCALED} → the survivor keeps exactly ${THRESHOLD} on-demand`,
  { timeout: 180_000 },
  (t) =>
    diagnosed(async () => {
      assert.ok(front);
      const [survivor, victim] = replicas;
      assert.ok(survivor && victim);
      const before = new Set(
        (await livePods())
          .filter((p) => labelsOf(p)[ASSIGNMENT_LABEL] === "on-demand")
          .map((p) => p.metadata.name),
      );
      victim.child.kill("SIGKILL");
      await victim.exited;
      assert.equal(victim.child.signalCode, "SIGKILL");
      assert.equal(await refused(victim.port), true, `${victim.name} is gone`);
      // Its endpoint leaves the rotation, as the endpoints controller does for a dead pod.
      front.drop(victim.name);

      const from = front.admissions.length;
      front.maxInFlight = 0;
      const t0 = Date.now();
      await kubectl(["scale", "deployment", APP, `--replicas=${SCALED}`, "-n", ns]);
      const pods = await waitForPods(SCALED);
      const seconds = (Date.now() - t0) / 1000;
      const batch = burstAdmissions(from);
      summarize(t, `scale to ${SCALED} after SIGKILL (created in ${seconds.toFixed(1)} s)`, batch);

      const exact = await assertCounts(t, "failover", pods, SCALED);
      const after = pods
        .filter((p) => labelsOf(p)[ASSIGNMENT_LABEL] === "on-demand")
        .map((p) => p.metadata.name);
      for (const name of before) assert.ok(after.includes(name), `on-demand pod ${name} kept`);
      assert.deepEqual(
        batch.filter((a) => a.replica !== survivor.name || a.status !== 200),
        [],
        `${survivor.name} answered every admission`,
      );
      if (exact && before.size === THRESHOLD) {
        assert.deepEqual(new Set(after), before, "the same on-demand pods, no new on-demand slot");
        assert.equal(batch.length, SCALED - REPLICAS, "one admission per new pod, all through the front");
        assert.deepEqual(
          batch.filter((a) => a.warned || a.assigned !== "spot"),
          [],
          "every new pod went to spot, without a fallback",
        );
      }
    }),
);
