// Reading through the owner (ADR 0012): a cluster's live state is in the memory of the core
// replica its agent streams to. A request for a cluster another live replica owns is answered by
// that replica — forwarded with the caller's own credentials, its answer (or event stream) passed
// back as is — so every replica shows the same figures. A forwarded request is never forwarded
// again; when the owner cannot be reached the replica answers from what it has (the store's
// history, its own copy of the state) and skips that owner until it renews its lease.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Owner, Ownership } from "../../core/hub/ownership.ts";

/** Marks a request one replica forwarded to another (its value: the forwarding replica). */
export const FORWARDED_HEADER = "x-wave-forwarded-by";
/** On every answer that came from another replica: the replica that answered. */
export const OWNER_HEADER = "x-wave-owner";

/** Headers of the owner's answer passed back to the caller. */
const PASSED_BACK = [
  "content-type",
  "cache-control",
  "deprecation",
  "link",
  "x-accel-buffering",
  "www-authenticate",
];

export interface ReadThroughOptions {
  ownership: Ownership;
  /** How long to wait for the owner's response headers (default 5 s). */
  connectTimeoutMs?: number;
}

/** Sends a request to the owner on behalf of the caller; rejects when it cannot be reached. */
export async function askOwner(
  o: ReadThroughOptions,
  owner: Owner,
  req: { method: string; url: string; headers: FastifyRequest["headers"]; body?: unknown },
  signal?: AbortSignal,
): Promise<Response> {
  const ac = new AbortController();
  const onAbort = (): void => ac.abort();
  signal?.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(
    () => ac.abort(new Error("the owner did not answer in time")),
    o.connectTimeoutMs ?? 5_000,
  );
  const hasBody = req.body !== undefined && req.method !== "GET" && req.method !== "HEAD";
  try {
    return await fetch(new URL(req.url, owner.url), {
      method: req.method,
      headers: {
        ...(typeof req.headers.authorization === "string"
          ? { authorization: req.headers.authorization }
          : {}),
        ...(typeof req.headers.accept === "string" ? { accept: req.headers.accept } : {}),
        // A console sign-in: its session is in the shared store, its cookie key shared (docs/auth.md).
        ...(typeof req.headers.cookie === "string" ? { cookie: req.headers.cookie } : {}),
        ...(typeof req.headers["x-wave-client"] === "string"
          ? { "x-wave-client": req.headers["x-wave-client"] }
          : {}),
        ...(hasBody ? { "content-type": "application/json" } : {}),
        [FORWARDED_HEADER]: o.ownership.replica,
      },
      ...(hasBody ? { body: JSON.stringify(req.body) } : {}),
      signal: ac.signal,
    });
  } finally {
    // The timeout bounds the wait for headers only: an event stream may then run for hours.
    clearTimeout(timer);
  }
}

/** The cluster a request is about, when its route is one of a cluster's. */
export function clusterOf(req: FastifyRequest): string | undefined {
  if (!req.routeOptions.url?.startsWith("/api/v1/clusters/:id")) return undefined;
  const id = (req.params as { id?: unknown }).id;
  return typeof id === "string" ? id : undefined;
}

/**
 * The preHandler of every route: answers through the owner when another live replica owns the
 * request's cluster. Resolves true when the answer was sent.
 */
export function readThrough(
  o: ReadThroughOptions,
): (req: FastifyRequest, reply: FastifyReply) => Promise<boolean> {
  return async (req, reply) => {
    const id = clusterOf(req);
    if (id === undefined || req.headers[FORWARDED_HEADER] !== undefined) return false;
    const owner = await o.ownership.otherOwner(id).catch(() => undefined);
    if (!owner) return false;
    const closed = new AbortController();
    reply.raw.on("close", () => closed.abort());
    let res: Response;
    try {
      res = await askOwner(o, owner, req, closed.signal);
    } catch (err) {
      if (closed.signal.aborted) return true; // the caller went away
      o.ownership.unreachable(id, owner);
      req.log.warn({ err, cluster: id, owner: owner.holder }, "cluster owner unreachable; answering locally");
      return false;
    }
    const headers: Record<string, string> = { [OWNER_HEADER]: owner.holder };
    for (const h of PASSED_BACK) {
      const v = res.headers.get(h);
      if (v !== null) headers[h] = v;
    }
    if (!res.headers.get("content-type")?.startsWith("text/event-stream") || !res.body) {
      await reply
        .code(res.status)
        .headers(headers)
        .send(Buffer.from(await res.arrayBuffer()));
      return true;
    }
    // An event stream: relayed chunk by chunk until either side ends it.
    reply.hijack();
    const out = reply.raw;
    out.writeHead(res.status, headers);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    closed.signal.addEventListener("abort", () => void reader.cancel().catch(() => undefined), {
      once: true,
    });
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (!out.write(value))
          await new Promise((r) => {
            out.once("drain", r);
            out.once("close", r);
          });
      }
    } catch {
      // The owner went away (or the caller did): end the stream; EventSource reconnects.
    }
    out.end();
    return true;
  };
}
