// The gRPC endpoint agents stream to: HTTP/2 (TLS, optionally mutual; plaintext for local use),
// bearer-token authentication, and the Ingest service served by IngestCore.
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Ingest } from "../../gen/wave/v1/ingest_pb.ts";
import type { AgentMessage } from "../../gen/wave/v1/ingest_pb.ts";
import { realClock } from "../../shared/clock.ts";
import type { Clock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import type { Logger } from "../../shared/log.ts";
import type { CoreMessageInit, IngestCore } from "./core.ts";
import { DEFAULT_PEER_CHECK, watchPeer } from "./peer-watch.ts";
import type { PeerCheck } from "./peer-watch.ts";

const WINDOW = 8 << 20;
const SESSION_WINDOW = 32 << 20;

export interface IngestServerTls {
  certFile: string;
  keyFile: string;
  /** CA that signs agent client certificates; with it, agents must present one (mutual TLS). */
  clientCaFile?: string;
}

export interface IngestServerOptions {
  core: IngestCore;
  host?: string;
  /** 0 picks a free port (tests). */
  port: number;
  tls?: IngestServerTls;
  /**
   * Accepted bearer tokens. Omit only for a local, plaintext setup: then any agent is accepted.
   */
  tokens?: readonly string[];
  log?: Logger;
  /** Pings that find agents which vanished without closing their connection (default 20 s / 20 s). */
  peerCheck?: PeerCheck;
  /** Times the peer check (default: real time). */
  clock?: Clock;
}

export interface IngestServer {
  port: number;
  /** Stops accepting and cuts every open stream (agents reconnect elsewhere or later). */
  close(): Promise<void>;
}

/** Checks `authorization: Bearer <token>` against the accepted tokens in constant time. */
export function bearerCheck(tokens: readonly string[]): (header: string | null) => boolean {
  const digests = tokens.map((t) => createHash("sha256").update(t).digest());
  return (header) => {
    const m = /^Bearer (.+)$/.exec(header ?? "");
    if (!m?.[1]) return false;
    const d = createHash("sha256").update(m[1]).digest();
    let ok = false;
    for (const x of digests) ok = timingSafeEqual(x, d) || ok;
    return ok;
  };
}

export function ingestRoutes(
  core: IngestCore,
  tokens: readonly string[] | undefined,
): (router: ConnectRouter) => void {
  const allowed = tokens ? bearerCheck(tokens) : undefined;
  return (router) =>
    router.service(Ingest, {
      stream(requests: AsyncIterable<AgentMessage>, ctx: HandlerContext): AsyncIterable<CoreMessageInit> {
        if (allowed && !allowed(ctx.requestHeader.get("authorization"))) {
          return rejected(new ConnectError("missing or invalid bearer token", Code.Unauthenticated));
        }
        return core.serve(requests, ctx.signal);
      },
    });
}

/** A response stream that fails at once (the status reaches the agent as the stream's end). */
function rejected(err: ConnectError): AsyncIterable<CoreMessageInit> {
  return {
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(err) }),
  };
}

export async function startIngestServer(opts: IngestServerOptions): Promise<IngestServer> {
  const log = (opts.log ?? silentLogger).child({ component: "ingest-server" });
  if (!opts.tokens) log.warn("ingest server accepts agents without a token");
  if (opts.tokens?.length === 0) throw new Error("ingest server: tokens is empty (no agent could connect)");
  const handler = connectNodeAdapter({
    routes: ingestRoutes(opts.core, opts.tokens),
    readMaxBytes: 64 << 20,
    writeMaxBytes: 64 << 20,
  });
  // Agents upload (snapshots are tens of MiB): a large receive window avoids a WINDOW_UPDATE
  // round trip every 64 KiB.
  const settings = { initialWindowSize: WINDOW };
  const server = opts.tls
    ? http2.createSecureServer(
        {
          settings,
          cert: readFileSync(opts.tls.certFile),
          key: readFileSync(opts.tls.keyFile),
          ...(opts.tls.clientCaFile
            ? { ca: readFileSync(opts.tls.clientCaFile), requestCert: true, rejectUnauthorized: true }
            : {}),
        },
        handler,
      )
    : http2.createServer({ settings }, handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    s.setLocalWindowSize(SESSION_WINDOW);
    const watching = new AbortController();
    s.on("close", () => {
      sessions.delete(s);
      watching.abort();
    });
    const peer = s.socket.remoteAddress;
    void watchPeer(s, opts.peerCheck ?? DEFAULT_PEER_CHECK, opts.clock ?? realClock, watching.signal, (why) =>
      log.warn("closing an agent connection that stopped answering", { peer, why }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host ?? "0.0.0.0", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  log.info("ingest server listening", { port, tls: opts.tls !== undefined, mtls: !!opts.tls?.clientCaFile });
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sessions) s.destroy();
      }),
  };
}
