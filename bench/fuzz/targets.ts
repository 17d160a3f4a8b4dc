// The three fuzz targets of `npm run fuzz` (issue #16), each a real server on loopback fed
// generated input: the policy API (and the dashboard's query parameters), the webhook's
// AdmissionReview endpoint, and the gRPC ingest (hostile message sequences, wrong types, oversize
// snapshots, malformed HTTP/2 gRPC frames). A target reports how many inputs it sent, the answers
// that were server errors (HTTP 5xx; gRPC INTERNAL or UNKNOWN), and how much heap it kept.
import dc from "node:diagnostics_channel";
import * as http2 from "node:http2";
import { connect as tcpConnect } from "node:net";
import { Agent, request as httpsRequest } from "node:https";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { node, nodeClaim, nodePool, pod } from "../../src/agent/fixtures.ts";
import { encodeJson, kindToProto, type WireObject } from "../../src/wire/wire.ts";
import { build } from "../../src/api/app.ts";
import { dashboardRoutes } from "../../src/api/routes/dashboard.ts";
import { policyRoutes } from "../../src/api/routes/policies.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { IngestCore } from "../../src/core/ingest/core.ts";
import { startIngestServer } from "../../src/core/ingest/server.ts";
import { MemorySink } from "../../src/core/ingest/sink.ts";
import { openStore } from "../../src/core/store/open.ts";
import {
  Ingest,
  type AgentMessageSchema,
  type Delta_Op,
  type ObjectKind,
} from "../../src/gen/wave/v1/ingest_pb.ts";
import { MemoryKube } from "../../src/kube/memory/memory.ts";
import { KwokPriceProvider } from "../../src/pricing/kwok.ts";
import { FakeClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { seeded } from "../../src/shared/random.ts";
import { SlotAllocator } from "../../src/webhook/allocator.ts";
import { generateDevCerts } from "../../src/webhook/certs.ts";
import { InMemoryPolicySource } from "../../src/webhook/policy-source.ts";
import { startWebhookServer } from "../../src/webhook/server.ts";
import { FIXTURE_NAMES, loadFixture } from "../../src/webhook/test-helpers.ts";
import { gen, type Gen, type Json } from "./gen.ts";

export interface TargetResult {
  target: string;
  inputs: number;
  /** HTTP 5xx, or gRPC INTERNAL/UNKNOWN: each a bug. */
  serverErrors: number;
  /** Answers by status (HTTP code, or gRPC code name). */
  statuses: Record<string, number>;
  /** The first few server errors, to replay. */
  examples: string[];
  /** Heap kept after the run (after a GC when --expose-gc), minus before, bytes. */
  heapGrowth: number;
  /**
   * gRPC ingest: HTTP/2 streams core still held once every input had its answer (each is memory a
   * peer pinned; must be 0).
   */
  heldStreams?: number;
  /** Placement target: real pods placed otherwise than without the forgeries (must be 0), and checks made. */
  placementViolations?: number;
  placementChecks?: number;
  /** Answers an oracle disagreed with (issue 42's security targets; must be 0). */
  violations?: number;
  ms: number;
}

const LOOPBACK = "127.0.0.1";
const ADMIN = "fuzz-admin-token-0123456789";
const VIEWER = "fuzz-viewer-token-0123456789";
const AGENT = "fuzz-agent-token-0123456789";

function heap(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

/** Any generated value as text (objects as JSON, not "[object Object]"). */
const text = (v: Json): string => (typeof v === "string" ? v : JSON.stringify(v));

class Tally {
  result(): Pick<TargetResult, "serverErrors" | "statuses" | "examples"> {
    return { serverErrors: this.serverErrors, statuses: this.statuses, examples: this.examples };
  }

  readonly statuses: Record<string, number> = {};
  serverErrors = 0;
  readonly examples: string[] = [];
  count(status: string, isError: boolean, example: () => string): void {
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
    if (!isError) return;
    this.serverErrors++;
    if (this.examples.length < 5) this.examples.push(example().slice(0, 400));
  }
}

/** Runs `one` n times, `width` at a time. */
async function pool(n: number, width: number, one: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) await one(next++);
    }),
  );
}

const enc = (s: string): string => (s === "" ? "%20" : encodeURIComponent(s));

// ---------------------------------------------------------------------------------------------
// policy API + query parameters

export async function fuzzPolicyApi(n: number, seed: number): Promise<TargetResult> {
  const g = gen(seeded(seed));
  const dir = await mkdtemp(join(tmpdir(), "wave-fuzz-api-"));
  const store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  const clock = new FakeClock(Date.parse("2026-03-02T12:00:00Z"));
  const hub = new ClusterHub(store, clock);
  hub.ensure("c1");
  const app = await build({
    tokens: { admin: ADMIN, viewer: VIEWER },
    // Past the per-identity change limit every PUT would be a 429, not a handler's answer.
    changeRate: { burst: 1e9, perMinute: 1e9 },
    plugins: [
      dashboardRoutes({ hub, prices: new KwokPriceProvider(), now: () => clock.now(), clock }),
      policyRoutes({ store, now: () => clock.now(), defaultClusterId: "c1" }),
    ],
  });
  await app.listen({ host: LOOPBACK, port: 0 });
  const base = `http://${LOOPBACK}:${(app.server.address() as { port: number }).port}`;
  const spot: Json = { threshold: 3, strategy: "Prefer", percentAboveBase: 20 };
  const warm: Json = {
    enabled: true,
    maxWarmNodes: 2,
    ttlSeconds: 600,
    cooldownSeconds: 300,
    maxCostPerHour: 1.5,
    prePull: true,
    prePullDeadlineSeconds: 300,
  };
  const name = (): string =>
    g.chance(0.6) ? g.pick(["api", "web", "general", "gpu-pool", "a.b"]) : text(g.value());
  const queryValue = (): string =>
    g.chance(0.5) ? String(g.pick([0, 1, 60, 3600, 7776000, 1e20, 2 ** 53])) : text(g.value());
  const tally = new Tally();
  const before = heap();
  const started = performance.now();
  await pool(n, 8, async () => {
    const r = g.int(100);
    let method = "GET";
    let path: string;
    let body: string | undefined;
    if (r < 40) {
      method = g.pick(["PUT", "PUT", "PUT", "DELETE"]);
      path = `/api/v1/policies/spot/${enc(g.pick(["Deployment", "StatefulSet", "ReplicaSet", "Pod", ""]))}/${enc(name())}/${enc(name())}`;
      body = JSON.stringify(g.mutate(spot));
    } else if (r < 70) {
      method = g.pick(["PUT", "PUT", "PUT", "DELETE"]);
      path = `/api/v1/policies/warmup/${enc(name())}`;
      body = JSON.stringify(g.mutate(warm));
    } else {
      const route = g.pick([
        "series",
        "events",
        "disruptions",
        "nodes",
        "nodepools",
        "overview",
        "thrashing",
      ]);
      const params = Array.from({ length: g.int(4) }, () => {
        const k = g.pick([
          "window",
          "step",
          "from",
          "to",
          "limit",
          "pool",
          "desc",
          "sort",
          "offset",
          "q",
          "x",
        ]);
        return `${k}=${enc(queryValue())}`;
      });
      path = `/api/v1/clusters/${g.chance(0.9) ? "c1" : enc(name())}/${route}?${params.join("&")}`;
    }
    if (body !== undefined && g.chance(0.08)) body = g.mangle(body);
    const sent = `${method} ${path} ${body ?? ""}`;
    try {
      const res = await fetch(base + path, {
        method,
        headers: {
          authorization: `Bearer ${method === "GET" ? VIEWER : ADMIN}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined || method === "DELETE" ? {} : { body }),
      });
      await res.arrayBuffer();
      tally.count(String(res.status), res.status >= 500, () => sent);
    } catch (err) {
      tally.count("transport-error", true, () => `${sent} → ${String(err)}`);
    }
  });
  const ms = performance.now() - started;
  await app.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
  return { target: "policy API", inputs: n, ...tally.result(), heapGrowth: heap() - before, ms };
}

// ---------------------------------------------------------------------------------------------
// AdmissionReview endpoint

export async function fuzzAdmission(n: number, seed: number): Promise<TargetResult> {
  const g = gen(seeded(seed));
  const dir = await mkdtemp(join(tmpdir(), "wave-fuzz-webhook-"));
  const certs = await generateDevCerts({ dir, hosts: ["localhost", LOOPBACK] });
  const clock = new FakeClock();
  const server = await startWebhookServer({
    certFile: certs.certFile,
    keyFile: certs.keyFile,
    host: LOOPBACK,
    policies: new InMemoryPolicySource({
      apiVersion: "wave.sh/v1alpha1",
      kind: "SpotPolicySet",
      policies: [
        {
          workload: { namespace: "shop", kind: "Deployment", name: "web" },
          threshold: 3,
          strategy: "Prefer",
        },
        {
          workload: { namespace: "shop", kind: "StatefulSet", name: "db" },
          threshold: 1,
          strategy: "Require",
        },
      ],
    }),
    allocator: new SlotAllocator({ kube: new MemoryKube({ clock }), namespace: "wave", clock }),
    clock,
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 8, ca: certs.caPem });
  const fixtures = FIXTURE_NAMES.map((f) => loadFixture(f) as unknown as Json);
  const tally = new Tally();
  const before = heap();
  const started = performance.now();
  await pool(n, 8, async (i) => {
    const r = g.int(100);
    let text: string;
    if (r < 5) text = JSON.stringify(g.value());
    else {
      const doc = g.mutate(g.pick(fixtures));
      if (
        doc !== null &&
        typeof doc === "object" &&
        !Array.isArray(doc) &&
        typeof doc.request === "object" &&
        doc.request &&
        !Array.isArray(doc.request)
      )
        doc.request.uid = `fuzz-${i}`;
      text = JSON.stringify(doc);
      if (r < 13) text = g.mangle(text);
    }
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpsRequest(
          {
            agent,
            host: LOOPBACK,
            port: server.port,
            path: "/mutate",
            method: "POST",
            headers: { "content-type": "application/json" },
          },
          (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode ?? 0));
          },
        );
        req.on("error", reject);
        req.end(text);
      });
      tally.count(String(status), status >= 500, () => text);
    } catch (err) {
      tally.count("transport-error", true, () => `${String(err)}: ${text}`);
    }
  });
  const ms = performance.now() - started;
  agent.destroy();
  await server.close();
  await rm(dir, { recursive: true, force: true });
  return { target: "AdmissionReview", inputs: n, ...tally.result(), heapGrowth: heap() - before, ms };
}

// ---------------------------------------------------------------------------------------------
// gRPC ingest

type Msg = MessageInitShape<typeof AgentMessageSchema>;

const WIRE: WireObject[] = [nodePool("default"), nodeClaim(1), node(1), pod(1, 1)];

/** A KubeObject message: valid, mutated JSON, an unknown kind, or bytes that are not JSON. */
function objectMsg(g: Gen): { kind: ObjectKind; json: Uint8Array } {
  const w = g.pick(WIRE);
  const r = g.int(10);
  if (r < 5) return { kind: kindToProto(w.kind), json: encodeJson(w) };
  if (r < 8)
    return {
      kind: g.chance(0.8) ? kindToProto(w.kind) : ((g.int(9) - 1) as ObjectKind),
      json: Buffer.from(JSON.stringify(g.mutate(w.object as unknown as Json))),
    };
  return {
    kind: (g.int(9) - 1) as ObjectKind,
    json: g.chance(0.5) ? g.bytes(g.int(64)) : Buffer.from(g.mangle(JSON.stringify(w.object))),
  };
}

function messages(g: Gen, i: number): Msg[] {
  const cluster = g.chance(0.8) ? `fuzz-${g.int(20)}` : text(g.value());
  const out: Msg[] = [];
  if (g.chance(0.95))
    out.push({
      body: {
        case: "hello",
        value: {
          clusterId: cluster,
          sessionId: g.chance(0.9) ? `s-${i}` : "",
          agentVersion: g.chance(0.9) ? "fuzz" : "",
          resumeFromSequence: BigInt(g.int(5)),
        },
      },
    });
  let seq = 0;
  const next = (): bigint =>
    g.chance(0.9) ? BigInt(++seq) : g.pick([0n, BigInt(seq), BigInt(seq + 5), 2n ** 62n, 2n ** 64n - 1n]);
  const count = g.int(12);
  for (let k = 0; k < count; k++) {
    const r = g.int(10);
    if (r < 2) out.push({ sequence: next(), body: { case: "snapshotBegin", value: {} } });
    else if (r < 5)
      out.push({
        sequence: next(),
        body: {
          case: "snapshotChunk",
          value: { objects: Array.from({ length: g.int(4) }, () => objectMsg(g)) },
        },
      });
    else if (r < 6)
      out.push({ sequence: next(), body: { case: "snapshotEnd", value: { objectCount: BigInt(g.int(6)) } } });
    else if (r < 9)
      out.push({
        sequence: next(),
        body: {
          case: "delta",
          value: {
            op: g.int(4) as Delta_Op,
            object: objectMsg(g),
            observedAtMs: BigInt(g.pick([0, 1, Date.now(), -5, 8.64e15 + 1, 2 ** 62])),
          },
        },
      });
    else
      out.push({
        sequence: next(),
        body: { case: g.chance(0.5) ? "hello" : undefined, value: undefined } as never,
      });
  }
  return out;
}

/**
 * HTTP/2 frames of random type, flags, stream and payload (a few with a wrong length) after the
 * connection preface, on a connection of their own, then a PING. Core (Node's HTTP/2) may answer
 * the PING (it tolerated them) or send GOAWAY and close (it cut off a peer breaking the protocol):
 * both correct. No answer within 5 s is a finding.
 */
function h2Garbage(port: number, g: Gen): Promise<{ outcome: string; isError: boolean; sent: string }> {
  const frames: Buffer[] = [Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(4, 0, 0, Buffer.alloc(0))];
  for (let i = g.int(20); i >= 0; i--) {
    const payload = Buffer.from(g.bytes(g.int(64)));
    const f = frame(g.int(11), g.int(256), g.int(8), payload);
    if (g.chance(0.1)) f.writeUIntBE(g.int(1 << 16), 0, 3);
    frames.push(f);
  }
  frames.push(frame(6, 0, 0, Buffer.from("fuzzping")));
  const sent = Buffer.concat(frames);
  return new Promise((resolve) => {
    const sock = tcpConnect(port, LOOPBACK);
    let got = Buffer.alloc(0);
    const done = (outcome: string, isError = false): void => {
      clearTimeout(timer);
      sock.destroy();
      resolve({ outcome, isError, sent: sent.toString("hex") });
    };
    const timer = setTimeout(() => done("h2 garbage: no answer", true), 5000);
    sock.on("error", () => done("h2 garbage: connection reset"));
    sock.on("close", () => done("h2 garbage: closed without GOAWAY"));
    sock.on("data", (d: Buffer) => {
      got = Buffer.concat([got, d]);
      while (got.length >= 9) {
        const len = got.readUIntBE(0, 3);
        if (got.length < 9 + len) return;
        const [type, flags] = [got[3], got[4]];
        if (type === 7) {
          const code = got.readUInt32BE(13);
          done(`h2 garbage: cut off (GOAWAY ${H2_ERRORS[code] ?? String(code)})`);
          return;
        }
        if (type === 6 && flags === 1) {
          done("h2 garbage: tolerated (PING answered)");
          return;
        }
        got = got.subarray(9 + len);
      }
    });
    sock.write(sent);
  });
}

function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

/** HTTP/2 error code names (RFC 9113 §7). */
const H2_ERRORS = [
  "NO_ERROR",
  "PROTOCOL_ERROR",
  "INTERNAL_ERROR",
  "FLOW_CONTROL_ERROR",
  "SETTINGS_TIMEOUT",
  "STREAM_CLOSED",
  "FRAME_SIZE_ERROR",
  "REFUSED_STREAM",
  "CANCEL",
  "COMPRESSION_ERROR",
  "CONNECT_ERROR",
  "ENHANCE_YOUR_CALM",
  "INADEQUATE_SECURITY",
  "HTTP_1_1_REQUIRED",
];

/**
 * The fuzz's client connections to core, each used for `rotateEvery` inputs and then closed once
 * its streams are done; one that closes before (core cut it off, or it failed) is replaced at the
 * next input, so every later input still reaches core.
 *
 * Why rotate: Node's HTTP/2 *client* never gives back the session-memory budget of the request
 * bytes still queued when the server resets a stream. Core resets every stream it rejects while
 * the agent is still uploading (an oversize snapshot, a bad hello before a large chunk), about one
 * input in ten here. Reproduced with node:http2 alone (a server that answers and resets, a client
 * uploading 1.1 MB): each such stream costs the client ~300 KB of budget for good; with the
 * default 10 MB the client refuses every response after 33 of them (RST_STREAM
 * ENHANCE_YOUR_CALM, sent by the client to itself: core never sees a problem), 132 with 40 MB,
 * 329 with 100 MB. On one connection for all 10,000 inputs that wedged the run at input ~3,420.
 * It is a limit of the client, not a server error; the agent opens a connection per stream for
 * the same reason. The budget is raised too: eight inputs upload up to 1.1 MB at once.
 */
interface ConnectionKind<C> {
  open(): C;
  isClosed(c: C): boolean;
  close(c: C): void;
  /** Called when a connection closed before its rotation (core cut it off, or it failed). */
  lost(reason: string): void;
}

class Connections<C> {
  readonly #kind: ConnectionKind<C>;
  #current: { conn: C; used: number; busy: number; retired: boolean } | undefined;

  constructor(kind: ConnectionKind<C>) {
    this.#kind = kind;
  }

  /** Runs `use` on a live connection. */
  async with<T>(use: (c: C) => Promise<T>): Promise<T> {
    let cur = this.#current;
    if (cur && this.#kind.isClosed(cur.conn)) {
      this.#kind.lost("closed before its rotation");
      cur = undefined;
    }
    if (!cur || cur.used >= ROTATE_EVERY) {
      if (cur) this.#retire(cur);
      cur = { conn: this.#kind.open(), used: 0, busy: 0, retired: false };
      this.#current = cur;
    }
    const mine = cur;
    mine.used++;
    mine.busy++;
    try {
      return await use(mine.conn);
    } finally {
      mine.busy--;
      if (mine.retired && mine.busy === 0) this.#kind.close(mine.conn);
    }
  }

  #retire(c: { conn: C; busy: number; retired: boolean }): void {
    c.retired = true;
    if (c.busy === 0) this.#kind.close(c.conn);
  }

  closeAll(): void {
    if (this.#current) this.#retire(this.#current);
    this.#current = undefined;
  }
}

/** Inputs per client connection (see Connections). */
const ROTATE_EVERY = 200;
/** The fuzz client's HTTP/2 session-memory budget, MB (Node's default: 10). */
const CLIENT_SESSION_MEMORY_MB = 64;

export async function fuzzIngest(n: number, seed: number): Promise<TargetResult> {
  const g = gen(seeded(seed));
  const core = new IngestCore({ sink: new MemorySink(), maxSnapshotObjects: 200 });
  const server = await startIngestServer({
    core,
    host: LOOPBACK,
    port: 0,
    credentials: [{ name: "fuzz", token: AGENT, clusters: ["*"] }],
  });
  const url = `http://${LOOPBACK}:${server.port}`;
  const held = new Set<http2.ServerHttp2Stream>();
  let allReleased: (() => void) | undefined;
  const onStream = (m: unknown): void => {
    const stream = (m as { stream: http2.ServerHttp2Stream }).stream;
    held.add(stream);
    stream.once("close", () => {
      held.delete(stream);
      if (held.size === 0) allReleased?.();
    });
  };
  dc.subscribe("http2.server.stream.start", onStream);
  const tally = new Tally();
  // A connection core closes under a fuzz input that was valid HTTP/2 is a finding: core must
  // answer bad gRPC per stream, never by dropping the connection of whoever sent it.
  const lost = (what: string) => (reason: string) =>
    tally.count(`${what} connection lost`, true, () => `${what} connection ${reason}`);
  const grpc = new Connections<{ sessions: Http2SessionManager; client: Client<typeof Ingest> }>({
    open: () => {
      const sessions = new Http2SessionManager(url, {}, { maxSessionMemory: CLIENT_SESSION_MEMORY_MB });
      const transport = createGrpcTransport({ baseUrl: url, sessionManager: sessions });
      return { sessions, client: createClient(Ingest, transport) };
    },
    isClosed: (c) => c.sessions.state() === "error",
    close: (c) => c.sessions.abort(),
    lost: lost("gRPC"),
  });
  const raw = new Connections<http2.ClientHttp2Session>({
    open: () => {
      const session = http2.connect(url, { maxSessionMemory: CLIENT_SESSION_MEMORY_MB });
      session.on("error", () => undefined);
      return session;
    },
    isClosed: (s) => s.closed || s.destroyed,
    close: (s) => s.close(),
    lost: lost("raw HTTP/2"),
  });
  const before = heap();
  const started = performance.now();
  const big: Msg = {
    sequence: 2n,
    body: {
      case: "snapshotChunk",
      value: {
        objects: Array.from({ length: 400 }, () => ({ kind: 3, json: encodeJson(node(1)) })),
      },
    },
  };
  await pool(n, 8, async (i) => {
    const r = g.int(100);
    if (r < 2) {
      const { outcome, isError, sent } = await h2Garbage(server.port, g);
      tally.count(outcome, isError, () => `frames ${sent}`);
      return;
    }
    if (r < 15) {
      // Malformed gRPC framing straight onto HTTP/2.
      const frame = g.bytes(g.int(40));
      if (g.chance(0.5) && frame.length >= 5)
        new DataView(frame.buffer).setUint32(1, g.pick([0, 5, 2 ** 31, 2 ** 32 - 1]));
      const outcome = await raw.with(
        (session) =>
          new Promise<string>((resolve) => {
            const req = session.request({
              ":method": "POST",
              ":path": "/wave.v1.Ingest/Stream",
              "content-type": g.pick([
                "application/grpc",
                "application/grpc+proto",
                "application/json",
                "text/plain",
              ]),
              te: "trailers",
              authorization: `Bearer ${AGENT}`,
            });
            let status = 0;
            let grpc = "";
            req.on("response", (h) => {
              status = Number(h[":status"]);
              grpc = String(h["grpc-status"] ?? "");
            });
            req.on("trailers", (t: http2.IncomingHttpHeaders) => (grpc = String(t["grpc-status"] ?? grpc)));
            req.on("data", () => undefined);
            req.on("close", () => resolve(`${status}/${grpc}`));
            req.on("error", () => resolve(`${status}/${grpc || "reset"}`));
            req.end(frame);
          }),
      );
      const [http, grpc] = outcome.split("/");
      tally.count(
        `h2 ${outcome}`,
        Number(http) >= 500 || grpc === String(Code.Internal) || grpc === String(Code.Unknown),
        () => `frame ${Buffer.from(frame).toString("hex")}`,
      );
      return;
    }
    const msgs =
      r < 25
        ? [
            ...messages(g, i).slice(0, 1),
            { sequence: 1n, body: { case: "snapshotBegin", value: {} } } as Msg,
            big,
            { ...big, sequence: 3n },
          ]
        : messages(g, i);
    async function* requests(): AsyncGenerator<Msg> {
      for (const m of msgs) yield await Promise.resolve(m);
    }
    let code = "OK";
    let message = "";
    const token = g.chance(0.95) ? AGENT : "wrong-token-wrong-token";
    try {
      await grpc.with(async ({ client }) => {
        for await (const _ of client.stream(requests(), {
          headers: { authorization: `Bearer ${token}` },
          timeoutMs: 10_000,
        })) {
          // acks are not what this looks at
        }
      });
    } catch (err) {
      const ce = ConnectError.from(err);
      code = Code[ce.code];
      message = ce.rawMessage;
    }
    tally.count(
      code,
      code === "Internal" || code === "Unknown",
      () =>
        `${message} ← ` +
        JSON.stringify(msgs, (_k, v: unknown) =>
          typeof v === "bigint" ? String(v) : v instanceof Uint8Array ? Buffer.from(v).toString("base64") : v,
        ),
    );
  });
  const ms = performance.now() - started;
  // Every input has its answer; what core still holds on the open connections it holds for nothing.
  // (A stream's 'close' comes a tick or two after the client saw its end.)
  if (held.size > 0) {
    await new Promise<void>((resolve) => {
      allReleased = resolve;
      setTimeout(resolve, 1000);
    });
  }
  const heldStreams = held.size;
  dc.unsubscribe("http2.server.stream.start", onStream);
  grpc.closeAll();
  raw.closeAll();
  await server.close();
  return {
    target: "gRPC ingest",
    inputs: n,
    ...tally.result(),
    heapGrowth: heap() - before,
    heldStreams,
    ms,
  };
}
