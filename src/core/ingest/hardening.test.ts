// Issue #16's ingest findings on the real gRPC path: credentials bound to cluster ids (token and
// client-certificate identity), no takeover of a cluster by another credential, throwaway ids not
// kept, bounded snapshots (size and duration), and an out-of-range timestamp as a protocol error.
import { after, afterEach, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentOptions } from "../../agent/agent.ts";
import { node, nodePool, pod, syntheticCluster } from "../../agent/fixtures.ts";
import { MemorySource } from "../../agent/source.ts";
import { kindToProto } from "../../wire/wire.ts";
import { FakeClock } from "../../shared/clock.ts";
import { createLogger } from "../../shared/log.ts";
import { Registry } from "../../shared/metrics.ts";
import { CLIENT_EXT, makePki, SERVER_EXT } from "../../../test/support/pki.ts";
import { runAgent } from "./agent.test-helper.ts";
import { AgentAuthenticator, CredentialError, loadCredentials, type AgentCredential } from "./auth.ts";
import { IngestCore, type IngestCoreOptions } from "./core.ts";
import { startIngestServer, type IngestServer, type IngestServerTls } from "./server.ts";
import { MemorySink } from "./sink.ts";
import {
  hello,
  rawStream,
  sessionWithSnapshot,
  snapshotBegin,
  snapshotChunk,
  snapshotEnd,
  upsert,
  wire,
  type Msg,
} from "./testing.ts";

const TOKEN_A = "token-of-cluster-a-0123456789";
const TOKEN_B = "token-of-cluster-b-0123456789";
const CREDS: AgentCredential[] = [
  { name: "agent-a", token: TOKEN_A, clusters: ["cluster-a"] },
  { name: "agent-b", token: TOKEN_B, clusters: ["cluster-b"] },
];

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startCore(
  opts: {
    credentials?: AgentCredential[];
    core?: Partial<IngestCoreOptions>;
    tls?: IngestServerTls;
  } = {},
): Promise<{ sink: MemorySink; core: IngestCore; server: IngestServer; logs: Record<string, unknown>[] }> {
  const sink = new MemorySink();
  const logs: Record<string, unknown>[] = [];
  const log = createLogger({
    level: "debug",
    write: (l) => logs.push(JSON.parse(l) as Record<string, unknown>),
  });
  const core = new IngestCore({ sink, coreVersion: "test", log, ...opts.core });
  const server = await startIngestServer({
    core,
    port: 0,
    host: "127.0.0.1",
    credentials: opts.credentials ?? CREDS,
    ...(opts.tls ? { tls: opts.tls } : {}),
  });
  cleanups.push(() => server.close());
  return { sink, core, server, logs };
}

function startAgent(url: string, clusterId: string, token: string, extra: Partial<AgentOptions> = {}) {
  const registry = new Registry();
  const { agent, stop } = runAgent({
    source: new MemorySource([nodePool("default"), node(1)]),
    coreUrl: url,
    token,
    clusterId,
    agentVersion: "test",
    metrics: registry,
    ...extra,
  });
  cleanups.push(stop);
  return { agent, registry, stop };
}

describe("agent credentials are bound to cluster ids", { timeout: 60_000 }, () => {
  it("a stream with another cluster's token is rejected and writes nothing", async () => {
    const { sink, server } = await startCore();
    const err = await rawStream(server.port, [hello("cluster-a")], TOKEN_B);
    assert.equal(err?.code, 7, err?.message); // PERMISSION_DENIED
    assert.match(err.message, /agent-b.*may not stream cluster "cluster-a"/);
    assert.equal(sink.clusters.has("cluster-a"), false);
  });

  it("never lets another credential take over a live cluster (the real agent keeps its data)", async () => {
    const { sink, server } = await startCore({
      credentials: [
        { name: "agent-a", token: TOKEN_A, clusters: ["cluster-a"] },
        // A second credential also allowed cluster-a (e.g. a mistake in the file).
        { name: "other", token: TOKEN_B, clusters: ["cluster-a", "cluster-b"] },
      ],
    });
    const { agent } = startAgent(`http://127.0.0.1:${server.port}`, "cluster-a", TOKEN_A);
    await sink.until((s) => (s.objects.get("cluster-a")?.size ?? 0) === 2);
    const err = await rawStream(
      server.port,
      [hello("cluster-a"), snapshotBegin(1), snapshotEnd(2, 0)],
      TOKEN_B,
    );
    assert.equal(err?.code, 7, err?.message);
    assert.match(err.message, /streamed by another agent credential/);
    assert.equal(agent.status, "streaming");
    assert.equal(sink.objects.get("cluster-a")?.size, 2);
  });

  it("a throwaway id that never sends a snapshot is not kept", async () => {
    const { sink, server, core } = await startCore({
      credentials: [{ name: "any", token: TOKEN_A, clusters: ["*"] }],
    });
    const err = await rawStream(server.port, [hello("probe-1"), { body: { case: undefined } }], TOKEN_A);
    assert.equal(err?.code, 3);
    assert.equal(core.clusters.has("probe-1"), false);
    assert.equal(sink.clusters.has("probe-1"), false);
  });

  it("checks credentials files and refuses weak or unbound entries", () => {
    const dir = mkdtempSync(join(tmpdir(), "wave-creds-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, "b.token"), `${TOKEN_B}\n`);
    writeFileSync(
      join(dir, "creds.yaml"),
      [
        "- name: a",
        `  token: ${TOKEN_A}`,
        "  clusters: [cluster-a]",
        "- name: b",
        `  tokenFile: ${join(dir, "b.token")}`,
        "  identity: wave-agent-b",
        "  clusters: [cluster-b]",
      ].join("\n"),
    );
    const creds = loadCredentials(join(dir, "creds.yaml"));
    assert.deepEqual(creds[1], {
      name: "b",
      token: TOKEN_B,
      identity: "wave-agent-b",
      clusters: ["cluster-b"],
    });
    const auth = new AgentAuthenticator(creds);
    assert.equal(auth.authenticate(`Bearer ${TOKEN_B}`, []).ok, false);
    assert.equal(auth.authenticate(`Bearer ${TOKEN_B}`, ["wave-agent-b"]).ok, true);
    assert.throws(
      () => new AgentAuthenticator([{ name: "x", token: "short", clusters: ["a"] }]),
      CredentialError,
    );
    assert.throws(
      () => new AgentAuthenticator([{ name: "x", token: TOKEN_A, clusters: [] }]),
      CredentialError,
    );
  });
});

describe("client-certificate identity", { timeout: 60_000 }, () => {
  let dir = "";
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "wave-mtls-id-"));
    makePki(dir, [
      { dir: "server", cn: "localhost", ext: SERVER_EXT },
      { dir: "agent-a", cn: "wave-agent-a", ext: CLIENT_EXT },
      { dir: "agent-b", cn: "wave-agent-b", ext: CLIENT_EXT },
    ]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a valid token over another agent's certificate is refused", async () => {
    const { sink, server } = await startCore({
      credentials: [
        { name: "a", token: TOKEN_A, identity: "wave-agent-a", clusters: ["cluster-a"] },
        { name: "b", token: TOKEN_B, identity: "wave-agent-b", clusters: ["cluster-b"] },
      ],
      tls: {
        certFile: join(dir, "server/tls.crt"),
        keyFile: join(dir, "server/tls.key"),
        clientCaFile: join(dir, "ca/ca.crt"),
      },
    });
    const tls = (who: string) => ({
      caFile: join(dir, "ca/ca.crt"),
      certFile: join(dir, `${who}/tls.crt`),
      keyFile: join(dir, `${who}/tls.key`),
    });
    const url = `https://127.0.0.1:${server.port}`;
    const wrong = startAgent(url, "cluster-a", TOKEN_A, { tls: tls("agent-b") });
    await wrong.agent.until((a) => a.status === "backoff" || a.status === "stopped");
    await wrong.stop();
    assert.match(await wrong.registry.render(), /wave_agent_stream_errors_total\{code="Unauthenticated"\} 1/);
    assert.equal(sink.clusters.has("cluster-a"), false);
    const right = startAgent(url, "cluster-a", TOKEN_A, { tls: tls("agent-a") });
    await sink.until((s) => (s.objects.get("cluster-a")?.size ?? 0) === 2);
    assert.equal(right.agent.status, "streaming");
  });

  it("a credential with an identity needs mutual TLS on the server", async () => {
    await assert.rejects(
      startIngestServer({
        core: new IngestCore({ sink: new MemorySink() }),
        port: 0,
        host: "127.0.0.1",
        credentials: [{ name: "a", identity: "wave-agent-a", clusters: ["a"] }],
      }),
      /mutual TLS is off/,
    );
  });
});

describe("snapshots are bounded", { timeout: 60_000 }, () => {
  it("one with more objects than the bound is rejected and logged; no base is left to resume from", async () => {
    const { server, core, logs } = await startCore({ core: { maxSnapshotObjects: 1000 } });
    const big = Array.from({ length: 200 }, (_, i) => wire(node(i)));
    const msgs: Msg[] = [hello("cluster-a"), snapshotBegin(1)];
    for (let i = 0; i < 20; i++) msgs.push(snapshotChunk(2 + i, big));
    const err = await rawStream(server.port, msgs, TOKEN_A);
    assert.equal(err?.code, 8, err?.message); // RESOURCE_EXHAUSTED
    assert.match(err.message, /snapshot exceeds 1000 objects/);
    assert.ok(logs.some((l) => l.msg === "agent snapshot rejected"));
    // Its first chunks were applied as they streamed; the cluster has no complete snapshot.
    assert.equal(core.clusters.get("cluster-a")?.hasBase ?? false, false);
  });

  it("one that never ends is cut at the duration bound", async () => {
    const clock = new FakeClock();
    const { server, logs } = await startCore({ core: { maxSnapshotMs: 60_000, clock } });
    const msgs: Msg[] = [hello("cluster-a"), snapshotBegin(1), snapshotChunk(2, [wire(node(1))])];
    const pending = rawStream(server.port, msgs, TOKEN_A);
    while (clock.pending === 0) await new Promise((r) => setImmediate(r));
    await clock.advance(60_000);
    const err = await pending;
    assert.equal(err?.code, 4, err?.message); // DEADLINE_EXCEEDED
    assert.match(err.message, /snapshot not complete within 60000 ms/);
    assert.ok(logs.some((l) => l.msg === "agent snapshot rejected"));
  });
});

/** A Pod whose spec holds `n` empty objects: `[{},{},…]`, ~25× its bytes once parsed. */
const crafted = (name: string, n: number) => ({
  kind: kindToProto("Pod"),
  json: new TextEncoder().encode(
    `{"metadata":{"name":"${name}","namespace":"x"},"spec":{"x":[${Array(n).fill("{}").join(",")}]}}`,
  ),
});

describe("decoding is bounded per object and per byte (issue 32)", { timeout: 60_000 }, () => {
  it("a crafted [{},{},…] snapshot object is refused before it is parsed, with the reason", async () => {
    const { server, core, logs, sink } = await startCore();
    const err = await rawStream(
      server.port,
      [hello("cluster-a"), snapshotBegin(1), snapshotChunk(2, [wire(node(1)), crafted("p", 1000)])],
      TOKEN_A,
    );
    assert.equal(err?.code, 8, err?.message); // RESOURCE_EXHAUSTED
    assert.match(
      err.message,
      /snapshot object 2: object of 3\d{3} bytes would take ~\d+ bytes decoded \(more than 8× its size/,
    );
    assert.ok(logs.some((l) => l.msg === "agent snapshot rejected" && String(l.error).includes("8×")));
    assert.equal(sink.objects.get("cluster-a"), undefined);
    assert.equal(core.clusters.get("cluster-a"), undefined);
  });

  it("a delta larger than any Kubernetes object is refused, logged, and nothing of it is kept", async () => {
    const { server, logs, sink } = await startCore({ core: { decodeLimits: { maxObjectBytes: 64 * 1024 } } });
    const p = pod(1, 1);
    p.object.metadata.annotations = { big: "h".repeat(70_000) };
    const big = wire(p);
    const err = await rawStream(
      server.port,
      [...sessionWithSnapshot("cluster-a", [wire(nodePool("default"))]), upsert(4, big)],
      TOKEN_A,
    );
    assert.equal(err?.code, 8, err?.message);
    assert.match(err.message, /delta 4: object of 7\d{4} bytes exceeds 65536 bytes/);
    assert.ok(logs.some((l) => l.msg === "agent object rejected"));
    assert.equal(sink.objects.get("cluster-a")?.size, 1);
  });

  it("one chunk's decoded estimate is bounded too", async () => {
    const { server } = await startCore({ core: { maxChunkHeapBytes: 100_000 } });
    const objects = Array.from({ length: 200 }, (_, i) => wire(node(i)));
    const err = await rawStream(
      server.port,
      [hello("cluster-a"), snapshotBegin(1), snapshotChunk(2, objects)],
      TOKEN_A,
    );
    assert.equal(err?.code, 8, err?.message);
    assert.match(err.message, /snapshot chunk would take ~\d+ bytes decoded, more than 100000/);
  });

  it("real objects pass: a cluster's Nodes, NodeClaims, Pods and NodePools, streamed by the agent", async () => {
    const { server, sink } = await startCore();
    const objects = syntheticCluster({ nodes: 20, pods: 300, nodeClaims: 20 });
    startAgent(`http://127.0.0.1:${server.port}`, "cluster-a", TOKEN_A, {
      source: new MemorySource(objects),
    });
    await sink.until((x) => (x.objects.get("cluster-a")?.size ?? 0) === objects.length);
  });
});

describe("agent timestamps", { timeout: 60_000 }, () => {
  it("an out-of-range observed_at is INVALID_ARGUMENT, not a storage failure", async () => {
    const { server, logs } = await startCore();
    const err = await rawStream(
      server.port,
      [hello("cluster-a"), snapshotBegin(1), snapshotEnd(2, 0), upsert(3, wire(node(1)), 10n ** 18n)],
      TOKEN_A,
    );
    assert.equal(err?.code, 3, err?.message);
    assert.match(err.message, /observed_at_ms .* is not a valid time/);
    assert.equal(
      logs.some((l) => l.msg === "sink write failed"),
      false,
    );
  });
});
