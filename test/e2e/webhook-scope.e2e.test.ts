// Issue 44, part 5: the chart's MutatingWebhookConfiguration, rendered with an opt-in
// webhook.namespaceSelector, decides on the real apiserver which pod CREATEs reach the webhook.
// The rendered webhook is applied as is, but for its clientConfig (a URL to an HTTPS recorder of
// this test instead of the in-cluster Service, whose CA cert-manager would inject) and its name
// (this run's own). The recorder answers every review allowed, labelling the pod: so a pod that
// went through the webhook carries the label, one that did not never does. Then:
//   - a Deployment's pod in the selected namespace is sent (recorded, labelled)
//   - the same Deployment in a namespace the selector leaves out is not (created, unlabelled)
//   - a bare pod (no ReplicaSet/StatefulSet controller) in the selected namespace is not either:
//     the chart's matchConditions skip it on the apiserver.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "../../hack/rig/lib.ts";
import type { LabelSelector } from "../../src/objects/kube.ts";
import { makePki, SERVER_EXT } from "../support/pki.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  get,
  kubectl,
  list,
  markE2eWebhookConfig,
  remove,
  requireRig,
  sweepStaleWebhookConfigs,
  waitFor,
  withRigLogsOnFailure,
} from "./harness.ts";

const E2E_OWNER = "webhook-scope";
const SEEN = "wave.dev/seen-by-webhook";
const run = randomBytes(3).toString("hex");
const scopeLabel = "wave.dev/e2e-webhook-scope";
const work = mkdtempSync(join(tmpdir(), "wave-webhook-scope-"));
const namespaces: string[] = [];
let configName: string | undefined;
let server: Server | undefined;
/** `<namespace>/<pod name or generateName>` of every review received, dry runs apart. */
const reviewed: string[] = [];
let dryRuns = 0;

interface RenderedConfig {
  kind?: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  webhooks: { namespaceSelector: LabelSelector; matchConditions?: unknown[]; clientConfig: unknown }[];
}

/** The chart's MutatingWebhookConfiguration, rendered with the opt-in namespaceSelector. */
function renderedConfig(): RenderedConfig {
  const out = execFileSync(
    join(repoRoot, ".rig/bin/helm"),
    [
      "template",
      `scope-${run}`,
      join(repoRoot, "deploy/helm/wave"),
      ...["--namespace", `wave-scope-${run}`, "--kube-version", "1.36.0", "--set", "checks.crds=false"],
      "--set-json",
      `webhook.namespaceSelector={"matchLabels":{"${scopeLabel}":"${run}"}}`,
      "--show-only",
      "templates/webhook.yaml",
    ],
    { encoding: "utf8" },
  );
  const cfg = parseAllDocuments(out)
    .map((d) => d.toJSON() as RenderedConfig | null)
    .find((d) => d?.kind === "MutatingWebhookConfiguration");
  assert.ok(cfg, "MutatingWebhookConfiguration rendered");
  return cfg;
}

/** An HTTPS server that records each AdmissionReview and allows it, labelling the pod. */
async function startRecorder(dir: string): Promise<number> {
  const cert = readFileSync(join(dir, "tls.crt"));
  const key = readFileSync(join(dir, "tls.key"));
  server = createServer({ cert, key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const review = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        request: {
          uid: string;
          namespace: string;
          dryRun?: boolean;
          object: { metadata: { name?: string; generateName?: string } };
        };
      };
      const m = review.request.object.metadata;
      if (review.request.dryRun === true) dryRuns++;
      else reviewed.push(`${review.request.namespace}/${m.name ?? m.generateName ?? ""}`);
      const patch = [{ op: "add", path: `/metadata/labels/${SEEN.replace("/", "~1")}`, value: "true" }];
      const body = JSON.stringify({
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        response: {
          uid: review.request.uid,
          allowed: true,
          patchType: "JSONPatch",
          patch: Buffer.from(JSON.stringify(patch)).toString("base64"),
        },
      });
      res.writeHead(200, { "content-type": "application/json" }).end(body);
    });
  });
  await new Promise<void>((ok) => server?.listen(0, "127.0.0.1", ok));
  return (server.address() as AddressInfo).port;
}

// Gated: never scheduled, so Karpenter launches no node for them on the shared rig.
const POD_SPEC = {
  schedulingGates: [{ name: "wave.dev/never" }],
  containers: [{ name: "c", image: "registry.k8s.io/pause:3.10" }],
};

function deployment(name: string, ns: string): object {
  const labels = { app: name };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: POD_SPEC,
      },
    },
  };
}

before(async () => {
  await requireRig();
  await sweepStaleWebhookConfigs(E2E_OWNER);
});

after(async () => {
  if (configName) await remove("mutatingwebhookconfiguration", configName).catch(() => undefined);
  for (const ns of namespaces) await deleteNamespace(ns).catch(() => undefined);
  await new Promise<void>((ok) => (server ? server.close(() => ok()) : ok()));
  server?.closeAllConnections();
  rmSync(work, { recursive: true, force: true });
});

test("webhook.namespaceSelector: a pod in an unselected namespace (or with no ReplicaSet/StatefulSet owner) is not sent to the webhook", async () => {
  await withRigLogsOnFailure(async () => {
    const selected = await createNamespace("wave-e2e-scope-in");
    namespaces.push(selected);
    const unselected = await createNamespace("wave-e2e-scope-out");
    namespaces.push(unselected);
    await apply({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: selected, labels: { "wave.dev/e2e": "true", [scopeLabel]: run } },
    });

    const caPem = makePki(work, [{ dir: "recorder", cn: "recorder", ext: SERVER_EXT }]);
    const port = await startRecorder(join(work, "recorder"));
    const cfg = renderedConfig();
    configName = `wave-e2e-scope-${run}`;
    cfg.metadata = { name: configName, labels: cfg.metadata.labels };
    const [hook] = cfg.webhooks;
    assert.ok(hook);
    assert.deepEqual(
      hook.namespaceSelector.matchLabels,
      { [scopeLabel]: run },
      "the chart's opt-in selector",
    );
    assert.ok(hook.matchConditions?.length === 1, "the chart's matchConditions");
    hook.clientConfig = {
      url: `https://127.0.0.1:${port}/mutate`,
      caBundle: Buffer.from(caPem).toString("base64"),
    };
    markE2eWebhookConfig(cfg, E2E_OWNER, namespaces);
    await apply(cfg);

    // The apiserver's webhook cache catches up asynchronously: wait until a dry-run pod of a
    // ReplicaSet in the selected namespace comes back labelled (dry runs write nothing).
    const probe = JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        generateName: "probe-",
        namespace: selected,
        labels: { app: "probe" },
        ownerReferences: [
          {
            apiVersion: "apps/v1",
            kind: "ReplicaSet",
            name: "probe-1",
            uid: "00000000-0000-0000-0000-000000000001",
            controller: true,
          },
        ],
      },
      spec: POD_SPEC,
    });
    await waitFor("the webhook configuration in force", async () => {
      const out = await kubectl(["create", "--dry-run=server", "-o", "json", "-f", "-"], probe);
      return (
        (JSON.parse(out) as { metadata: { labels?: Record<string, string> } }).metadata.labels?.[SEEN] ===
        "true"
      );
    });
    await apply(deployment("in", selected));
    const inPod = await waitFor(
      "the selected namespace's pod labelled by the webhook",
      async () =>
        (await list("pods", { namespace: selected })).find((p) => p.metadata.labels?.[SEEN] === "true"),
      { timeoutMs: 60_000 },
    );
    assert.ok(
      reviewed.some((r) => r.startsWith(`${selected}/in-`)),
      JSON.stringify(reviewed),
    );

    await apply(deployment("out", unselected));
    await apply({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "bare", namespace: selected, labels: { app: "bare" } },
      spec: POD_SPEC,
    });
    const outPod = await waitFor(
      "the unselected namespace's pod created",
      async () => (await list("pods", { namespace: unselected }))[0],
      { timeoutMs: 60_000 },
    );
    const bare = await get("pod", "bare", selected);
    assert.equal(outPod.metadata.labels?.[SEEN], undefined, "unselected namespace: not sent to the webhook");
    assert.equal(bare?.metadata.labels?.[SEEN], undefined, "bare pod: skipped by matchConditions");
    assert.deepEqual(
      reviewed.filter((r) => !r.startsWith(`${selected}/in-`)),
      [],
      "the webhook received only the selected Deployment's pod",
    );
    process.stdout.write(
      `# reviews received: ${JSON.stringify(reviewed)} (+${dryRuns} dry-run probes); in: ${inPod.metadata.name}\n`,
    );
  });
});
