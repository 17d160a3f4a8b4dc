// The warmup messages of the agent stream (ADR 0014): core sends a cluster's warmup policies to
// the agent that runs its warmup controller, the agent sends back what the controller did. Plain
// shapes here; the agent validates policies (src/policy/validate-warmup.ts), core checks events.
import { create } from "@bufbuild/protobuf";
import { WarmupEventSchema, WarmupPolicySchema } from "../gen/wave/v1/ingest_pb.ts";
import type {
  WarmupEvent as WarmupEventMsg,
  WarmupPolicy as WarmupPolicyMsg,
} from "../gen/wave/v1/ingest_pb.ts";
import { WireError } from "./wire.ts";

/** One warmup policy as core stores it: the NodePool and the policy's JSON value. */
export interface WirePolicy {
  pool: string;
  value: unknown;
}

export const WIRE_WARMUP_EVENT_TYPES = ["created", "hit", "miss", "prepull"] as const;

/** A warmup event on the wire: src/warmup/stats.ts WarmupEvent flattened (reason = outcome). */
export interface WireWarmupEvent {
  type: (typeof WIRE_WARMUP_EVENT_TYPES)[number];
  pool: string;
  at: number;
  node?: string | undefined;
  pod?: string | undefined;
  image?: string | undefined;
  reason?: string | undefined;
  /** hit, miss: when the warm time began (epoch ms). */
  since?: number | undefined;
  /** hit: the hitting pod's own start, seconds. */
  seconds?: number | undefined;
}

/** Longest pod start core accepts, seconds (a day: beyond it the figure is not a start). */
const MAX_SECONDS = 86_400;

const decoder = new TextDecoder("utf-8", { fatal: true });
/** The last instant a JavaScript Date can hold (epoch ms). */
const MAX_EPOCH_MS = 8_640_000_000_000_000;
/** Longest pool, node, pod, image or reason core accepts (an image reference can be long). */
const MAX_FIELD = 1024;

export function policiesToProto(policies: readonly WirePolicy[]): WarmupPolicyMsg[] {
  return policies.map((p) =>
    create(WarmupPolicySchema, { pool: p.pool, json: Buffer.from(JSON.stringify(p.value), "utf8") }),
  );
}

/** Undecodable entries are left out (the agent keeps the rest, and says so in its log). */
export function policiesFromProto(msgs: readonly WarmupPolicyMsg[]): {
  policies: WirePolicy[];
  bad: string[];
} {
  const policies: WirePolicy[] = [];
  const bad: string[] = [];
  for (const m of msgs) {
    try {
      policies.push({ pool: m.pool, value: JSON.parse(decoder.decode(m.json)) as unknown });
    } catch {
      bad.push(m.pool);
    }
  }
  return { policies, bad };
}

export function eventToProto(e: WireWarmupEvent): WarmupEventMsg {
  return create(WarmupEventSchema, {
    type: e.type,
    pool: e.pool,
    atMs: BigInt(Math.trunc(e.at)),
    node: e.node ?? "",
    pod: e.pod ?? "",
    image: e.image ?? "",
    reason: e.reason ?? "",
    sinceMs: BigInt(Math.trunc(e.since ?? 0)),
    ...(e.seconds === undefined ? {} : { seconds: e.seconds }),
  });
}

/** Checks one event from an agent; a bad one is a protocol violation (WireError). */
export function eventFromProto(m: WarmupEventMsg): WireWarmupEvent {
  const type = WIRE_WARMUP_EVENT_TYPES.find((t) => t === m.type);
  if (!type) throw new WireError(`warmup event: unknown type ${JSON.stringify(m.type)}`);
  if (m.pool === "") throw new WireError("warmup event: pool is required");
  const at = Number(m.atMs);
  if (!Number.isSafeInteger(at) || at < 0 || at > MAX_EPOCH_MS)
    throw new WireError(`warmup event: at_ms ${m.atMs} is not a valid time`);
  for (const [k, v] of Object.entries({
    pool: m.pool,
    node: m.node,
    pod: m.pod,
    image: m.image,
    reason: m.reason,
  }))
    if (v.length > MAX_FIELD) throw new WireError(`warmup event: ${k} longer than ${MAX_FIELD}`);
  // Empty strings are absent fields (proto3): left out rather than carried as undefined.
  const out: WireWarmupEvent = { type, pool: m.pool, at };
  if (m.node !== "") out.node = m.node;
  if (m.pod !== "") out.pod = m.pod;
  if (m.image !== "") out.image = m.image;
  if (m.reason !== "") out.reason = m.reason;
  const since = Number(m.sinceMs);
  if (!Number.isSafeInteger(since) || since < 0 || since > MAX_EPOCH_MS)
    throw new WireError(`warmup event: since_ms ${m.sinceMs} is not a valid time`);
  if (since > 0) out.since = since;
  if (m.seconds !== undefined) {
    if (!Number.isFinite(m.seconds) || m.seconds < 0 || m.seconds > MAX_SECONDS)
      throw new WireError(`warmup event: seconds ${m.seconds} is not a pod start`);
    out.seconds = m.seconds;
  }
  return out;
}
