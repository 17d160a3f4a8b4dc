// An ack means the batch's lifecycle steps are stored. Ingest moves the cluster's state forward
// before the write, so a failed write must not cost the steps derived from it: the batch is not
// acked, the agent resyncs, and the steps of one delivery are stored, each once.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ConnectError, Code } from "@connectrpc/connect";
import { AgentMessageSchema, Delta_Op, HelloAck_Mode } from "../../gen/wave/v1/ingest_pb.ts";
import type { AgentMessage } from "../../gen/wave/v1/ingest_pb.ts";
import { disruptionEvent, node, nodeClaim, nodePool } from "../../agent/fixtures.ts";
import { encodeJson, toMessage } from "../../wire/wire.ts";
import type { WireObject } from "../../wire/wire.ts";
import type { LifecycleEvent } from "../lifecycle/derive.ts";
import { IngestCore } from "./core.ts";
import { MemorySink } from "./sink.ts";
import type { IngestBatch } from "./sink.ts";

/** Records every step of every write that resolved (no de-duplication), and fails on demand. */
class RecordingSink extends MemorySink {
  readonly stored: LifecycleEvent[] = [];
  /** Fails the next write whose batch satisfies this. */
  failWhen: ((b: IngestBatch) => boolean) | undefined;

  override async write(b: IngestBatch): Promise<void> {
    if (this.failWhen?.(b)) {
      this.failWhen = undefined;
      throw new Error("disk full");
    }
    await super.write(b);
    this.stored.push(...b.lifecycle);
  }
}

const AT = Date.UTC(2026, 0, 1, 2);
const SESSION = "agent-1";

const msg = (seq: number, body: AgentMessage["body"]): AgentMessage =>
  create(AgentMessageSchema, { sequence: BigInt(seq), body });

const hello = (): AgentMessage =>
  create(AgentMessageSchema, {
    body: { case: "hello", value: { clusterId: "alpha", sessionId: SESSION, agentVersion: "t" } },
  });

function snapshot(first: number, objects: WireObject[]): AgentMessage[] {
  const wire = objects.map((o) => toMessage(o.kind, encodeJson(o)));
  return [
    msg(first, { case: "snapshotBegin", value: {} } as never),
    msg(first + 1, { case: "snapshotChunk", value: { objects: wire } } as never),
    msg(first + 2, { case: "snapshotEnd", value: { objectCount: BigInt(objects.length) } } as never),
  ];
}

function delta(seq: number, op: "upsert" | "delete", o: WireObject): AgentMessage {
  return msg(seq, {
    case: "delta",
    value: {
      op: op === "upsert" ? Delta_Op.UPSERT : Delta_Op.DELETE,
      object: toMessage(o.kind, encodeJson(o)),
      observedAtMs: BigInt(AT),
    },
  } as never);
}

interface StreamResult {
  mode: HelloAck_Mode | undefined;
  acks: number[];
  error: ConnectError | undefined;
}

/**
 * One agent stream: hello and `msgs`, with the sink's writes held until core has read them all
 * (so a snapshot's begin and first chunk are one batch, applied as it streams, and its end with the
 * deltas behind it the next); ends once the last sequence is
 * acked or core ends the stream.
 */
async function stream(core: IngestCore, sink: MemorySink, msgs: AgentMessage[]): Promise<StreamResult> {
  const out: StreamResult = { mode: undefined, acks: [], error: undefined };
  const lastSeq = Number(msgs.at(-1)?.sequence ?? 0);
  let wake: () => void = () => undefined;
  const settled = new Promise<void>((r) => (wake = () => (out.acks.includes(lastSeq) || out.error) && r()));
  let release: () => void = () => undefined;
  sink.gate = new Promise<void>((r) => (release = r));
  async function* requests(): AsyncGenerator<AgentMessage> {
    yield hello();
    yield* msgs;
    // Pulled again: core has taken every message in.
    sink.gate = undefined;
    release();
    await settled;
  }
  try {
    for await (const m of core.serve(requests(), new AbortController().signal)) {
      const b = m.body;
      if (b?.case === "helloAck") out.mode = b.value.mode;
      if (b?.case === "ack") out.acks.push(Number(b.value.sequence));
      wake();
    }
  } catch (err) {
    out.error = ConnectError.from(err);
  }
  release();
  return out;
}

// claim-1 launches and registers (first snapshot), then initializes, is disrupted and deleted
// (one delta batch); the agent's later snapshot no longer has it.
const first = [nodePool("default"), nodeClaim(1, { initialized: false }), node(1)];
const deltas = [
  delta(4, "upsert", nodeClaim(1, { rv: 2 })),
  delta(5, "upsert", disruptionEvent("node-1", "Underutilized", AT)),
  delta(6, "delete", nodeClaim(1, { rv: 3 })),
];
const resync = [nodePool("default"), node(1), disruptionEvent("node-1", "Underutilized", AT)];

/** The steps' ids, sorted; each must be stored once. */
function ids(steps: LifecycleEvent[]): string[] {
  const out = steps.map((e) => e.id).sort();
  assert.equal(new Set(out).size, out.length, `a step stored twice: ${out.join(", ")}`);
  return out;
}

/** The steps one clean delivery of the same changes stores. */
async function cleanRun(): Promise<LifecycleEvent[]> {
  const sink = new RecordingSink();
  const r = await stream(new IngestCore({ sink }), sink, [...snapshot(1, first), ...deltas]);
  assert.equal(r.error, undefined);
  assert.deepEqual(r.acks, [2, 6]);
  return sink.stored;
}

describe("ingest durability: the state moves before the write, the steps wait for it", () => {
  it("a delta batch whose write fails is not acked; the resync stores exactly one delivery's steps", async () => {
    const reference = await cleanRun();
    const types = new Set(reference.map((e) => e.type));
    for (const t of ["Launched", "Registered", "Initialized", "Disrupted", "Terminated"]) {
      assert.ok(types.has(t as LifecycleEvent["type"]), `the clean run derives ${t}`);
    }

    const sink = new RecordingSink();
    const core = new IngestCore({ sink });
    sink.failWhen = (b) => b.sequence === 6;
    const broken = await stream(core, sink, [...snapshot(1, first), ...deltas]);
    assert.equal(broken.error?.code, Code.Unavailable);
    assert.deepEqual(broken.acks, [2], "the failed batch is not acked");
    assert.equal(sink.sequences.get("alpha"), 2);
    // The state moved forward once (the delete is in it); the steps it reported are owed.
    assert.equal(sink.state("alpha").nodeClaim("claim-1"), undefined);
    assert.ok((core.clusters.get("alpha")?.owed.length ?? 0) > 0);

    // The agent reconnects; core wants a snapshot (its last one never completed).
    const again = await stream(core, sink, snapshot(7, resync));
    assert.equal(again.error, undefined);
    assert.equal(again.mode, HelloAck_Mode.SNAPSHOT);
    assert.deepEqual(again.acks, [8, 9]);
    assert.deepEqual(ids(sink.stored), ids(reference), "each step stored once, none lost");
    assert.equal(core.clusters.get("alpha")?.owed.length, 0);
  });

  it("a first snapshot whose write fails keeps its steps for the resync", async () => {
    const sink = new RecordingSink();
    const core = new IngestCore({ sink });
    sink.failWhen = (b) => b.snapshot !== undefined;
    const broken = await stream(core, sink, [...snapshot(1, first), ...deltas]);
    assert.equal(broken.error?.code, Code.Unavailable);
    assert.deepEqual(broken.acks, []);
    assert.ok(core.clusters.has("alpha"), "a cluster with steps owed is not forgotten");

    const again = await stream(core, sink, [...snapshot(1, first), ...deltas]);
    assert.equal(again.error, undefined);
    assert.deepEqual(again.acks, [2, 6]);
    assert.deepEqual(ids(sink.stored), ids(await cleanRun()));
  });
});
