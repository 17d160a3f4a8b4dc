// A stream that stays open must not keep the messages it has already read: a snapshot's chunks
// are most of core's memory at scale (each holds its objects' JSON bytes), and an agent's stream
// lives for days.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setImmediate as tick } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { create } from "@bufbuild/protobuf";
import { AgentMessageSchema, Delta_Op } from "../../gen/wave/v1/ingest_pb.ts";
import type { AgentMessage } from "../../gen/wave/v1/ingest_pb.ts";
import { node, nodePool, pod } from "../../agent/fixtures.ts";
import { encodeJson, toMessage } from "../../wire/wire.ts";
import type { WireObject } from "../../wire/wire.ts";
import { IngestCore } from "./core.ts";
import { MemorySink } from "./sink.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const msg = (seq: number, body: AgentMessage["body"]): AgentMessage =>
  create(AgentMessageSchema, { sequence: BigInt(seq), body });

const chunk = (seq: number, objects: WireObject[]): AgentMessage =>
  msg(seq, {
    case: "snapshotChunk",
    value: { objects: objects.map((o) => toMessage(o.kind, encodeJson(o))) },
  } as never);

describe("ingest: what a stream has read is not kept", () => {
  it("the snapshot's chunks and applied deltas become garbage while the stream stays open", async () => {
    const sink = new MemorySink();
    const core = new IngestCore({ sink });
    // Made as the stream pulls them, so only these weak references point at them.
    const read: WeakRef<AgentMessage>[] = [];
    const made = (m: AgentMessage): AgentMessage => {
      read.push(new WeakRef(m));
      return m;
    };
    let acked = 0;
    let wake: () => void = () => undefined;
    let finish: () => void = () => undefined;
    const finished = new Promise<void>((r) => (finish = r));
    const upTo = (seq: number): Promise<void> =>
      new Promise<void>((r) => {
        wake = () => acked >= seq && r();
        wake();
      });
    async function* requests(): AsyncGenerator<AgentMessage> {
      yield create(AgentMessageSchema, {
        body: { case: "hello", value: { clusterId: "alpha", sessionId: "s", agentVersion: "t" } },
      });
      yield msg(1, { case: "snapshotBegin", value: {} } as never);
      yield made(chunk(2, [nodePool("default"), node(1)]));
      yield made(chunk(3, [pod(1, 2), pod(2, 2)]));
      yield msg(4, { case: "snapshotEnd", value: { objectCount: 4n } } as never);
      for (let seq = 5; seq <= 8; seq++) {
        const o = pod(seq, 2);
        yield made(
          msg(seq, {
            case: "delta",
            value: { op: Delta_Op.UPSERT, object: toMessage(o.kind, encodeJson(o)), observedAtMs: 1n },
          } as never),
        );
      }
      // The last message read may still sit in a register of the reading loop: one more.
      yield msg(9, {
        case: "delta",
        value: { op: Delta_Op.DELETE, object: toMessage("Pod", encodeJson(pod(1, 2))), observedAtMs: 1n },
      } as never);
      await finished;
    }
    const serving = (async () => {
      for await (const m of core.serve(requests(), new AbortController().signal)) {
        if (m.body?.case === "ack") acked = Number(m.body.value.sequence);
        wake();
      }
    })();

    await upTo(9);
    assert.equal(sink.state("alpha").counts().pods, 5, "the stream's objects are in the state");
    // Weak references hold their targets until the current job ends; then a full collection.
    await tick();
    gc();
    const kept = read.filter((r) => r.deref() !== undefined).length;
    finish();
    await serving;
    assert.equal(read.length, 6);
    assert.equal(kept, 0, `${kept} of ${read.length} messages read are still reachable`);
  });
});
