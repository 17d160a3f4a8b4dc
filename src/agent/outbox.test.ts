import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { AgentMessageSchema, HelloAck_Mode } from "../gen/wave/v1/ingest_pb.ts";
import type { AgentMessage } from "../gen/wave/v1/ingest_pb.ts";
import { node, nodePool } from "./fixtures.ts";
import { trim } from "./trim.ts";
import { Outbox } from "./outbox.ts";
import type { OutboxEntry } from "./outbox.ts";
import type { WireObject } from "../wire/wire.ts";

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
    const cluster = [nodePool("default"), node(1), node(2)];
    o.listFrom(() => [cluster]);
    assert.equal(o.resumeFrom(), 0);
    // A change before the snapshot begins is not queued: the listing it reads carries it.
    cluster.push(node(3));
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
    const cluster: WireObject[] = [];
    o.listFrom(() => [cluster]);
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    drain(o, 0);
    o.ack(2);
    cluster.push(node(1));
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
    const cluster: WireObject[] = [];
    o.listFrom(() => [cluster]);
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    drain(o, 0);
    o.ack(2);
    cluster.push(node(1), node(2), node(3));
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

  it("lists every snapshot from the source, trimming each chunk only when it is asked for", () => {
    const o = new Outbox({ now: () => 0, chunkMaxObjects: 2 });
    const seen: string[] = [];
    const list = [nodePool("default"), node(1), node(2), node(3), node(4)];
    o.listFrom(
      () => [list.slice(0, 2), list.slice(2)],
      (x) => {
        seen.push(x.object.metadata.name ?? "");
        // An unforwarded object (like a non-Karpenter Event) is dropped on the way.
        return x.object.metadata.name === "node-3" ? undefined : trim(x);
      },
    );
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    assert.equal(cases([o.next(0) as OutboxEntry])[0], "snapshotBegin");
    assert.equal(o.listing, true);
    assert.deepEqual(seen, [], "nothing trimmed before a chunk is due");
    const first = o.next(1);
    assert.equal(first?.seq, 2);
    assert.deepEqual(seen, ["default", "node-1", "node-2"], "one chunk (+ the object that did not fit)");
    const rest = drain(o, 2);
    assert.deepEqual(cases(rest), ["snapshotChunk", "snapshotEnd"]);
    const end = onWire(rest[1])?.body;
    assert.equal(end?.case === "snapshotEnd" ? end.value.objectCount : -1n, 4n);
    assert.equal(o.listing, false);
    assert.equal(o.listed, 4);
    o.apply({ type: "delete", object: node(1) });
    assert.deepEqual(cases(drain(o, 4)), ["delta"]);
    // A resync reads the source again: the outbox kept nothing of the first listing.
    seen.length = 0;
    list.splice(1, 1);
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    const again = drain(o, 5);
    assert.deepEqual(seen, ["default", "node-2", "node-3", "node-4"]);
    const end2 = onWire(again.at(-1))?.body;
    assert.equal(end2?.case === "snapshotEnd" ? end2.value.objectCount : -1n, 3n);
  });

  it("holds the changes made while a snapshot is listed until its end; an interrupted one is listed anew", () => {
    const o = new Outbox({ now: () => 0, chunkMaxObjects: 1 });
    let lists = 0;
    o.listFrom(() => {
      lists++;
      return [[node(1), node(2), node(3)]];
    });
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    o.next(0);
    o.next(1); // seq 2: node-1
    o.apply({ type: "upsert", object: node(9) });
    assert.equal(o.held, 1);
    const after = drain(o, 2);
    assert.deepEqual(cases(after), ["snapshotChunk", "snapshotChunk", "snapshotEnd", "delta"]);
    assert.equal(o.held, 0);

    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    o.next(6);
    o.next(7);
    o.apply({ type: "upsert", object: node(9) });
    // The connection drops mid-snapshot; core asks for a new one: listed again, the held change
    // dropped (the new listing carries it).
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    const again = drain(o, 0);
    assert.deepEqual(cases(again), [
      "snapshotBegin",
      "snapshotChunk",
      "snapshotChunk",
      "snapshotChunk",
      "snapshotEnd",
    ]);
    assert.equal(lists, 3);
    const end = onWire(again[4])?.body;
    assert.equal(end?.case === "snapshotEnd" ? end.value.objectCount : -1n, 3n);
    assert.equal(o.listing, false);
  });

  it("too many changes held during a listing drop it, count them and list anew", () => {
    const o = new Outbox({ now: () => 0, maxBufferedDeltas: 2, chunkMaxObjects: 1 });
    o.listFrom(() => [[node(1), node(2)]]);
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    o.next(0);
    for (let i = 0; i < 3; i++) o.apply({ type: "upsert", object: node(10 + i) });
    assert.equal(o.dropped, 3);
    assert.equal(o.needsSnapshot, true);
    assert.equal(o.held, 0);
  });

  it("reads an async listing one page at a time; a failed listing ends the stream and is listed anew", async () => {
    const o = new Outbox({ now: () => 0 });
    let fail = true;
    o.listFrom(async function* () {
      // A page of a LIST arrives later.
      await Promise.resolve();
      yield [node(1), node(2)];
      await Promise.resolve();
      if (fail) throw new Error("410: the continue token expired");
      yield [node(3)];
    });
    const ac = new AbortController();
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    assert.equal(cases([o.next(0) as OutboxEntry])[0], "snapshotBegin");
    assert.equal(o.next(1), undefined, "the first page is being read");
    await o.waitForWork(ac.signal);
    assert.deepEqual(cases([o.next(1) as OutboxEntry]), ["snapshotChunk"]);
    assert.equal(o.next(2), undefined);
    await o.waitForWork(ac.signal);
    assert.throws(() => o.next(2), /continue token expired/);
    assert.equal(o.needsSnapshot, true);
    fail = false;
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    const got: OutboxEntry[] = [];
    let cursor = 0;
    while (got.at(-1)?.msg.body.case !== "snapshotEnd") {
      const e = o.next(cursor);
      if (!e) {
        await o.waitForWork(ac.signal);
        continue;
      }
      got.push(e);
      cursor = e.seq;
    }
    assert.deepEqual(cases(got), ["snapshotBegin", "snapshotChunk", "snapshotChunk", "snapshotEnd"]);
    const end = onWire(got[3])?.body;
    assert.equal(end?.case === "snapshotEnd" ? end.value.objectCount : -1n, 3n);
  });

  it("a source resync drops the queue and lists anew", () => {
    const o = new Outbox({ now: () => 0 });
    o.helloAck(HelloAck_Mode.SNAPSHOT, 0);
    drain(o, 0);
    o.ack(2);
    o.apply({ type: "upsert", object: node(1) });
    o.apply({ type: "resync" });
    assert.equal(o.buffered, 0);
    assert.equal(o.needsSnapshot, true);
  });
});
