// Server-sent events: one writer per client, frames built by a pure function, heartbeats so
// proxies keep the connection, and back-pressure handled by dropping stale frames (a client
// that cannot keep up gets the newest snapshot, not a queue of old ones).
import type { FastifyReply, FastifyRequest } from "fastify";

export function sseFrame(event: string, data: unknown, id?: number): string {
  const lines = JSON.stringify(data).split("\n");
  return `${id === undefined ? "" : `id: ${id}\n`}event: ${event}\n${lines.map((l) => `data: ${l}`).join("\n")}\n\n`;
}

/** The same frame from data already serialized by JSON.stringify (which never emits a newline). */
export function sseFrameJson(event: string, json: string, id?: number): string {
  return `${id === undefined ? "" : `id: ${id}\n`}event: ${event}\ndata: ${json}\n\n`;
}

export interface SseStream {
  send(event: string, data: unknown): void;
  /** `send` for a payload serialized once and shared between clients. */
  sendJson(event: string, json: string): void;
  readonly closed: boolean;
}

/**
 * Takes over the reply as an event stream. `onOpen` gets the stream and returns a cleanup that
 * runs when the client goes away.
 */
export function openSse(
  req: FastifyRequest,
  reply: FastifyReply,
  onOpen: (stream: SseStream) => () => void,
  heartbeatMs = 15000,
): void {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  res.write(": wave\n\n");
  let closed = false;
  let pending: string | undefined;
  let id = 0;
  const flush = (): void => {
    if (pending === undefined || closed) return;
    const frame = pending;
    pending = undefined;
    if (!res.write(frame)) res.once("drain", flush);
  };
  const stream: SseStream = {
    send(event, data) {
      if (closed) return;
      pending = sseFrame(event, data, ++id);
      if (!res.writableNeedDrain) flush();
    },
    sendJson(event, json) {
      if (closed) return;
      pending = sseFrameJson(event, json, ++id);
      if (!res.writableNeedDrain) flush();
    },
    get closed() {
      return closed;
    },
  };
  const heartbeat = setInterval(() => {
    if (!res.writableNeedDrain) res.write(": ping\n\n");
  }, heartbeatMs);
  heartbeat.unref();
  const cleanup = onOpen(stream);
  const close = (): void => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    cleanup();
  };
  req.raw.on("close", close);
  res.on("close", close);
  res.on("error", close);
}
