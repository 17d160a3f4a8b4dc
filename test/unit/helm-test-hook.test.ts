// The chart's `helm test` hook (deploy/helm/wave/templates/tests/helm-test.yaml): rendered as a
// hardened test Pod that sees only the webhook's CA, and its script (files/helm-test.mjs) run
// against a real core API and a real webhook HTTPS server: it passes when both answer and names
// the one that does not.
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import { build } from "../../src/api/app.ts";
import { MemoryKube } from "../../src/kube/memory/memory.ts";
import { FakeClock } from "../../src/shared/clock.ts";
import { SlotAllocator } from "../../src/webhook/allocator.ts";
import { generateDevCerts } from "../../src/webhook/certs.ts";
import { InMemoryPolicySource } from "../../src/webhook/policy-source.ts";
import { startWebhookServer, type WebhookServer } from "../../src/webhook/server.ts";

const root = new URL("../../", import.meta.url).pathname;
const helm = `${root}.rig/bin/helm`;
const chart = `${root}deploy/helm/wave`;
const script = `${chart}/files/helm-test.mjs`;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

describe("helm test hook: rendered", { skip: existsSync(helm) ? false : `helm not built (${helm})` }, () => {
  const render = (args: string[] = []): Obj[] =>
    parseAllDocuments(
      execFileSync(
        helm,
        [
          "template",
          "wave",
          chart,
          "--namespace",
          "wave",
          "--kube-version",
          "1.33.0",
          "--set",
          "checks.crds=false",
          ...args,
        ],
        { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
      ),
    )
      .map((d) => d.toJSON() as unknown)
      .filter(isObj);

  it("is a test Pod, deleted when it succeeds, hardened, that sees only the webhook's CA", () => {
    const docs = render();
    const pod = docs.find((d) => d.kind === "Pod");
    assert.ok(pod);
    const meta = pod.metadata as Obj;
    assert.equal(meta.name, "wave-test");
    assert.deepEqual(meta.annotations, {
      "helm.sh/hook": "test",
      "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
    });
    const spec = pod.spec as { [k: string]: unknown; containers: Obj[]; volumes: Obj[] };
    assert.equal(spec.restartPolicy, "Never");
    assert.equal(spec.automountServiceAccountToken, false);
    const [c] = spec.containers;
    assert.ok(c);
    assert.deepEqual(c.command, ["node", "/etc/wave-test/helm-test.mjs"]);
    assert.equal((c.securityContext as Obj).readOnlyRootFilesystem, true);
    const env = Object.fromEntries((c.env as Obj[]).map((e): [string, unknown] => [String(e.name), e.value]));
    assert.deepEqual(env, {
      WAVE_TEST_CORE_URL: "http://wave-core.wave.svc:8080",
      WAVE_TEST_NAMESPACE: "wave",
      WAVE_TEST_WEBHOOK_HOST: "wave-webhook.wave.svc",
      WAVE_TEST_WEBHOOK_PORT: "8443",
    });
    const sources = (spec.volumes[0] as { projected: { sources: Obj[] } }).projected.sources;
    assert.deepEqual(sources[1], {
      secret: { name: "wave-webhook-tls", items: [{ key: "ca.crt", path: "ca.crt" }] },
    });
    const cm = docs.find((d) => d.kind === "ConfigMap" && (d.metadata as Obj).name === "wave-test");
    assert.equal((cm?.data as Obj | undefined)?.["helm-test.mjs"], readFileSync(script, "utf8"));
    // Without the webhook: core only; tests.enabled=false: nothing.
    const noWebhook = render(["--set", "webhook.enabled=false"]).find((d) => d.kind === "Pod");
    assert.ok(!JSON.stringify(noWebhook).includes("WAVE_TEST_WEBHOOK_HOST"));
    assert.equal(render(["--set", "tests.enabled=false"]).filter((d) => d.kind === "Pod").length, 0);
  });
});

describe("helm test hook: its script against a real core API and webhook", () => {
  let dir: string;
  let webhook: WebhookServer;
  let ca: string;
  let core: Awaited<ReturnType<typeof build>>;
  let coreUrl: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "wave-helm-test-"));
    const certs = await generateDevCerts({ dir, hosts: ["localhost"] });
    ca = certs.caFile;
    const clock = new FakeClock();
    webhook = await startWebhookServer({
      certFile: certs.certFile,
      keyFile: certs.keyFile,
      host: "127.0.0.1",
      policies: new InMemoryPolicySource({
        apiVersion: "wave.sh/v1alpha1",
        kind: "SpotPolicySet",
        policies: [],
      }),
      allocator: new SlotAllocator({ kube: new MemoryKube({ clock }), namespace: "wave", clock }),
      clock,
    });
    core = await build({
      tokens: { admin: "a-token-0123456789", viewer: "v-token-0123456789" },
      plugins: [],
    });
    coreUrl = await core.listen({ host: "127.0.0.1", port: 0 });
  });
  after(async () => {
    await core.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // Asynchronously: the servers answer from this process's event loop.
  const run = (env: Record<string, string>): Promise<{ status: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        [script],
        {
          encoding: "utf8",
          env: { PATH: process.env["PATH"] ?? "", WAVE_TEST_NAMESPACE: "wave", WAVE_TEST_CA: ca, ...env },
          timeout: 30_000,
        },
        (err, stdout, stderr) => {
          resolve({ status: err ? Number(err.code ?? 1) : 0, stdout, stderr });
        },
      );
    });

  it("passes when core is healthy and the webhook answers the dry-run review over TLS", async () => {
    const r = await run({
      WAVE_TEST_CORE_URL: coreUrl,
      WAVE_TEST_WEBHOOK_HOST: "localhost",
      WAVE_TEST_WEBHOOK_PORT: String(webhook.port),
    });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /ok core .*\/healthz/);
    assert.match(
      r.stdout,
      /ok webhook https:\/\/localhost:\d+\/mutate answered the dry-run review \(allowed\)/,
    );
  });

  it("fails naming core when core does not answer, and the webhook when it does not", async () => {
    const badCore = await run({ WAVE_TEST_CORE_URL: "http://127.0.0.1:1" });
    assert.equal(badCore.status, 1);
    assert.match(badCore.stderr, /^FAIL core http:\/\/127\.0\.0\.1:1\/healthz/);
    const port = webhook.port;
    await webhook.close();
    const badWebhook = await run({
      WAVE_TEST_CORE_URL: coreUrl,
      WAVE_TEST_WEBHOOK_HOST: "localhost",
      WAVE_TEST_WEBHOOK_PORT: String(port),
    });
    assert.equal(badWebhook.status, 1);
    assert.match(badWebhook.stderr, /^FAIL webhook https:\/\/localhost:\d+\/mutate/);
  });
});
