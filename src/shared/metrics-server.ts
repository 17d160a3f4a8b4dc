// Serves a metrics Registry at GET /metrics (Prometheus scrape) and /healthz, on its own port.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { CONTENT_TYPE } from "./metrics.ts";
import type { Registry } from "./metrics.ts";

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

export async function startMetricsServer(
  registry: Registry,
  opts: { port: number; host?: string; healthy?: () => boolean },
): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    void handle(req, res);
  });
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
    } else if (path === "/metrics") {
      let body: string;
      try {
        body = await registry.render();
      } catch (err) {
        res
          .writeHead(500, { "content-type": "text/plain" })
          .end(`metrics failed: ${(err as Error).message}\n`);
        return;
      }
      res.writeHead(200, { "content-type": CONTENT_TYPE }).end(req.method === "HEAD" ? undefined : body);
    } else if (path === "/healthz") {
      const ok = opts.healthy?.() ?? true;
      res.writeHead(ok ? 200 : 503, { "content-type": "text/plain" }).end(ok ? "ok\n" : "unhealthy\n");
    } else {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  };
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host ?? "0.0.0.0", () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
