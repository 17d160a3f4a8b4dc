// Spot placement acceptance on the real rig (issue 6). Wave's webhook (startWebhookServer with the
// real Lease ledger) runs in this process behind a MutatingWebhookConfiguration with a url
// clientConfig and a caBundle from a generated CA. Its namespaceSelector names only this test's
// namespaces: the rig is shared, nobody else's pods may reach it.
//   prefer   Deployment of 10, threshold 3, Prefer → 3 pods on on-demand nodes, 7 on spot nodes
//            (KWOK nodes Karpenter launched from this test's NodePool, which offers both)
//   require  threshold 3, Require, a NodePool offering only on-demand → 3 Running, the 7 spot pods
//            stay Pending (Karpenter reports them incompatible)
//   scale    10 → 4 keeps the 3 on-demand pods (pod-deletion-cost)
//   capture  the raw AdmissionReviews the apiserver sends for a Deployment pod, a StatefulSet pod,
//            a pod with existing affinity, capacity-constrained pods, a Job pod and a bare
//            generateName pod; Wave's answers are checked, and their shape is compared with
//            test/fixtures/admission (WAVE_CAPTURE_FIXTURES=1 rewrites the fixtures instead)
//   down     webhook closed → pods are still created, unchanged (failurePolicy Ignore)
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kubectlSync } from "../../hack/rig/lib.ts";
import { after, before, test, type TestContext } from "node:test";
import type { ClientNodeKube } from "../../src/kube/clientnode/client.ts";
import { clientFromKubeconfig } from "../../src/kube/clientnode/kubeconfig.ts";
import type { Lease } from "../../src/objects/kube.ts";
import { realClock } from "../../src/shared/clock.ts";
import type { AdmissionReviewResponse, JsonPatchOp } from "../../src/webhook/admission.ts";
import { LEDGER_STATE_ANNOTATION, ledgerLeaseName, SlotAllocator } from "../../src/webhook/allocator.ts";
import { generateDevCerts } from "../../src/webhook/certs.ts";
import { DELETION_COST_ANNOTATION } from "../../src/webhook/constants.ts";
import { counts, ledgerId, parseLedger } from "../../src/webhook/ledger.ts";
import { InMemoryPolicySource } from "../../src/webhook/policy-source.ts";
import type { SpotPolicy } from "../../src/policy/spot.ts";
import { startWebhookServer, type WebhookServer } from "../../src/webhook/server.ts";
import { buildWebhookConfiguration } from "../../src/webhook/webhook-config.ts";
import {
  shapeDiff,
  shapeOf,
  startRecordingFront,
  type Exchange,
  type RecordingFront,
} from "./admission-capture.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  get,
  kubeconfigPath,
  kubectl,
  kubectlRaw,
  list,
  remove,
  requireRig,
  sleep,
  waitFor,
  type KubeObject,
  markE2eWebhookConfig,
  sweepStaleWebhookConfigs,
  withStateOnFailure,
} from "./harness.ts";
import { applyTaintedPool } from "./pools.ts";
import { ASSIGNMENT_LABEL, NOTE_ANNOTATION, SLOT_LABEL } from "../../src/objects/wave.ts";
import { CAPACITY_TYPE_LABEL } from "../../src/objects/karpenter.ts";

const POOL_LABEL = "wave.dev/e2e-pool";
const THRESHOLD = 3;
const REPLICAS = 10;
const PROVISION_TIMEOUT_MS = 120_000;
/** How long the Require deployment's spot pods must stay Pending after Karpenter rejected them. */
const PENDING_HOLD_MS = 15_000;
const FIXTURES_DIR = new URL("../fixtures/admission/", import.meta.url);
/** Captured fixtures are rewritten to this namespace (the one the unit tests use). */
const FIXTURE_NAMESPACE = "shop";
/** Owner mark on this test's MutatingWebhookConfigurations (a killed run's are swept by the next). */
const E2E_OWNER = "spot-placement";

let ns = ""; // the workloads that run
let capNs = ""; // capture-only workloads: a ResourceQuota of 0 pods rejects them after admission
let waveNs = ""; // the ledger Leases
let mixedPool = "";
let onDemandPool = "";
let tlsDir = "";
let configName = "";
let kube: ClientNodeKube | undefined;
let webhook: WebhookServer | undefined;
let front: RecordingFront | undefined;
const policies = new InMemoryPolicySource();

interface Requirement {
  key: string;
  operator: string;
  values?: string[];
}

/** A copy of the rig's `default` NodePool with its own taint and label and the given capacity types. */
const applyPool = (name: string, capacityTypes: string[]): Promise<void> =>
  applyTaintedPool(name, { capacityTypes });

function deployment(name: string, replicas: number, pool: string): object {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { [POOL_LABEL]: pool },
          tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
          terminationGracePeriodSeconds: 0,
          // 1 CPU each: a KWOK node of N CPUs has N − 0.1 allocatable, so the node Karpenter sizes for
          // the on-demand pods has no room left for a spot-preferring pod (the scheduler would bind
          // one there if that node were Ready before the spot node: Prefer is only a preference).
          containers: [
            // KWOK never pulls or runs images; any name works.
            { name: "app", image: "pause:3.10", resources: { requests: { cpu: "1", memory: "128Mi" } } },
          ],
        },
      },
    },
  };
}

const labelsOf = (o: KubeObject | undefined): Record<string, string> => o?.metadata.labels ?? {};
const nodeNameOf = (p: KubeObject): string | undefined => {
  const n = p.spec?.["nodeName"];
  return typeof n === "string" && n !== "" ? n : undefined;
};
const ready = (p: KubeObject): boolean =>
  p.status?.phase === "Running" &&
  (p.status.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false);

async function livePods(app: string): Promise<KubeObject[]> {
  const pods = await list("pods", { namespace: ns, selector: `app=${app}` });
  return pods.filter((p) => p.metadata.deletionTimestamp === undefined);
}

/**
 * All REPLICAS pods of `app` exist and Wave assigned each a capacity type: fails at once (instead
 * of after the provisioning timeout) with Wave's note when a pod was admitted unchanged.
 */
async function expectAssigned(app: string): Promise<void> {
  const pods = await waitFor(
    `${REPLICAS} pods of ${app} to be created`,
    async () => {
      const p = await livePods(app);
      return p.length >= REPLICAS ? p : undefined;
    },
    { timeoutMs: 60_000 },
  );
  const unassigned = pods
    .filter((p) => labelsOf(p)[ASSIGNMENT_LABEL] === undefined)
    .map(
      (p) =>
        `${p.metadata.name}: ${p.metadata.annotations?.[NOTE_ANNOTATION] ?? "no note (webhook not called?)"}`,
    );
  assert.deepEqual(unassigned, [], `every ${app} pod went through Wave's webhook and got a slot`);
}

interface Placed {
  pod: KubeObject;
  node: KubeObject | undefined;
  /** The node's karpenter.sh/capacity-type, or "pending" when the pod has no node. */
  capacity: string;
}

async function placements(app: string): Promise<Placed[]> {
  const [pods, nodes] = await Promise.all([livePods(app), list("nodes")]);
  const byName = new Map(nodes.map((n) => [n.metadata.name, n]));
  return pods.map((pod) => {
    const name = nodeNameOf(pod);
    const node = name === undefined ? undefined : byName.get(name);
    return {
      pod,
      node,
      capacity: name === undefined ? "pending" : (labelsOf(node)[CAPACITY_TYPE_LABEL] ?? "?"),
    };
  });
}

function tally(placed: Placed[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of placed) out[p.capacity] = (out[p.capacity] ?? 0) + 1;
  return out;
}

function report(t: TestContext, what: string, placed: Placed[]): void {
  const line = `${what}: pods per node capacity type ${JSON.stringify(tally(placed))}`;
  t.diagnostic(line);
  console.log(`# ${line}`);
}

/** "node(instance-type, capacity-type): n pods" for the nodes the pods run on. */
function describeNodes(placed: Placed[]): string {
  const perNode = new Map<string, { node: KubeObject; pods: number }>();
  for (const { node } of placed) {
    if (node === undefined) continue;
    const e = perNode.get(node.metadata.name) ?? { node, pods: 0 };
    e.pods++;
    perNode.set(node.metadata.name, e);
  }
  return [...perNode.values()]
    .map(({ node, pods }) => {
      const l = labelsOf(node);
      return `${node.metadata.name}(${l["node.kubernetes.io/instance-type"] ?? "?"}, ${l[CAPACITY_TYPE_LABEL] ?? "?"}): ${pods}`;
    })
    .join("; ");
}

/** Pods whose required node affinity pins capacity type to `value` (in every term). */
function requiredCapacity(p: KubeObject): string[] {
  const affinity = p.spec?.["affinity"] as
    | {
        nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: unknown[] } };
      }
    | undefined;
  const terms = (affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ??
    []) as { matchExpressions?: Requirement[] }[];
  return terms.map(
    (t) => (t.matchExpressions ?? []).find((r) => r.key === CAPACITY_TYPE_LABEL)?.values?.join(",") ?? "",
  );
}

function preferredCapacity(p: KubeObject): string[] {
  const affinity = p.spec?.["affinity"] as
    | {
        nodeAffinity?: {
          preferredDuringSchedulingIgnoredDuringExecution?: {
            weight: number;
            preference: { matchExpressions?: Requirement[] };
          }[];
        };
      }
    | undefined;
  return (affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []).flatMap((t) =>
    (t.preference.matchExpressions ?? [])
      .filter((r) => r.key === CAPACITY_TYPE_LABEL)
      .map((r) => `${t.weight}:${r.values?.join(",") ?? ""}`),
  );
}

async function dumpState(): Promise<string> {
  const out: string[] = [];
  for (const args of [
    ["get", "pods", "-n", ns, "-o", "wide", "--show-labels"],
    ["get", "nodeclaims", "-o", "wide"],
    ["get", "events", "-n", ns, "--sort-by=.lastTimestamp"],
  ]) {
    const r = await kubectlRaw(args);
    out.push(`$ kubectl ${args.join(" ")}\n${r.stdout}${r.stderr}`);
  }
  return out.join("\n");
}

const diagnosed = <T>(fn: () => Promise<T>): Promise<T> =>
  withStateOnFailure("spot placement state", dumpState, fn);

/**
 * The configuration must not outlive this process, even on Ctrl-C or a runner's SIGTERM (the after
 * hook does not run then); the namespaces and NodePools go too.
 */
function cleanUpOnSignal(): void {
  for (const signal of ["SIGINT", "SIGTERM"] as const)
    process.once(signal, () => {
      const del = (kind: string, names: string[]): void => {
        const some = names.filter((n) => n !== "");
        if (some.length > 0) kubectlSync(["delete", kind, ...some, "--ignore-not-found", "--wait=false"]);
      };
      del("mutatingwebhookconfiguration", [configName]);
      del("namespace", [ns, capNs, waveNs]);
      del("nodepools.karpenter.sh", [mixedPool, onDemandPool]);
      process.exit(signal === "SIGINT" ? 130 : 143);
    });
}

before(async () => {
  await requireRig();
  await sweepStaleWebhookConfigs(E2E_OWNER);
  ns = await createNamespace("spot-e2e");
  capNs = await createNamespace("spot-cap");
  waveNs = await createNamespace("spot-wave");
  mixedPool = ns;
  onDemandPool = `${ns}-od`;
  configName = `wave-spot-${ns}`;
  cleanUpOnSignal();
  await applyPool(mixedPool, ["spot", "on-demand"]);
  await applyPool(onDemandPool, ["on-demand"]);
  // Capture namespace: pods are sent to the webhook (mutating admission), then refused by the
  // quota (validating admission): real requests, no nodes for anyone.
  await apply({
    apiVersion: "v1",
    kind: "ResourceQuota",
    metadata: { name: "no-pods", namespace: capNs },
    spec: { hard: { pods: "0" } },
  });
  await waitFor(
    "the capture namespace's ResourceQuota to be computed",
    async () => {
      const q = await get("resourcequota", "no-pods", capNs);
      return (q?.status?.["hard"] as Record<string, string> | undefined)?.["pods"] === "0";
    },
    { timeoutMs: 30_000 },
  );

  const policy = (
    namespace: string,
    kind: SpotPolicy["workload"]["kind"],
    name: string,
    threshold: number,
    strategy: SpotPolicy["strategy"],
  ): SpotPolicy => ({ workload: { namespace, kind, name }, threshold, strategy });
  policies.set({
    apiVersion: "wave.sh/v1alpha1",
    kind: "SpotPolicySet",
    revision: "e2e",
    policies: [
      policy(ns, "Deployment", "spread", THRESHOLD, "Prefer"),
      policy(ns, "Deployment", "strict", THRESHOLD, "Require"),
      policy(capNs, "Deployment", "web", 1, "Prefer"),
      policy(capNs, "StatefulSet", "db", 3, "Require"),
      policy(capNs, "Deployment", "api", 0, "Require"),
      policy(capNs, "Deployment", "checkout", 2, "Prefer"),
      policy(capNs, "Deployment", "batch", 1, "Prefer"),
    ],
  });

  tlsDir = await mkdtemp(join(tmpdir(), "wave-spot-e2e-"));
  const certs = await generateDevCerts({ dir: tlsDir, hosts: ["localhost", "127.0.0.1"] });
  kube = clientFromKubeconfig(kubeconfigPath);
  webhook = await startWebhookServer({
    certFile: certs.certFile,
    keyFile: certs.keyFile,
    host: "127.0.0.1",
    policies,
    allocator: new SlotAllocator({ kube, namespace: waveNs, clock: realClock }),
    // More time for the ledger than the default 1 s, with 1 s left of the apiserver's 3 s: a busy
    // rig's apiserver is slow, and a pod admitted unchanged would fail this test for the wrong reason.
    deadlineMs: 2_000,
  });
  front = await startRecordingFront({
    certFile: certs.certFile,
    keyFile: certs.keyFile,
    caPem: certs.caPem,
    targetPort: webhook.port,
  });
  const config = buildWebhookConfiguration({
    name: configName,
    caPem: certs.caPem,
    waveNamespace: waveNs,
    url: `https://127.0.0.1:${front.port}/mutate`,
  });
  const hook = config.webhooks?.[0];
  assert.ok(hook, "the configuration has a webhook");
  // The rig is shared: only this test's namespaces (instead of "all but kube-system and Wave's").
  hook["namespaceSelector"] = {
    matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: [ns, capNs] }],
  };
  markE2eWebhookConfig(config, E2E_OWNER, [ns, capNs]);
  await kube.create("MutatingWebhookConfiguration", config);

  // The apiserver picks the configuration up asynchronously: wait until a dry-run pod reaches us.
  const probe = JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { generateName: "probe-", namespace: ns },
    spec: { containers: [{ name: "app", image: "pause:3.10" }] },
  });
  const seen = front.exchanges;
  await waitFor(
    "the apiserver to call the webhook (dry-run probe pod)",
    async () => {
      await kubectl(["create", "--dry-run=server", "-f", "-", "-o", "name"], probe);
      return seen.some((e) => e.request.includes('"dryRun":true'));
    },
    { timeoutMs: 30_000 },
  );
});

test("spot placement: the registered configuration is safe and reaches only this test's namespaces", async (t) =>
  diagnosed(async () => {
    const live = await get("mutatingwebhookconfiguration", configName);
    const hook = (live?.["webhooks"] as Record<string, unknown>[] | undefined)?.[0];
    assert.ok(hook, `MutatingWebhookConfiguration ${configName} is registered`);
    const clientConfig = hook["clientConfig"] as { url?: string; caBundle?: string };
    assert.match(clientConfig.url ?? "", /^https:\/\/127\.0\.0\.1:\d+\/mutate$/);
    assert.ok((clientConfig.caBundle ?? "") !== "", "caBundle set");
    assert.equal(hook["failurePolicy"], "Ignore");
    assert.equal(hook["sideEffects"], "NoneOnDryRun");
    assert.equal(hook["reinvocationPolicy"], "IfNeeded");
    const timeout = hook["timeoutSeconds"];
    assert.ok(typeof timeout === "number" && timeout <= 3, `timeoutSeconds ≤ 3 (${String(timeout)})`);
    // A dry-run pod elsewhere (nothing is created) must not reach the webhook.
    assert.ok(front);
    const before = front.exchanges.length;
    await kubectl(
      ["create", "--dry-run=server", "-f", "-", "-o", "name"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { generateName: "scope-probe-", namespace: "default" },
        spec: { containers: [{ name: "app", image: "pause:3.10" }] },
      }),
    );
    const foreign = front.exchanges
      .slice(before)
      .filter(
        (e) => !e.request.includes(`"namespace":"${ns}"`) && !e.request.includes(`"namespace":"${capNs}"`),
      );
    assert.deepEqual(foreign, [], "no request from another namespace");
    t.diagnostic(`config ${configName}: url ${clientConfig.url ?? ""}, timeoutSeconds ${String(timeout)}`);
  }));

after(async () => {
  // The configuration first, so nothing is sent to a closed webhook afterwards.
  if (configName !== "") await remove("mutatingwebhookconfiguration", configName);
  await front?.close();
  await webhook?.close();
  for (const n of [ns, capNs, waveNs]) if (n !== "") await deleteNamespace(n);
  // Deleting the NodePools makes Karpenter remove the NodeClaims they own.
  for (const p of [mixedPool, onDemandPool]) if (p !== "") await remove("nodepools.karpenter.sh", p);
  if (tlsDir !== "") await rm(tlsDir, { recursive: true, force: true });
});

test(
  "spot placement: Prefer, threshold 3 → 3 pods on on-demand nodes, 7 on spot nodes",
  { timeout: 240_000 },
  (t) =>
    diagnosed(async () => {
      const t0 = Date.now();
      await apply(deployment("spread", REPLICAS, mixedPool));
      await expectAssigned("spread");
      const placed = await waitFor(
        `${REPLICAS} Ready pods of spread`,
        async () => {
          const p = await placements("spread");
          return p.length === REPLICAS && p.every((x) => ready(x.pod)) ? p : undefined;
        },
        { timeoutMs: PROVISION_TIMEOUT_MS, intervalMs: 2_000 },
      );
      t.diagnostic(`spread: ${REPLICAS} pods Ready after ${((Date.now() - t0) / 1000).toFixed(1)}s`);
      report(t, "prefer", placed);
      t.diagnostic(`prefer nodes: ${describeNodes(placed)}`);

      const claims = await list("nodeclaims.karpenter.sh");
      const claimed = new Set(claims.map((c) => c.status?.["nodeName"]));
      for (const { pod, node, capacity } of placed) {
        const name = pod.metadata.name;
        assert.ok(node, `pod ${name} has a node`);
        assert.equal(labelsOf(node)["karpenter.sh/nodepool"], mixedPool, `${name}: node from this NodePool`);
        assert.equal(labelsOf(node)["kwok.x-k8s.io/node"], "fake", `${name}: a KWOK node`);
        assert.ok(claimed.has(node.metadata.name), `${name}: node ${node.metadata.name} has a NodeClaim`);
        assert.equal(labelsOf(pod)[ASSIGNMENT_LABEL], capacity, `${name}: Wave's assignment = node's type`);
      }
      assert.deepEqual(tally(placed), { "on-demand": THRESHOLD, spot: REPLICAS - THRESHOLD });

      for (const { pod, capacity } of placed) {
        const name = pod.metadata.name;
        if (capacity === "on-demand") {
          assert.deepEqual(requiredCapacity(pod), ["on-demand"], `${name}: requires on-demand`);
          assert.equal(
            pod.metadata.annotations?.[DELETION_COST_ANNOTATION],
            "10000",
            `${name}: deletion cost`,
          );
        } else {
          // Prefer requires spot while spot is available (ADR 0007); the preference is its fallback.
          assert.deepEqual(requiredCapacity(pod), ["spot"], `${name}: requires spot`);
          assert.deepEqual(preferredCapacity(pod), [], `${name}: no preference outside the fallback window`);
        }
      }

      // The ledger holds exactly the three on-demand slots.
      assert.ok(kube);
      const lease: Lease = await kube.get(
        "Lease",
        ledgerLeaseName(ledgerId({ namespace: ns, kind: "Deployment", name: "spread" })),
        waveNs,
      );
      const ledger = parseLedger(lease.metadata.annotations?.[LEDGER_STATE_ANNOTATION] ?? "");
      assert.deepEqual(counts(ledger), { onDemand: THRESHOLD, spot: 0 });
      const slots = new Set(
        placed.filter((p) => p.capacity === "on-demand").map((p) => labelsOf(p.pod)[SLOT_LABEL]),
      );
      assert.deepEqual(new Set(ledger.entries.keys()), slots, "the ledger's slots are the on-demand pods'");
    }),
);

test(
  "spot placement: Require with an on-demand-only NodePool → 3 Running, 7 spot pods stay Pending",
  { timeout: 240_000 },
  (t) =>
    diagnosed(async () => {
      await apply(deployment("strict", REPLICAS, onDemandPool));
      await expectAssigned("strict");
      // Karpenter has considered the spot pods and refused them (FailedScheduling, from karpenter).
      const rejected = async (): Promise<Set<string>> => {
        const events = await list("events", { namespace: ns });
        return new Set(
          events
            .filter(
              (e) =>
                e["reason"] === "FailedScheduling" &&
                ((e["source"] as { component?: string } | undefined)?.component === "karpenter" ||
                  e["reportingComponent"] === "karpenter"),
            )
            .map((e) => String((e["involvedObject"] as { name?: string } | undefined)?.name)),
        );
      };
      const placed = await waitFor(
        `${THRESHOLD} Ready on-demand pods of strict and ${REPLICAS - THRESHOLD} spot pods rejected by Karpenter`,
        async () => {
          const p = await placements("strict");
          if (p.length !== REPLICAS) return undefined;
          const running = p.filter((x) => ready(x.pod));
          const pending = p.filter((x) => x.capacity === "pending");
          if (running.length !== THRESHOLD || pending.length !== REPLICAS - THRESHOLD) return undefined;
          const seen = await rejected();
          return pending.every((x) => seen.has(x.pod.metadata.name)) ? p : undefined;
        },
        { timeoutMs: PROVISION_TIMEOUT_MS, intervalMs: 2_000 },
      );
      report(t, "require (after Karpenter rejected the spot pods)", placed);
      await sleep(PENDING_HOLD_MS);
      const later = await placements("strict");
      report(t, `require (${PENDING_HOLD_MS / 1000}s later)`, later);
      assert.deepEqual(tally(later), { "on-demand": THRESHOLD, pending: REPLICAS - THRESHOLD });
      for (const { pod, node, capacity } of later) {
        const name = pod.metadata.name;
        const assigned = labelsOf(pod)[ASSIGNMENT_LABEL];
        if (capacity === "pending") {
          assert.equal(pod.status?.phase, "Pending", `${name} is Pending`);
          assert.equal(assigned, "spot", `${name}: Wave assigned spot`);
          assert.deepEqual(requiredCapacity(pod), ["spot"], `${name}: requires spot`);
        } else {
          assert.equal(assigned, "on-demand", `${name}: Wave assigned on-demand`);
          assert.equal(labelsOf(node)["karpenter.sh/nodepool"], onDemandPool, `${name}: on-demand pool`);
        }
      }
      const spotClaims = (await list("nodeclaims.karpenter.sh")).filter(
        (c) =>
          labelsOf(c)["karpenter.sh/nodepool"] === onDemandPool &&
          labelsOf(c)[CAPACITY_TYPE_LABEL] !== "on-demand",
      );
      assert.deepEqual(
        spotClaims.map((c) => c.metadata.name),
        [],
        "no spot NodeClaim in the on-demand pool",
      );
      // Done with it: free the on-demand pool's nodes early.
      await kubectl(["delete", "deployment", "strict", "-n", ns, "--wait=false"]);
    }),
);

test("spot placement: scale 10 → 4 keeps the 3 on-demand pods", { timeout: 180_000 }, (t) =>
  diagnosed(async () => {
    const before = await placements("spread");
    const onDemand = before
      .filter((p) => p.capacity === "on-demand")
      .map((p) => p.pod.metadata.name)
      .sort();
    assert.equal(onDemand.length, THRESHOLD);
    await kubectl(["scale", "deployment", "spread", "--replicas=4", "-n", ns]);
    const placed = await waitFor(
      "spread to be down to 4 pods",
      async () => {
        const p = await placements("spread");
        return p.length === 4 && p.every((x) => ready(x.pod)) ? p : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1_000 },
    );
    report(t, "after scale 10 → 4", placed);
    assert.deepEqual(tally(placed), { "on-demand": THRESHOLD, spot: 1 });
    const kept = placed
      .filter((p) => p.capacity === "on-demand")
      .map((p) => p.pod.metadata.name)
      .sort();
    assert.deepEqual(kept, onDemand, "the same on-demand pods survive the scale-down");
  }),
);

/** Which fixture a captured request is, from the pod it carries (undefined: not one we want). */
function fixtureNameOf(body: string): string | undefined {
  const review = JSON.parse(body) as {
    request?: {
      dryRun?: boolean;
      namespace?: string;
      object?: { metadata?: { generateName?: string; ownerReferences?: { kind?: string; name?: string }[] } };
    };
  };
  const req = review.request;
  if (req?.namespace !== capNs || req.dryRun === true) return undefined;
  const meta = req.object?.metadata;
  const owner = meta?.ownerReferences?.[0];
  if (owner === undefined) return meta?.generateName === "probe-" ? "generatename-pod" : undefined;
  if (owner.kind === "StatefulSet" && owner.name === "db") return "statefulset-pod";
  if (owner.kind === "Job" && owner.name === "report") return "job-pod";
  if (owner.kind !== "ReplicaSet") return undefined;
  const app = owner.name?.replace(/-[a-z0-9]+$/, "");
  return {
    web: "deployment-pod-generatename",
    api: "existing-affinity",
    checkout: "capacity-constrained",
    batch: "capacity-constrained-affinity",
  }[app ?? ""];
}

/** Pod spec of the hand-written fixtures, so the captured pods resemble them. */
function podSpec(container: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    containers: [
      {
        name: container,
        image: "registry.local/shop/web:1.4.2",
        ports: [{ containerPort: 8080 }],
        resources: { requests: { cpu: "250m", memory: "256Mi" } },
      },
    ],
    ...extra,
  };
}

function captureDeployment(name: string, extra: Record<string, unknown> = {}): object {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: capNs },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: podSpec(name, extra) },
    },
  };
}

const EXISTING_AFFINITY = {
  nodeSelector: { "kubernetes.io/os": "linux" },
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          {
            matchExpressions: [
              { key: "topology.kubernetes.io/zone", operator: "In", values: ["test-zone-a", "test-zone-b"] },
            ],
          },
          { matchExpressions: [{ key: "kubernetes.io/arch", operator: "In", values: ["arm64"] }] },
          { matchFields: [{ key: "metadata.name", operator: "NotIn", values: ["node-drain-1"] }] },
        ],
      },
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 20,
          preference: {
            matchExpressions: [{ key: "karpenter.kwok.sh/instance-family", operator: "In", values: ["c"] }],
          },
        },
      ],
    },
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 100,
          podAffinityTerm: {
            labelSelector: { matchLabels: { app: "api" } },
            topologyKey: "kubernetes.io/hostname",
          },
        },
      ],
    },
  },
};

const FIXTURES = [
  "deployment-pod-generatename",
  "statefulset-pod",
  "existing-affinity",
  "capacity-constrained",
  "capacity-constrained-affinity",
  "job-pod",
  "generatename-pod",
] as const;

function decodePatch(response: string): JsonPatchOp[] {
  const r = (JSON.parse(response) as AdmissionReviewResponse).response;
  assert.equal(r.allowed, true);
  return r.patch === undefined
    ? []
    : (JSON.parse(Buffer.from(r.patch, "base64").toString("utf8")) as JsonPatchOp[]);
}

const labelOp = (ops: JsonPatchOp[], key: string): unknown =>
  ops.find((o) => o.path === `/metadata/labels/${key.replaceAll("/", "~1")}`)?.value ??
  (ops.find((o) => o.path === "/metadata/labels")?.value as Record<string, unknown> | undefined)?.[key];

test(
  "spot placement: real AdmissionReviews from the apiserver match the fixtures",
  { timeout: 180_000 },
  (t) =>
    diagnosed(async () => {
      assert.ok(front);
      const exchanges = front.exchanges;
      await apply(captureDeployment("web"));
      await apply(captureDeployment("api", EXISTING_AFFINITY));
      await apply(
        captureDeployment("checkout", {
          nodeSelector: { [CAPACITY_TYPE_LABEL]: "on-demand", "kubernetes.io/os": "linux" },
        }),
      );
      await apply(
        captureDeployment("batch", {
          affinity: {
            nodeAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 50,
                  preference: {
                    matchExpressions: [{ key: CAPACITY_TYPE_LABEL, operator: "In", values: ["spot"] }],
                  },
                },
              ],
            },
          },
        }),
      );
      await apply({
        apiVersion: "apps/v1",
        kind: "StatefulSet",
        metadata: { name: "db", namespace: capNs },
        spec: {
          replicas: 1,
          serviceName: "db",
          selector: { matchLabels: { app: "db" } },
          template: {
            metadata: { labels: { app: "db" } },
            spec: {
              containers: [
                {
                  name: "postgres",
                  image: "registry.local/shop/postgres:16.4",
                  ports: [{ containerPort: 8080 }],
                  resources: { requests: { cpu: "250m", memory: "256Mi" } },
                  volumeMounts: [{ name: "data", mountPath: "/var/lib/postgresql/data" }],
                },
              ],
            },
          },
          volumeClaimTemplates: [
            {
              metadata: { name: "data" },
              spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
            },
          ],
        },
      });
      await apply({
        apiVersion: "batch/v1",
        kind: "Job",
        metadata: { name: "report", namespace: capNs },
        spec: { backoffLimit: 0, template: { spec: podSpec("x", { restartPolicy: "Never" }) } },
      });
      const bare = await kubectlRaw(
        ["create", "-f", "-", "-o", "name"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { generateName: "probe-", namespace: capNs },
          spec: podSpec("probe"),
        }),
      );
      assert.notEqual(bare.code, 0, "the quota refuses the bare pod (after the webhook saw it)");
      assert.match(bare.stderr, /exceeded quota/);

      const captured = await waitFor(
        `one request for each of ${FIXTURES.join(", ")}`,
        () => {
          const first = new Map<string, (typeof exchanges)[number]>();
          for (const e of exchanges) {
            const name = fixtureNameOf(e.request);
            if (name !== undefined && !first.has(name)) first.set(name, e);
          }
          return Promise.resolve(first.size === FIXTURES.length ? first : undefined);
        },
        { timeoutMs: 60_000, intervalMs: 500 },
      );

      // Wave's answers to the real requests.
      const ops = (name: string): JsonPatchOp[] => {
        const e = captured.get(name);
        assert.ok(e);
        assert.equal(e.status, 200, `${name}: HTTP 200`);
        return decodePatch(e.response);
      };
      assert.equal(labelOp(ops("deployment-pod-generatename"), ASSIGNMENT_LABEL), "on-demand");
      assert.equal(labelOp(ops("statefulset-pod"), ASSIGNMENT_LABEL), "on-demand");
      assert.equal(labelOp(ops("existing-affinity"), ASSIGNMENT_LABEL), "spot");
      for (const name of ["capacity-constrained", "capacity-constrained-affinity"]) {
        const o = ops(name);
        assert.equal(labelOp(o, ASSIGNMENT_LABEL), undefined, `${name}: no slot`);
        assert.ok(
          o.some(
            (x) =>
              x.path.includes(NOTE_ANNOTATION.replaceAll("/", "~1")) || x.path === "/metadata/annotations",
          ),
          `${name}: annotated with the note`,
        );
      }
      assert.deepEqual(ops("job-pod"), [], "a Job pod is admitted unchanged");
      assert.deepEqual(ops("generatename-pod"), [], "a bare pod is admitted unchanged");

      const write = process.env["WAVE_CAPTURE_FIXTURES"] === "1";
      for (const name of FIXTURES) {
        const e = captured.get(name);
        assert.ok(e);
        // The only edit: the random capture namespace becomes the one the unit tests use.
        const doc: unknown = JSON.parse(e.request.replaceAll(capNs, FIXTURE_NAMESPACE));
        const file = new URL(`${name}.json`, FIXTURES_DIR);
        if (write) {
          await writeFile(file, JSON.stringify(doc, null, 2) + "\n");
          t.diagnostic(`wrote ${file.pathname}`);
          continue;
        }
        assert.ok(existsSync(file), `fixture ${name}.json exists (WAVE_CAPTURE_FIXTURES=1 writes it)`);
        const committed: unknown = JSON.parse(await readFile(file, "utf8"));
        const { onlyA, onlyB } = shapeDiff(shapeOf(doc), shapeOf(committed));
        assert.deepEqual(
          { onlyInRequest: onlyA, onlyInFixture: onlyB },
          { onlyInRequest: [], onlyInFixture: [] },
          `${name}.json has the shape the apiserver sends (re-capture with WAVE_CAPTURE_FIXTURES=1)`,
        );
      }
      t.diagnostic(`captured ${FIXTURES.length} AdmissionReviews (${exchanges.length} requests seen in all)`);
    }),
);

/** Sum of an apiserver metric's samples for our webhook (series whose name starts with `metric{`). */
async function webhookMetric(metric: string): Promise<number> {
  const metrics = await kubectl(["get", "--raw", "/metrics"]);
  let total = 0;
  for (const line of metrics.split("\n"))
    if (line.startsWith(`${metric}{`) && line.includes(`name="${configName}.wave.sh"`))
      total += Number(line.slice(line.lastIndexOf(" ") + 1));
  return total;
}

const failOpenCount = (): Promise<number> => webhookMetric("apiserver_admission_webhook_fail_open_count");

interface PodMeta {
  generateName?: string;
  ownerReferences?: { kind?: string; name?: string }[];
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
}

/**
 * Admission latency so far: at the webhook (the front times each forwarded request) and as the
 * apiserver saw it (its histogram's mean, TLS and network included). Reported, not asserted.
 */
async function latencyReport(exchanges: readonly Exchange[]): Promise<string> {
  const ok = exchanges.filter((e) => e.status === 200).sort((a, b) => a.ms - b.ms);
  const ms = ok.map((e) => e.ms);
  // Which pods were slowest (first admissions of a workload create its ledger Lease).
  const owner = (e: Exchange): string => {
    const req = (JSON.parse(e.request) as { request?: { object?: { metadata?: PodMeta } } }).request;
    const meta = req?.object?.metadata;
    return meta?.ownerReferences?.[0]?.name ?? meta?.generateName ?? "?";
  };
  const slowest = ok
    .slice(-3)
    .reverse()
    .map((e) => `${e.ms.toFixed(0)} ms (${owner(e)})`)
    .join(", ");
  const metric = "apiserver_admission_webhook_admission_duration_seconds";
  const [sum, count] = await Promise.all([webhookMetric(`${metric}_sum`), webhookMetric(`${metric}_count`)]);
  const f = (x: number): string => x.toFixed(1);
  return (
    `admission latency at the webhook over ${ms.length} requests: p50 ${f(quantile(ms, 0.5))} ms, ` +
    `p99 ${f(quantile(ms, 0.99))} ms, max ${f(ms.at(-1) ?? NaN)} ms; ` +
    `apiserver-observed mean ${count > 0 ? f((sum / count) * 1000) : "n/a"} ms over ${count} calls; ` +
    `slowest ${slowest}`
  );
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(false);
    });
    s.once("error", () => resolve(true));
  });
}

/** The spread pods created since `existing`, once there are `want` of them. */
function newPods(existing: Set<string>, want: number, why: string): Promise<KubeObject[]> {
  return waitFor(
    `${want} new pods of spread to be created (${why})`,
    async () => {
      const p = (await livePods("spread")).filter((x) => !existing.has(x.metadata.name));
      return p.length === want ? p : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 1_000 },
  );
}

function assertUnchanged(pods: KubeObject[]): void {
  for (const pod of pods) {
    const name = pod.metadata.name;
    const waveLabels = Object.keys(labelsOf(pod)).filter((k) => k.startsWith("wave.sh/"));
    assert.deepEqual(waveLabels, [], `${name}: no Wave labels`);
    assert.equal(pod.spec?.["affinity"], undefined, `${name}: no affinity added`);
    assert.deepEqual(pod.metadata.annotations ?? {}, {}, `${name}: no annotations added`);
  }
}

test(
  "spot placement: a stuck webhook times out and pods are still created, unchanged",
  { timeout: 120_000 },
  (t) =>
    diagnosed(async () => {
      assert.ok(front);
      const report = await latencyReport(front.exchanges);
      t.diagnostic(report);
      console.log(`# ${report}`);
      const failOpenBefore = await failOpenCount();
      const existing = new Set((await livePods("spread")).map((p) => p.metadata.name));
      front.hang = true;
      const t0 = Date.now();
      await kubectl(["scale", "deployment", "spread", `--replicas=${existing.size + 2}`, "-n", ns]);
      const fresh = await newPods(existing, 2, "webhook not answering");
      const seconds = (Date.now() - t0) / 1000;
      front.hang = false;
      assert.ok(front.held >= 2, `the apiserver called the stuck webhook (${front.held} requests held)`);
      assertUnchanged(fresh);
      const failOpen = await waitFor(
        "the apiserver to count the timed-out calls as failed open",
        async () => {
          const n = (await failOpenCount()) - failOpenBefore;
          return n >= 2 ? n : undefined;
        },
        { timeoutMs: 15_000 },
      );
      t.diagnostic(
        `webhook stuck: ${fresh.length} pods created unchanged in ${seconds.toFixed(1)}s ` +
          `(${front.held} requests held, ${failOpen} calls failed open)`,
      );
    }),
);

test("spot placement: with the webhook down, pods are still created, unchanged", { timeout: 120_000 }, (t) =>
  diagnosed(async () => {
    assert.ok(webhook && front);
    const frontPort = front.port;
    await front.close();
    await webhook.close();
    front = undefined;
    webhook = undefined;
    assert.equal(await refused(frontPort), true, "nothing listens at the registered URL");
    const failOpenBefore = await failOpenCount();
    const existing = new Set((await livePods("spread")).map((p) => p.metadata.name));
    const t0 = Date.now();
    await kubectl(["scale", "deployment", "spread", `--replicas=${existing.size + 3}`, "-n", ns]);
    const fresh = await newPods(existing, 3, "webhook down");
    const seconds = (Date.now() - t0) / 1000;
    assertUnchanged(fresh);
    const failOpen = await waitFor(
      "the apiserver to count the failed-open calls",
      async () => {
        const n = (await failOpenCount()) - failOpenBefore;
        return n >= 3 ? n : undefined;
      },
      { timeoutMs: 15_000 },
    );
    t.diagnostic(
      `webhook down: ${fresh.length} pods created unchanged in ${seconds.toFixed(1)}s; ` +
        `apiserver failed open ${failOpen} times`,
    );
  }),
);
