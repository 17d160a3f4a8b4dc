// The audit of changes made through Wave (issue 31): every changing route records who (the
// request's identity), what (action, object, before/after summaries), when and from where (client
// address; ui, api or cli) in the store's audit_log. GET /api/v1/clusters/{id}/audit lists them.
import type { FastifyRequest } from "fastify";
import { AUDIT_TEXT_MAX, type AuditRecord, type Store } from "../core/store/store.ts";
import { clientOf } from "./identity.ts";
import { proxyClientAddress } from "./proxy-auth.ts";

export interface Change {
  clusterId: string;
  /** e.g. "spot-policy.put", "spot-policy.delete", "warmup-policy.put", "thrashing.apply". */
  action: string;
  object: string;
  /** The object before and after (null: it did not exist / no longer does). */
  before: unknown;
  after: unknown;
}

/** Records one change for a request; the composition root gives routes one bound to the store. */
export type AuditSink = (req: FastifyRequest, change: Change) => Promise<AuditRecord | undefined>;

/** A value as the audit shows it: compact JSON, cut at the column's size. */
export function summary(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  const json = typeof v === "string" ? v : JSON.stringify(v);
  return json.length <= AUDIT_TEXT_MAX ? json : `${json.slice(0, AUDIT_TEXT_MAX - 1)}…`;
}

/**
 * Where the request came from: the socket's address; behind a trusted auth proxy, the client as
 * the proxy saw it (the rightmost untrusted X-Forwarded-For hop, never the client-chosen first).
 */
export function addressOf(req: FastifyRequest): string {
  const viaProxy = req.identity?.source === "proxy" ? proxyClientAddress(req) : undefined;
  return (viaProxy ?? req.socket.remoteAddress ?? "").slice(0, 64);
}

export function storeAudit(store: Store, now: () => number): AuditSink {
  return async (req, c) => {
    const id = req.identity;
    if (!id) return undefined;
    return store.appendAudit({
      clusterId: c.clusterId,
      at: now(),
      subject: id.subject,
      groups: id.groups,
      source: id.source,
      via: clientOf(req),
      address: addressOf(req),
      action: c.action,
      object: c.object,
      before: summary(c.before),
      after: summary(c.after),
    });
  };
}
