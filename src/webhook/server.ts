// The thin HTTPS shell: TLS from files (reloaded on change without a restart), bounded memory
// (a body cap, a shared budget for the bytes of bodies still arriving, header, request and
// handshake timeouts of seconds; issue 32), connections admitted by conn-gate.ts (a cap per address,
// the apiserver never starved; idle ones closed after seconds; issue 42), and handleHttp().
import { watch, type FSWatcher } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { dirname, basename } from "node:path";
import { createSecureContext } from "node:tls";
import type { Socket } from "node:net";
import { realClock, type Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import type { Allocator } from "./allocator.ts";
import { ConnectionGate, type GateConn } from "./conn-gate.ts";
import { handleHttp, MUTATE_PATH } from "./handler.ts";
import type { PolicySource } from "./policy-source.ts";
import type { SpotMetrics } from "./metrics.ts";
import type { Fallback } from "./review.ts";

export interface WebhookServerOptions {
  certFile: string;
  keyFile: string;
  policies: PolicySource;
  allocator: Allocator;
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  clock?: Clock;
  logger?: Logger;
  deadlineMs?: number;
  fallback?: Fallback;
  onDemandDeletionCost?: number;
  /** Request bodies above this are refused with 413. Default 3 MiB (pods can be large). */
  maxBodyBytes?: number;
  /** Connection, timeout and memory bounds (tests shrink them). */
  limits?: Partial<ServerLimits>;
  /** Spot metrics, served on GET /metrics and fed by admissions. */
  metrics?: SpotMetrics;
  /** Late answers as aggregated Events on the workload (late-events.ts); recording never blocks. */
  lateAnswers?: { record(workload: string): void };
  /** Serve GET /metrics (default true); false when core's /metrics already serves the registry. */
  serveMetrics?: boolean;
  /** GET /metrics needs this bearer token (the viewer token); unset = public (issue 32). */
  metricsToken?: string;
  /** Called after each certificate reload attempt (tests and metrics). */
  onCertReload?: (ok: boolean, err?: Error) => void;
}

export interface WebhookServer {
  port: number;
  /** Open connections, and those refused or evicted by the connection gate so far. */
  connections(): { open: number; refused: number; evicted: number };
  /** Re-reads the certificate files now; false (and the old ones stay) if they are unusable. */
  reloadCerts(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * The largest AdmissionReview the apiserver sends: kube-apiserver refuses request bodies over
 * 3 MiB (its MaxRequestBodyBytes) and etcd objects over 1.5 MiB, and a pod CREATE's review is that
 * pod plus an envelope of a few hundred bytes.
 */
export const DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024;

export interface ServerLimits {
  /**
   * Open connections at most; beyond, a newcomer takes an idle connection of a lower-ranked or
   * heavier address, or is closed at once (conn-gate.ts).
   */
  maxConnections: number;
  /** Open connections at most from one address that is neither configured nor a recent reviewer. */
  maxConnectionsPerAddress: number;
  /** The apiserver's source CIDRs (webhook.controlPlaneCidrs): never capped per address nor evicted. */
  trustedCidrs: readonly string[];
  /** An address that sent a valid review keeps its priority this long. */
  reviewTrustMs: number;
  /** A connection with no request in flight is closed after this (keep-alive and fresh ones). */
  idleTimeoutMs: number;
  /** Headers must arrive within this (slow-header senders are cut off with 408). */
  headersTimeoutMs: number;
  /** A whole request must arrive within this (slow bodies: 408). The apiserver waits ≤ 3 s. */
  requestTimeoutMs: number;
  /** A TLS handshake must finish within this. */
  handshakeTimeoutMs: number;
  /**
   * Bytes of bodies still arriving, summed over every request, beyond each request's first
   * `freeBytesPerRequest`: a request that would exceed it gets 429 and its connection closed, so
   * many slow large bodies cannot exhaust memory, and small reviews (a pod is a few KiB) never wait
   * on big ones.
   */
  bodyBudgetBytes: number;
  freeBytesPerRequest: number;
}

/**
 * Worst case held by request bodies: 256 × 32 KiB + 16 MiB = 24 MiB (plus TLS state per
 * connection), well under the chart's 384 Mi: 120 slow 3 MiB bodies cost +41–50 MiB of RSS
 * (server-memory.test.ts). The apiserver keeps a few keep-alive connections and sends a review
 * (a pod: a few KiB) in one piece within its 3 s timeout.
 */
export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  maxConnections: 256,
  // An apiserver without configured CIDRs gains the priority of a reviewer with its first review.
  maxConnectionsPerAddress: 32,
  trustedCidrs: [],
  reviewTrustMs: 10 * 60_000,
  // The apiserver's client reconnects at once; an idle connection is worth nothing to it.
  idleTimeoutMs: 5_000,
  headersTimeoutMs: 3_000,
  requestTimeoutMs: 5_000,
  handshakeTimeoutMs: 5_000,
  bodyBudgetBytes: 16 * 1024 * 1024,
  freeBytesPerRequest: 32 * 1024,
};

async function readPair(certFile: string, keyFile: string): Promise<{ cert: Buffer; key: Buffer }> {
  const [cert, key] = await Promise.all([readFile(certFile), readFile(keyFile)]);
  createSecureContext({ cert, key }); // throws on a broken or mismatched pair
  return { cert, key };
}

export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const log = (opts.logger ?? silentLogger).child({ component: "webhook" });
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const deps = {
    policies: opts.policies,
    allocator: opts.allocator,
    clock: opts.clock ?? realClock,
    deadlineMs: opts.deadlineMs,
    fallback: opts.fallback,
    onDemandDeletionCost: opts.onDemandDeletionCost,
    logger: log,
    metrics: opts.metrics,
    lateAnswers: opts.lateAnswers,
    metricsText:
      opts.metrics && opts.serveMetrics !== false ? () => opts.metrics?.registry.render() ?? "" : undefined,
    metricsToken: opts.metricsToken,
  };
  const limits = { ...DEFAULT_SERVER_LIMITS, ...opts.limits };
  /** Body bytes held beyond each request's free share, over all requests. */
  let budgetUsed = 0;
  const gate = new ConnectionGate(limits, deps.clock);
  /** The gate's handle of each open connection, by "address|port" (TLS sockets wrap the TCP one). */
  const conns = new Map<string, GateConn>();
  const connKey = (s: Socket): string => `${s.remoteAddress ?? ""}|${s.remotePort ?? 0}`;
  const initial = await readPair(opts.certFile, opts.keyFile);
  const server: Server = createServer(
    {
      ...initial,
      keepAliveTimeout: limits.idleTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      handshakeTimeout: limits.handshakeTimeoutMs,
      // How often Node checks the two timeouts above (its default, 30 s, would let them slip).
      connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
    },
    (req, res) => {
      const conn = conns.get(connKey(req.socket));
      const chunks: Buffer[] = [];
      let size = 0;
      let charged = 0;
      let refused = false;
      const release = (): void => {
        budgetUsed -= charged;
        charged = 0;
      };
      res.on("close", () => {
        release();
        if (conn) {
          conn.busy = false;
          conn.lastActive = deps.clock.now();
        }
      });
      const send = (status: number, body: string, contentType = "application/json"): void => {
        if (res.headersSent) return;
        res.writeHead(status, {
          "content-type": contentType,
          "content-length": Buffer.byteLength(body),
        });
        res.end(body);
      };
      /** Answers at once and drops the connection: no more of this body is read. */
      const refuse = (status: number, error: string): void => {
        refused = true;
        chunks.length = 0;
        release();
        res.setHeader("connection", "close");
        send(status, JSON.stringify({ error }));
        res.once("finish", () => req.socket.destroy());
      };
      const declared = Number(req.headers["content-length"] ?? "0");
      if (declared > maxBody) {
        refuse(413, `body larger than ${maxBody} bytes`);
        return;
      }
      req.on("data", (chunk: Buffer) => {
        if (refused) return;
        size += chunk.length;
        if (size > maxBody) {
          refuse(413, `body larger than ${maxBody} bytes`);
          return;
        }
        const owed = Math.max(0, size - limits.freeBytesPerRequest);
        if (owed > charged) {
          if (budgetUsed + owed - charged > limits.bodyBudgetBytes) {
            refuse(429, "too many request bytes in flight; retry");
            return;
          }
          budgetUsed += owed - charged;
          charged = owed;
        }
        chunks.push(chunk);
      });
      req.on("error", () => res.destroy());
      req.on("end", () => {
        if (refused) return;
        if (conn) conn.busy = true; // being answered: never evicted
        const body = Buffer.concat(chunks);
        chunks.length = 0;
        const source = req.socket.remoteAddress ?? "";
        handleHttp(req.method, req.url, body, {
          ...deps,
          source,
          authorization: req.headers.authorization,
        }).then(
          (r) => {
            // A well-formed review answered: this address earns the priority of the apiserver.
            if (r.status === 200 && req.method === "POST" && (req.url ?? "").split("?")[0] === MUTATE_PATH)
              gate.reviewed(source);
            send(r.status, r.body, r.contentType);
          },
          (err: unknown) => {
            log.error("request handler failed", { err });
            send(400, JSON.stringify({ error: "could not process the request" }));
          },
        );
      });
    },
  );
  // Each TCP connection is admitted by the gate before its handshake; the cap is the gate's.
  server.on("connection", (socket: Socket) => {
    const key = connKey(socket);
    const conn = gate.admit(socket.remoteAddress ?? "", () => socket.destroy());
    if (!conn) {
      socket.destroy();
      return;
    }
    conns.set(key, conn);
    socket.once("close", () => {
      gate.release(conn);
      if (conns.get(key) === conn) conns.delete(key);
    });
  });
  // A connection that sends nothing after its handshake is closed like an idle keep-alive one.
  server.timeout = limits.idleTimeoutMs;
  server.on("tlsClientError", () => undefined); // scanners and aborted handshakes are not our problem

  const reloadCerts = async (): Promise<boolean> => {
    try {
      const pair = await readPair(opts.certFile, opts.keyFile);
      server.setSecureContext(pair);
      log.info("serving certificate reloaded");
      opts.onCertReload?.(true);
      return true;
    } catch (err) {
      log.warn("serving certificate unusable; keeping the previous one", { err });
      opts.onCertReload?.(false, err as Error);
      return false;
    }
  };

  // Watch the directories, not the files: Secret volumes swap a `..data` symlink, and editors and
  // cert tools replace files by rename — a file watch would be lost on the first rotation.
  const watchers: FSWatcher[] = [];
  let debounce: NodeJS.Timeout | undefined;
  const names = new Set([basename(opts.certFile), basename(opts.keyFile), "..data"]);
  for (const dir of new Set([dirname(opts.certFile), dirname(opts.keyFile)])) {
    const w = watch(dir, { persistent: false }, (_event, file) => {
      if (file !== null && !names.has(file)) return;
      clearTimeout(debounce);
      // Cert and key are written one after the other: wait for both before reloading.
      debounce = setTimeout(() => void reloadCerts(), 100);
    });
    w.on("error", (err) => log.warn("certificate watch failed", { err }));
    watchers.push(w);
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, opts.host ?? "0.0.0.0", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  log.info("spot placement webhook listening", { port });

  return {
    port,
    connections: () => ({ open: gate.open, refused: gate.refused, evicted: gate.evicted }),
    reloadCerts,
    close: async () => {
      clearTimeout(debounce);
      for (const w of watchers) w.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
