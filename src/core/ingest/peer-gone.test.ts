// An agent that stops (or whose connection drops) closes its request stream mid-read: core must
// not call that a malformed message — every clean stop of `wave start` logged it as a warning.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { AgentMessageSchema } from "../../gen/wave/v1/ingest_pb.ts";
import type { AgentMessage } from "../../gen/wave/v1/ingest_pb.ts";
import { createLogger } from "../../shared/log.ts";
import { IngestCore } from "./core.ts";
import { MemorySink } from "./sink.ts";

/** What the HTTP/2 request stream throws when the peer closes it: Node's own error. */
const closedByPeer = (): Error =>
  Object.assign(new Error("Premature close"), { code: "ERR_STREAM_PREMATURE_CLOSE" });

async function serveUntil(fail: Error): Promise<{ err: ConnectError | undefined; warnings: string[] }> {
  const warnings: string[] = [];
  const log = createLogger({
    level: "warn",
    write: (line) => warnings.push((JSON.parse(line) as { msg: string }).msg),
  });
  const core = new IngestCore({ sink: new MemorySink(), log });
  async function* requests(): AsyncGenerator<AgentMessage> {
    yield create(AgentMessageSchema, {
      body: { case: "hello", value: { clusterId: "alpha", sessionId: "s", agentVersion: "t" } },
    });
    // The peer's side closes while core waits for its next message.
    await new Promise((r) => setImmediate(r));
    throw fail;
  }
  let err: ConnectError | undefined;
  try {
    for await (const reply of core.serve(requests(), new AbortController().signal))
      assert.equal(reply.body?.case, "helloAck");
  } catch (e) {
    err = e as ConnectError;
  }
  return { err, warnings };
}

describe("ingest: a peer that goes away", () => {
  it("is CANCELED, not a malformed message, and logs no warning", async () => {
    const { err, warnings } = await serveUntil(closedByPeer());
    assert.equal(err?.code, Code.Canceled, err?.message);
    assert.match(err.rawMessage, /closed its stream/);
    assert.deepEqual(warnings, []);
  });

  it("a stream that fails otherwise is still the peer's malformed message, with a warning", async () => {
    const { err, warnings } = await serveUntil(new Error("bad framing"));
    assert.equal(err?.code, Code.InvalidArgument, err?.message);
    assert.match(err.rawMessage, /malformed message from the agent: bad framing/);
    assert.deepEqual(warnings, ["agent stream rejected"]);
  });
});
