// A snapshot is applied as it streams (ADR 0020): each chunk goes into the cluster's state and is
// acknowledged once stored, before the snapshot ends; its end replaces every kind (what it did not
// carry is deleted); a stream that stops mid-snapshot leaves no base to resume from. Driven through
// IngestCore.serve with hand-built messages (no transport: the protocol is what is under test).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { AgentMessageSchema, HelloAck_Mode } from "../../gen/wave/v1/ingest_pb.ts";
import type { AgentMessage } from "../../gen/wave/v1/ingest_pb.ts";
import { disruptionEvent, node, nodeClaim, nodePool } from "../../agent/fixtures.ts";
import { FakeClock } from "../../shared/clock.ts";
import { encodeJson, kindToProto, type WireObject } from "../../wire/wire.ts";
import { IngestCore, type CoreMessageInit } from "./core.ts";
import { AsyncQueue } from "./queue.ts";
import { MemorySink } from "./sink.ts";
import type { Msg } from "./testing.ts";

const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);
const wire = (o: WireObject) => ({ kind: kindToProto(o.kind), json: encodeJson(o) });

/** One stream into `core`: `send` messages, `next` reads what core answers (in order). */
function stream(core: IngestCore) {
  const input = new AsyncQueue<AgentMessage>();
  const ac = new AbortController();
  const out = core.serve(input, ac.signal)[Symbol.asyncIterator]();
  return {
    send: (...msgs: Msg[]) => {
      for (const m of msgs) input.push(create(AgentMessageSchema, m));
    },
    next: async (): Promise<CoreMessageInit> => {
      const r = await out.next();
      if (r.done) throw new Error("core ended the stream");
      return r.value;
    },
    /** Reads core's answers until it acknowledges `seq` (acks may come per batch, covering several). */
    acked: async (seq: number): Promise<void> => {
      for (;;) {
        const r = await out.next();
        if (r.done) throw new Error(`core ended the stream before acknowledging ${seq}`);
        const m = r.value;
        if (m.body?.case === "ack" && Number(m.body.value.sequence) >= seq) return;
      }
    },
    /** The agent ends its side; resolves once core has finished the stream. */
    close: async (): Promise<void> => {
      input.close();
      while (!(await out.next()).done);
    },
  };
}

const hello = (sessionId: string, resumeFromSequence = 0n): Msg => ({
  body: {
    case: "hello",
    value: { clusterId: "c", sessionId, agentVersion: "old-agent", resumeFromSequence },
  },
});
const begin = (seq: number): Msg => ({ sequence: BigInt(seq), body: { case: "snapshotBegin", value: {} } });
const chunk = (seq: number, objects: WireObject[]): Msg => ({
  sequence: BigInt(seq),
  body: { case: "snapshotChunk", value: { objects: objects.map(wire) } },
});
const end = (seq: number, count: number): Msg => ({
  sequence: BigInt(seq),
  body: { case: "snapshotEnd", value: { objectCount: BigInt(count) } },
});

describe("a snapshot applied as it streams", { timeout: 20_000 }, () => {
  it("each chunk is in the state and acknowledged before the snapshot ends", async () => {
    const sink = new MemorySink();
    const core = new IngestCore({ sink, clock: new FakeClock(T0) });
    const s = stream(core);
    s.send(hello("s1"), begin(1), chunk(2, [nodePool("default"), node(1), node(2)]));
    await s.acked(2);
    // No snapshot_end sent yet: the chunk is already the state's and stored.
    assert.equal(sink.state("c").counts().nodes, 2);
    assert.equal(sink.objects.get("c")?.size, 3);
    assert.equal(core.clusters.get("c")?.hasBase, false);
    s.send(chunk(3, [node(3)]), end(4, 4));
    await s.acked(3);
    await s.acked(4);
    assert.equal(sink.state("c").counts().nodes, 3);
    assert.equal(core.clusters.get("c")?.hasBase, true);
    await s.close();
  });

  it("a resync replaces each kind at its end: absent objects stay until then, then go with their steps", async () => {
    const sink = new MemorySink();
    const core = new IngestCore({ sink, clock: new FakeClock(T0) });
    const s = stream(core);
    s.send(hello("s1"), begin(1), chunk(2, [nodePool("default"), node(1), node(2), nodeClaim(7)]), end(3, 4));
    await s.acked(3);
    assert.ok(sink.state("c").nodeClaim("claim-7"));

    // The agent relisted: node-1 and claim-7 are gone, node-3 is new.
    s.send(begin(4), chunk(5, [nodePool("default"), node(2), node(3)]));
    await s.acked(5);
    const state = sink.state("c");
    assert.ok(state.node("node-1"), "absent objects stay until the snapshot ends");
    assert.ok(state.node("node-3"));
    assert.ok(state.nodeClaim("claim-7"));
    s.send(chunk(6, [disruptionEvent("node-2", "Underutilized", T0)]), end(7, 4));
    await s.acked(6);
    await s.acked(7);
    assert.equal(state.node("node-1"), undefined);
    assert.ok(state.node("node-2"));
    assert.equal(state.nodeClaim("claim-7"), undefined);
    const steps = sink.lifecycle.get("c") ?? [];
    assert.ok(
      steps.some((e) => e.nodeClaim === "claim-7" && e.type === "Terminated"),
      JSON.stringify(steps.map((e) => [e.nodeClaim, e.type])),
    );
    // The objects the sink keeps are the second snapshot's (the Event included), nothing else.
    assert.deepEqual([...(sink.objects.get("c")?.keys() ?? [])].sort(), [
      "Event/default/node-2.disrupting",
      "Node/node-2",
      "Node/node-3",
      "NodePool/default",
    ]);
    await s.close();
  });

  it("a stream that stops mid-snapshot leaves no base: the reconnect is asked for a new snapshot", async () => {
    const sink = new MemorySink();
    const core = new IngestCore({ sink, clock: new FakeClock(T0) });
    const first = stream(core);
    first.send(hello("s1"), begin(1), chunk(2, [nodePool("default")]), end(3, 1));
    await first.acked(3);
    first.send(begin(4), chunk(5, [nodePool("default"), node(1)]));
    await first.acked(5);
    await first.close();

    // The same agent session comes back asking to resume after what core acknowledged.
    const again = stream(core);
    again.send(hello("s1", 5n));
    const ack = await again.next();
    assert.equal(ack.body?.case, "helloAck");
    assert.equal(ack.body.value.mode, HelloAck_Mode.SNAPSHOT);
    await again.close();
  });

  it("backpressure counts objects: core stops reading while chunks' objects wait for the sink", async () => {
    const sink = new MemorySink();
    let open!: () => void;
    sink.gate = new Promise<void>((r) => (open = r));
    const core = new IngestCore({ sink, clock: new FakeClock(T0), maxPendingDeltas: 250, maxBatch: 100 });
    const input = new AsyncQueue<AgentMessage>();
    let pulled = 0;
    const counted: AsyncIterable<AgentMessage> = {
      async *[Symbol.asyncIterator]() {
        for await (const m of input) {
          pulled++;
          yield m;
        }
      },
    };
    const out = core.serve(counted, new AbortController().signal)[Symbol.asyncIterator]();
    // The generator runs (and reads) once its first answer is asked for: the HelloAck.
    const helloAck = out.next();
    const msgs: Msg[] = [hello("s1"), begin(1)];
    for (let i = 0; i < 10; i++)
      msgs.push(
        chunk(
          2 + i,
          Array.from({ length: 100 }, (_, j) => node(i * 100 + j)),
        ),
      );
    msgs.push(end(12, 1000));
    for (const m of msgs) input.push(create(AgentMessageSchema, m));
    // Let core read as far as it will while the sink holds its first write.
    const first = await helloAck;
    assert.equal(first.done ? undefined : first.value.body?.case, "helloAck");
    for (let i = 0; i < 200; i++) await new Promise((r) => setImmediate(r));
    // The first write (begin + one chunk) is held; reading stops once 250 objects wait behind it.
    assert.ok(pulled <= 6, `core read ${pulled} of ${msgs.length} messages while the sink was stuck`);
    sink.gate = undefined;
    open();
    for (;;) {
      const r = await out.next();
      if (r.done) throw new Error("core ended the stream");
      if (r.value.body?.case === "ack" && Number(r.value.body.value.sequence) === 12) break;
    }
    assert.equal(sink.state("c").counts().nodes, 1000);
    input.close();
    while (!(await out.next()).done);
  });
});
