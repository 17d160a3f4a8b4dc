// The agent → core path into a real (SQLite, in-memory) history store.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Agent } from "../../agent/agent.ts";
import { disruptionEvent, node, nodeClaim, nodePool } from "../../agent/fixtures.ts";
import { MemorySource } from "../../agent/source.ts";
import { FakeClock } from "../../shared/clock.ts";
import { Registry } from "../../shared/metrics.ts";
import { openSqliteStore } from "../store/sqlite.ts";
import { IngestCore } from "./core.ts";
import { startIngestServer } from "./server.ts";
import { StoreSink } from "./store-sink.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("StoreSink", { timeout: 30_000 }, () => {
  it("stores cluster, lifecycle, disruptions and the checkpoint the agent is acked with", async () => {
    const { store } = await openSqliteStore({ path: ":memory:" });
    cleanups.push(() => store.close());
    const core = new IngestCore({ sink: new StoreSink(store) });
    const server = await startIngestServer({ core, port: 0, host: "127.0.0.1", tokens: ["t"] });
    cleanups.push(() => server.close());
    const source = new MemorySource([nodePool("default"), nodeClaim(3), node(3)]);
    const agent = new Agent({
      source,
      coreUrl: `http://127.0.0.1:${server.port}`,
      token: "t",
      clusterId: "prod-eu",
      kubernetesVersion: "v1.33.0",
      karpenterVersion: "1.6.0",
      agentVersion: "0.1.0",
      clock: new FakeClock(),
      metrics: new Registry(),
    });
    const ac = new AbortController();
    const running = agent.run(ac.signal);
    cleanups.push(async () => {
      ac.abort();
      await running;
    });
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
