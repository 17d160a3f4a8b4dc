// The thin HTTPS shell: TLS from files (reloaded on change without a restart), a body size limit,
// keep-alive, and handleHttp() for everything else.
import { watch, type FSWatcher } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { dirname, basename } from "node:path";
import { createSecureContext } from "node:tls";
import { realClock, type Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import type { Allocator } from "./allocator.ts";
import { handleHttp } from "./handler.ts";
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
  /** Spot metrics, served on GET /metrics and fed by admissions. */
  metrics?: SpotMetrics;
  /** Late answers as aggregated Events on the workload (late-events.ts); recording never blocks. */
  lateAnswers?: { record(workload: string): void };
  /** Serve GET /metrics (default true); false when core's /metrics already serves the registry. */
  serveMetrics?: boolean;
  /** Called after each certificate reload attempt (tests and metrics). */
  onCertReload?: (ok: boolean, err?: Error) => void;
}

export interface WebhookServer {
  port: number;
  /** Re-reads the certificate files now; false (and the old ones stay) if they are unusable. */
  reloadCerts(): Promise<boolean>;
  close(): Promise<void>;
}

export const DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024;

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
  };
  const initial = await readPair(opts.certFile, opts.keyFile);
  const server: Server = createServer({ ...initial, keepAliveTimeout: 65_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    const send = (status: number, body: string, contentType = "application/json"): void => {
      if (res.headersSent) return;
      res.writeHead(status, {
        "content-type": contentType,
        "content-length": Buffer.byteLength(body),
      });
      res.end(body);
    };
    const declared = Number(req.headers["content-length"] ?? "0");
    if (declared > maxBody) {
      refused = true;
      res.setHeader("connection", "close");
      send(413, JSON.stringify({ error: `body larger than ${maxBody} bytes` }));
      req.resume();
      return;
    }
    req.on("data", (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > maxBody) {
        refused = true;
        res.setHeader("connection", "close");
        send(413, JSON.stringify({ error: `body larger than ${maxBody} bytes` }));
        return;
      }
      chunks.push(chunk);
    });
    req.on("error", () => res.destroy());
    req.on("end", () => {
      if (refused) return;
      handleHttp(req.method, req.url, Buffer.concat(chunks), {
        ...deps,
        source: req.socket.remoteAddress ?? "",
      }).then(
        (r) => send(r.status, r.body, r.contentType),
        (err: unknown) => {
          log.error("request handler failed", { err });
          send(400, JSON.stringify({ error: "could not process the request" }));
        },
      );
    });
  });
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
