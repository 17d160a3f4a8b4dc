import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { AgentMessageSchema, HelloAck_Mode } from "../gen/wave/v1/ingest_pb.ts";
import type { AgentMessage } from "../gen/wave/v1/ingest_pb.ts";
import { node, nodePool } from "./fixtures.ts";
import { trim } from "./trim.ts";
import { Outbox } from "./outbox.ts";
import type { OutboxEntry } from "./outbox.ts";

function drain(o: Outbox, cursor: number): OutboxEntry[] {
  const out: OutboxEntry[] = [];
  for (let e = o.next(cursor); e; e = o.next(cursor)) {
    out.push(e);
    cursor = e.seq;
  }
  return out;
}

/** The message as core receives it (snapshot chunks are pre-encoded: read them back off the wire). */
const onWire = (e: OutboxEntry | undefined): AgentMessage | undefined =>
  e && fromBinary(AgentMessageSchema, toBinary(AgentMessageSchema, e.msg));
const cases = (es: OutboxEntry[]): (string | undefined)[] => es.map((e) => onWire(e)?.body.case);

describe("Outbox", () => {
  it("starts with a chunked snapshot of the current state, then deltas with contiguous sequences", () => {
    let now = 1000;
    const o = new Outbox({ now: () => now, chunkMaxObjects: 2 });
    o.load([nodePool("default"), node(1), node(2)]);
    assert.equal(o.resumeFrom(), 0);
    // Deltas before the snapshot is built are folded into it.
    o.apply({ type: "upsert", object: node(3) });
    assert.equal(o.buffered, 0);
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    const snap = drain(o, 0);
    assert.deepEqual(cases(snap), ["snapshotBegin", "snapshotChunk", "snapshotChunk", "snapshotEnd"]);
    assert.deepEqual(
      snap.map((e) => e.seq),
      [1, 2, 3, 4],
    );
    const end = onWire(snap[3])?.body;
    const chunks = snap.slice(1, 3).map((e) => onWire(e)?.body);
    assert.deepEqual(
      chunks.map((c) => (c?.case === "snapshotChunk" ? c.value.objects.length : 0)),
      [2, 2],
    );
    assert.deepEqual(
      snap.map((e) => onWire(e)?.sequence),
      [1n, 2n, 3n, 4n],
    );
    assert.equal(end?.case === "snapshotEnd" ? end.value.objectCount : -1n, 4n);
    o.apply({ type: "delete", object: node(1) });
    const [d] = drain(o, 4);
    assert.equal(d?.seq, 5);
    assert.equal(d.msg.body.case, "delta");
    now = 4000;
    assert.equal(o.lag(), 3000);
    o.ack(5);
    assert.equal(o.buffered, 0);
    assert.equal(o.lag(), 0);
    assert.equal(o.resumeFrom(), 5);
  });

  it("replays exactly what core has not stored when it answers RESUME", () => {
    const o = new Outbox({ now: () => 0 });
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    drain(o, 0); // seq 1, 2 (empty snapshot)
    o.ack(2);
    for (let i = 0; i < 4; i++) o.apply({ type: "upsert", object: node(i) }); // 3..6
    o.ack(3);
    // Core stored up to 4 but the ack was lost with the connection.
    o.helloAck(HelloAck_Mode.RESUME, 4);
    assert.deepEqual(
      drain(o, o.lastAcked).map((e) => e.seq),
      [5, 6],
    );
    assert.equal(o.resyncs, 0);
  });

  it("falls back to a snapshot when core lost the session or has less than it acknowledged", () => {
    const o = new Outbox({ now: () => 0 });
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    drain(o, 0);
    o.ack(2);
    o.apply({ type: "upsert", object: node(1) });
    o.helloAck(HelloAck_Mode.RESUME, 1);
    assert.deepEqual(cases(drain(o, o.lastAcked)), ["snapshotBegin", "snapshotChunk", "snapshotEnd"]);
    assert.equal(o.resyncs, 1);
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    assert.equal(cases(drain(o, o.lastAcked))[0], "snapshotBegin");
    assert.equal(o.resyncs, 2);
  });

  it("drops the buffer past its bound, counts it, and forces a resync", () => {
    const o = new Outbox({ now: () => 0, maxBufferedDeltas: 2 });
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    drain(o, 0);
    o.ack(2);
    o.apply({ type: "upsert", object: node(1) });
    o.apply({ type: "upsert", object: node(2) });
    assert.equal(o.buffered, 2);
    o.apply({ type: "upsert", object: node(3) });
    assert.equal(o.dropped, 3);
    assert.equal(o.buffered, 0);
    assert.equal(o.resumeFrom(), 0, "the next hello asks for a snapshot");
    o.helloAck(HelloAck_Mode.RESUME, 2);
    const snap = drain(o, 2);
    const chunk = onWire(snap[1])?.body;
    assert.equal(chunk?.case === "snapshotChunk" ? chunk.value.objects.length : 0, 3);
  });

  it("streams the initial list as its first snapshot, trimming each chunk only when it is asked for", () => {
    const o = new Outbox({ now: () => 0, chunkMaxObjects: 2 });
    const seen: string[] = [];
    const list = [nodePool("default"), node(1), node(2), node(3), node(4)];
    o.loadLazily(list, (x) => {
      seen.push(x.object.metadata.name ?? "");
      // An unforwarded object (like a non-Karpenter Event) is dropped on the way.
      return x.object.metadata.name === "node-3" ? undefined : trim(x);
    });
    assert.equal(o.loading, true);
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    assert.equal(cases([o.next(0) as OutboxEntry])[0], "snapshotBegin");
    assert.deepEqual(seen, [], "nothing trimmed before a chunk is due");
    const first = o.next(1);
    assert.equal(first?.seq, 2);
    assert.deepEqual(seen, ["default", "node-1", "node-2"], "one chunk (+ the object that did not fit)");
    const rest = drain(o, 2);
    assert.deepEqual(cases(rest), ["snapshotChunk", "snapshotEnd"]);
    const end = onWire(rest[1])?.body;
    assert.equal(end?.case === "snapshotEnd" ? end.value.objectCount : -1n, 4n);
    assert.equal(o.loading, false);
    assert.equal(o.objectCount, 4);
    // Afterwards the outbox behaves as if `load` had been called.
    o.apply({ type: "delete", object: node(1) });
    assert.deepEqual(cases(drain(o, 4)), ["delta"]);
  });

  it("a change during the streamed snapshot finishes it first; an interrupted one is rebuilt whole", async () => {
    const o = new Outbox({ now: () => 0, chunkMaxObjects: 1 });
    o.loadLazily([node(1), node(2), node(3)], trim);
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    o.next(0);
    o.next(1); // seq 2: node-1
    o.apply({ type: "upsert", object: node(9) });
    await o.loaded;
    const after = drain(o, 2);
    assert.deepEqual(cases(after), ["snapshotChunk", "snapshotChunk", "snapshotEnd", "delta"]);

    const p = new Outbox({ now: () => 0, chunkMaxObjects: 1 });
    p.loadLazily([node(1), node(2), node(3)], trim);
    p.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    p.next(0);
    p.next(1);
    // The connection drops mid-snapshot; core asks for a new one.
    p.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    const again = drain(p, 0);
    assert.deepEqual(cases(again), [
      "snapshotBegin",
      "snapshotChunk",
      "snapshotChunk",
      "snapshotChunk",
      "snapshotEnd",
    ]);
    const end = onWire(again[4])?.body;
    assert.equal(end?.case === "snapshotEnd" ? end.value.objectCount : -1n, 3n);
    assert.equal(p.loading, false);
  });

  it("a source replace resets the state and resyncs", () => {
    const o = new Outbox({ now: () => 0 });
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    drain(o, 0);
    o.ack(2);
    o.apply({ type: "replace", objects: [node(9)] });
    assert.equal(o.objectCount, 1);
    assert.equal(o.needsSnapshot, true);
  });
});
