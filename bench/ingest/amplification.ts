// Snapshot amplification (issue 32): crafted agent objects against a real core (the ingest
// bench's core child: IngestCore + ClusterHub on SQLite over gRPC, V8 tuned as `wave core`), and
// core's RSS while they arrive and after the stream ended. (1) a 60 MiB snapshot of Pods whose
// spec is `[{},{},…]` (~25× its bytes once parsed), (2) three 15 MiB deltas of the same shape
// after a valid snapshot. Fails when core grew more than --max-mib (256) or kept more than
// --kept-mib (64) after the stream ended.
//
//   npm run bench:amplification [-- --snapshot-mib 60 --delta-mib 15 --max-mib 256 --kept-mib 64]
import { fork } from "node:child_process";
import { parseArgs } from "node:util";
import { nodePool } from "../../src/agent/fixtures.ts";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { Msg } from "../../src/core/ingest/testing.ts";
import { Ingest } from "../../src/gen/wave/v1/ingest_pb.ts";
import { encodeJson, kindToProto } from "../../src/wire/wire.ts";

const { values: args } = parseArgs({
  options: {
    "snapshot-mib": { type: "string", default: "60" },
    "delta-mib": { type: "string", default: "15" },
    "max-mib": { type: "string", default: "256" },
    "kept-mib": { type: "string", default: "64" },
  },
});
const MiB = 2 ** 20;
const TOKEN = "bench-amplification-token-0123456789";
const mib = (b: number): string => `${(b / MiB).toFixed(0)} MiB`;

const child = fork(new URL("./core-child.ts", import.meta.url), [], {
  env: { ...process.env, WAVE_BENCH_TOKEN: TOKEN, WAVE_BENCH_SINK: "hub" },
  execArgv: ["--expose-gc"],
});
const ask = <T>(type: string, extra: object = {}): Promise<T> =>
  new Promise((resolve) => {
    const on = (m: { type: string }): void => {
      if (m.type !== type) return;
      child.off("message", on);
      resolve(m as T);
    };
    child.on("message", on);
    if (type !== "ready") child.send({ type, ...extra });
  });
child.setMaxListeners(100);
const { port } = await ask<{ port: number }>("ready");
const rss = async (gc = false): Promise<number> => (await ask<{ rss: number }>("stats", { gc })).rss;

/** A Pod of about `bytes` whose spec holds empty objects: `[{},{},…]`. */
function craftedPod(name: string, bytes: number) {
  const n = Math.floor(bytes / 3);
  const json = new TextEncoder().encode(
    `{"metadata":{"name":"${name}","namespace":"x"},"spec":{"x":[${"{},".repeat(n - 1)}{}]}}`,
  );
  return { kind: kindToProto("Pod"), json };
}

/**
 * Sends `msgs` on one stream and waits for core to end it (as src/core/ingest/testing.ts
 * rawStream), over a session allowed 256 MB (Node's 10 MB would refuse a 15 MiB message itself).
 */
async function send(msgs: Msg[]): Promise<ConnectError | undefined> {
  const url = `http://127.0.0.1:${port}`;
  const sessions = new Http2SessionManager(url, {}, { maxSessionMemory: 256 });
  const client = createClient(Ingest, createGrpcTransport({ baseUrl: url, sessionManager: sessions }));
  const ac = new AbortController();
  async function* requests(): AsyncGenerator<Msg> {
    yield* msgs;
    await new Promise<void>((r) => ac.signal.addEventListener("abort", () => r(), { once: true }));
  }
  try {
    for await (const _ of client.stream(requests(), {
      headers: { authorization: `Bearer ${TOKEN}` },
      signal: ac.signal,
    })) {
      // Acks.
    }
    return undefined;
  } catch (err) {
    return ConnectError.from(err);
  } finally {
    ac.abort();
    sessions.abort();
  }
}

let sessions = 0;
const hello = (): Msg => ({
  body: { case: "hello", value: { clusterId: "bench", sessionId: `s${++sessions}`, agentVersion: "bench" } },
});

async function measure(what: string, msgs: Msg[]): Promise<{ grew: number; kept: number }> {
  const before = await rss(true);
  let peak = before;
  const sampler = setInterval(() => void rss().then((r) => (peak = Math.max(peak, r))), 50);
  const err = await send(msgs);
  clearInterval(sampler);
  peak = Math.max(peak, await rss());
  await new Promise((r) => setTimeout(r, 500));
  const after = await rss(true);
  console.log(`${what}: core answered ${err ? `${Code[err.code]} "${err.rawMessage}"` : "OK"}`);
  console.log(
    `  core RSS ${mib(before)} → peak ${mib(peak)} (+${mib(peak - before)}), ${mib(after)} after the stream ended (+${mib(after - before)})`,
  );
  return { grew: peak - before, kept: after - before };
}

const snapshotBytes = Number(args["snapshot-mib"]) * MiB;
const deltaBytes = Number(args["delta-mib"]) * MiB;
// (1) the crafted snapshot: 1 MiB Pods, 4 per chunk.
const snap: Msg[] = [hello(), { sequence: 1n, body: { case: "snapshotBegin", value: {} } }];
let seq = 2n;
const perObject = MiB;
const count = Math.ceil(snapshotBytes / perObject);
for (let i = 0; i < count; i += 4)
  snap.push({
    sequence: seq++,
    body: {
      case: "snapshotChunk",
      value: {
        objects: Array.from({ length: Math.min(4, count - i) }, (_, k) => craftedPod(`p${i + k}`, perObject)),
      },
    },
  });
snap.push({ sequence: seq, body: { case: "snapshotEnd", value: { objectCount: BigInt(count) } } });
const r1 = await measure(`${mib(snapshotBytes)} crafted snapshot (${count} Pods of [{},{},…])`, snap);
snap.length = 0;

// (2) three crafted deltas after a valid snapshot.
const pool = nodePool("default");
const deltas: Msg[] = [
  hello(),
  { sequence: 1n, body: { case: "snapshotBegin", value: {} } },
  {
    sequence: 2n,
    body: {
      case: "snapshotChunk",
      value: { objects: [{ kind: kindToProto(pool.kind), json: encodeJson(pool) }] },
    },
  },
  { sequence: 3n, body: { case: "snapshotEnd", value: { objectCount: 1n } } },
];
for (let i = 0; i < 3; i++)
  deltas.push({
    sequence: BigInt(4 + i),
    body: { case: "delta", value: { op: 1, object: craftedPod(`d${i}`, deltaBytes) } },
  });
const r2 = await measure(`three ${mib(deltaBytes)} crafted deltas`, deltas);

const problems: string[] = [];
const max = Number(args["max-mib"]) * MiB;
const kept = Number(args["kept-mib"]) * MiB;
for (const [what, r] of [
  ["snapshot", r1],
  ["deltas", r2],
] as const) {
  if (r.grew > max) problems.push(`${what}: core grew ${mib(r.grew)} > ${mib(max)}`);
  if (r.kept > kept) problems.push(`${what}: core kept ${mib(r.kept)} > ${mib(kept)} after the stream`);
}
child.send({ type: "stop" });
console.log(problems.length === 0 ? "amplification: ok" : `amplification: FAILED (${problems.join("; ")})`);
process.exitCode = problems.length === 0 ? 0 : 1;
