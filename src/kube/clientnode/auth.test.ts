import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import https from "node:https";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inClusterAuth, kubeConfigAuth, kubeconfigFileAuth, nativeAuth, type ClusterAuth } from "./auth.ts";
import { loadClusterAuth, loadKubeConfig, clientFromKubeconfig } from "./kubeconfig.ts";
import { FakeApiserver } from "../informer/fake-apiserver.test-helper.ts";

const dir = mkdtempSync(join(tmpdir(), "wave-auth-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const b64 = (s: string): string => Buffer.from(s).toString("base64");

function kubeconfig(name: string, cluster: string, user: string, extra = ""): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    [
      "apiVersion: v1",
      "kind: Config",
      "current-context: main",
      "clusters:",
      "- name: c",
      `  cluster: ${cluster}`,
      "users:",
      "- name: u",
      `  user: ${user}`,
      "contexts:",
      "- name: main",
      "  context: { cluster: c, user: u, namespace: team }",
      extra,
    ].join("\n"),
  );
  return file;
}

/** What a request's options carry after auth (the fields client-node's applyToHTTPSOptions sets). */
async function applied(auth: ClusterAuth): Promise<Record<string, unknown>> {
  const opts: https.RequestOptions = { headers: { Accept: "application/json" } };
  await auth.apply(opts);
  const text = (v: unknown): string | undefined => (Buffer.isBuffer(v) ? v.toString("utf8") : undefined);
  return {
    ca: text(opts.ca),
    cert: text(opts.cert),
    key: text(opts.key),
    servername: opts.servername,
    rejectUnauthorized: opts.rejectUnauthorized,
    authorization: (opts.headers as http.OutgoingHttpHeaders | undefined)?.["Authorization"],
    accept: (opts.headers as http.OutgoingHttpHeaders | undefined)?.["Accept"],
    agent:
      opts.agent instanceof https.Agent ? "https" : opts.agent instanceof http.Agent ? "http" : undefined,
  };
}

describe("native kubeconfig auth", () => {
  mkdirSync(join(dir, "pki"));
  writeFileSync(join(dir, "pki", "client.crt"), "CERT-FILE");
  writeFileSync(join(dir, "pki", "client.key"), "KEY-FILE");
  const certs = kubeconfig(
    "certs",
    `{ server: 'https://k.example:6443/', certificate-authority-data: ${b64("CA-DATA")}, tls-server-name: kube }`,
    "{ client-certificate: pki/client.crt, client-key: pki/client.key }",
  );
  const token = kubeconfig(
    "token",
    "{ server: 'https://k.example:6443', insecure-skip-tls-verify: true }",
    "{ token: s3cret }",
  );

  it("applies what client-node applies for certificates (relative paths) and for a token", async () => {
    for (const file of [certs, token]) {
      const native = kubeconfigFileAuth(file);
      assert.ok(native, `${file} is handled natively`);
      const viaClientNode = loadClusterAuth({ path: file });
      assert.equal(viaClientNode.kind, "native");
      const reference = await applied(kubeConfigAuth(loadKubeConfig({ path: file })));
      assert.deepEqual(await applied(native), reference, file);
      assert.equal(native.server, "https://k.example:6443");
      assert.equal(native.namespace, "team");
    }
    assert.deepEqual(await applied(kubeconfigFileAuth(certs) as ClusterAuth), {
      ca: "CA-DATA",
      cert: "CERT-FILE",
      key: "KEY-FILE",
      servername: "kube",
      rejectUnauthorized: undefined,
      authorization: undefined,
      accept: "application/json",
      agent: "https",
    });
  });

  it("leaves what it does not implement to client-node", () => {
    const exec = kubeconfig(
      "exec",
      "{ server: 'https://k.example:6443' }",
      "{ exec: { apiVersion: client.authentication.k8s.io/v1, command: aws, args: [eks, get-token] } }",
    );
    const proxy = kubeconfig(
      "proxy",
      "{ server: 'https://k.example:6443', proxy-url: 'http://proxy:3128' }",
      "{ token: t }",
    );
    const basic = kubeconfig("basic", "{ server: 'https://k.example:6443' }", "{ username: a, password: b }");
    for (const file of [exec, proxy, basic]) {
      assert.equal(kubeconfigFileAuth(file), undefined, file);
      const auth = loadClusterAuth({ path: file });
      assert.equal(auth.kind, "client-node", file);
      assert.equal(auth.server, "https://k.example:6443");
    }
    assert.equal(kubeconfigFileAuth(join(dir, "missing")), undefined);
    assert.equal(kubeconfigFileAuth(token, "no-such-context"), undefined);
    // Several KUBECONFIG files are merged: client-node's job.
    assert.equal(nativeAuth({}, { KUBECONFIG: `${certs}:${token}` }), undefined);
    assert.equal(nativeAuth({}, { KUBECONFIG: token })?.server, "https://k.example:6443");
  });

  it("in-cluster: ServiceAccount CA, namespace, and a token file re-read after a minute", async () => {
    const root = join(dir, "pod");
    const sa = join(root, "var/run/secrets/kubernetes.io/serviceaccount");
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, "ca.crt"), "SA-CA");
    writeFileSync(join(sa, "namespace"), "wave");
    writeFileSync(join(sa, "token"), "token-1");
    let now = 0;
    const auth = inClusterAuth(
      { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" },
      root,
      () => now,
    );
    assert.equal(auth.server, "https://[fd00::1]:443");
    assert.equal(auth.namespace, "wave");
    assert.equal((await applied(auth)).ca, "SA-CA");
    assert.equal((await applied(auth)).authorization, "Bearer token-1");
    writeFileSync(join(sa, "token"), "token-2");
    now = 60_000;
    assert.equal((await applied(auth)).authorization, "Bearer token-1", "cached for a minute");
    now = 60_001;
    assert.equal((await applied(auth)).authorization, "Bearer token-2", "rotated token read");
  });

  it("talks to an apiserver: bearer token accepted, a wrong one refused", async () => {
    const server = await new FakeApiserver().start();
    try {
      const file = (t: string): string =>
        kubeconfig(`fake-${t}`, `{ server: '${server.url}' }`, `{ token: ${t} }`);
      const kube = clientFromKubeconfig(file("test-token"));
      assert.equal(kube.authKind, "native");
      assert.equal(kube.defaultNamespace, "team");
      assert.equal((await kube.list("Node")).items.length, 0);
      await assert.rejects(clientFromKubeconfig(file("wrong")).list("Node"), /401|Unauthorized/);
    } finally {
      await server.close();
    }
  });
});
