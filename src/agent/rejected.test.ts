// An agent whose snapshot core refuses at a bound (issue 30): it says why once, as an error, and
// backs off with growing, capped waits instead of resending the same snapshot in a tight loop; once
// core accepts again, the waits start over.
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import { IngestCore } from "../core/ingest/core.ts";
import { startIngestServer } from "../core/ingest/server.ts";
import { MemorySink } from "../core/ingest/sink.ts";
import { FakeClock } from "../shared/clock.ts";
import { createLogger } from "../shared/log.ts";
import { Registry } from "../shared/metrics.ts";
import { Agent } from "./agent.ts";
import { node, nodePool } from "./fixtures.ts";
import { MemorySource } from "./source.ts";

/** A FakeClock that records every wait asked of it (the agent's only waits are its backoffs). */
class RecordingClock extends FakeClock {
  readonly sleeps: number[] = [];
  override sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    return super.sleep(ms, signal);
  }
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("the agent when core refuses its snapshot", { timeout: 30_000 }, () => {
  it("logs the reason once as an error and backs off growing to the cap; acceptance starts over", async () => {
    const sink = new MemorySink();
    const core = new IngestCore({ sink, coreVersion: "test", maxSnapshotObjects: 10 });
    const server = await startIngestServer({ core, port: 0, host: "127.0.0.1", tokens: ["t"] });
    cleanups.push(() => server.close());

    const logs: Record<string, unknown>[] = [];
    const log = createLogger({
      level: "debug",
      write: (l) => logs.push(JSON.parse(l) as Record<string, unknown>),
    });
    const clock = new RecordingClock();
    const source = new MemorySource([nodePool("default"), ...Array.from({ length: 20 }, (_, i) => node(i))]);
    const agent = new Agent({
      source,
      coreUrl: `http://127.0.0.1:${server.port}`,
      token: "t",
      clusterId: "big",
      agentVersion: "test",
      clock,
      log,
      metrics: new Registry(),
      backoff: { initialMs: 100, maxMs: 100, jitter: "none" },
      rejectedBackoff: { initialMs: 1_000, maxMs: 8_000, jitter: "none" },
    });
    const ac = new AbortController();
    const running = agent.run(ac.signal);
    cleanups.push(async () => {
      ac.abort();
      await running;
    });

    // Six refusals in a row: each wait is the next of 1, 2, 4, 8, 8, 8 s (never the 100 ms of a
    // dropped connection, and never started over by the HelloAck each attempt gets).
    for (let i = 0; i < 6; i++) {
      await agent.until((a) => a.status === "backoff" && clock.pending > 0);
      assert.equal(agent.rejection, "snapshot exceeds 10 objects; rejected");
      await clock.advance(clock.sleeps.at(-1) ?? 0);
    }
    assert.deepEqual(clock.sleeps.slice(0, 6), [1_000, 2_000, 4_000, 8_000, 8_000, 8_000]);
    const errors = logs.filter((l) => l.level === "error");
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.equal(errors[0]?.msg, "core rejected what the agent sent; backing off until it accepts");
    assert.equal(errors[0].error, "snapshot exceeds 10 objects; rejected");

    // The cluster shrinks below the bound: core accepts, and the refusal is over.
    source.push({ type: "replace", objects: [nodePool("default")] });
    await agent.until((a) => a.status === "backoff" && clock.pending > 0);
    await clock.advance(clock.sleeps.at(-1) ?? 0);
    await sink.until((s) => s.objects.get("big")?.size === 1);
    await agent.until((a) => a.rejection === undefined);
    assert.ok(logs.some((l) => l.msg === "core accepts what the agent sends again"));
  });
});
