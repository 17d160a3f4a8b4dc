// The gRPC endpoint agents stream to: HTTP/2 (mutual TLS by default; plaintext for local use),
// credentials bound to cluster ids (auth.ts), and the Ingest service served by IngestCore.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { Code, ConnectError, createContextKey, createContextValues } from "@connectrpc/connect";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { AgentAuthenticator, certificateIdentities, type AgentCredential } from "./auth.ts";
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
/**
 * Streams one connection may have open at once (Node's default: no limit). An agent needs one;
 * each open stream can hold up to a window of unread bytes, so this bounds what one connection
 * can pin. Node clients queue streams above it; a client that ignores it has the extras refused,
 * and after 100 refusals in a row (Node's maxSessionRejectedStreams) its connection is closed.
 */
export const MAX_STREAMS_PER_CONNECTION = 16;

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
   * Who may stream which cluster ids (a token and/or client-certificate identity each). Wins
   * over `tokens`.
   */
  credentials?: readonly AgentCredential[];
  /**
   * Accepted bearer tokens, each for any cluster id (tests, benchmarks). Omit both this and
   * `credentials` only for a local, plaintext setup: then any agent is accepted.
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

/** The identities of the stream's client certificate (empty without mutual TLS). */
export const PEER_IDENTITIES = createContextKey<readonly string[]>([], {
  description: "client certificate identities",
});

/** The credentials a server checks: explicit ones, or each legacy token for any cluster. */
export function authenticatorFor(
  credentials: readonly AgentCredential[] | undefined,
  tokens: readonly string[] | undefined,
): AgentAuthenticator | undefined {
  if (credentials) return new AgentAuthenticator(credentials);
  if (!tokens) return undefined;
  return new AgentAuthenticator(
    tokens.map((token, i) => ({
      name: `token-${i + 1}`,
      tokenSha256: createHash("sha256").update(token).digest("hex"),
      clusters: ["*"],
    })),
  );
}

export function ingestRoutes(
  core: IngestCore,
  auth: AgentAuthenticator | undefined,
): (router: ConnectRouter) => void {
  return (router) =>
    router.service(Ingest, {
      stream(requests: AsyncIterable<AgentMessage>, ctx: HandlerContext): AsyncIterable<CoreMessageInit> {
        if (!auth) return core.serve(requests, ctx.signal);
        const res = auth.authenticate(
          ctx.requestHeader.get("authorization"),
          ctx.values.get(PEER_IDENTITIES),
        );
        if (!res.ok) {
          core.log.warn("agent stream refused", { reason: res.reason });
          return rejected(new ConnectError(res.reason, Code.Unauthenticated));
        }
        return core.serve(requests, ctx.signal, res.principal);
      },
    });
}

/** A response stream that fails at once (the status reaches the agent as the stream's end). */
function rejected(err: ConnectError): AsyncIterable<CoreMessageInit> {
  return {
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(err) }),
  };
}

/**
 * Releases a stream once its response is complete, even though the agent has not finished sending.
 *
 * Core answers before the request ends whenever it rejects a stream (bad hello, oversize snapshot,
 * superseded) while the agent is still uploading. Connect resets such a stream with NO_ERROR, but
 * Node destroys a server stream closed with NO_ERROR only once its buffered request data has been
 * read, and nobody reads it any more: the stream, with up to a window (8 MiB) of request bytes,
 * stayed with the connection until it closed. A peer could pin memory that way without limit,
 * one rejected stream at a time.
 *
 * Every gRPC response ends with trailers. Node sends them on the setImmediate after
 * "wantTrailers"; the one after that finds them handed to nghttp2, which sends them before the
 * RST_STREAM (NO_ERROR) that destroy() adds.
 */
function releaseWhenAnswered(stream: http2.ServerHttp2Stream): void {
  stream.once("wantTrailers", () =>
    setImmediate(() => {
      if (!stream.destroyed && !stream.readableEnded) stream.destroy();
    }),
  );
}

export async function startIngestServer(opts: IngestServerOptions): Promise<IngestServer> {
  const log = (opts.log ?? silentLogger).child({ component: "ingest-server" });
  if (!opts.tokens && !opts.credentials) log.warn("ingest server accepts agents without a token");
  if (opts.tokens?.length === 0) throw new Error("ingest server: tokens is empty (no agent could connect)");
  const auth = authenticatorFor(opts.credentials, opts.tokens);
  if (auth?.needsClientCertificates && !opts.tls?.clientCaFile)
    throw new Error(
      "ingest server: a credential names a certificate identity but mutual TLS is off (no client CA)",
    );
  const serve = connectNodeAdapter({
    routes: ingestRoutes(opts.core, auth),
    contextValues: (req) => {
      const values = createContextValues();
      const socket = ("stream" in req ? req.stream.session?.socket : req.socket) as TLSSocket | undefined;
      if (typeof socket?.getPeerCertificate === "function") {
        values.set(PEER_IDENTITIES, certificateIdentities(socket.getPeerCertificate()));
      }
      return values;
    },
    readMaxBytes: 64 << 20,
    writeMaxBytes: 64 << 20,
  });
  const handler = (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): void => {
    releaseWhenAnswered(req.stream);
    serve(req, res);
  };
  // Agents upload (snapshots are tens of MiB): a large receive window avoids a WINDOW_UPDATE
  // round trip every 64 KiB.
  const settings = { initialWindowSize: WINDOW, maxConcurrentStreams: MAX_STREAMS_PER_CONNECTION };
  // HTTP/2-level abuse closes the connection (Node's defaults, stated): protocol violations, and
  // streams opened past the limit after being refused. Bad gRPC is answered per stream instead.
  const limits = { settings, maxSessionInvalidFrames: 1000, maxSessionRejectedStreams: 100 };
  const server = opts.tls
    ? http2.createSecureServer(
        {
          ...limits,
          cert: readFileSync(opts.tls.certFile),
          key: readFileSync(opts.tls.keyFile),
          ...(opts.tls.clientCaFile
            ? { ca: readFileSync(opts.tls.clientCaFile), requestCert: true, rejectUnauthorized: true }
            : {}),
        },
        handler,
      )
    : http2.createServer(limits, handler);
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
