import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Informer, type RetryInfo } from "./informer.ts";
import { diffCache } from "./diff.ts";
import { MemoryKube } from "../memory/memory.ts";
import type { Node } from "../../objects/kube.ts";
import { EventModel, versionsOf } from "./event-model.test-helper.ts";
import { FakeClock, flushMicrotasks } from "../../shared/clock.ts";

const node = (name: string, labels: Record<string, string> = {}): Node => ({ metadata: { name, labels } });

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (cond()) return;
    await flushMicrotasks();
  }
  assert.fail(`timed out waiting for ${what}`);
}

function setup(opts: { historyLimit?: number; resyncMs?: number; pageSize?: number } = {}) {
  const clock = new FakeClock();
  const kube = new MemoryKube({ clock, historyLimit: opts.historyLimit ?? 1000 });
  const retries: RetryInfo[] = [];
  const inf = new Informer({
    client: kube,
    kind: "Node",
    clock,
    pageSize: opts.pageSize ?? 2,
    backoff: { initialMs: 1000, maxMs: 8000, random: () => 0.5 },
    healthyAfterMs: 30_000,
    watchdogMs: 60_000,
    resyncMs: opts.resyncMs ?? 0,
    random: () => 0,
    onRetry: (r) => retries.push(r),
  });
  const model = new EventModel<Node>().attach(inf);
  return { clock, kube, inf, model, retries };
}

describe("diffCache", () => {
  it("emits adds, updates for moved versions and deletes with the last known state", () => {
    const o = (name: string, rv: string): Node => ({ metadata: { name, resourceVersion: rv } });
    const cache = new Map([
      ["a", o("a", "1")],
      ["b", o("b", "2")],
      ["c", o("c", "3")],
    ]);
    const changes = diffCache(cache, [o("d", "9"), o("b", "7"), o("a", "1")]);
    assert.deepEqual(
      changes.map((c) => `${c.type} ${c.obj.metadata.name ?? ""}@${c.obj.metadata.resourceVersion ?? ""}`),
      ["update b@7", "add d@9", "delete c@3"],
    );
  });
});

describe("Informer over the in-memory adapter", () => {
  it("lists (paginated), syncs and follows adds, updates and deletes", async () => {
    const { kube, inf, model } = setup();
    for (let i = 0; i < 5; i++) await kube.create("Node", node(`n${i}`));
    inf.start();
    await inf.synced;
    assert.equal(inf.hasSynced, true);
    assert.equal(inf.stats.lists, 1);
    assert.deepEqual(model.log, ["add n0", "add n1", "add n2", "add n3", "add n4"]);
    await until(() => kube.watcherCount("Node") === 1, "the watch");
    await kube.patch("Node", "n1", { metadata: { labels: { a: "1" } } });
    await kube.delete("Node", "n2");
    await kube.create("Node", node("n9"));
    await until(() => inf.get("n9") !== undefined, "n9");
    assert.deepEqual(model.log.slice(5), ["update n1", "delete n2", "add n9"]);
    assert.deepEqual(model.versions(), versionsOf((await kube.list("Node")).items));
    assert.deepEqual(versionsOf(inf.list()), model.versions());
    assert.equal(inf.get("n1")?.metadata.labels?.a, "1");
    assert.equal(inf.stats.lastResourceVersion, kube.resourceVersion);
    await inf.stop();
    assert.equal(inf.phase, "stopped");
    assert.equal(kube.watcherCount("Node"), 0);
  });

  it("relists on 410 Gone and emits exactly the diff", async () => {
    const { clock, kube, inf, model, retries } = setup({ historyLimit: 2 });
    for (let i = 0; i < 4; i++) await kube.create("Node", node(`n${i}`));
    inf.start();
    await inf.synced;
    await until(() => kube.watcherCount("Node") === 1, "the watch");
    // Cut the connection; while the informer backs off, the world moves past the history window.
    kube.dropWatches("Node", new Error("connection reset"));
    await until(() => inf.phase === "backoff", "backoff");
    await kube.patch("Node", "n1", { metadata: { labels: { moved: "yes" } } });
    await kube.delete("Node", "n2");
    await kube.create("Node", node("n7"));
    await kube.create("Node", node("n8"));
    await clock.advance(retries.at(-1)?.delayMs ?? 0);
    // The re-watch from the old version gets 410; the relist follows the next backoff.
    await until(() => retries.length === 2 && inf.phase === "backoff", "the 410");
    await clock.advance(retries.at(-1)?.delayMs ?? 0);
    await until(() => inf.stats.relists === 1 && kube.watcherCount("Node") === 1, "the relist");
    assert.deepEqual(
      retries.map((r) => r.reason),
      ["error", "gone"],
    );
    assert.equal(inf.stats.gones, 1);
    assert.deepEqual(model.log.slice(4), ["update n1", "add n7", "add n8", "delete n2"]);
    assert.deepEqual(model.versions(), versionsOf((await kube.list("Node")).items));
    for (const [k, c] of model.counts) assert.ok(c.add === 1, `${k} added ${c.add} times`);
    await inf.stop();
  });

  it("restarts failed watches with exponential backoff and resets it after a healthy period", async () => {
    const { clock, kube, inf, model, retries } = setup();
    await kube.create("Node", node("a"));
    kube.failNext("watch", { code: 500, reason: "InternalError", message: "etcd down" }, { times: 3 });
    inf.start();
    for (let i = 0; i < 3; i++) {
      await until(() => inf.phase === "backoff" && retries.length === i + 1, `retry ${i + 1}`);
      await clock.advance(retries[i]?.delayMs ?? 0);
    }
    await until(() => kube.watcherCount("Node") === 1, "the watch");
    assert.deepEqual(
      retries.map((r) => [r.reason, r.delayMs, r.attempt]),
      [
        ["error", 500, 1],
        ["error", 1000, 2],
        ["error", 2000, 3],
      ],
    );
    assert.equal(inf.stats.watchErrors, 3);
    assert.equal(inf.stats.watchRestarts, 3);
    // A healthy half-minute (bookmarks keep the watchdog quiet), then a drop: reconnect at once.
    for (let t = 0; t < 31_000; t += 10_000) {
      kube.bookmark();
      await flushMicrotasks();
      await clock.advance(10_000);
    }
    await kube.create("Node", node("b"));
    kube.dropWatches("Node", new Error("reset"));
    await until(() => retries.length === 4 && kube.watcherCount("Node") === 1, "the immediate restart");
    assert.deepEqual(retries[3] && [retries[3].reason, retries[3].delayMs, retries[3].attempt], [
      "error",
      0,
      0,
    ]);
    await kube.create("Node", node("c"));
    await until(() => inf.size === 3, "c");
    assert.deepEqual(model.log, ["add a", "add b", "add c"]);
    assert.ok(inf.stats.bookmarks >= 3);
    await inf.stop();
  });

  it("restarts a silent watch after the watchdog period, counting bookmarks as life", async () => {
    const { clock, kube, inf, retries } = setup();
    inf.start();
    await inf.synced;
    await until(() => kube.watcherCount("Node") === 1, "the watch");
    await clock.advance(50_000);
    kube.bookmark();
    await flushMicrotasks();
    await clock.advance(50_000); // 100 s since start but only 50 s since the bookmark
    assert.equal(inf.stats.watchdogFires, 0);
    await clock.advance(10_000);
    await until(() => retries.length === 1 && kube.watcherCount("Node") === 1, "the watchdog");
    // It was alive for 50 s (≥ healthyAfterMs) before going silent: reconnect at once.
    assert.deepEqual([retries[0]?.reason, retries[0]?.delayMs], ["watchdog", 0]);
    assert.equal(inf.stats.watchdogFires, 1);
    // A watch silent from its start is not healthy: it backs off.
    await clock.advance(60_000);
    await until(() => retries.length === 2 && inf.phase === "backoff", "the second watchdog");
    assert.deepEqual([retries[1]?.reason, retries[1]?.delayMs], ["watchdog", 500]);
    await clock.advance(500);
    await until(() => kube.watcherCount("Node") === 1, "the third watch");
    // Nothing was missed: the watch resumes from the bookmark's version.
    await kube.create("Node", node("late"));
    await until(() => inf.get("late") !== undefined, "late");
    assert.equal(inf.stats.watchdogFires, 2);
    await inf.stop();
  });

  it("resyncs from the cache without calling the apiserver", async () => {
    const { clock, kube, inf, model } = setup({ resyncMs: 60_000 });
    await kube.create("Node", node("a"));
    inf.start();
    await inf.synced;
    let lists = 0;
    kube.inject((r) => {
      if (r.op === "list") lists++;
      return undefined;
    });
    const resynced: string[] = [];
    inf.on("update", (o, old) => {
      if (o === old) resynced.push(o.metadata.name ?? "");
    });
    await clock.advance(60_000);
    assert.deepEqual(resynced, ["a"]);
    assert.equal(inf.stats.resyncs, 1);
    assert.equal(lists, 0);
    assert.deepEqual(model.log, ["add a", "update a"]);
    await inf.stop();
  });

  it("filters by selectors, and an object leaving the selector is deleted", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    await kube.create("Node", node("spot", { "karpenter.sh/capacity-type": "spot" }));
    await kube.create("Node", node("od", { "karpenter.sh/capacity-type": "on-demand" }));
    const inf = new Informer({
      client: kube,
      kind: "Node",
      clock,
      labelSelector: "karpenter.sh/capacity-type=spot",
    });
    const model = new EventModel<Node>().attach(inf);
    inf.start();
    await inf.synced;
    await until(() => kube.watcherCount("Node") === 1, "the watch");
    await kube.patch("Node", "spot", { metadata: { labels: { "karpenter.sh/capacity-type": "on-demand" } } });
    await until(() => inf.size === 0, "the delete");
    assert.deepEqual(model.log, ["add spot", "delete spot"]);
    await inf.stop();
  });

  it("survives a throwing listener and rejects synced when stopped first", async () => {
    const { kube, inf, model } = setup();
    await kube.create("Node", node("a"));
    inf.on("add", () => {
      throw new Error("listener bug");
    });
    inf.start();
    await inf.synced;
    assert.deepEqual(model.log, ["add a"]);
    await inf.stop();

    const never = new Informer({ client: kube, kind: "Pod", clock: new FakeClock() });
    await never.stop();
    await assert.rejects(never.synced, /stopped before its first list/);
  });

  it("stops from an AbortSignal while backing off", async () => {
    const { kube, inf } = setup();
    kube.failNext("list", { code: 500, message: "down" }, { times: 100 });
    const ac = new AbortController();
    inf.start(ac.signal);
    await until(() => inf.phase === "backoff", "backoff");
    ac.abort();
    await inf.stop();
    assert.equal(inf.phase, "stopped");
    assert.equal(inf.stats.listFailures, 1);
    await assert.rejects(inf.synced);
  });
});

describe("Informer transform", () => {
  // Keeps name + resourceVersion + the "keep" label; a node without it is left out.
  const slim = (n: Node): Node | undefined => {
    const keep = n.metadata.labels?.keep;
    if (keep === undefined) return undefined;
    return {
      metadata: { name: n.metadata.name, resourceVersion: n.metadata.resourceVersion, labels: { keep } },
    };
  };

  it("caches and emits only transformed objects, from the list and the watch", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    await kube.create("Node", node("a", { keep: "1", big: "x".repeat(100) }));
    await kube.create("Node", node("b", { other: "1" }));
    const inf = new Informer({ client: kube, kind: "Node", clock, pageSize: 1, transform: slim });
    const seen: string[] = [];
    inf.on("add", (n) => seen.push(`add ${JSON.stringify(n.metadata.labels)}`));
    inf.on("update", (n) => seen.push(`update ${JSON.stringify(n.metadata.labels)}`));
    inf.on("delete", (n) => seen.push(`delete ${n.metadata.name ?? ""}`));
    inf.start();
    await inf.synced;
    assert.deepEqual(seen, ['add {"keep":"1"}']);
    assert.deepEqual(inf.get("a"), slim(await kube.get("Node", "a")));
    assert.equal(inf.get("b"), undefined);
    await until(() => kube.watcherCount("Node") === 1, "the watch");

    await kube.create("Node", node("c", { keep: "3", big: "y" }));
    await kube.patch("Node", "a", { metadata: { labels: { keep: "2" } } });
    await kube.patch("Node", "b", { metadata: { labels: { other: "2" } } });
    await until(() => inf.get("a")?.metadata.labels?.keep === "2", "a updated");
    // Transformed to nothing: a cached object leaves as a delete; an uncached one stays out.
    await kube.patch("Node", "c", { metadata: { labels: { keep: null } } });
    await until(() => inf.get("c") === undefined, "c dropped");
    await kube.delete("Node", "a");
    await until(() => inf.size === 0, "a deleted");
    assert.deepEqual(seen, [
      'add {"keep":"1"}',
      'add {"keep":"3"}',
      'update {"keep":"2"}',
      "delete c",
      "delete a",
    ]);
    assert.equal(inf.stats.lastResourceVersion, kube.resourceVersion);
    await inf.stop();
  });
});
