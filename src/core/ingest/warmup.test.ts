// The warmup messages of the agent stream over the real gRPC path (ADR 0014): core sends each
// cluster its own warmup policies after the HelloAck and on every change; agents report warmup
// events, which core stores under the stream's cluster id once, however often they are sent.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { FakeClock } from "../../shared/clock.ts";
import type { PolicyKind, PolicyRecord, StoredWarmupEvent } from "../store/store.ts";
import { WarmupRelay } from "../warmup/relay.ts";
import type { WirePolicy } from "../../wire/warmup.ts";
import { runAgent } from "./agent.test-helper.ts";
import { IngestCore } from "./core.ts";
import { MemorySink } from "./sink.ts";
import { startIngestServer } from "./server.ts";
import { rawStream, within } from "./testing.ts";

const TOKEN = "s3cret-token";

/** The part of the store the relay uses, in memory; events de-duplicated as the store does. */
class FakeStore {
  readonly policies = new Map<string, Map<string, unknown>>();
  readonly events: StoredWarmupEvent[] = [];
  failNext: Error | undefined;
  #waiters: (() => void)[] = [];

  setPolicy(clusterId: string, pool: string, value: unknown): void {
    const m = this.policies.get(clusterId) ?? new Map<string, unknown>();
    m.set(pool, value);
    this.policies.set(clusterId, m);
  }

  listPolicies(clusterId: string, kind: PolicyKind): Promise<PolicyRecord[]> {
    if (kind !== "warmup") return Promise.resolve([]);
    return Promise.resolve(
      [...(this.policies.get(clusterId) ?? new Map<string, unknown>())].map(([key, value]) => ({
        clusterId,
        kind,
        key,
        value,
        updatedAt: 0,
      })),
    );
  }

  writeWarmupEvents(rows: readonly StoredWarmupEvent[]): Promise<number> {
    if (this.failNext) {
      const err = this.failNext;
      this.failNext = undefined;
      return Promise.reject(err);
    }
    let added = 0;
    for (const r of rows) {
      if (this.events.some((e) => JSON.stringify(e) === JSON.stringify(r))) continue;
      this.events.push(r);
      added++;
    }
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
    return Promise.resolve(added);
  }

  coldStarts(): Promise<never[]> {
    return Promise.resolve([]);
  }

  async until(pred: () => boolean): Promise<void> {
    while (!pred()) await new Promise<void>((r) => this.#waiters.push(r));
  }
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startCore(
  store: FakeStore,
  clock = new FakeClock(),
  resources?: (clusterId: string) => Promise<WirePolicy[] | undefined | null>,
) {
  const stored: { clusterId: string; n: number }[] = [];
  const relay = new WarmupRelay({
    store,
    onStored: (clusterId, e) => stored.push({ clusterId, n: e.length }),
    ...(resources ? { resources } : {}),
  });
  const core = new IngestCore({ sink: new MemorySink(), coreVersion: "test", warmup: relay, clock });
  const server = await startIngestServer({ core, port: 0, host: "127.0.0.1", tokens: [TOKEN] });
  cleanups.push(() => server.close());
  return { relay, server, clock, stored };
}

/** An agent of `clusterId` that keeps every policy set core sends it. */
function startAgent(port: number, clusterId: string) {
  const received: WirePolicy[][] = [];
  let wake: (() => void) | undefined;
  const clock = new FakeClock();
  const { agent, stop } = runAgent({
    coreUrl: `http://127.0.0.1:${port}`,
    token: TOKEN,
    clusterId,
    clock,
    onWarmupPolicies: (p) => {
      received.push(p);
      wake?.();
    },
  });
  cleanups.push(stop);
  const sets = async (n: number): Promise<WirePolicy[][]> => {
    while (received.length < n) await new Promise<void>((r) => (wake = r));
    return received;
  };
  return { agent, clock, received, sets };
}

const enabled = { enabled: true, maxWarmNodes: 2 };

describe("warmup over the agent stream", () => {
  it("sends each cluster its own policies after the HelloAck, and again when they change", async () => {
    const store = new FakeStore();
    store.setPolicy("alpha", "general", enabled);
    store.setPolicy("beta", "batch", { enabled: false });
    const { relay, server } = await startCore(store);
    const alpha = startAgent(server.port, "alpha");
    const beta = startAgent(server.port, "beta");
    assert.deepEqual(await within(10_000, alpha.sets(1), "alpha's set"), [
      [{ pool: "general", value: enabled }],
    ]);
    assert.deepEqual(await within(10_000, beta.sets(1), "beta's set"), [
      [{ pool: "batch", value: { enabled: false } }],
    ]);

    // A change of alpha's set reaches alpha, and nothing of it reaches beta.
    store.setPolicy("alpha", "spot", { enabled: true });
    relay.changed("warmup", "alpha");
    const [, second] = await within(10_000, alpha.sets(2), "alpha's second set");
    assert.deepEqual(second, [
      { pool: "general", value: enabled },
      { pool: "spot", value: { enabled: true } },
    ]);
    // A spot policy change is not a warmup change; beta's stream re-reads nothing new.
    relay.changed("spot", "beta");
    relay.changed("warmup", "beta");
    await within(
      10_000,
      beta.agent.until((a) => a.status === "streaming"),
      "beta streaming",
    );
    await new Promise((r) => setImmediate(r));
    assert.equal(beta.received.length, 1, "an unchanged set is not sent again");
    assert.ok(
      beta.received.flat().every((p) => p.pool === "batch"),
      "no policy of alpha ever reached beta",
    );
  });

  it("re-reads the set every poll interval, for a change made through another core replica", async () => {
    const store = new FakeStore();
    const { server, clock } = await startCore(store);
    const alpha = startAgent(server.port, "alpha");
    assert.deepEqual(await within(10_000, alpha.sets(1), "the empty set"), [[]]);
    store.setPolicy("alpha", "general", enabled); // no changed(): another replica's API
    await clock.advance(30_000);
    assert.deepEqual((await within(10_000, alpha.sets(2), "the polled set"))[1], [
      { pool: "general", value: enabled },
    ]);
  });

  it("sends nothing while core does not hold the cluster's resources yet (after its restart), then the set", async () => {
    // Before: the empty state's empty set went out at once and switched off the warmups the agent
    // ran from its remembered policies (the rig's helm e2e, a core restart).
    const store = new FakeStore();
    let held: WirePolicy[] | null = null;
    const { relay, server } = await startCore(store, new FakeClock(), () => Promise.resolve(held));
    const alpha = startAgent(server.port, "alpha");
    await within(
      10_000,
      alpha.agent.until((a) => a.status === "streaming"),
      "alpha streaming",
    );
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(alpha.received, [], "no set before core holds the resources");
    held = [{ pool: "general", value: enabled }];
    relay.changed("warmup", "alpha"); // the agent's snapshot landed
    assert.deepEqual(await within(10_000, alpha.sets(1), "the set once known"), [
      [{ pool: "general", value: enabled }],
    ]);
  });

  it("stores the events under the stream's cluster id, once, and the agent drops them once acknowledged", async () => {
    const store = new FakeStore();
    const { server, stored } = await startCore(store);
    const alpha = startAgent(server.port, "alpha");
    const beta = startAgent(server.port, "beta");
    alpha.agent.warmup.push({ type: "created", pool: "general", at: 1000, pod: "w-1" });
    alpha.agent.warmup.push({ type: "hit", pool: "general", at: 2000, node: "n-1" });
    beta.agent.warmup.push({ type: "miss", pool: "batch", at: 3000, node: "n-2", reason: "ttl" });
    await within(
      10_000,
      store.until(() => store.events.length === 3),
      "three events stored",
    );
    assert.deepEqual(
      store.events.filter((e) => e.clusterId === "alpha").map((e) => e.type),
      ["created", "hit"],
    );
    assert.deepEqual(
      store.events.filter((e) => e.clusterId === "beta"),
      [{ clusterId: "beta", type: "miss", pool: "batch", at: 3000, node: "n-2", reason: "ttl" }],
    );
    assert.equal(
      stored.reduce((n, s) => n + s.n, 0),
      3,
    );
    await within(
      10_000,
      alpha.agent.until((a) => a.warmup.pending === 0),
      "alpha's batch acknowledged",
    );
  });

  it("sends a batch core could not store again on the next stream, counted once", async () => {
    const store = new FakeStore();
    const { server } = await startCore(store);
    const alpha = startAgent(server.port, "alpha");
    await within(
      10_000,
      alpha.agent.until((a) => a.status === "streaming"),
      "streaming",
    );
    store.failNext = new Error("database is locked");
    alpha.agent.warmup.push({ type: "created", pool: "general", at: 1000, pod: "w-1" });
    // The failed write ends the stream (UNAVAILABLE): the agent keeps the batch and reconnects.
    await within(
      10_000,
      alpha.agent.until((a) => a.status === "backoff"),
      "stream ended",
    );
    assert.equal(alpha.agent.warmup.pending, 1);
    await alpha.clock.advance(100);
    await within(
      10_000,
      store.until(() => store.events.length === 1),
      "stored after the reconnect",
    );
    await within(
      10_000,
      alpha.agent.until((a) => a.warmup.pending === 0),
      "acknowledged",
    );
    assert.equal(store.events.length, 1);
  });

  it("refuses an event core cannot read (INVALID_ARGUMENT)", async () => {
    const store = new FakeStore();
    const { server } = await startCore(store);
    const hello = {
      body: {
        case: "hello" as const,
        value: { clusterId: "alpha", sessionId: "s", agentVersion: "0.1.0" },
      },
    };
    const bad = (event: { type: string; pool: string; atMs: bigint }) =>
      rawStream(
        server.port,
        [hello, { body: { case: "warmupEvents", value: { batch: 1n, events: [event] } } }],
        TOKEN,
      );
    const unknown = await bad({ type: "teleported", pool: "general", atMs: 1n });
    assert.equal(unknown?.code, Code.InvalidArgument);
    assert.match(unknown.rawMessage, /unknown type "teleported"/);
    const noPool = await bad({ type: "hit", pool: "", atMs: 1n });
    assert.match(noPool?.rawMessage ?? "", /pool is required/);
    assert.equal(store.events.length, 0);
  });
});
