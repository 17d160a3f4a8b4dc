// The ingest server's HTTP/2 layer under peers that misbehave or are merely unlucky: a stream core
// answers while the agent is still uploading must be released (not held with its unread bytes
// until the connection closes), and one connection may not open streams without bound.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import dc from "node:diagnostics_channel";
import * as http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { AgentMessageSchema } from "../../gen/wave/v1/ingest_pb.ts";
import { IngestCore } from "./core.ts";
import { startIngestServer, type IngestServer } from "./server.ts";
import { MemorySink } from "./sink.ts";
import { within } from "./testing.ts";

const TOKEN = "server-test-token-0123456789";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startCore(): Promise<IngestServer> {
  const core = new IngestCore({ sink: new MemorySink(), coreVersion: "test" });
  const server = await startIngestServer({ core, port: 0, host: "127.0.0.1", tokens: [TOKEN] });
  cleanups.push(() => server.close());
  return server;
}

function connect(port: number): http2.ClientHttp2Session {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on("error", () => undefined);
  cleanups.push(() => {
    session.destroy();
  });
  return session;
}

/** One length-prefixed gRPC message. */
function grpcFrame(payload: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + payload.length);
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}

const BAD_HELLO = grpcFrame(
  toBinary(
    AgentMessageSchema,
    create(AgentMessageSchema, {
      body: { case: "hello", value: { clusterId: "Not A DNS Label", sessionId: "s", agentVersion: "t" } },
    }),
  ),
);

function openStream(session: http2.ClientHttp2Session): http2.ClientHttp2Stream {
  const req = session.request({
    ":method": "POST",
    ":path": "/wave.v1.Ingest/Stream",
    "content-type": "application/grpc",
    te: "trailers",
    authorization: `Bearer ${TOKEN}`,
  });
  req.on("error", () => undefined);
  return req;
}

/** The grpc-status a stream ended with ("reset" when it got none). */
function status(req: http2.ClientHttp2Stream): Promise<string> {
  return new Promise((resolve) => {
    let grpc = "reset";
    req.on("response", (h) => (grpc = String(h["grpc-status"] ?? grpc)));
    req.on("trailers", (t: http2.IncomingHttpHeaders) => (grpc = String(t["grpc-status"] ?? grpc)));
    req.resume();
    req.on("close", () => resolve(grpc));
  });
}

/** Server-side streams that have started and not yet closed (Node's diagnostics channels). */
function watchServerStreams(): { open: Set<http2.ServerHttp2Stream>; released: () => Promise<void> } {
  const open = new Set<http2.ServerHttp2Stream>();
  const waiters: (() => void)[] = [];
  const onStart = (m: unknown): void => {
    const stream = (m as { stream: http2.ServerHttp2Stream }).stream;
    open.add(stream);
    stream.once("close", () => {
      open.delete(stream);
      if (open.size === 0) for (const w of waiters.splice(0)) w();
    });
  };
  dc.subscribe("http2.server.stream.start", onStart);
  cleanups.push(() => {
    dc.unsubscribe("http2.server.stream.start", onStart);
  });
  return {
    open,
    released: () => new Promise<void>((r) => (open.size === 0 ? r() : waiters.push(r))),
  };
}

describe("ingest server, HTTP/2 layer", { timeout: 60_000 }, () => {
  it("releases a stream it rejected while the agent was still uploading", async () => {
    const server = await startCore();
    const streams = watchServerStreams();
    const session = connect(server.port);
    // A rejected hello followed by 1 MiB the agent had already queued: core answers after the
    // hello, the rest arrives and is never read.
    const upload = Buffer.concat([BAD_HELLO, grpcFrame(Buffer.alloc(1 << 20))]);
    for (let i = 0; i < 8; i++) {
      const req = openStream(session);
      req.write(upload);
      assert.equal(await status(req), "3", "InvalidArgument for the hello");
    }
    await within(5000, streams.released(), `${String(streams.open.size)} answered streams still held`);
    assert.equal(session.destroyed, false, "the connection stays usable");
  });
});
