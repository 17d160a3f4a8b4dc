import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClientNodeKube, KubeTransportError } from "./client.ts";
import { ApiserverUnreachableError, KubeConfigError, loadKubeConfig, ping } from "./kubeconfig.ts";
import { FakeApiserver } from "../informer/fake-apiserver.test-helper.ts";
import { KubeApiError, isConflict, isNotFound, type WatchEvent } from "../port.ts";
import type { Node } from "../../objects/kube.ts";

const node = (name: string, labels: Record<string, string> = {}): Node => ({ metadata: { name, labels } });

describe("ClientNodeKube against a fake apiserver", () => {
  let server: FakeApiserver;
  let kube: ClientNodeKube;
  before(async () => {
    server = await new FakeApiserver().start();
    kube = new ClientNodeKube({ kubeConfig: server.kubeConfig() });
  });
  after(() => server.close());

  it("creates, reads, lists with pagination and keeps wire shapes", async () => {
    for (let i = 0; i < 5; i++) await kube.create("Node", node(`n${i}`, { i: String(i) }));
    const got = await kube.get("Node", "n3");
    assert.equal(typeof got.metadata.creationTimestamp, "string", "timestamps stay strings");
    assert.equal(got.metadata.labels?.i, "3");
    const create = server.requests.find((r) => r.op === "create");
    assert.equal(create?.path, "/api/v1/nodes");
    assert.deepEqual((create.body as Node).kind, "Node", "apiVersion/kind are filled in");

    const names: string[] = [];
    let cont: string | undefined;
    let pages = 0;
    do {
      const page = await kube.list("Node", { limit: 2, ...(cont ? { continue: cont } : {}) });
      names.push(...page.items.map((n) => n.metadata.name ?? ""));
      assert.equal(page.items[0]?.kind, "Node", "list items get their kind back");
      assert.ok(page.resourceVersion);
      cont = page.continue;
      pages++;
    } while (cont);
    assert.deepEqual(names, ["n0", "n1", "n2", "n3", "n4"]);
    assert.equal(pages, 3);
    const lists = server.requests.filter((r) => r.op === "list");
    assert.equal(lists[0]?.query.get("limit"), "2");
    assert.ok(lists[1]?.query.get("continue"));
  });

  it("maps error Status bodies to KubeApiError", async () => {
    await assert.rejects(
      kube.create("Node", node("n0")),
      (e) => KubeApiError.is(e, 409) && e.reason === "AlreadyExists",
    );
    await assert.rejects(
      kube.get("Node", "missing"),
      (e) => isNotFound(e) && (e as Error).message === 'nodes "missing" not found',
    );
    const n = await kube.get("Node", "n1");
    await kube.patch("Node", "n1", { metadata: { labels: { bump: "1" } } });
    await assert.rejects(kube.replace("Node", n), isConflict);
    server.faults.push({ op: "list", type: "status", code: 503, rawBody: "upstream unavailable" });
    await assert.rejects(
      kube.list("Node"),
      (e) => KubeApiError.is(e, 503) && e.reason === "ServiceUnavailable",
    );
    const wrongToken = new ClientNodeKube({ kubeConfig: server.kubeConfig("bad") });
    await assert.rejects(wrongToken.get("Node", "n1"), (e) => KubeApiError.is(e, 401));
  });

  it("sends each patch type with its content type and apply's fieldManager/force", async () => {
    const seen = server.requests.length;
    const merged = await kube.patch("Node", "n2", { metadata: { labels: { a: "1" } } });
    assert.equal(merged.metadata.labels?.a, "1");
    const jp = await kube.patch("Node", "n2", [{ op: "remove", path: "/metadata/labels/a" }], {
      type: "json",
    });
    assert.equal(jp.metadata.labels?.a, undefined);
    await kube.patch("Node", "n2", { metadata: { labels: { s: "1" } } }, { type: "strategic", dryRun: true });
    await kube.patch(
      "Node",
      "n2",
      { metadata: { labels: { b: "2" } } },
      { type: "apply", fieldManager: "wave", force: true },
    );
    await assert.rejects(kube.patch("Node", "n2", {}, { type: "apply" }), /fieldManager is required/);
    const patches = server.requests.slice(seen).filter((r) => r.op === "patch");
    assert.deepEqual(
      patches.map((p) => p.contentType),
      [
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
      ],
    );
    assert.equal(patches[2]?.query.get("dryRun"), "All");
    assert.equal(patches[3]?.query.get("fieldManager"), "wave");
    assert.equal(patches[3].query.get("force"), "true");
    assert.deepEqual(patches[3].body, {
      apiVersion: "v1",
      kind: "Node",
      metadata: { labels: { b: "2" }, name: "n2" },
    });
  });

  it("uses the context namespace for namespaced kinds", async () => {
    await kube.create("Pod", { metadata: { name: "p" }, spec: { containers: [] } });
    assert.equal(server.requests.at(-1)?.path, "/api/v1/namespaces/team/pods");
    assert.equal((await kube.get("Pod", "p")).metadata.namespace, "team");
    assert.equal((await kube.list("Pod")).items.length, 1);
    assert.equal(server.requests.at(-1)?.path, "/api/v1/pods", "no namespace lists all namespaces");
  });

  it("deletes with preconditions and a propagation policy", async () => {
    const n = await kube.get("Node", "n4");
    await assert.rejects(kube.delete("Node", "n4", { uid: "not-it" }), isConflict);
    await kube.delete("Node", "n4", {
      uid: n.metadata.uid ?? "",
      propagationPolicy: "Foreground",
      gracePeriodSeconds: 0,
    });
    assert.deepEqual(server.requests.at(-1)?.body, {
      apiVersion: "v1",
      kind: "DeleteOptions",
      gracePeriodSeconds: 0,
      propagationPolicy: "Foreground",
      preconditions: { uid: n.metadata.uid },
    });
    await assert.rejects(kube.get("Node", "n4"), isNotFound);
  });

  it("streams watch events split across chunks, with bookmarks, until aborted", async () => {
    const from = server.resourceVersion;
    const ac = new AbortController();
    const events: WatchEvent<Node>[] = [];
    const done = (async () => {
      for await (const ev of kube.watch(
        "Node",
        { resourceVersion: from, allowWatchBookmarks: true, timeoutSeconds: 30 },
        ac.signal,
      )) {
        events.push(ev);
        if (events.length === 3) ac.abort();
      }
    })();
    while (server.openWatches === 0) await new Promise((r) => setTimeout(r, 2));
    server.upsert("nodes", node("w1", { emoji: "ok" }));
    server.bookmark();
    server.remove("nodes", "w1");
    await done;
    assert.deepEqual(
      events.map((e) => e.type),
      ["ADDED", "BOOKMARK", "DELETED"],
    );
    const q = server.requests.filter((r) => r.op === "watch").at(-1)?.query;
    assert.equal(q?.get("watch"), "1");
    assert.equal(q.get("resourceVersion"), from);
    assert.equal(q.get("allowWatchBookmarks"), "true");
    assert.equal(q.get("timeoutSeconds"), "30");
  });

  it("throws on a watch refused with 410 and on a dropped stream; yields a mid-stream ERROR", async () => {
    server.faults.push({ op: "watch", type: "status", code: 410 });
    const consume = async (): Promise<string[]> => {
      const seen: string[] = [];
      for await (const ev of kube.watch("Node", { resourceVersion: "0" })) seen.push(ev.type);
      return seen;
    };
    await assert.rejects(consume(), (e) => KubeApiError.is(e, 410));
    server.faults.push({ op: "watch", type: "drop", afterEvents: 1 });
    await assert.rejects(consume(), (e) => e instanceof KubeTransportError);
    server.faults.push({ op: "watch", type: "gone-event", afterEvents: 2 });
    assert.deepEqual(await consume(), ["ADDED", "ADDED", "ERROR"]);
  });

  it("pings the apiserver and explains an unreachable one", async () => {
    const v = await ping(kube);
    assert.equal(v.gitVersion, "v1.33.1-fake");
    const dead = await new FakeApiserver().start();
    const deadKube = new ClientNodeKube({ kubeConfig: dead.kubeConfig() });
    await dead.close();
    await assert.rejects(ping(deadKube, 2000), (e) => {
      assert.ok(e instanceof ApiserverUnreachableError);
      assert.equal(e.message, `cannot reach the Kubernetes apiserver at ${dead.url}: connection refused`);
      return true;
    });
    const badAuth = new ClientNodeKube({ kubeConfig: server.kubeConfig("nope") });
    await assert.rejects(ping(badAuth), /401 Unauthorized/);
  });
});

describe("loadKubeConfig", () => {
  const dir = mkdtempSync(join(tmpdir(), "wave-kc-"));
  const file = join(dir, "config");
  writeFileSync(
    file,
    [
      "apiVersion: v1",
      "kind: Config",
      "current-context: a",
      "clusters:",
      "- name: ca",
      "  cluster: { server: 'https://a.example:6443', insecure-skip-tls-verify: true }",
      "- name: cb",
      "  cluster: { server: 'https://b.example:6443/prefix/', insecure-skip-tls-verify: true }",
      "users:",
      "- name: u",
      "  user: { token: t }",
      "contexts:",
      "- name: a",
      "  context: { cluster: ca, user: u }",
      "- name: b",
      "  context: { cluster: cb, user: u, namespace: karpenter }",
    ].join("\n"),
  );

  it("loads the current or a chosen context", () => {
    assert.equal(
      new ClientNodeKube({ kubeConfig: loadKubeConfig({ path: file }) }).server,
      "https://a.example:6443",
    );
    const b = new ClientNodeKube({ kubeConfig: loadKubeConfig({ path: file, context: "b" }) });
    assert.equal(b.server, "https://b.example:6443/prefix");
    assert.equal(b.defaultNamespace, "karpenter");
  });

  it("refuses to fall back to an unauthenticated localhost when no kubeconfig exists", () => {
    const saved = { home: process.env.HOME, kubeconfig: process.env.KUBECONFIG };
    process.env.HOME = mkdtempSync(join(tmpdir(), "wave-home-"));
    delete process.env.KUBECONFIG;
    try {
      assert.throws(() => loadKubeConfig(), /no kubeconfig found/);
    } finally {
      process.env.HOME = saved.home;
      if (saved.kubeconfig !== undefined) process.env.KUBECONFIG = saved.kubeconfig;
    }
  });

  it("explains a missing file or context", () => {
    assert.throws(() => loadKubeConfig({ path: join(dir, "nope") }), KubeConfigError);
    assert.throws(
      () => loadKubeConfig({ path: file, context: "c" }),
      /context "c" not found in the kubeconfig \(contexts: a, b\)/,
    );
  });
});
