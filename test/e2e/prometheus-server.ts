// A real Prometheus (.rig/bin/prometheus, built by hack/prometheus/build.sh) scraping one core's
// /metrics every 2 s with the viewer token, as the chart's ServiceMonitor does; queries through
// its HTTP API, optionally at a given evaluation time.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { waitFor } from "./harness.ts";

export const PROMETHEUS = join(new URL("../../", import.meta.url).pathname, ".rig/bin/prometheus");

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface Prometheus {
  url: string;
  /** An instant query; `time` (seconds since epoch) evaluates it at that moment. */
  query(q: string, time?: number): Promise<PromSample[]>;
  /** The sum of an instant query's samples; undefined when it returns none. */
  scalar(q: string, time?: number): Promise<number | undefined>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Starts Prometheus scraping `target` (host:port) as job `job`; resolves once it scraped it (up == 1). */
export async function startPrometheus(o: {
  dir: string;
  target: string;
  token: string;
  job: string;
}): Promise<Prometheus> {
  assert.ok(existsSync(PROMETHEUS), `Prometheus not built at ${PROMETHEUS}: run npm run prometheus:build`);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const config = join(o.dir, "prometheus.yml");
  writeFileSync(
    config,
    [
      "global:",
      "  scrape_interval: 2s",
      "  scrape_timeout: 2s",
      "  evaluation_interval: 2s",
      "scrape_configs:",
      `  - job_name: ${o.job}`,
      "    metrics_path: /metrics",
      "    authorization:",
      "      type: Bearer",
      `      credentials: ${o.token}`,
      "    static_configs:",
      `      - targets: ["${o.target}"]`,
      "",
    ].join("\n"),
  );
  const child: ChildProcess = spawn(
    PROMETHEUS,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(o.dir, "tsdb")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let promLog = "";
  child.stderr?.on("data", (d: Buffer) => (promLog = (promLog + d.toString()).slice(-4000)));
  const query = async (q: string, time?: number): Promise<PromSample[]> => {
    const at = time === undefined ? "" : `&time=${time}`;
    const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(q)}${at}`);
    const body = (await res.json()) as {
      status: string;
      error?: string;
      data?: { resultType: string; result: PromSample[] | [number, string] };
    };
    assert.equal(body.status, "success", `query ${q}: ${body.error ?? res.status}`);
    const r = body.data?.result;
    if (body.data?.resultType === "scalar") return [{ metric: {}, value: r as [number, string] }];
    return r as PromSample[];
  };
  const scalar = async (q: string, time?: number): Promise<number | undefined> => {
    const r = await query(q, time);
    return r.length === 0 ? undefined : r.reduce((s, x) => s + Number(x.value[1]), 0);
  };
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null) return;
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
  };
  await waitFor(
    "Prometheus ready",
    async () => {
      if (child.exitCode !== null) assert.fail(`Prometheus exited: ${promLog}`);
      return (await fetch(`${url}/-/ready`).catch(() => undefined))?.status === 200;
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
  await waitFor(
    `Prometheus scrapes ${o.target} (up == 1)`,
    async () => (await scalar(`max(up{job="${o.job}"})`)) === 1,
    { timeoutMs: 30_000, intervalMs: 500 },
  );
  return { url, query, scalar, stop };
}
