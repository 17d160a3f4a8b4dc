import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { Agent } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import { FakeClock } from "../shared/clock.ts";
import type { AdmissionReviewResponse } from "./admission.ts";
import { SlotAllocator } from "./allocator.ts";
import { generateDevCerts, type DevCerts } from "./certs.ts";
import { InMemoryPolicySource } from "./policy-source.ts";
import { startWebhookServer, type WebhookServer } from "./server.ts";
import { httpsRequest, loadFixture } from "./test-helpers.ts";
import { buildWebhookConfiguration } from "./webhook-config.ts";

const policies = new InMemoryPolicySource({
  apiVersion: "wave.sh/v1alpha1",
  kind: "SpotPolicySet",
  policies: [
    { workload: { namespace: "shop", kind: "Deployment", name: "web" }, threshold: 1, strategy: "Prefer" },
  ],
});

describe("webhook HTTPS server", () => {
  let certs: DevCerts;
  let dir: string;
  let server: WebhookServer;
  let agent: Agent;
  const reloads: boolean[] = [];
  let onReload: ((ok: boolean) => void) | undefined;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "wave-webhook-"));
    certs = await generateDevCerts({ dir, hosts: ["localhost", "127.0.0.1"] });
    const clock = new FakeClock();
    server = await startWebhookServer({
      certFile: certs.certFile,
      keyFile: certs.keyFile,
      host: "127.0.0.1",
      policies,
      allocator: new SlotAllocator({ kube: new MemoryKube({ clock }), namespace: "wave", clock }),
      clock,
      maxBodyBytes: 64 * 1024,
      onCertReload: (ok) => {
        reloads.push(ok);
        onReload?.(ok);
      },
    });
    agent = new Agent({ keepAlive: true, ca: certs.caPem });
  });
  after(async () => {
    agent.destroy();
    await server.close();
  });

  it("answers an AdmissionReview with a JSONPatch", async () => {
    const r = await httpsRequest(
      agent,
      server.port,
      JSON.stringify(loadFixture("deployment-pod-generatename")),
    );
    assert.equal(r.status, 200);
    const review = JSON.parse(r.body) as AdmissionReviewResponse;
    assert.equal(review.apiVersion, "admission.k8s.io/v1");
    assert.equal(review.kind, "AdmissionReview");
    assert.equal(review.response.uid, "7cde05e7-27a9-4806-b9a3-4f0f71ed840a");
    assert.equal(review.response.allowed, true);
    assert.equal(review.response.patchType, "JSONPatch");
  });

  it("answers 400 with a clear message for malformed reviews", async () => {
    const cases: [string, RegExp][] = [
      ["{nope", /body is not valid JSON/],
      ["[]", /must be a JSON object/],
      [
        JSON.stringify({
          apiVersion: "admission.k8s.io/v1beta1",
          kind: "AdmissionReview",
          request: { uid: "x" },
        }),
        /apiVersion must be "admission.k8s.io\/v1"/,
      ],
      [
        JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" }),
        /request must be an object/,
      ],
      [
        JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: { uid: 5 } }),
        /request.uid/,
      ],
    ];
    for (const [body, message] of cases) {
      const r = await httpsRequest(agent, server.port, body);
      assert.equal(r.status, 400, body);
      assert.match((JSON.parse(r.body) as { error: string }).error, message);
    }
  });

  it("refuses oversized bodies with 413 and serves health, 404 and 405", async () => {
    const big = await httpsRequest(new Agent({ ca: certs.caPem }), server.port, "x".repeat(100 * 1024));
    assert.equal(big.status, 413);
    assert.equal(
      (await httpsRequest(agent, server.port, "", { path: "/healthz", method: "GET" })).status,
      200,
    );
    assert.equal((await httpsRequest(agent, server.port, "{}", { path: "/other" })).status, 404);
    assert.equal((await httpsRequest(agent, server.port, "", { method: "GET" })).status, 405);
  });

  it("reloads a rotated certificate without a restart, and keeps the old one if the new is broken", async () => {
    const fresh = () => new Agent({ ca: certs.caPem });
    const before = (await httpsRequest(fresh(), server.port, "", { path: "/healthz", method: "GET" })).cert;
    // A watch event may land between the key and the cert rename (a mismatched pair, kept out):
    // wait for the first successful reload.
    const reloaded = new Promise<void>((resolve) => (onReload = (ok) => ok && resolve()));
    await generateDevCerts({ dir, hosts: ["localhost", "127.0.0.1"], reuseCa: true });
    await reloaded; // the directory watch fired
    assert.equal(reloads.at(-1), true);
    const afterRotation = (await httpsRequest(fresh(), server.port, "", { path: "/healthz", method: "GET" }))
      .cert;
    assert.ok(
      before && afterRotation && before !== afterRotation,
      `serial ${before ?? "?"} → ${afterRotation ?? "?"}`,
    );

    onReload = undefined;
    await writeFile(certs.keyFile, "-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n");
    assert.equal(await server.reloadCerts(), false);
    const still = await httpsRequest(fresh(), server.port, "", { path: "/healthz", method: "GET" });
    assert.equal(still.status, 200);
    assert.equal(still.cert, afterRotation);
  });
});

describe("buildWebhookConfiguration", () => {
  const caPem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  it("builds a safe registration with a url or a service", () => {
    const cfg = buildWebhookConfiguration({
      caPem,
      waveNamespace: "wave",
      url: "https://172.17.0.1:9443/mutate",
    });
    const w = cfg.webhooks?.[0] as Record<string, unknown>;
    assert.equal(w.failurePolicy, "Ignore");
    assert.equal(w.sideEffects, "NoneOnDryRun", "it writes Leases, except on dry runs");
    assert.equal(w.timeoutSeconds, 3);
    assert.equal(w.reinvocationPolicy, "IfNeeded");
    assert.deepEqual(w.admissionReviewVersions, ["v1"]);
    assert.deepEqual(w.clientConfig, {
      caBundle: Buffer.from(caPem).toString("base64"),
      url: "https://172.17.0.1:9443/mutate",
    });
    assert.deepEqual(w.namespaceSelector, {
      matchExpressions: [
        { key: "kubernetes.io/metadata.name", operator: "NotIn", values: ["kube-system", "wave"] },
      ],
    });
    assert.deepEqual(w.objectSelector, {
      matchExpressions: [{ key: "wave.sh/spot-placement", operator: "NotIn", values: ["disabled"] }],
    });
    const svc = buildWebhookConfiguration({
      caPem,
      waveNamespace: "wave",
      service: { namespace: "wave", name: "wave-webhook" },
    });
    assert.deepEqual((svc.webhooks?.[0] as { clientConfig: { service: unknown } }).clientConfig.service, {
      namespace: "wave",
      name: "wave-webhook",
      path: "/mutate",
      port: 443,
    });
  });

  it("rejects unsafe settings", () => {
    assert.throws(
      () => buildWebhookConfiguration({ caPem, waveNamespace: "w", url: "https://x", timeoutSeconds: 10 }),
      /timeoutSeconds/,
    );
    assert.throws(
      () => buildWebhookConfiguration({ caPem, waveNamespace: "w" }),
      /exactly one of url or service/,
    );
    assert.throws(() => buildWebhookConfiguration({ caPem, waveNamespace: "w", url: "http://x" }), /https/);
  });
});
