// The agent → core path into a real (SQLite, in-memory) history store.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Agent } from "../../agent/agent.ts";
import { disruptionEvent, node, nodeClaim, nodePool } from "../../agent/fixtures.ts";
import { MemorySource } from "../../agent/source.ts";
import { openSqliteStore } from "../store/sqlite.ts";
import { runAgent } from "./agent.test-helper.ts";
import { IngestCore } from "./core.ts";
import { startIngestServer } from "./server.ts";
import { foldOpenNodeClaims, StoreSink } from "./store-sink.ts";
import type { Store } from "../store/store.ts";
import type { OpenNodeClaim } from "../lifecycle/derive.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** One core process's ingest over `store`, and an agent streaming `source` to it. */
async function coreAndAgent(
  store: Store,
  source: MemorySource,
): Promise<{ agent: Agent; stop(): Promise<void> }> {
  const core = new IngestCore({ sink: new StoreSink(store) });
  const server = await startIngestServer({ core, port: 0, host: "127.0.0.1", tokens: ["t"] });
  const { agent, stop: stopAgent } = runAgent({
    source,
    coreUrl: `http://127.0.0.1:${server.port}`,
    token: "t",
    clusterId: "prod-eu",
    kubernetesVersion: "v1.33.0",
    karpenterVersion: "1.6.0",
  });
  const stop = async (): Promise<void> => {
    await stopAgent();
    await server.close();
  };
  cleanups.push(stop);
  return { agent, stop };
}

describe("StoreSink", { timeout: 30_000 }, () => {
  it("after a core restart, closes the claims deleted while core was down (Terminated, with the recorded reason)", async () => {
    const { store } = await openSqliteStore({ path: ":memory:" });
    cleanups.push(() => store.close());
    const range = { clusterId: "prod-eu", from: 0, to: Date.UTC(2100, 0, 1) };
    const terminated = async (): Promise<string[]> =>
      (await store.lifecycle(range))
        .filter((e) => e.phase === "Terminated")
        .map((e) => `${e.nodeClaim} ${e.reason ?? "-"} ${e.nodePool} ${e.nodeName ?? "-"}`)
        .sort();
    // The first core process: claims 1..4, claim-2 disrupted (Underutilized), claim-4 terminated.
    const first = await coreAndAgent(
      store,
      new MemorySource([
        nodePool("default"),
        nodeClaim(1),
        nodeClaim(2),
        nodeClaim(3),
        nodeClaim(4),
        node(2),
      ]),
    );
    await first.agent.until((a) => a.outbox.lastAcked === 3);
    await first.stop();
    await store.write({
      lifecycle: [
        { ...row("claim-2", "Disrupted"), reason: "Underutilized" },
        { ...row("claim-4", "Terminated"), reason: "Empty" },
      ],
    });
    assert.deepEqual(await terminated(), ["claim-4 Empty default -"]);

    // Core was down while claims 2 and 3 were deleted; the restarted core gets a snapshot without them.
    const second = await coreAndAgent(store, new MemorySource([nodePool("default"), nodeClaim(1)]));
    await second.agent.until((a) => a.outbox.lastAcked === 3);
    assert.deepEqual(await terminated(), [
      "claim-2 Underutilized default node-2",
      "claim-3 - default node-3",
      "claim-4 Empty default -",
    ]);
    const [t2] = (await store.lifecycle(range)).filter(
      (e) => e.nodeClaim === "claim-2" && e.phase === "Terminated",
    );
    assert.ok(t2 && t2.at >= Date.now() - 60_000, "Terminated at the time core found out");
  });

  it("folds lifecycle rows into the claims left open", () => {
    const acc = new Map<string, OpenNodeClaim & { terminated: boolean }>();
    foldOpenNodeClaims(acc, [row("a", "Launched"), row("b", "Launched"), row("b", "Terminated")]);
    // Pages overlap on a shared instant: rows may come twice.
    foldOpenNodeClaims(acc, [row("a", "Launched"), { ...row("a", "Disrupted"), reason: "Drifted" }]);
    assert.deepEqual(
      [...acc.values()].filter((c) => !c.terminated).map((c) => [c.name, c.disruptionReason]),
      [["a", "Drifted"]],
    );
  });

  it("stores cluster, lifecycle, disruptions and the checkpoint the agent is acked with", async () => {
    const { store } = await openSqliteStore({ path: ":memory:" });
    cleanups.push(() => store.close());
    const source = new MemorySource([nodePool("default"), nodeClaim(3), node(3)]);
    const { agent } = await coreAndAgent(store, source);
    // The snapshot (begin, chunk, end = sequences 1..3) first, then the deltas.
    await agent.until((a) => a.outbox.lastAcked === 3);
    const disruptedAt = Date.UTC(2026, 0, 1, 3);
    source.push({ type: "upsert", object: disruptionEvent("node-3", "Drifted", disruptedAt) });
    source.push({ type: "delete", object: nodeClaim(3) });
    await agent.until((a) => a.outbox.lastAcked >= 5 && a.outbox.buffered === 0);

    const cluster = await store.getCluster("prod-eu");
    assert.equal(cluster?.versions["karpenter"], "1.6.0");
    const cp = await store.checkpoint("prod-eu");
    assert.equal(cp?.sequence, agent.outbox.lastAcked);
    assert.equal(cp.epoch, agent.sessionId);
    const range = { clusterId: "prod-eu", from: 0, to: Date.UTC(2100, 0, 1) };
    const phases = (await store.lifecycle(range)).map((e) => e.phase);
    assert.deepEqual(phases.sort(), ["Disrupted", "Initialized", "Launched", "Registered", "Terminated"]);
    const disruptions = await store.disruptions(range);
    assert.deepEqual(
      disruptions.map((d) => [d.nodeClaim, d.reason, d.at, d.source, d.nodePool]),
      [["claim-3", "Drifted", disruptedAt, "event", "default"]],
    );
  });
});

function row(claim: string, phase: "Launched" | "Disrupted" | "Terminated") {
  return {
    clusterId: "prod-eu",
    nodeClaim: claim,
    nodeClaimUid: `uid-${claim}`,
    nodePool: "default",
    phase,
    at: Date.UTC(2026, 0, 1, 4),
  };
}
