// Helpers for the spot-placement e2e test: an HTTPS front that records the raw AdmissionReview
// bodies the apiserver sends (and what Wave's webhook answered) before passing them on, and the
// fixture shape check that keeps test/fixtures/admission honest against the rig's apiserver.
import { readFile } from "node:fs/promises";
import { Agent, createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { httpsRequest } from "../../src/webhook/test-helpers.ts";

export interface Exchange {
  /** The request body exactly as the apiserver sent it. */
  request: string;
  status: number;
  /** The webhook's answer, as passed back to the apiserver. */
  response: string;
  /** Time from the request's last byte to the webhook's answer (admission latency at the webhook). */
  ms: number;
}

export interface RecordingFront {
  port: number;
  exchanges: Exchange[];
  /**
   * While true, requests are accepted and never answered (a stuck webhook): the apiserver gives up
   * after the configuration's timeoutSeconds. Held requests are dropped on close().
   */
  hang: boolean;
  /** Requests received while hanging. */
  held: number;
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1 with the webhook's own serving certificate and forwards every request
 * byte for byte to the webhook on `targetPort`. The apiserver talks to this front, so the
 * webhook sees exactly what it would see without it.
 */
export async function startRecordingFront(opts: {
  certFile: string;
  keyFile: string;
  caPem: string;
  targetPort: number;
}): Promise<RecordingFront> {
  const [cert, key] = await Promise.all([readFile(opts.certFile), readFile(opts.keyFile)]);
  const agent = new Agent({ keepAlive: true, ca: opts.caPem });
  const front: RecordingFront = {
    port: 0,
    exchanges: [],
    hang: false,
    held: 0,
    close: async () => {
      agent.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
  const exchanges = front.exchanges;
  // Keep-alive sockets live as long as the webhook's own (65 s): with Node's 5 s default, a socket
  // opened early in a burst can be closed just as a request is written on it (ECONNRESET).
  const server: Server = createServer({ cert, key, keepAliveTimeout: 65_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (front.hang) {
        front.held++;
        return;
      }
      const body = Buffer.concat(chunks);
      const t0 = performance.now();
      httpsRequest(agent, opts.targetPort, body, { path: req.url ?? "/", method: req.method ?? "POST" }).then(
        (r) => {
          const ms = performance.now() - t0;
          exchanges.push({ request: body.toString("utf8"), status: r.status, response: r.body, ms });
          res.writeHead(r.status, {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(r.body),
          });
          res.end(r.body);
        },
        (err: unknown) => {
          // The webhook is gone: answer like a dead backend (the apiserver then fails open).
          res.writeHead(502);
          res.end(JSON.stringify({ error: err instanceof Error ? err.message : String(err) }));
        },
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  front.port = (server.address() as AddressInfo).port;
  return front;
}

/**
 * The set of JSON paths in a document, array indexes folded to `[]`, `managedFields` skipped
 * (its keys embed uids). Two AdmissionReviews with the same shape have equal sets even though
 * uids, names and timestamps differ.
 */
export function shapeOf(doc: unknown): Set<string> {
  const out = new Set<string>();
  const walk = (v: unknown, path: string): void => {
    if (Array.isArray(v)) {
      out.add(`${path}[]`);
      for (const x of v) walk(x, `${path}[]`);
    } else if (typeof v === "object" && v !== null) {
      for (const [k, x] of Object.entries(v)) {
        const p = `${path}.${k}`;
        out.add(p);
        if (k !== "managedFields") walk(x, p);
      }
    }
  };
  walk(doc, "");
  return out;
}

/** Paths in `a` but not in `b`, and in `b` but not in `a`. */
export function shapeDiff(a: Set<string>, b: Set<string>): { onlyA: string[]; onlyB: string[] } {
  return { onlyA: [...a].filter((p) => !b.has(p)), onlyB: [...b].filter((p) => !a.has(p)) };
}
