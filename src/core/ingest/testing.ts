// Test helper: a hand-driven agent stream, to send core exactly the messages a test wants.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { readFileSync } from "node:fs";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Ingest } from "../../gen/wave/v1/ingest_pb.ts";
import type { AgentMessageSchema, KubeObjectSchema } from "../../gen/wave/v1/ingest_pb.ts";
import { encodeJson, kindToProto, type WireObject } from "../../wire/wire.ts";

export type Msg = MessageInitShape<typeof AgentMessageSchema>;
type StreamedObject = MessageInitShape<typeof KubeObjectSchema>;

let sessions = 0;
/** The hello of a new agent session for `clusterId` (sequences are per session). */
export const hello = (clusterId: string): Msg => ({
  body: { case: "hello", value: { clusterId, sessionId: `s-${++sessions}`, agentVersion: "raw" } },
});
/** An object as the stream carries it. */
export const wire = (o: WireObject): StreamedObject => ({ kind: kindToProto(o.kind), json: encodeJson(o) });
export const snapshotBegin = (sequence: number): Msg => ({
  sequence: BigInt(sequence),
  body: { case: "snapshotBegin", value: {} },
});
export const snapshotChunk = (sequence: number, objects: StreamedObject[]): Msg => ({
  sequence: BigInt(sequence),
  body: { case: "snapshotChunk", value: { objects } },
});
export const snapshotEnd = (sequence: number, objectCount: number): Msg => ({
  sequence: BigInt(sequence),
  body: { case: "snapshotEnd", value: { objectCount: BigInt(objectCount) } },
});
/** A new session of `clusterId` and its complete snapshot of `objects` in one chunk (sequences 1–3). */
export const sessionWithSnapshot = (clusterId: string, objects: StreamedObject[]): Msg[] => [
  hello(clusterId),
  snapshotBegin(1),
  snapshotChunk(2, objects),
  snapshotEnd(3, objects.length),
];
/** A delta that creates or updates `object`. */
export const upsert = (sequence: number, object: StreamedObject, observedAtMs?: bigint): Msg => ({
  sequence: BigInt(sequence),
  body: { case: "delta", value: { op: 1, object, ...(observedAtMs === undefined ? {} : { observedAtMs }) } },
});

/**
 * Sends `msgs` on one stream, then waits for core to end it. Returns the error status core
 * answered with, or undefined if it ended the stream cleanly. With `tls.caFile` it speaks TLS to a
 * core whose certificate that CA signed for "localhost".
 */
export async function rawStream(
  port: number,
  msgs: Msg[],
  token: string | undefined,
  tls?: { caFile: string },
): Promise<ConnectError | undefined> {
  const transport = tls
    ? createGrpcTransport({
        baseUrl: `https://127.0.0.1:${port}`,
        nodeOptions: { ca: readFileSync(tls.caFile), servername: "localhost" },
      })
    : createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` });
  const client = createClient(Ingest, transport);
  const ac = new AbortController();
  async function* requests(): AsyncGenerator<Msg> {
    yield* msgs;
    // Keep the request side open: core must end the stream itself.
    await new Promise<void>((r) => ac.signal.addEventListener("abort", () => r(), { once: true }));
  }
  try {
    const headers = token === undefined ? undefined : { authorization: `Bearer ${token}` };
    for await (const _ of client.stream(requests(), { headers, signal: ac.signal })) {
      // HelloAcks and Acks are not what these tests look at.
    }
    return undefined;
  } catch (err) {
    return ConnectError.from(err);
  } finally {
    ac.abort();
  }
}

/** Resolves with `p`, or rejects after `ms`: a bound on a wait that must end, never a pause. */
export async function within<T>(ms: number, p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${String(ms)} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
