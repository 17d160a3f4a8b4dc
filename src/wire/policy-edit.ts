// Policy edits on the agent stream (issue 31, ADR 0018): core sends a change to a SpotPolicy or
// WarmupPolicy custom resource down its cluster's stream, the agent server-side applies it and
// answers. Plain shapes here, the codec both sides import.
import { create } from "@bufbuild/protobuf";
import {
  PolicyEdit_Op,
  PolicyEditResult_Outcome,
  PolicyEditResultSchema,
  PolicyEditSchema,
} from "../gen/wave/v1/ingest_pb.ts";
import type {
  PolicyEdit as PolicyEditMsg,
  PolicyEditResult as PolicyEditResultMsg,
} from "../gen/wave/v1/ingest_pb.ts";
import { SPOT_POLICY_KIND, WARMUP_POLICY_KIND } from "../objects/policy-crds.ts";
import { WireError } from "./wire.ts";

export type PolicyCrKind = typeof SPOT_POLICY_KIND | typeof WARMUP_POLICY_KIND;
export type PolicyEditOp = "apply" | "create" | "delete";
export type PolicyEditOutcome = "applied" | "conflict" | "exists" | "not-found" | "failed";

export interface WirePolicyEdit {
  id: number;
  kind: PolicyCrKind;
  /** Empty for WarmupPolicy (cluster-scoped). */
  namespace: string;
  name: string;
  op: PolicyEditOp;
  /** apply/create: the apply configuration (apiVersion, kind, metadata, spec). */
  object?: unknown;
  force: boolean;
}

export interface WirePolicyEditResult {
  id: number;
  outcome: PolicyEditOutcome;
  message: string;
  conflicts: { manager: string; field: string }[];
  /** The resource after the edit, as the apiserver returned it. */
  object?: unknown;
}

const OPS: Record<PolicyEditOp, PolicyEdit_Op> = {
  apply: PolicyEdit_Op.APPLY,
  create: PolicyEdit_Op.CREATE,
  delete: PolicyEdit_Op.DELETE,
};
const OUTCOMES: Record<PolicyEditOutcome, PolicyEditResult_Outcome> = {
  applied: PolicyEditResult_Outcome.APPLIED,
  conflict: PolicyEditResult_Outcome.CONFLICT,
  exists: PolicyEditResult_Outcome.EXISTS,
  "not-found": PolicyEditResult_Outcome.NOT_FOUND,
  failed: PolicyEditResult_Outcome.FAILED,
};
const KINDS: readonly PolicyCrKind[] = [SPOT_POLICY_KIND, WARMUP_POLICY_KIND];
const decoder = new TextDecoder("utf-8", { fatal: true });
/** Longest message or conflict list core keeps from an agent's answer. */
const MAX_MESSAGE = 4096;
const MAX_CONFLICTS = 64;

const json = (v: unknown): Uint8Array => Buffer.from(JSON.stringify(v), "utf8");
const parse = (b: Uint8Array, what: string): unknown => {
  if (b.length === 0) return undefined;
  try {
    return JSON.parse(decoder.decode(b)) as unknown;
  } catch {
    throw new WireError(`${what}: json is not UTF-8 JSON`);
  }
};

export function editToProto(e: WirePolicyEdit): PolicyEditMsg {
  return create(PolicyEditSchema, {
    id: BigInt(e.id),
    kind: e.kind,
    namespace: e.namespace,
    name: e.name,
    op: OPS[e.op],
    json: e.object === undefined ? new Uint8Array() : json(e.object),
    force: e.force,
  });
}

/** The agent's reading of an edit; a bad one is answered as failed, never applied. */
export function editFromProto(m: PolicyEditMsg): WirePolicyEdit {
  const kind = KINDS.find((k) => k === m.kind);
  if (!kind) throw new WireError(`policy edit: unknown kind ${JSON.stringify(m.kind)}`);
  const op = (Object.keys(OPS) as PolicyEditOp[]).find((k) => OPS[k] === m.op);
  if (!op) throw new WireError(`policy edit: unknown op ${m.op}`);
  if (m.name === "") throw new WireError("policy edit: name is required");
  const object = parse(m.json, "policy edit");
  if (op !== "delete" && (object === null || typeof object !== "object"))
    throw new WireError(`policy edit: ${op} needs the object`);
  return { id: Number(m.id), kind, namespace: m.namespace, name: m.name, op, object, force: m.force };
}

export function resultToProto(r: WirePolicyEditResult): PolicyEditResultMsg {
  return create(PolicyEditResultSchema, {
    id: BigInt(r.id),
    outcome: OUTCOMES[r.outcome],
    message: r.message,
    conflicts: r.conflicts,
    json: r.object === undefined ? new Uint8Array() : json(r.object),
  });
}

/** Core's reading of an agent's answer; a bad one is a protocol violation (WireError). */
export function resultFromProto(m: PolicyEditResultMsg): WirePolicyEditResult {
  const outcome = (Object.keys(OUTCOMES) as PolicyEditOutcome[]).find((k) => OUTCOMES[k] === m.outcome);
  if (!outcome) throw new WireError(`policy edit result: unknown outcome ${m.outcome}`);
  if (m.conflicts.length > MAX_CONFLICTS)
    throw new WireError(`policy edit result: more than ${MAX_CONFLICTS} conflicts`);
  const object = parse(m.json, "policy edit result");
  return {
    id: Number(m.id),
    outcome,
    message: m.message.slice(0, MAX_MESSAGE),
    conflicts: m.conflicts.map((c) => ({ manager: c.manager.slice(0, 253), field: c.field.slice(0, 512) })),
    ...(object === undefined ? {} : { object }),
  };
}
