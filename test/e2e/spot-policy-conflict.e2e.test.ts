// Issue 43 (5) on the shared rig: two SpotPolicies on one Deployment — `web-git` (threshold 1)
// applied first, `a-console` (threshold 3) a moment later under a name that sorts first — and a
// policy on another Deployment (`api`, threshold 2). The documented rule (docs/spot-placement.md
// "Two SpotPolicies on one workload", src/policy/in-force.ts): the one created first decides.
// Through both ways a webhook gets its policies, each in a namespace and with a webhook of its own,
// one after the other (each webhook's repair acts on every workload with a policy it reads):
//   crd   `wave webhook` reading the SpotPolicy resources (the chart's default): web runs 1 pod on
//         on-demand and 3 on spot, api 2 and 1; a-console's status shows Conflict naming web-git;
//         then web-git deleted → a-console decides: web moves to 3 on-demand, its Conflict clears
//   core  `wave webhook --spot-policy-source core`, long-polling core's policy route (the real
//         route and the CR reading core does; here it reads the rig's CRs directly instead of
//         through an agent stream): the set it serves has one policy per workload, and the webhook
//         places both workloads by it (before issue 43 it refused the whole set: nothing placed)
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { build } from "../../src/api/app.ts";
import { policyRoutes } from "../../src/api/routes/policies.ts";
import type { PolicyCrAccess } from "../../src/console/policy-crs.ts";
import { openStore } from "../../src/core/store/open.ts";
import type { Store } from "../../src/core/store/store.ts";
import { clientFromKubeconfig } from "../../src/kube/clientnode/kubeconfig.ts";
import type { Pod } from "../../src/objects/kube.ts";
import type { SpotPolicyResource } from "../../src/objects/policy-crds.ts";
import { ASSIGNMENT_LABEL } from "../../src/objects/wave.ts";
import { CAPACITY_TYPE_LABEL } from "../../src/objects/karpenter.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { generateDevCerts } from "../../src/webhook/certs.ts";
import { buildWebhookConfiguration } from "../../src/webhook/webhook-config.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  kubeconfigPath,
  kubectl,
  markE2eWebhookConfig,
  remove,
  requireRig,
  sleep,
  sweepStaleWebhookConfigs,
  waitFor,
  withStateOnFailure,
} from "./harness.ts";
import { applyTaintedPool, POOL_LABEL } from "./pools.ts";
import { startReplica, stopChild, type Replica } from "./spot-rig.ts";
import { installWaveCrds } from "./wave-crds.ts";

const E2E_OWNER = "spot-policy-conflict";
const kube = clientFromKubeconfig(kubeconfigPath);
const suffix = randomBytes(3).toString("hex");
const pool = `conflict-${suffix}`;
const namespaces: string[] = [];
const spawned: ChildProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];

const isLive = (p: Pod): boolean =>
  p.metadata.deletionTimestamp === undefined &&
  p.status?.phase !== "Succeeded" &&
  p.status?.phase !== "Failed";

/** A Deployment's live pods by the capacity type of the node they run on, and how many Wave placed. */
async function split(ns: string, app: string) {
  const pods = (await kube.list("Pod", { namespace: ns, labelSelector: `app=${app}` })).items.filter(isLive);
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
    placed: pods.filter((p) => p.metadata.labels?.[ASSIGNMENT_LABEL] !== undefined).length,
  };
}

const deployment = (ns: string, app: string, replicas: number): object => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: app, namespace: ns },
  spec: {
    replicas,
    selector: { matchLabels: { app } },
    template: {
      metadata: { labels: { app } },
      spec: {
        nodeSelector: { [POOL_LABEL]: pool },
        tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
        terminationGracePeriodSeconds: 0,
        containers: [
          { name: "app", image: "pause:3.10", resources: { requests: { cpu: "10m", memory: "16Mi" } } },
        ],
      },
    },
  },
});

const spotPolicy = (ns: string, name: string, target: string, threshold: number): object => ({
  apiVersion: "wave.sh/v1alpha1",
  kind: "SpotPolicy",
  metadata: { name, namespace: ns },
  spec: { targetRef: { kind: "Deployment", name: target }, threshold, strategy: "Require" },
});

/** The three policies; a-console created at least a second after web-git (timestamps are seconds). */
async function applyPolicies(ns: string): Promise<void> {
  await kubectl(["apply", "-f", "-"], JSON.stringify(spotPolicy(ns, "web-git", "web", 1)));
  await kubectl(["apply", "-f", "-"], JSON.stringify(spotPolicy(ns, "api", "api", 2)));
  await sleep(1_100);
  await kubectl(["apply", "-f", "-"], JSON.stringify(spotPolicy(ns, "a-console", "web", 3)));
}

/** A webhook replica registered for `ns` only. */
async function webhookFor(
  ns: string,
  waveNs: string,
  o: { policiesUrl: string; viewer: string; env: Record<string, string> },
): Promise<Replica> {
  const tlsDir = mkdtempSync(join(tmpdir(), "wave-conflict-e2e-"));
  cleanups.push(async () => {
    await Promise.resolve();
    rmSync(tlsDir, { recursive: true, force: true });
  });
  const certs = await generateDevCerts({ dir: tlsDir, hosts: ["localhost", "127.0.0.1"] });
  const replica = await startReplica({
    name: `webhook-${ns}`,
    policiesUrl: o.policiesUrl,
    tlsDir,
    waveNamespace: waveNs,
    viewerToken: o.viewer,
    deadlineMs: 2500,
    spawned,
    env: o.env,
  });
  const name = `wave-conflict-${ns}`;
  const config = buildWebhookConfiguration({
    name,
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
  cleanups.push(() => remove("mutatingwebhookconfiguration", name));
  return replica;
}

/** web and api created, then placed as `want` says (pods on on-demand nodes), every pod placed by Wave. */
async function expectPlaced(ns: string, want: { web: number; api: number }, what: string): Promise<void> {
  const t0 = Date.now();
  const got = await waitFor(
    what,
    async () => {
      const web = await split(ns, "web");
      const api = await split(ns, "api");
      return web.running === 4 &&
        web.placed === 4 &&
        web.onDemand === want.web &&
        web.spot === 4 - want.web &&
        api.running === 3 &&
        api.placed === 3 &&
        api.onDemand === want.api &&
        api.spot === 3 - want.api
        ? { web, api }
        : undefined;
    },
    { timeoutMs: 300_000, intervalMs: 2_000 },
  );
  console.log(`# ${ns}: ${what} in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${JSON.stringify(got)}`);
}

const conditionOf = (cr: SpotPolicyResource, type: string) =>
  cr.status?.conditions?.find((c) => c.type === type);

before(async () => {
  await requireRig();
  await sweepStaleWebhookConfigs(E2E_OWNER);
  await installWaveCrds();
  const keep = { consolidateAfter: "Never" };
  await applyTaintedPool(pool, { capacityTypes: ["spot", "on-demand"], disruption: keep });
});

after(async () => {
  for (const c of spawned) await stopChild(c);
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  for (const n of namespaces) await deleteNamespace(n).catch(() => undefined);
  await remove("nodepools.karpenter.sh", pool).catch(() => undefined);
});

test("webhook reading the SpotPolicies: the one created first is placed, the other shows Conflict; deleting the winner hands over", async () => {
  const ns = await createNamespace("conflict-crd");
  const waveNs = await createNamespace("conflict-crd-wave");
  namespaces.push(ns, waveNs);
  await applyPolicies(ns);
  const replica = await webhookFor(ns, waveNs, {
    // No core: the webhook reads the SpotPolicy resources through its own informer.
    policiesUrl: "http://127.0.0.1:9/api/v1/policies/spot",
    viewer: randomBytes(18).toString("hex"),
    env: { WAVE_SPOT_POLICY_SOURCE: "crd" },
  });
  await withStateOnFailure(
    "two SpotPolicies, crd",
    async () =>
      `${await kubectl(["get", "spotpolicies,pods", "-n", ns, "-o", "wide"]).catch(String)}\n` +
      `${await kubectl(["get", "spotpolicies", "-n", ns, "-o", "yaml"]).catch(String)}\n` +
      replica.output.slice(-30).join("\n"),
    async () => {
      await apply(deployment(ns, "web", 4));
      await apply(deployment(ns, "api", 3));
      await expectPlaced(ns, { web: 1, api: 2 }, "web-git decides web (1 on-demand), api placed (2)");
      const statuses = await waitFor(
        "a-console: Conflict naming web-git; web-git: Ready at its target",
        async () => {
          const loser = await kube.get("SpotPolicy", "a-console", ns);
          const winner = await kube.get("SpotPolicy", "web-git", ns);
          const conflict = conditionOf(loser, "Conflict");
          return conflict?.status === "True" &&
            /SpotPolicy .*web-git, created first, which decides/.test(conflict.message) &&
            conditionOf(winner, "Ready")?.status === "True" &&
            winner.status?.targetOnDemand === 1 &&
            conditionOf(winner, "Conflict") === undefined
            ? { loser: loser.status, winner: winner.status }
            : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 2_000 },
      );
      console.log(`# a-console status ${JSON.stringify(statuses.loser)}`);
      const out = await kubectl(["get", "spotpolicies", "-n", ns]);
      console.log(`# kubectl get spotpolicies\n${out.trimEnd().replace(/^/gm, "# ")}`);

      await kubectl(["delete", "spotpolicy", "web-git", "-n", ns]);
      await expectPlaced(ns, { web: 3, api: 2 }, "web-git deleted: a-console decides web (3 on-demand)");
      await waitFor(
        "a-console's Conflict cleared, Ready at its target",
        async () => {
          const cr = await kube.get("SpotPolicy", "a-console", ns);
          return conditionOf(cr, "Conflict") === undefined &&
            conditionOf(cr, "Ready")?.status === "True" &&
            cr.status?.targetOnDemand === 3
            ? true
            : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 2_000 },
      );
    },
  );
  await stopChild(replica.child);
});

/** Core's policy route over the rig's SpotPolicies of `ns` (listed every second, as core holds them). */
async function coreOver(ns: string, viewer: string): Promise<{ url: string; app: FastifyInstance }> {
  const dir = mkdtempSync(join(tmpdir(), "wave-conflict-core-"));
  const store: Store = await openStore(
    { backend: "sqlite", path: join(dir, "wave.db") },
    { log: silentLogger },
  );
  let held: SpotPolicyResource[] = [];
  const listeners = new Set<(clusterId: string) => void>();
  const stop = new AbortController();
  const follow = (async () => {
    while (!stop.signal.aborted) {
      const next = (await kube.list("SpotPolicy", { namespace: ns }).catch(() => undefined))?.items;
      if (next && JSON.stringify(next.map((c) => c.spec)) !== JSON.stringify(held.map((c) => c.spec))) {
        held = next;
        for (const fn of listeners) fn("rig");
      }
      await sleep(1_000);
    }
  })();
  const crs: PolicyCrAccess = {
    onSpotChange: (fn) => {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    spot: () => held,
    warmup: () => [],
    edit: () => Promise.reject(new Error("this test makes no edits through core")),
  };
  const app = await build({
    tokens: { admin: randomBytes(18).toString("hex"), viewer },
    plugins: [policyRoutes({ store, defaultClusterId: "rig", crs })],
  });
  const url = await app.listen({ port: 0, host: "127.0.0.1" });
  cleanups.push(async () => {
    stop.abort();
    await app.close();
    await follow;
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { url, app };
}

test("webhook pulling from core: core serves one policy per workload, the webhook places every workload by it", async () => {
  const ns = await createNamespace("conflict-core");
  const waveNs = await createNamespace("conflict-core-wave");
  namespaces.push(ns, waveNs);
  await applyPolicies(ns);
  const viewer = randomBytes(18).toString("hex");
  const core = await coreOver(ns, viewer);
  const setUrl = `${core.url}/api/v1/clusters/rig/policies/spot`;
  const served = await waitFor(
    "core serving the three CRs as two policies",
    async () => {
      const res = await fetch(setUrl, { headers: { authorization: `Bearer ${viewer}` } });
      const set = (await res.json()) as { policies: { workload: { name: string }; threshold: number }[] };
      return set.policies.length === 2 ? set : undefined;
    },
    { timeoutMs: 30_000 },
  );
  assert.deepEqual(
    served.policies.map((p) => [p.workload.name, p.threshold]),
    [
      ["api", 2],
      ["web", 1],
    ],
  );
  const replica = await webhookFor(ns, waveNs, {
    policiesUrl: setUrl,
    viewer,
    env: { WAVE_SPOT_POLICY_SOURCE: "core", WAVE_SPOT_POLICY_INTERVAL_MS: "2000" },
  });
  await withStateOnFailure(
    "two SpotPolicies, core",
    async () =>
      `${await kubectl(["get", "spotpolicies,pods", "-n", ns, "-o", "wide"]).catch(String)}\n` +
      replica.output.slice(-30).join("\n"),
    async () => {
      await apply(deployment(ns, "web", 4));
      await apply(deployment(ns, "api", 3));
      await expectPlaced(ns, { web: 1, api: 2 }, "web-git decides web (1 on-demand), api placed (2)");
      assert.ok(
        !replica.output.some((l) => /policy pull failed/.test(l)),
        "the webhook never refused core's set",
      );
    },
  );
  await stopChild(replica.child);
});
