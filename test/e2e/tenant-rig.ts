// Shared by the e2e files that run Wave's spot placement on a NodePool of their own
// (pools.ts applyTaintedPool; the console on the rig, what-if): a Deployment of pods that each fill
// most of a 4-vCPU node, their placement by the capacity type of their nodes, and a `wave webhook`
// process that pulls its spot policies from this test's core, registered for this test's namespace.
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { startWave, type Started } from "../../src/cli/start.ts";
import { DEFAULTS } from "../../src/config/config.ts";
import { createLogger } from "../../src/shared/log.ts";
import { generateDevCerts } from "../../src/webhook/certs.ts";
import { buildWebhookConfiguration } from "../../src/webhook/webhook-config.ts";
import { apply, deleteNamespace, kubeconfigPath, list, markE2eWebhookConfig, remove } from "./harness.ts";
import { POOL_LABEL } from "./pools.ts";
import { startReplica, stopChild, type Replica } from "./spot-rig.ts";
import { CAPACITY_TYPE_LABEL } from "../../src/objects/karpenter.ts";

/** WAVE_E2E_LOG_LEVEL=debug shows what the in-process Wave decided (warmup admissions and all). */
const E2E_LOG_LEVEL = process.env["WAVE_E2E_LOG_LEVEL"] === "debug" ? "debug" : "error";

/** `wave start` in this process on the rig: every port picked by the OS, data under `tmp`. */
export function startRigWave(
  app: string,
  o: { clusterId: string; namespace: string; tmp: string },
): Promise<Started> {
  return startWave(
    {
      ...DEFAULTS,
      kubeconfig: kubeconfigPath,
      clusterId: o.clusterId,
      namespace: o.namespace,
      port: 0,
      grpcPort: 0,
      webhookPort: 0,
      dataDir: join(o.tmp, "wave"),
      logLevel: E2E_LOG_LEVEL,
    },
    {},
    { log: createLogger({ level: E2E_LOG_LEVEL, base: { app } }) },
  );
}

/** Undoes what a tenant test set up (each part only if it got that far). */
export async function cleanupTenant(o: {
  configName: string;
  spawned: ChildProcess[];
  wave: Started | undefined;
  namespaces: string[];
  pool: string;
  tmp: string;
}): Promise<void> {
  if (o.configName !== "") await remove("mutatingwebhookconfiguration", o.configName).catch(() => undefined);
  for (const c of o.spawned) await stopChild(c);
  await o.wave?.stop();
  for (const n of o.namespaces) if (n !== "") await deleteNamespace(n);
  if (o.pool !== "") await remove("nodepools.karpenter.sh", o.pool);
  if (o.tmp !== "") await rm(o.tmp, { recursive: true, force: true });
}

/** Deployment `web` of pods of 3 CPUs (3 of a 4-vCPU node's: one pod per node) on `pool`. */
export function webDeployment(ns: string, pool: string, replicas: number, image: string): object {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          nodeSelector: { [POOL_LABEL]: pool },
          tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
          terminationGracePeriodSeconds: 0,
          containers: [{ name: "app", image, resources: { requests: { cpu: "3", memory: "1Gi" } } }],
        },
      },
    },
  };
}

/** The live pods of web by the capacity type of their node (undefined: not `replicas` all Running). */
export async function webPlacement(
  ns: string,
  replicas: number,
): Promise<{ od: number; spot: number } | undefined> {
  const pods = (await list("pods", { namespace: ns, selector: "app=web" })).filter(
    (p) => p.metadata.deletionTimestamp === undefined,
  );
  if (pods.length !== replicas) return undefined;
  const nodes = new Map((await list("nodes")).map((n) => [n.metadata.name, n]));
  const out = { od: 0, spot: 0 };
  for (const p of pods) {
    const status = p.status as { phase?: string } | undefined;
    const spec = p.spec as { nodeName?: string } | undefined;
    const ct = nodes.get(spec?.nodeName ?? "")?.metadata.labels?.[CAPACITY_TYPE_LABEL];
    if (status?.phase !== "Running" || ct === undefined) return undefined;
    if (ct === "spot") out.spot++;
    else out.od++;
  }
  return out;
}

/**
 * The webhook as the chart runs it: its own process, spot policies long-polled from `wave`'s core,
 * a MutatingWebhookConfiguration for `ns` only (marked as this test's, for the sweep).
 */
export async function startTenantWebhook(o: {
  wave: Started;
  cluster: string;
  name: string;
  ns: string;
  waveNs: string;
  tmp: string;
  owner: string;
  spawned: ChildProcess[];
}): Promise<{ webhook: Replica; configName: string }> {
  const tlsDir = join(o.tmp, "webhook-tls");
  const certs = await generateDevCerts({ dir: tlsDir, hosts: ["localhost", "127.0.0.1"] });
  const webhook = await startReplica({
    name: o.name,
    policiesUrl: new URL(`api/v1/clusters/${o.cluster}/policies/spot`, o.wave.url).href,
    tlsDir,
    waveNamespace: o.waveNs,
    viewerToken: o.wave.tokens.viewer,
    deadlineMs: 2500,
    spawned: o.spawned,
    env: { WAVE_SPOT_POLICY_INTERVAL_MS: "2000" },
  });
  const configName = `wave-spot-${o.ns}`;
  const config = buildWebhookConfiguration({
    name: configName,
    caPem: certs.caPem,
    waveNamespace: o.waveNs,
    url: `https://127.0.0.1:${webhook.port}/mutate`,
    timeoutSeconds: 3,
  });
  const hook = config.webhooks?.[0];
  assert.ok(hook, "the configuration has a webhook");
  hook.namespaceSelector = {
    matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: [o.ns] }],
  };
  markE2eWebhookConfig(config, o.owner, [o.ns, o.waveNs]);
  await apply(config);
  return { webhook, configName };
}
