// The protocol's object codec, shared by the agent (encode) and core (decode): objects travel as
// trimmed JSON of the wire shapes in src/objects/kube.ts inside a typed envelope (ADR 0003).
import { create } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import {
  AgentMessageSchema,
  KubeObjectSchema,
  ObjectKind,
  SnapshotChunkSchema,
} from "../gen/wave/v1/ingest_pb.ts";
import type { AgentMessage, KubeObject as KubeObjectMsg } from "../gen/wave/v1/ingest_pb.ts";
import type { Event, KubeObject, Node, Pod, PodDisruptionBudget } from "../objects/kube.ts";
import type { NodeClaim, NodeOverlay, NodePool } from "../objects/karpenter.ts";
import { namespacedKey } from "../objects/keys.ts";
import type { SpotPolicyResource, WarmupPolicyResource } from "../objects/policy-crds.ts";

export type WireKind =
  | "Node"
  | "Pod"
  | "NodePool"
  | "NodeClaim"
  | "Event"
  | "SpotPolicy"
  | "WarmupPolicy"
  | "PodDisruptionBudget"
  | "NodeOverlay";

export type WireObject =
  | { kind: "Node"; object: Node }
  | { kind: "Pod"; object: Pod }
  | { kind: "NodePool"; object: NodePool }
  | { kind: "NodeClaim"; object: NodeClaim }
  | { kind: "Event"; object: Event }
  | { kind: "SpotPolicy"; object: SpotPolicyResource }
  | { kind: "WarmupPolicy"; object: WarmupPolicyResource }
  | { kind: "PodDisruptionBudget"; object: PodDisruptionBudget }
  | { kind: "NodeOverlay"; object: NodeOverlay };

export const WIRE_KINDS: readonly WireKind[] = [
  "Node",
  "Pod",
  "NodePool",
  "NodeClaim",
  "Event",
  "SpotPolicy",
  "WarmupPolicy",
  "PodDisruptionBudget",
  "NodeOverlay",
];
/**
 * Kinds whose CRD a cluster may not serve — Wave's policy resources, Karpenter's NodeOverlay
 * (v1.8+): the agent streams them without waiting for them, and a 404 leaves them empty.
 */
export const WIRE_POLICY_KINDS: readonly WireKind[] = ["SpotPolicy", "WarmupPolicy", "NodeOverlay"];

const TO_PROTO: Record<WireKind, ObjectKind> = {
  Node: ObjectKind.NODE,
  Pod: ObjectKind.POD,
  NodePool: ObjectKind.NODE_POOL,
  NodeClaim: ObjectKind.NODE_CLAIM,
  Event: ObjectKind.EVENT,
  SpotPolicy: ObjectKind.SPOT_POLICY,
  WarmupPolicy: ObjectKind.WARMUP_POLICY,
  PodDisruptionBudget: ObjectKind.POD_DISRUPTION_BUDGET,
  NodeOverlay: ObjectKind.NODE_OVERLAY,
};

const FROM_PROTO = new Map<number, WireKind>(
  Object.entries(TO_PROTO).map(([k, v]) => [v as number, k as WireKind]),
);

const NAMESPACED: Record<WireKind, boolean> = {
  Node: false,
  Pod: true,
  NodePool: false,
  NodeClaim: false,
  Event: true,
  SpotPolicy: true,
  WarmupPolicy: false,
  PodDisruptionBudget: true,
  NodeOverlay: false,
};

/** A protocol violation in one object: core answers INVALID_ARGUMENT with this message. */
export class WireError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WireError";
  }
}

export function kindToProto(kind: WireKind): ObjectKind {
  return TO_PROTO[kind];
}

export function kindFromProto(kind: number): WireKind | undefined {
  return FROM_PROTO.get(kind);
}

/** "namespace/name" (or "name" for cluster-scoped kinds): the identity of an object per kind. */
export function objectKey(obj: KubeObject): string {
  const { namespace, name } = obj.metadata;
  return namespace ? namespacedKey(namespace, name ?? "") : (name ?? "");
}

const decoder = new TextDecoder("utf-8", { fatal: true });

export function encodeJson(obj: WireObject): Uint8Array {
  // Buffer.from packs small strings into shared slabs: far less per-object overhead than
  // TextEncoder's one ArrayBuffer per call, with 150k objects held by the agent.
  return Buffer.from(JSON.stringify(obj.object), "utf8");
}

export function toMessage(kind: WireKind, json: Uint8Array): KubeObjectMsg {
  return create(KubeObjectSchema, { kind: TO_PROTO[kind], json });
}

/** An object as the agent holds it: its kind and its trimmed JSON text. */
export interface EncodedObject {
  kind: WireKind;
  json: string;
}

// Field numbers from the generated schema, for the hand-written snapshot chunk encoding below.
const AGENT_MESSAGE_SNAPSHOT_CHUNK = AgentMessageSchema.field.snapshotChunk.number;
const TAG_CHUNK_OBJECTS = (SnapshotChunkSchema.field.objects.number << 3) | WireType.LengthDelimited;
const TAG_OBJECT_KIND = (KubeObjectSchema.field.kind.number << 3) | WireType.Varint;
const TAG_OBJECT_JSON = (KubeObjectSchema.field.json.number << 3) | WireType.LengthDelimited;
if (Math.max(TAG_CHUNK_OBJECTS, TAG_OBJECT_KIND, TAG_OBJECT_JSON) > 0x7f)
  throw new Error("wire: tags must be 1 byte");

const varintSize = (n: number): number =>
  n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5;

function putVarint(buf: Buffer, pos: number, n: number): number {
  while (n > 0x7f) {
    buf[pos++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  buf[pos++] = n;
  return pos;
}

/**
 * `AgentMessage{sequence, snapshot_chunk{objects}}`, encoded in one pass straight from the
 * objects' JSON text into one buffer. Building a KubeObject message per object and letting
 * protobuf-es serialize a snapshot was the agent's largest cost (165k small messages, a growing
 * write buffer). The bytes ride in the message's unknown fields, which protobuf-es writes out
 * verbatim: the result is byte-for-byte what `toBinary` gives for the typed message (wire.test.ts).
 * `bytes[i]` is `Buffer.byteLength(objects[i].json)`, already computed when chunking.
 */
export function snapshotChunkMessage(
  sequence: number,
  objects: readonly EncodedObject[],
  bytes: readonly number[],
): AgentMessage {
  let size = 0;
  for (let i = 0; i < objects.length; i++) {
    const n = bytes[i] ?? 0;
    const inner = 2 + 1 + varintSize(n) + n;
    size += 1 + varintSize(inner) + inner;
  }
  // The unknown field's data is everything after its tag: the chunk's length, then the chunk.
  const buf = Buffer.allocUnsafe(varintSize(size) + size);
  let pos = putVarint(buf, 0, size);
  for (let i = 0; i < objects.length; i++) {
    const o = objects[i] as EncodedObject;
    const n = bytes[i] ?? 0;
    buf[pos++] = TAG_CHUNK_OBJECTS;
    pos = putVarint(buf, pos, 2 + 1 + varintSize(n) + n);
    // Enum values of ObjectKind are < 128: one varint byte; the kind field is never 0 (default).
    buf[pos++] = TAG_OBJECT_KIND;
    buf[pos++] = TO_PROTO[o.kind];
    buf[pos++] = TAG_OBJECT_JSON;
    pos = putVarint(buf, pos, n);
    pos += buf.write(o.json, pos, "utf8");
  }
  if (pos !== buf.length) throw new Error(`snapshot chunk: encoded ${pos} bytes, expected ${buf.length}`);
  const msg = create(AgentMessageSchema, { sequence: BigInt(sequence) });
  msg.$unknown = [{ no: AGENT_MESSAGE_SNAPSHOT_CHUNK, wireType: WireType.LengthDelimited, data: buf }];
  return msg;
}

/** Decodes and checks one object; throws WireError with a message naming what is wrong. */
export function decodeObject(msg: { kind: number; json: Uint8Array }): WireObject {
  const kind = FROM_PROTO.get(msg.kind);
  if (kind === undefined) throw new WireError(`unknown object kind ${msg.kind}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(msg.json));
  } catch (err) {
    throw new WireError(`${kind}: object is not valid UTF-8 JSON (${(err as Error).message})`);
  }
  if (!isRecord(parsed)) throw new WireError(`${kind}: object must be a JSON object`);
  const meta = parsed["metadata"];
  if (!isRecord(meta)) throw new WireError(`${kind}: metadata must be an object`);
  const name = meta["name"];
  if (typeof name !== "string" || name === "") throw new WireError(`${kind}: metadata.name is required`);
  const ns = meta["namespace"];
  if (NAMESPACED[kind]) {
    if (typeof ns !== "string" || ns === "") {
      throw new WireError(`${kind} ${name}: metadata.namespace is required`);
    }
  } else if (ns !== undefined && ns !== "") {
    throw new WireError(`${kind} ${name}: cluster-scoped object has a namespace`);
  }
  for (const f of ["labels", "annotations"]) {
    const v = meta[f];
    if (v !== undefined && !isStringMap(v))
      throw new WireError(`${kind} ${name}: metadata.${f} must map strings`);
  }
  if (kind === "Pod" && !isRecord(parsed["spec"])) throw new WireError(`Pod ${name}: spec is required`);
  if (kind === "Event" && !isRecord(parsed["involvedObject"])) {
    throw new WireError(`Event ${name}: involvedObject is required`);
  }
  for (const path of ["status"]) {
    const v = parsed[path];
    if (v !== undefined && !isRecord(v)) throw new WireError(`${kind} ${name}: ${path} must be an object`);
  }
  const status = parsed["status"];
  if (isRecord(status) && status["conditions"] !== undefined && !Array.isArray(status["conditions"])) {
    throw new WireError(`${kind} ${name}: status.conditions must be an array`);
  }
  // The checks above cover what core dereferences; the rest is the wire shape as typed.
  return { kind, object: parsed } as unknown as WireObject;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isStringMap(v: unknown): boolean {
  return isRecord(v) && Object.values(v).every((x) => typeof x === "string");
}
