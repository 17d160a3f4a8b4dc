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
import { MAX_STREAMS_PER_CONNECTION, startIngestServer, type IngestServer } from "./server.ts";
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

const hello = (clusterId: string): Buffer =>
  grpcFrame(
    toBinary(
      AgentMessageSchema,
      create(AgentMessageSchema, {
        body: { case: "hello", value: { clusterId, sessionId: `s-${clusterId}`, agentVersion: "t" } },
      }),
    ),
  );
const BAD_HELLO = hello("Not A DNS Label");

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

interface ServerStreams {
  /** Started and not yet closed. */
  open: Set<http2.ServerHttp2Stream>;
  started: number;
  /** Most open at once. */
  peak: number;
  /** Resolves once `pred` holds (checked at each start and close). */
  until(pred: (s: ServerStreams) => boolean): Promise<void>;
  released(): Promise<void>;
}

/** The server's streams, seen through Node's diagnostics channels. */
function watchServerStreams(): ServerStreams {
  let waiters: { pred: (s: ServerStreams) => boolean; done: () => void }[] = [];
  const check = (): void => {
    waiters = waiters.filter((w) => (w.pred(streams) ? (w.done(), false) : true));
  };
  const streams: ServerStreams = {
    open: new Set(),
    started: 0,
    peak: 0,
    until: (pred) =>
      new Promise<void>((done) => {
        waiters.push({ pred, done });
        check();
      }),
    released: () => streams.until((s) => s.open.size === 0),
  };
  const onStart = (m: unknown): void => {
    const stream = (m as { stream: http2.ServerHttp2Stream }).stream;
    streams.open.add(stream);
    streams.started++;
    streams.peak = Math.max(streams.peak, streams.open.size);
    stream.once("close", () => {
      streams.open.delete(stream);
      check();
    });
    check();
  };
  dc.subscribe("http2.server.stream.start", onStart);
  cleanups.push(() => {
    dc.unsubscribe("http2.server.stream.start", onStart);
  });
  return streams;
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

  it(`lets one connection have at most ${String(MAX_STREAMS_PER_CONNECTION)} streams open at once`, async () => {
    const server = await startCore();
    const streams = watchServerStreams();
    const session = connect(server.port);
    await new Promise((r) => session.once("remoteSettings", r));
    assert.equal(session.remoteSettings.maxConcurrentStreams, MAX_STREAMS_PER_CONNECTION);

    // Agents that stay connected: a hello each, then nothing.
    for (let i = 0; i < MAX_STREAMS_PER_CONNECTION + 4; i++) {
      const req = openStream(session);
      req.resume();
      req.write(hello(`cluster-${String(i)}`));
    }
    await within(
      5000,
      streams.until((s) => s.open.size === MAX_STREAMS_PER_CONNECTION),
      "streams open",
    );
    // Whatever the client sent before its PING, core has seen by the time the PING is answered.
    await new Promise<void>((ok, fail) => session.ping((err) => (err ? fail(err) : ok())));
    assert.equal(streams.started, MAX_STREAMS_PER_CONNECTION, "the rest wait");
    assert.equal(streams.peak, MAX_STREAMS_PER_CONNECTION);
  });
});
