// Agent ⇄ core over the real gRPC path (HTTP/2 on loopback).
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import { connect, createServer } from "node:net";
import type { AddressInfo, Socket } from "node:net";
import { Agent } from "../../agent/agent.ts";
import type { AgentOptions } from "../../agent/agent.ts";
import { disruptionEvent, node, nodeClaim, nodePool, pod } from "../../agent/fixtures.ts";
import { MemorySource } from "../../agent/source.ts";
import type { WireObject } from "../../wire/wire.ts";
import { FakeClock } from "../../shared/clock.ts";
import { Registry } from "../../shared/metrics.ts";
import { encodeJson, kindToProto } from "../../wire/wire.ts";
import type { ObjectKind } from "../../gen/wave/v1/ingest_pb.ts";
import { runAgent } from "./agent.test-helper.ts";
import { IngestCore } from "./core.ts";
import { MemorySink } from "./sink.ts";
import { startIngestServer } from "./server.ts";
import type { IngestServer, IngestServerOptions } from "./server.ts";
import { rawStream, within } from "./testing.ts";
import type { Msg } from "./testing.ts";

const TOKEN = "s3cret-token";

interface Rig {
  sink: MemorySink;
  core: IngestCore;
  server: IngestServer;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startCore(opts: Partial<IngestServerOptions> & { sink?: MemorySink } = {}): Promise<Rig> {
  const sink = opts.sink ?? new MemorySink();
  const core = new IngestCore({ sink, coreVersion: "test" });
  const server = await startIngestServer({ core, port: 0, host: "127.0.0.1", tokens: [TOKEN], ...opts });
  cleanups.push(() => server.close());
  return { sink, core, server };
}

function startAgent(
  port: number,
  source: MemorySource,
  opts: Partial<AgentOptions> = {},
): { agent: Agent; clock: FakeClock; stop: () => Promise<void> } {
  const clock = new FakeClock();
  const { agent, stop } = runAgent({
    source,
    coreUrl: `http://127.0.0.1:${port}`,
    token: TOKEN,
    clusterId: "alpha",
    kubernetesVersion: "v1.33.0",
    karpenterVersion: "1.6.0",
    clock,
    ...opts,
  });
  cleanups.push(stop);
  return { agent, clock, stop };
}

/** Lets a backing-off agent retry now. */
async function retry(agent: Agent, clock: FakeClock): Promise<void> {
  await agent.until((a) => a.status === "backoff" && clock.pending > 0);
  await clock.advance(100);
}

interface Relay {
  port: number;
  /** Connections accepted so far. */
  accepted: number;
  /** Agent-side sockets still open. */
  open: Set<Socket>;
  /** While true, bytes are swallowed in both directions and nothing is closed. */
  frozen: boolean;
  /** Cuts every connection, as a reset network or a dead peer would. */
  cut(): void;
  /** Resolves once at most `n` agent connections are open. */
  openAtMost(n: number): Promise<void>;
}

/** A TCP relay in front of core; `upstream(n)` picks the port for the n-th connection (from 1). */
async function startRelay(upstream: (n: number) => number): Promise<Relay> {
  const sockets = new Set<Socket>();
  const closed: (() => void)[] = [];
  const relay: Relay = {
    port: 0,
    accepted: 0,
    open: new Set(),
    frozen: false,
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    openAtMost: async (n) => {
      while (relay.open.size > n) await new Promise<void>((r) => closed.push(r));
    },
  };
  const server = createServer((client) => {
    relay.accepted++;
    relay.open.add(client);
    client.on("close", () => {
      relay.open.delete(client);
      for (const w of closed.splice(0)) w();
    });
    const up = connect(upstream(relay.accepted), "127.0.0.1");
    for (const [from, to] of [
      [client, up],
      [up, client],
    ] as const) {
      sockets.add(from);
      from.on("data", (d: Buffer) => {
        if (!relay.frozen) to.write(d);
      });
      from.on("error", () => to.destroy());
      from.on("close", () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  relay.port = (server.address() as AddressInfo).port;
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        relay.cut();
        server.close(() => r());
      }),
  );
  return relay;
}

const key = (o: WireObject): string =>
  `${o.kind}/${o.object.metadata.namespace ? `${o.object.metadata.namespace}/` : ""}${o.object.metadata.name ?? ""}`;

function objectsOf(sink: MemorySink, cluster: string): Map<string, unknown> {
  return sink.objects.get(cluster) ?? new Map<string, unknown>();
}

describe("ingest over gRPC", { timeout: 60_000 }, () => {
  it("hello → snapshot → deltas → acks, with durable state in the sink", async () => {
    const { sink, server } = await startCore();
    const initial = [nodePool("default"), nodeClaim(1), node(1), pod(1, 2), pod(2, 2)];
    const source = new MemorySource(initial);
    const { agent } = startAgent(server.port, source);

    await sink.until((s) => objectsOf(s, "alpha").size === 5);
    assert.deepEqual([...objectsOf(sink, "alpha").keys()].sort(), initial.map(key).sort());
    assert.equal(sink.clusters.get("alpha")?.karpenterVersion, "1.6.0");

    source.push(
      { type: "upsert", object: pod(3, 2) },
      { type: "delete", object: pod(1, 2) },
      { type: "upsert", object: node(2) },
    );
    await sink.until((s) => objectsOf(s, "alpha").has("Node/node-2"));
    const objs = objectsOf(sink, "alpha");
    assert.equal(objs.has("Pod/ns-3/app-3"), true);
    assert.equal(objs.has("Pod/ns-1/app-1"), false);
    // Pods arrive trimmed: containerStatuses and unknown annotations are gone.
    const p3 = objs.get("Pod/ns-3/app-3") as {
      status: Record<string, unknown>;
      metadata: Record<string, unknown>;
    };
    assert.equal(p3.status["containerStatuses"], undefined);
    assert.equal(p3.metadata["annotations"], undefined);

    await agent.until((a) => a.outbox.buffered === 0);
    assert.equal(agent.outbox.lastAcked, sink.sequences.get("alpha"));
    assert.equal([...objectsOf(sink, "alpha").keys()].filter((k) => k.startsWith("Pod/")).length, 2);
    // Lifecycle: the claim's Launched/Registered/Initialized came with the snapshot.
    assert.deepEqual(
      sink.lifecycle.get("alpha")?.map((e) => e.type),
      ["Created", "Launched", "Registered", "Initialized"],
    );
  });

  it("resumes from the last acknowledged sequence after a reconnect", async () => {
    const { sink, server, core } = await startCore();
    const source = new MemorySource([nodePool("default"), node(1)]);
    const { agent, clock } = startAgent(server.port, source);
    await sink.until((s) => objectsOf(s, "alpha").size === 2);
    // Chunks are stored (and acked) as they stream: wait for the snapshot's end too.
    await agent.until((a) => a.outbox.buffered === 0);
    const batchesBefore = sink.batches;

    // Hold the store so deltas stay unacknowledged, then cut the stream.
    let open!: () => void;
    sink.gate = new Promise<void>((r) => (open = r));
    source.push({ type: "upsert", object: node(2) }, { type: "upsert", object: node(3) });
    await agent.until((a) => a.outbox.buffered === 2);
    core.clusters.get("alpha")?.stream?.abort(new Error("connection reset"));
    open();
    sink.gate = undefined;
    await retry(agent, clock);
    await agent.until((a) => a.status === "streaming" && a.outbox.buffered === 0);
    await sink.until((s) => objectsOf(s, "alpha").has("Node/node-3"));

    assert.equal(agent.reconnects, 1);
    assert.equal(agent.outbox.resyncs, 0, "resumed without a snapshot");
    // Nothing was written twice and no snapshot was re-sent.
    assert.ok(sink.batches - batchesBefore <= 2);
    assert.equal(objectsOf(sink, "alpha").size, 4);
  });

  it("after a core restart the agent re-sends what was not acknowledged and state converges", async () => {
    const first = await startCore();
    const port = first.server.port;
    const source = new MemorySource([nodePool("default"), nodeClaim(1), node(1)]);
    const { agent, clock } = startAgent(port, source);
    await first.sink.until((s) => objectsOf(s, "alpha").size === 3);
    await agent.until((a) => a.outbox.buffered === 0);

    // Core stops storing; changes pile up unacknowledged; core dies.
    first.sink.gate = new Promise<void>(() => undefined);
    source.push({ type: "upsert", object: node(2) }, { type: "delete", object: node(1) });
    await agent.until((a) => a.outbox.buffered === 2);
    await first.server.close();

    // A new core process on the same port (a fresh store).
    const second = await startCore({ port });
    await retry(agent, clock);
    await second.sink.until((s) => objectsOf(s, "alpha").has("Node/node-2"));
    await agent.until((a) => a.outbox.buffered === 0);
    assert.deepEqual([...objectsOf(second.sink, "alpha").keys()].sort(), [
      "Node/node-2",
      "NodeClaim/claim-1",
      "NodePool/default",
    ]);
  });

  it("tells the sink when a cluster's stream ends, and again when the agent is back", async () => {
    const { sink, server, core } = await startCore();
    const source = new MemorySource([nodePool("default"), node(1)]);
    const { agent, clock, stop } = startAgent(server.port, source);
    await sink.until((s) => objectsOf(s, "alpha").size === 2);
    assert.equal(sink.live.has("alpha"), true);

    const first = core.clusters.get("alpha")?.stream;
    assert.ok(first);
    first.abort(new Error("connection reset"));
    await first.done;
    assert.equal(sink.live.has("alpha"), false, "no stream: the cluster is not live");

    await retry(agent, clock);
    await agent.until((a) => a.status === "streaming");
    assert.equal(sink.live.has("alpha"), true, "the reconnected agent makes it live again");

    const second = core.clusters.get("alpha")?.stream;
    assert.ok(second);
    await stop();
    await second.done;
    assert.equal(sink.live.has("alpha"), false, "an agent that stopped leaves the cluster not live");
  });

  it("drops a vanished agent (connection open, no answers) and marks its cluster not live", async () => {
    const coreClock = new FakeClock();
    const { sink, server } = await startCore({
      peerCheck: { intervalMs: 1000, timeoutMs: 1000 },
      clock: coreClock,
    });
    // A TCP relay that can go silent without closing anything, like a partitioned network.
    const relay = await startRelay(() => server.port);
    const source = new MemorySource([nodePool("default"), node(1)]);
    startAgent(relay.port, source);
    await sink.until((s) => objectsOf(s, "alpha").size === 2);

    await coreClock.advance(1500); // a ping goes out through the relay, within its timeout
    assert.equal(sink.live.has("alpha"), true, "an agent that can answer stays live");

    relay.frozen = true;
    await coreClock.advance(1000); // the next ping goes out and is never answered
    await coreClock.advance(1000);
    await sink.until((s) => !s.live.has("alpha"));
  });

  it("replaces a connection cut under it: reconnects on a new one and resumes", async () => {
    const { sink, server } = await startCore();
    const relay = await startRelay(() => server.port);
    const source = new MemorySource([nodePool("default"), node(1)]);
    const { agent, clock } = startAgent(relay.port, source);
    await sink.until((s) => objectsOf(s, "alpha").size === 2);

    relay.cut();
    await retry(agent, clock);
    await agent.until((a) => a.status === "streaming");
    source.push({ type: "upsert", object: node(2) });
    await sink.until((s) => objectsOf(s, "alpha").has("Node/node-2"));
    assert.equal(relay.accepted, 2);
  });

  it("closes each stream's connection with it: one connection to core however often it reconnects", async () => {
    const { sink, server, core } = await startCore();
    const relay = await startRelay(() => server.port);
    const source = new MemorySource([nodePool("default"), node(1)]);
    const { agent, clock } = startAgent(relay.port, source);
    await sink.until((s) => objectsOf(s, "alpha").size === 2);

    for (let i = 0; i < 3; i++) {
      const stream = core.clusters.get("alpha")?.stream;
      assert.ok(stream);
      stream.abort(new Error("connection reset"));
      await stream.done;
      await retry(agent, clock);
      await agent.until((a) => a.status === "streaming");
    }
    assert.equal(relay.accepted, 4, "a new connection per stream");
    await within(5000, relay.openAtMost(1), `${String(relay.open.size)} connections left open`);
  });

  it("replaces a connection that refuses every stream (RST_STREAM ENHANCE_YOUR_CALM)", async () => {
    const { sink, server } = await startCore();
    // What a Node HTTP/2 session does once its memory budget is spent: it stays open and refuses
    // each new stream. Only the agent's first connection lands there.
    const calm = http2.createServer();
    calm.on("stream", (stream) => {
      stream.on("error", () => undefined);
      stream.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    });
    await new Promise<void>((r) => calm.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise<void>((r) => calm.close(() => r())));
    const relay = await startRelay((n) => (n === 1 ? (calm.address() as AddressInfo).port : server.port));
    const registry = new Registry();
    const source = new MemorySource([nodePool("default"), node(1)]);
    const { agent, clock } = startAgent(relay.port, source, { metrics: registry });

    await retry(agent, clock);
    await sink.until((s) => objectsOf(s, "alpha").size === 2);
    assert.equal(relay.accepted, 2);
    // One refused attempt (Node reports the reset as a stream error: INTERNAL), then core.
    assert.match(await registry.render(), /^wave_agent_stream_errors_total\{code="Internal"\} 1$/m);
  });

  it("bounds the buffer while core stalls (no acks), counts drops, and resyncs with a snapshot", async () => {
    const { sink, server } = await startCore();
    const source = new MemorySource([nodePool("default")]);
    const { agent } = startAgent(server.port, source, { outbox: { maxBufferedDeltas: 3 } });
    await sink.until((s) => objectsOf(s, "alpha").size === 1);
    await agent.until((a) => a.outbox.buffered === 0);
    // Core stalls: acks stop, the agent's queue fills past its bound.
    let open!: () => void;
    sink.gate = new Promise<void>((r) => (open = r));
    for (let i = 0; i < 6; i++) source.push({ type: "upsert", object: node(i) });
    await agent.until((a) => a.outbox.dropped > 0);
    assert.equal(agent.outbox.dropped, 4, "3 queued deltas + the one that overflowed");
    open();
    sink.gate = undefined;
    await sink.until((s) => objectsOf(s, "alpha").size === 7);
    await agent.until((a) => a.outbox.buffered === 0);
    assert.equal(agent.outbox.resyncs, 1);
  });

  it("while core is down: buffers up to the bound, then drops and resyncs on reconnect", async () => {
    const first = await startCore();
    const port = first.server.port;
    const source = new MemorySource([nodePool("default"), node(0)]);
    const registry = new Registry();
    const { agent, clock } = startAgent(port, source, {
      outbox: { maxBufferedDeltas: 5 },
      metrics: registry,
    });
    await first.sink.until((s) => objectsOf(s, "alpha").size === 2);
    await agent.until((a) => a.outbox.buffered === 0);
    await first.server.close();
    await agent.until((a) => a.status === "backoff");

    // Within the bound: buffered, nothing dropped.
    for (let i = 1; i <= 5; i++) source.push({ type: "upsert", object: node(i) });
    await agent.until((a) => a.outbox.buffered === 5);
    assert.equal(agent.outbox.dropped, 0);
    // One more overflows: the buffer is discarded and counted, and a resync is due.
    source.push({ type: "upsert", object: node(6) });
    await agent.until((a) => a.outbox.needsSnapshot);
    assert.equal(agent.outbox.dropped, 6);
    assert.equal(agent.outbox.buffered, 0);
    // Changes while a resync is due are not buffered: the snapshot will carry them.
    source.push({ type: "delete", object: node(0) });
    await agent.until((a) => a.objectCount === 7);
    assert.equal(agent.outbox.buffered, 0);

    const second = await startCore({ port, sink: first.sink });
    await retry(agent, clock);
    await second.sink.until(
      (s) => objectsOf(s, "alpha").size === 7 && !objectsOf(s, "alpha").has("Node/node-0"),
    );
    await agent.until((a) => a.outbox.buffered === 0);
    assert.equal(agent.outbox.resyncs, 1);
    const text = await registry.render();
    assert.match(text, /^wave_agent_dropped_messages_total 6$/m);
    assert.match(text, /^wave_agent_resyncs_total 1$/m);
    assert.match(text, /^wave_agent_buffered_messages 0$/m);
    assert.match(text, /^wave_agent_reconnects_total 1$/m);
  });

  it("rejects a malformed or out-of-order peer with a clear status while another cluster streams", async () => {
    const { sink, server } = await startCore();
    const good = new MemorySource([nodePool("default")]);
    startAgent(server.port, good, { clusterId: "good" });
    await sink.until((s) => objectsOf(s, "good").size === 1);

    const cases: [string, Msg[], number, RegExp][] = [
      ["delta before hello", [{ sequence: 1n, body: { case: "delta", value: {} } }], 9, /expected hello/],
      ["bad cluster id", [{ body: { case: "hello", value: hello("Bad_Id") } }], 3, /invalid cluster_id/],
      ["delta before snapshot", [helloMsg("bad"), deltaMsg(1, pod(1, 1))], 9, /delta before a snapshot/],
      [
        "sequence gap",
        [helloMsg("bad"), ...snapshotMsgs(1, []), deltaMsg(4, pod(1, 1))],
        9,
        /sequence gap: got 4, expected 3/,
      ],
      [
        "sequence regression",
        [helloMsg("bad"), ...snapshotMsgs(5, []), deltaMsg(2, pod(1, 1))],
        9,
        /sequence regression/,
      ],
      [
        "unknown kind",
        [helloMsg("bad"), ...snapshotMsgs(1, []), rawDelta(3, 42 as ObjectKind, "{}")],
        3,
        /unknown object kind 42/,
      ],
      [
        "bad JSON",
        [helloMsg("bad"), ...snapshotMsgs(1, []), rawDelta(3, 2, "{nope")],
        3,
        /not valid UTF-8 JSON/,
      ],
      [
        "missing namespace",
        [helloMsg("bad"), ...snapshotMsgs(1, []), rawDelta(3, 2, '{"metadata":{"name":"p"},"spec":{}}')],
        3,
        /namespace is required/,
      ],
      [
        "count mismatch",
        [
          helloMsg("bad"),
          { sequence: 1n, body: { case: "snapshotBegin", value: {} } },
          { sequence: 2n, body: { case: "snapshotEnd", value: { objectCount: 3n } } },
        ],
        3,
        /object_count 3 but 0/,
      ],
    ];
    for (const [name, msgs, code, message] of cases) {
      const err = await rawStream(server.port, msgs, TOKEN);
      assert.equal(err?.code, code, `${name}: ${err?.message}`);
      assert.match(err.message, message, name);
      // The healthy cluster keeps streaming between bad peers.
      good.push({ type: "upsert", object: node(cases.findIndex((c) => c[0] === name)) });
    }
    await sink.until((s) => objectsOf(s, "good").size === 1 + cases.length);
  });

  it("rejects a missing or wrong bearer token with UNAUTHENTICATED", async () => {
    const { server } = await startCore();
    const noToken = await rawStream(server.port, [helloMsg("alpha")], undefined);
    assert.equal(noToken?.code, 16);
    const wrong = await rawStream(server.port, [helloMsg("alpha")], "wrong");
    assert.equal(wrong?.code, 16);
    assert.match(wrong.message, /bearer token/);
  });

  it("a later snapshot terminates the claims it no longer has and replaces core's objects", async () => {
    const { sink, server } = await startCore();
    const source = new MemorySource([nodePool("default"), nodeClaim(1), nodeClaim(2), node(1)]);
    const { agent } = startAgent(server.port, source);
    await sink.until((s) => objectsOf(s, "alpha").size === 4);
    // The source relists without claim-2 (it was deleted while nobody watched): a fresh snapshot.
    source.push({ type: "replace", objects: [nodePool("default"), nodeClaim(1), node(1), node(3)] });
    await sink.until((s) => (s.lifecycle.get("alpha") ?? []).some((e) => e.type === "Terminated"));
    await agent.until((a) => a.outbox.buffered === 0);
    const terminated = (sink.lifecycle.get("alpha") ?? []).filter((e) => e.type === "Terminated");
    assert.deepEqual(
      terminated.map((e) => e.nodeClaim),
      ["claim-2"],
    );
    const state = sink.state("alpha");
    assert.deepEqual(
      state.nodeClaims().map((c) => c.metadata.name),
      ["claim-1"],
    );
    assert.deepEqual([...objectsOf(sink, "alpha").keys()].filter((k) => k.startsWith("Node/")).sort(), [
      "Node/node-1",
      "Node/node-3",
    ]);
    assert.equal(state.nodeClaimForNode("node-1")?.metadata.name, "claim-1");
    assert.equal(agent.outbox.resyncs, 1);
  });

  it("records disruptions from Karpenter events and NodeClaim deletion", async () => {
    const { sink, server } = await startCore();
    const source = new MemorySource([nodePool("default"), nodeClaim(7), node(7)]);
    startAgent(server.port, source);
    await sink.until((s) => objectsOf(s, "alpha").size === 3);
    const at = Date.UTC(2026, 0, 1, 2);
    source.push({ type: "upsert", object: disruptionEvent("node-7", "Underutilized", at) });
    source.push({ type: "delete", object: nodeClaim(7) });
    await sink.until((s) => (s.lifecycle.get("alpha") ?? []).some((e) => e.type === "Terminated"));
    const steps = sink.lifecycle.get("alpha") ?? [];
    const disrupted = steps.find((e) => e.type === "Disrupted");
    assert.ok(disrupted);
    assert.equal(disrupted.reason, "Underutilized");
    assert.equal(disrupted.at, new Date(at).toISOString());
    assert.equal(disrupted.nodeClaim, "claim-7");
    assert.equal(steps.find((e) => e.type === "Terminated")?.nodeClaim, "claim-7");
  });
});

let sessions = 0;
function hello(clusterId: string): { clusterId: string; sessionId: string; agentVersion: string } {
  // Sequences are per session: every raw stream is a new agent process.
  return { clusterId, sessionId: `raw-session-${++sessions}`, agentVersion: "raw" };
}

function helloMsg(clusterId: string): Msg {
  return { body: { case: "hello", value: hello(clusterId) } };
}

function snapshotMsgs(firstSeq: number, objects: WireObject[]): Msg[] {
  const out: Msg[] = [{ sequence: BigInt(firstSeq), body: { case: "snapshotBegin", value: {} } }];
  out.push({
    sequence: BigInt(firstSeq + 1),
    body: { case: "snapshotEnd", value: { objectCount: BigInt(objects.length) } },
  });
  return out;
}

function deltaMsg(seq: number, o: WireObject): Msg {
  return {
    sequence: BigInt(seq),
    body: { case: "delta", value: { op: 1, object: { kind: kindToProto(o.kind), json: encodeJson(o) } } },
  };
}

function rawDelta(seq: number, kind: ObjectKind, json: string): Msg {
  return {
    sequence: BigInt(seq),
    body: { case: "delta", value: { op: 1, object: { kind, json: new TextEncoder().encode(json) } } },
  };
}
