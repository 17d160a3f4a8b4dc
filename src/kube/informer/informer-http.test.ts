// The informer over the real adapter against a local HTTP apiserver that injects failures.
// Sockets are real (so polling uses tiny real waits); every informer timer runs on a FakeClock.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as realSleep } from "node:timers/promises";
import { Informer, type InformerOptions, type RetryInfo } from "./informer.ts";
import { FakeApiserver } from "./fake-apiserver.test-helper.ts";
import { EventModel, versionsOf } from "./event-model.test-helper.ts";
import { ClientNodeKube } from "../clientnode/client.ts";
import type { Node } from "../../objects/kube.ts";
import { FakeClock } from "../../shared/clock.ts";

const node = (name: string, labels: Record<string, string> = {}): Node => ({ metadata: { name, labels } });

async function waitFor(cond: () => boolean, what: string, detail: () => unknown = () => ""): Promise<void> {
  for (let i = 0; i < 2500; i++) {
    if (cond()) return;
    await realSleep(2);
  }
  assert.fail(`timed out waiting for ${what} ${JSON.stringify(detail())}`);
}

describe("Informer over ClientNodeKube against a failing HTTP apiserver", () => {
  let server: FakeApiserver;
  before(async () => {
    server = await new FakeApiserver().start();
  });
  after(() => server.close());

  /** A Node informer over the real adapter to the server, on a fake clock, its retries collected. */
  const nodeInformer = (opts: Omit<InformerOptions<"Node">, "client" | "kind" | "clock" | "onRetry">) => {
    const clock = new FakeClock();
    const retries: RetryInfo[] = [];
    const inf = new Informer({
      client: new ClientNodeKube({ kubeConfig: server.kubeConfig() }),
      kind: "Node",
      clock,
      onRetry: (r) => retries.push(r),
      ...opts,
    });
    return { clock, retries, inf };
  };

  it("ends equal to the server through 500s, 410, a drop, a stall and a healthy reset", async () => {
    for (let i = 0; i < 5; i++) server.upsert("nodes", node(`n${i}`));
    server.faults.push(
      { op: "list", type: "status", code: 500 },
      { op: "watch", type: "gone-event", afterEvents: 1 },
      { op: "watch", type: "drop", afterEvents: 1 },
      { op: "watch", type: "stall" },
      { op: "watch", type: "status", code: 500 },
    );
    const { clock, retries, inf } = nodeInformer({
      pageSize: 2,
      backoff: { initialMs: 1000, maxMs: 60_000, random: () => 0.5 },
      healthyAfterMs: 30_000,
      watchdogMs: 10_000,
      random: () => 0.5,
    });
    const model = new EventModel<Node>().attach(inf);
    const state = (): unknown => ({
      retries: retries.map((r) => r.reason),
      phase: inf.phase,
      stats: inf.stats,
    });
    const backoffNumber = async (n: number): Promise<void> => {
      await waitFor(() => retries.length === n && inf.phase === "backoff", `retry ${n}`, state);
      await clock.advance(retries[n - 1]?.delayMs ?? 0);
    };
    const watching = (): boolean => inf.phase === "watching" && server.openWatches === 1;
    inf.start();

    // 1. The first list answers 500.
    await backoffNumber(1);
    await inf.synced;
    assert.equal(server.count("list"), 4, "one failed list, then three pages");
    assert.deepEqual(model.log, ["add n0", "add n1", "add n2", "add n3", "add n4"]);

    // 2. The watch sends one event, then ERROR 410; the world changes during the backoff.
    await waitFor(watching, "watch 1");
    server.upsert("nodes", node("n5"));
    await waitFor(() => retries.length === 2 && inf.phase === "backoff", "the 410", state);
    server.upsert("nodes", node("n1", { changed: "yes" }));
    server.remove("nodes", "n2");
    await clock.advance(retries[1]?.delayMs ?? 0);
    await waitFor(() => inf.stats.relists === 1 && watching(), "the relist", state);

    // 3. The next watch sends one event and the connection drops.
    server.upsert("nodes", node("n6"));
    await backoffNumber(3);

    // 4. The next watch stalls: no bytes, no close. Only the watchdog gets it out.
    await waitFor(watching, "watch 3");
    server.upsert("nodes", node("n7"));
    await clock.advance(10_000);
    await backoffNumber(4);

    // 5. The next watch is refused with HTTP 500.
    await backoffNumber(5);

    // 6. A healthy watch resumes from the last version (n7 comes through the replay).
    await waitFor(() => watching() && inf.get("n7") !== undefined, "the healthy watch", state);
    server.upsert("nodes", node("n8"));
    server.remove("nodes", "n0");
    await waitFor(() => inf.get("n8") !== undefined && inf.get("n0") === undefined, "live events");

    assert.deepEqual(
      retries.map((r) => [r.reason, r.delayMs]),
      [
        ["error", 500],
        ["gone", 1000],
        ["error", 2000],
        ["watchdog", 4000],
        ["error", 8000],
      ],
      "each retry waited the jittered exponential delay",
    );

    // 7. Half a minute of healthy watching (bookmarks keep the watchdog quiet), then a drop:
    //    the backoff resets and the reconnect is immediate.
    for (let t = 0; t < 30_000; t += 7_500) {
      const seen = inf.stats.bookmarks;
      server.bookmark();
      await waitFor(() => inf.stats.bookmarks > seen, "a bookmark");
      await clock.advance(7_500);
    }
    assert.equal(inf.stats.watchdogFires, 1);
    server.dropWatches();
    await waitFor(() => retries.length === 6 && watching(), "the immediate reconnect", state);
    assert.deepEqual([retries[5]?.reason, retries[5]?.delayMs, retries[5]?.attempt], ["error", 0, 0]);
    server.upsert("nodes", node("n9"));
    await waitFor(() => inf.get("n9") !== undefined, "n9");

    // The informer's cache and the event model both equal the server, and no key saw a second add.
    const truth = versionsOf(server.objects("nodes"));
    assert.deepEqual(versionsOf(inf.list()), truth);
    assert.deepEqual(model.versions(), truth);
    for (const [key, c] of model.counts) assert.equal(c.add, 1, `${key} added ${c.add} times`);
    assert.deepEqual(model.counts.get("n1"), { add: 1, update: 1, delete: 0 });
    assert.deepEqual(model.counts.get("n2"), { add: 1, update: 0, delete: 1 });
    assert.equal(inf.get("n1")?.metadata.labels?.changed, "yes");
    assert.equal(inf.get("n3")?.kind, "Node", "objects keep their wire shape");

    const s = inf.stats;
    assert.equal(s.lists, 2);
    assert.equal(s.relists, 1);
    assert.equal(s.listFailures, 1);
    assert.equal(s.gones, 1);
    assert.equal(s.watchdogFires, 1);
    assert.equal(s.lastResourceVersion, server.resourceVersion);
    const watches = server.requests.filter((r) => r.op === "watch");
    assert.equal(watches.length, 6);
    for (const w of watches) {
      assert.equal(w.query.get("allowWatchBookmarks"), "true");
      assert.equal(w.query.get("timeoutSeconds"), "450");
    }

    await inf.stop();
    await waitFor(() => server.openWatches === 0, "the watch to close");
  });

  it("keeps retrying an apiserver that refuses every list, within the backoff cap", async () => {
    server.faults.push(
      ...Array.from({ length: 6 }, () => ({ op: "list" as const, type: "status" as const, code: 503 })),
    );
    const { clock, retries, inf } = nodeInformer({
      backoff: { initialMs: 1000, maxMs: 8000, jitter: "none" },
    });
    inf.start();
    for (let n = 1; n <= 6; n++) {
      await waitFor(() => retries.length === n && inf.phase === "backoff", `retry ${n}`);
      await clock.advance(retries[n - 1]?.delayMs ?? 0);
    }
    await inf.synced;
    assert.deepEqual(
      retries.map((r) => r.delayMs),
      [1000, 2000, 4000, 8000, 8000, 8000],
    );
    assert.equal(inf.stats.listFailures, 6);
    assert.deepEqual(versionsOf(inf.list()), versionsOf(server.objects("nodes")));
    await inf.stop();
  });
});
