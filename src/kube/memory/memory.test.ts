import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MemoryKube } from "./memory.ts";
import { isConflict, isGone, isNotFound, KubeApiError, type WatchEvent } from "../port.ts";
import type { Event, KubeObject, Node, Pod } from "../../objects/kube.ts";
import { FakeClock, flushMicrotasks } from "../../shared/clock.ts";

const node = (name: string, labels: Record<string, string> = {}): Node => ({ metadata: { name, labels } });
const pod = (name: string, namespace: string, nodeName?: string): Pod => ({
  metadata: { name, namespace },
  spec: { containers: [{ name: "c" }], ...(nodeName ? { nodeName } : {}) },
});

/** Collects watch events in the background. */
function collect<T extends KubeObject>(
  it: AsyncIterable<WatchEvent<T>>,
): { events: WatchEvent<T>[]; done: Promise<unknown> } {
  const events: WatchEvent<T>[] = [];
  const done = (async () => {
    for await (const ev of it) events.push(ev);
  })().then(
    () => "end",
    (err: unknown) => err,
  );
  return { events, done };
}

const summary = (evs: WatchEvent<KubeObject>[]): string[] =>
  evs.map(
    (e) =>
      `${e.type} ${e.type === "ERROR" ? String(e.object.code) : e.type === "BOOKMARK" ? e.object.metadata.resourceVersion : (e.object.metadata.name ?? "")}`,
  );

describe("MemoryKube objects", () => {
  it("assigns uid, timestamps, generation and one monotonic resourceVersion across kinds", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 12, 0, 0));
    const kube = new MemoryKube({ clock });
    const n = await kube.create("Node", node("n1"));
    const p = await kube.create("Pod", pod("p1", "ns"));
    assert.equal(n.apiVersion, "v1");
    assert.equal(n.kind, "Node");
    assert.equal(n.metadata.creationTimestamp, "2026-01-01T12:00:00Z");
    assert.equal(n.metadata.generation, 1);
    assert.match(n.metadata.uid ?? "", /^[0-9a-f-]{36}$/);
    assert.equal(n.metadata.namespace, undefined);
    assert.equal(p.metadata.namespace, "ns");
    assert.ok(Number(p.metadata.resourceVersion) > Number(n.metadata.resourceVersion));
    const n2 = await kube.patch("Node", "n1", { metadata: { labels: { a: "b" } } });
    assert.ok(Number(n2.metadata.resourceVersion) > Number(p.metadata.resourceVersion));
    assert.equal(kube.resourceVersion, n2.metadata.resourceVersion);
  });

  it("returns copies, never its own objects", async () => {
    const kube = new MemoryKube();
    const created = await kube.create("Node", node("n1", { a: "1" }));
    created.metadata.labels = { a: "changed" };
    const got = await kube.get("Node", "n1");
    assert.deepEqual(got.metadata.labels, { a: "1" });
  });

  it("draws generateName suffixes per prefix with randomFor: other prefixes' objects rename nothing (issue 38)", async () => {
    const names = async (extra: boolean): Promise<string[]> => {
      let n = 0;
      const kube = new MemoryKube({
        random: () => (n = (n * 31 + 7) % 97) / 97,
        randomFor: (prefix) => {
          let k = prefix.length;
          return () => (k = (k * 37 + 11) % 101) / 101;
        },
      });
      const out: string[] = [];
      for (let i = 0; i < 3; i++) {
        // A warm node's pod in between, on one side only.
        if (extra)
          await kube.create("Pod", {
            metadata: { generateName: "wave-warmup-", namespace: "wave" },
            spec: { containers: [] },
          });
        const p = await kube.create("Pod", {
          metadata: { generateName: "web-", namespace: "ns" },
          spec: { containers: [] },
        });
        out.push(p.metadata.name ?? "");
      }
      return out;
    };
    assert.deepEqual(await names(true), await names(false));
  });

  it("fills generateName and refuses duplicates and bad names", async () => {
    const kube = new MemoryKube({ random: () => 0 });
    const a = await kube.create("Pod", {
      metadata: { generateName: "web-", namespace: "ns" },
      spec: { containers: [] },
    });
    assert.equal(a.metadata.name, "web-bbbbb");
    await assert.rejects(
      kube.create("Pod", pod("web-bbbbb", "ns")),
      (e) => KubeApiError.is(e, 409) && e.reason === "AlreadyExists",
    );
    await assert.rejects(kube.create("Node", node("Bad_Name")), (e) => KubeApiError.is(e, 422));
    await assert.rejects(
      kube.create("Node", { metadata: { name: "x", resourceVersion: "5" } }),
      /resourceVersion should not be set/,
    );
    await assert.rejects(kube.create("Pod", pod("p", "a"), { namespace: "b" }), (e) =>
      KubeApiError.is(e, 400),
    );
  });

  it("404s with the apiserver's message", async () => {
    const kube = new MemoryKube();
    await assert.rejects(
      kube.get("NodePool", "x"),
      (e) => isNotFound(e) && (e as Error).message === 'nodepools.karpenter.sh "x" not found',
    );
    await assert.rejects(kube.delete("Pod", "x", { namespace: "ns" }), (e) => isNotFound(e));
    await assert.rejects(kube.patch("Node", "x", {}), (e) => isNotFound(e));
  });

  it("enforces optimistic concurrency on replace and patch", async () => {
    const kube = new MemoryKube();
    const n = await kube.create("Node", node("n1"));
    const updated = await kube.replace("Node", { ...n, metadata: { ...n.metadata, labels: { a: "1" } } });
    await assert.rejects(
      kube.replace("Node", { ...n, metadata: { ...n.metadata, labels: { a: "2" } } }),
      (e) => isConflict(e) && (e as Error).message.includes("has been modified"),
    );
    await assert.rejects(
      kube.patch("Node", "n1", {
        metadata: { resourceVersion: n.metadata.resourceVersion, labels: { b: "1" } },
      }),
      isConflict,
    );
    // No resourceVersion: an unconditional update.
    const forced = await kube.replace("Node", { metadata: { name: "n1", labels: { c: "1" } } });
    assert.deepEqual(forced.metadata.labels, { c: "1" });
    assert.equal(forced.metadata.uid, updated.metadata.uid, "uid is immutable");
  });

  it("does not bump the version for a no-op update, and bumps generation only for spec changes", async () => {
    const kube = new MemoryKube();
    const p = await kube.create("Pod", pod("p", "ns"));
    const same = await kube.patch("Pod", "p", { metadata: { labels: {} } }, { namespace: "ns" });
    const noop = await kube.replace("Pod", same, { namespace: "ns" });
    assert.equal(noop.metadata.resourceVersion, same.metadata.resourceVersion);
    const labelled = await kube.patch("Pod", "p", { metadata: { labels: { a: "1" } } }, { namespace: "ns" });
    assert.equal(labelled.metadata.generation, 1);
    const respec = await kube.patch("Pod", "p", { spec: { nodeName: "n1" } }, { namespace: "ns" });
    assert.equal(respec.metadata.generation, 2);
    const status = await kube.patch("Pod", "p", { status: { phase: "Running" } }, { namespace: "ns" });
    assert.equal(status.metadata.generation, 2);
    assert.ok(Number(status.metadata.resourceVersion) > Number(p.metadata.resourceVersion));
  });

  it("applies json, strategic and apply patches; apply needs a fieldManager and creates", async () => {
    const kube = new MemoryKube();
    await kube.create("Node", node("n1", { a: "1" }));
    const j = await kube.patch("Node", "n1", [{ op: "add", path: "/spec", value: { unschedulable: true } }], {
      type: "json",
    });
    assert.equal(j.spec?.unschedulable, true);
    await assert.rejects(
      kube.patch("Node", "n1", [{ op: "test", path: "/spec/unschedulable", value: false }], { type: "json" }),
      (e) => KubeApiError.is(e, 422),
    );
    const s = await kube.patch(
      "Node",
      "n1",
      { metadata: { labels: { a: null, b: "2" } } },
      { type: "strategic" },
    );
    assert.deepEqual(s.metadata.labels, { b: "2" });
    await assert.rejects(kube.patch("Node", "n2", { metadata: {} }, { type: "apply" }), (e) =>
      KubeApiError.is(e, 400),
    );
    const created = await kube.patch(
      "Node",
      "n2",
      { apiVersion: "v1", kind: "Node", metadata: { labels: { x: "y" } } },
      { type: "apply", fieldManager: "wave", force: true },
    );
    assert.equal(created.metadata.name, "n2");
    assert.ok(created.metadata.uid);
  });

  it("honours dryRun without storing or consuming a version", async () => {
    const kube = new MemoryKube();
    const before = kube.resourceVersion;
    const dry = await kube.create("Node", node("n1"), { dryRun: true });
    assert.equal(dry.metadata.name, "n1");
    assert.equal(kube.resourceVersion, before);
    await assert.rejects(kube.get("Node", "n1"), isNotFound);
  });

  it("deletes with a uid precondition", async () => {
    const kube = new MemoryKube();
    const n = await kube.create("Node", node("n1"));
    await assert.rejects(
      kube.delete("Node", "n1", { uid: "other" }),
      (e) => isConflict(e) && (e as Error).message.includes("Precondition failed"),
    );
    await kube.delete("Node", "n1", { uid: n.metadata.uid ?? "", propagationPolicy: "Background" });
    await assert.rejects(kube.get("Node", "n1"), isNotFound);
  });

  it("keeps an object with finalizers until the last one is removed", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const kube = new MemoryKube({ clock });
    await kube.create("NodeClaim", {
      metadata: { name: "c1", finalizers: ["karpenter.sh/termination", "other"] },
      spec: {},
    });
    clock.advance(5000).catch(() => undefined);
    await kube.delete("NodeClaim", "c1");
    const terminating = await kube.get("NodeClaim", "c1");
    assert.equal(terminating.metadata.deletionTimestamp, "2026-01-01T00:00:05Z");
    // Deleting again changes nothing; adding a finalizer now is forbidden.
    await kube.delete("NodeClaim", "c1");
    assert.equal(
      (await kube.get("NodeClaim", "c1")).metadata.resourceVersion,
      terminating.metadata.resourceVersion,
    );
    await assert.rejects(
      kube.patch("NodeClaim", "c1", {
        metadata: { finalizers: ["karpenter.sh/termination", "other", "new"] },
      }),
      /no new finalizers/,
    );
    await kube.patch("NodeClaim", "c1", [{ op: "remove", path: "/metadata/finalizers/1" }], { type: "json" });
    assert.ok(await kube.get("NodeClaim", "c1"));
    await kube.patch("NodeClaim", "c1", { metadata: { finalizers: null } });
    await assert.rejects(kube.get("NodeClaim", "c1"), isNotFound);
  });

  it("enforces namespaces when asked and deletes a namespace's contents with it", async () => {
    const kube = new MemoryKube({ enforceNamespaces: true });
    await assert.rejects(
      kube.create("Pod", pod("p", "ns")),
      (e) => isNotFound(e) && (e as Error).message === 'namespaces "ns" not found',
    );
    await kube.create("Namespace", { metadata: { name: "ns" } });
    await kube.create("Pod", pod("p", "ns"));
    await kube.delete("Namespace", "ns");
    await assert.rejects(kube.get("Pod", "p", "ns"), isNotFound);
  });

  it("fails injected requests", async () => {
    const kube = new MemoryKube();
    kube.failNext("list", { code: 500, reason: "InternalError", message: "boom" }, { kind: "Node" });
    await assert.rejects(kube.list("Node"), (e) => KubeApiError.is(e, 500));
    assert.deepEqual((await kube.list("Node")).items, []);
    const remove = kube.inject((req) => (req.op === "get" ? new Error("connection reset") : undefined));
    await assert.rejects(kube.get("Node", "x"), /connection reset/);
    remove();
    await assert.rejects(kube.get("Node", "x"), isNotFound);
  });
});

describe("MemoryKube list", () => {
  it("filters by namespace, labels and fields", async () => {
    const kube = new MemoryKube();
    await kube.create("Pod", pod("a", "ns1", "n1"));
    await kube.create("Pod", pod("b", "ns1"));
    await kube.create("Pod", pod("c", "ns2", "n1"));
    await kube.patch("Pod", "c", { metadata: { labels: { app: "web" } } }, { namespace: "ns2" });
    const names = async (opts: Parameters<MemoryKube["list"]>[1]): Promise<string[]> =>
      (await kube.list("Pod", opts)).items.map((p) => p.metadata.name ?? "");
    assert.deepEqual(await names({}), ["a", "b", "c"]);
    assert.deepEqual(await names({ namespace: "ns1" }), ["a", "b"]);
    assert.deepEqual(await names({ fieldSelector: "spec.nodeName=n1" }), ["a", "c"]);
    assert.deepEqual(await names({ fieldSelector: "spec.nodeName=" }), ["b"]);
    assert.deepEqual(await names({ labelSelector: "app in (web)" }), ["c"]);
    await assert.rejects(kube.list("Pod", { labelSelector: "app in web" }), (e) => KubeApiError.is(e, 400));
    await assert.rejects(kube.list("Node", { fieldSelector: "status.phase=x" }), (e) =>
      KubeApiError.is(e, 400),
    );
  });

  it("paginates with limit/continue at the first page's version", async () => {
    const kube = new MemoryKube();
    for (let i = 0; i < 5; i++) await kube.create("Node", node(`n${i}`));
    const p1 = await kube.list("Node", { limit: 2 });
    await kube.create("Node", node("n9"));
    const p2 = await kube.list("Node", { limit: 2, continue: p1.continue ?? "" });
    const p3 = await kube.list("Node", { limit: 2, continue: p2.continue ?? "" });
    assert.deepEqual(
      [...p1.items, ...p2.items, ...p3.items].map((n) => n.metadata.name),
      ["n0", "n1", "n2", "n3", "n4", "n9"],
    );
    assert.equal(p2.resourceVersion, p1.resourceVersion);
    assert.equal(p3.continue, undefined);
    kube.compact();
    await assert.rejects(kube.list("Node", { limit: 2, continue: p1.continue ?? "" }), isGone);
    await assert.rejects(kube.list("Node", { continue: "garbage" }), (e) => KubeApiError.is(e, 400));
  });
  it("with sharedLists answers the stored objects frozen, the same until a write replaces one", async () => {
    const kube = new MemoryKube({ sharedLists: true });
    await kube.create("Pod", pod("a", "ns1", "n1"));
    await kube.create("Pod", pod("b", "ns1"));
    const [a1, b1] = (await kube.list("Pod")).items;
    assert.ok(a1 && b1);
    assert.ok(Object.isFrozen(a1) && Object.isFrozen(a1.spec) && Object.isFrozen(a1.spec.containers[0]));
    assert.throws(() => {
      (a1.metadata as { name: string }).name = "x";
    }, TypeError);
    await kube.patch("Pod", "b", { metadata: { labels: { app: "web" } } }, { namespace: "ns1" });
    const [a2, b2] = (await kube.list("Pod")).items;
    assert.equal(a2, a1, "unchanged: the same object, not a copy");
    assert.notEqual(b2, b1);
    assert.equal(b1.metadata.labels, undefined, "what an earlier list answered stays as it was");
    assert.deepEqual(b2?.metadata.labels, { app: "web" });
    // Without the option every list is the caller's own copy.
    const plain = new MemoryKube();
    await plain.create("Pod", pod("a", "ns1"));
    const [c1] = (await plain.list("Pod")).items;
    assert.ok(c1 && !Object.isFrozen(c1));
    assert.notEqual((await plain.list("Pod")).items[0], c1);
  });
});

describe("MemoryKube watch", () => {
  it("streams live events, replays from a version and ends on abort", async () => {
    const kube = new MemoryKube();
    const n1 = await kube.create("Node", node("n1"));
    await kube.create("Node", node("n2"));
    const ac = new AbortController();
    const w = collect(kube.watch("Node", { resourceVersion: n1.metadata.resourceVersion ?? "" }, ac.signal));
    await flushMicrotasks();
    await kube.patch("Node", "n1", { metadata: { labels: { a: "1" } } });
    await kube.create("Pod", pod("p", "ns")); // another kind: not seen
    await kube.delete("Node", "n2");
    await flushMicrotasks();
    ac.abort();
    assert.equal(await w.done, "end");
    assert.deepEqual(summary(w.events), ["ADDED n2", "MODIFIED n1", "DELETED n2"]);
    const versions = w.events.map((e) =>
      Number(e.type === "ERROR" ? NaN : e.object.metadata.resourceVersion),
    );
    assert.deepEqual(
      versions,
      [...versions].sort((a, b) => a - b),
      "versions increase",
    );
    assert.equal(kube.watcherCount("Node"), 0);
  });

  it("sends synthetic ADDED for resourceVersion 0", async () => {
    const kube = new MemoryKube();
    await kube.create("Node", node("b"));
    await kube.create("Node", node("a"));
    const ac = new AbortController();
    const w = collect(kube.watch("Node", { resourceVersion: "0" }, ac.signal));
    await flushMicrotasks();
    ac.abort();
    await w.done;
    assert.deepEqual(summary(w.events), ["ADDED a", "ADDED b"]);
  });

  it("answers 410 Gone for a version older than the retained history", async () => {
    const kube = new MemoryKube({ historyLimit: 2 });
    const first = await kube.create("Node", node("n0"));
    for (let i = 1; i < 4; i++) await kube.create("Node", node(`n${i}`));
    const w = collect(kube.watch("Node", { resourceVersion: first.metadata.resourceVersion ?? "" }));
    assert.equal(await w.done, "end");
    assert.equal(w.events.length, 1);
    const ev = w.events[0];
    assert.ok(ev?.type === "ERROR");
    assert.equal(ev.object.code, 410);
    // Inside the window it still works.
    const ac = new AbortController();
    const ok = collect(
      kube.watch("Node", { resourceVersion: String(Number(kube.resourceVersion) - 1) }, ac.signal),
    );
    await flushMicrotasks();
    ac.abort();
    await ok.done;
    assert.deepEqual(summary(ok.events), ["ADDED n3"]);
    kube.compact();
    const after = collect(kube.watch("Node", { resourceVersion: String(Number(kube.resourceVersion) - 1) }));
    await after.done;
    assert.deepEqual(summary(after.events), ["ERROR 410"]);
  });

  it("turns selector transitions into ADDED/DELETED like the apiserver", async () => {
    const kube = new MemoryKube();
    const start = kube.resourceVersion;
    const ac = new AbortController();
    const w = collect(
      kube.watch(
        "Pod",
        { resourceVersion: start, namespace: "ns", fieldSelector: "spec.nodeName=n1" },
        ac.signal,
      ),
    );
    await flushMicrotasks();
    await kube.create("Pod", pod("p", "ns"));
    await kube.create("Pod", pod("q", "other", "n1"));
    await kube.patch("Pod", "p", { spec: { nodeName: "n1" } }, { namespace: "ns" });
    await kube.patch("Pod", "p", { status: { phase: "Running" } }, { namespace: "ns" });
    const moved = await kube.patch("Pod", "p", { spec: { nodeName: "n2" } }, { namespace: "ns" });
    await flushMicrotasks();
    ac.abort();
    await w.done;
    assert.deepEqual(summary(w.events), ["ADDED p", "MODIFIED p", "DELETED p"]);
    const del = w.events[2];
    assert.ok(del?.type === "DELETED");
    assert.equal(del.object.metadata.resourceVersion, moved.metadata.resourceVersion);
  });

  it("sends periodic bookmarks when configured", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock, bookmarkIntervalMs: 60_000 });
    const ac = new AbortController();
    const w = collect(kube.watch("Node", { resourceVersion: "0", allowWatchBookmarks: true }, ac.signal));
    await flushMicrotasks();
    await clock.advance(59_000);
    assert.equal(w.events.length, 0);
    await kube.create("Node", node("n"));
    await clock.advance(1_000);
    await clock.advance(60_000);
    ac.abort();
    await w.done;
    assert.deepEqual(summary(w.events), [
      "ADDED n",
      `BOOKMARK ${kube.resourceVersion}`,
      `BOOKMARK ${kube.resourceVersion}`,
    ]);
    assert.equal(clock.pending, 0, "the bookmark timer stops with the watch");
  });

  it("sends bookmarks only to watches that asked, ends at timeoutSeconds, and can be dropped", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    const rv = kube.resourceVersion;
    const withBm = collect(
      kube.watch("Node", { resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: 60 }),
    );
    const without = collect(kube.watch("Node", { resourceVersion: rv }));
    await flushMicrotasks();
    await kube.create("Pod", pod("p", "ns"));
    kube.bookmark();
    await flushMicrotasks();
    assert.deepEqual(withBm.events, [
      { type: "BOOKMARK", object: { metadata: { resourceVersion: kube.resourceVersion } } },
    ]);
    assert.deepEqual(without.events, []);
    await clock.advance(60_000);
    assert.equal(await withBm.done, "end");
    kube.dropWatches("Node", new Error("connection reset"));
    assert.match(String(await without.done), /connection reset/);
    assert.equal(kube.watcherCount("Node"), 0);
  });
});

describe("MemoryKube eviction (PodDisruptionBudgets)", () => {
  const readyPod = (name: string, ready = true): Pod => ({
    metadata: { name, namespace: "shop", labels: { app: "api" } },
    spec: { containers: [{ name: "c" }], nodeName: "n1" },
    status: { phase: "Running", conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  });
  const budget = (name: string, spec: Record<string, unknown>) => ({
    metadata: { name, namespace: "shop" },
    spec: { selector: { matchLabels: { app: "api" } }, ...spec },
  });
  const names = async (kube: MemoryKube): Promise<string[]> =>
    (await kube.list("Pod", { namespace: "shop" })).items.map((p) => p.metadata.name ?? "").sort();

  it("evicts while the budget allows a disruption and answers 429 once it would be violated", async () => {
    const kube = new MemoryKube();
    for (const n of ["a", "b", "c"]) await kube.create("Pod", readyPod(n));
    await kube.create("PodDisruptionBudget", budget("api", { minAvailable: 2 }));
    await kube.evict("a", "shop");
    assert.deepEqual(await names(kube), ["b", "c"]);
    await assert.rejects(kube.evict("b", "shop"), (err: unknown) => {
      assert.ok(KubeApiError.is(err, 429));
      assert.equal(err.reason, "TooManyRequests");
      assert.match(
        err.message,
        /would violate the pod's disruption budget.*api needs 2 healthy pods and has 2/,
      );
      return true;
    });
    assert.deepEqual(await names(kube), ["b", "c"], "nothing deleted");
  });

  it("scales a percentage of maxUnavailable up, as the disruption controller does", async () => {
    const kube = new MemoryKube();
    const rs = await kube.create("ReplicaSet", {
      metadata: { name: "api-1", namespace: "shop" },
      spec: { replicas: 4, selector: { matchLabels: { app: "api" } } },
    });
    const owned = (n: string): Pod => ({
      ...readyPod(n),
      metadata: {
        ...readyPod(n).metadata,
        ownerReferences: [
          {
            apiVersion: "apps/v1",
            kind: "ReplicaSet",
            name: "api-1",
            uid: rs.metadata.uid ?? "",
            controller: true,
          },
        ],
      },
    });
    for (const n of ["a", "b", "c", "d"]) await kube.create("Pod", owned(n));
    await kube.create("PodDisruptionBudget", budget("api", { maxUnavailable: "10%" }));
    await kube.evict("a", "shop"); // ⌈0.4⌉ = 1 of the ReplicaSet's 4 may be unavailable: 3 healthy needed
    await assert.rejects(
      kube.evict("b", "shop"),
      (err: unknown) => KubeApiError.is(err, 429),
      "the evicted pod still counts until the ReplicaSet replaces it",
    );
    await kube.create("Pod", owned("e"));
    await kube.evict("b", "shop");
  });

  it("lets an unhealthy pod go while the budget is met (IfHealthyBudget)", async () => {
    const kube = new MemoryKube();
    for (const n of ["a", "b"]) await kube.create("Pod", readyPod(n));
    await kube.create("Pod", readyPod("sick", false));
    await kube.create("PodDisruptionBudget", budget("api", { minAvailable: 2 }));
    await assert.rejects(kube.evict("a", "shop"), (err: unknown) => KubeApiError.is(err, 429));
    await kube.evict("sick", "shop");
    assert.deepEqual(await names(kube), ["a", "b"]);
  });

  it("refuses a pod under two budgets, evicts pods no budget selects, and 404s a missing pod", async () => {
    const kube = new MemoryKube();
    await kube.create("Pod", readyPod("a"));
    await kube.create("Pod", { ...readyPod("other"), metadata: { name: "other", namespace: "shop" } });
    await kube.create("PodDisruptionBudget", budget("one", { maxUnavailable: 1 }));
    await kube.create("PodDisruptionBudget", budget("two", { maxUnavailable: 1 }));
    await assert.rejects(kube.evict("a", "shop"), (err: unknown) => KubeApiError.is(err, 500));
    await kube.evict("other", "shop");
    await assert.rejects(kube.evict("gone", "shop"), (err: unknown) => isNotFound(err));
    assert.deepEqual(await names(kube), ["a"]);
  });
});

describe("MemoryKube Event TTL (kube-apiserver --event-ttl)", () => {
  const event = (name: string, message: string): Event => ({
    metadata: { name, namespace: "default" },
    involvedObject: { kind: "Node", name: "n" },
    message,
  });

  it("deletes an Event a TTL after its last write, oldest first; watchers see DELETED", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const kube = new MemoryKube({ clock, eventTtlMs: 3_600_000 });
    await kube.create("Event", event("a", "first"), { namespace: "default" });
    await clock.advance(600_000);
    await kube.create("Event", event("b", "second"), { namespace: "default" });
    await clock.advance(1_200_000);
    // A write (the recorder's count++) renews the TTL, as the apiserver re-leases it.
    await kube.patch("Event", "b", { message: "second, again" }, { namespace: "default" });
    const ac = new AbortController();
    const w = collect(kube.watch("Event", { resourceVersion: kube.resourceVersion }, ac.signal));
    await flushMicrotasks();
    await clock.advance(1_800_000); // a: 60 min old
    const names = async (): Promise<string[]> =>
      (await kube.list("Event")).items.map((e) => e.metadata.name ?? "");
    assert.deepEqual(await names(), ["b"], "a expired at 60 min");
    assert.deepEqual(
      kube.peek("Event").map((e) => e.metadata.name),
      ["b"],
    );
    await clock.advance(1_799_000);
    assert.deepEqual(await names(), ["b"], "b lives 60 min from its last write, not its creation");
    await clock.advance(1_000);
    assert.deepEqual(await names(), []);
    await flushMicrotasks();
    ac.abort();
    await w.done;
    assert.deepEqual(summary(w.events), ["DELETED a", "DELETED b"]);
  });

  it("keeps Events without a TTL (the default)", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const kube = new MemoryKube({ clock });
    await kube.create("Event", event("a", "kept"), { namespace: "default" });
    await clock.advance(48 * 3_600_000);
    assert.equal((await kube.list("Event")).items.length, 1);
  });
});
