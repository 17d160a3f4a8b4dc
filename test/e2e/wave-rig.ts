// Shared by the multi-cluster and core-replica e2e tests: a NodePool of the test's own (tainted,
// labelled, so other tests' pods never land on it), a Deployment of one-pod-per-node pause pods
// on it, `wave core|agent|webhook` processes with the chart's environment, an API client with the
// viewer token, and a throwaway PostgreSQL database.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { newToken } from "../../src/api/auth.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { alive, spawnWave, stopWave, type WaveProcess } from "../support/wave-process.ts";
import { kubeconfigPath, list, waitFor, type KubeObject } from "./harness.ts";
import { applyTaintedPool, POOL_LABEL } from "./pools.ts";

export { POOL_LABEL };

export const tokens = {
  admin: newToken(),
  viewer: newToken(),
  agent: newToken(),
};

/** A copy of the rig's default NodePool with its own label and taint (and a 16-CPU limit). */
export async function applyPool(pool: string): Promise<void> {
  await applyTaintedPool(pool, { limits: { cpu: "16" } });
}

/** 1-CPU pause pods on `pool`, one per node (so each replica is a NodeClaim). */
export function deployment(name: string, ns: string, pool: string, replicas: number): object {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { [POOL_LABEL]: pool },
          tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
          terminationGracePeriodSeconds: 0,
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { labelSelector: { matchLabels: { app: name } }, topologyKey: "kubernetes.io/hostname" },
              ],
            },
          },
          containers: [
            { name: "app", image: "pause:3.10", resources: { requests: { cpu: "1", memory: "128Mi" } } },
          ],
        },
      },
    },
  };
}

export function poolClaims(pool: string): Promise<KubeObject[]> {
  return list("nodeclaims.karpenter.sh", { selector: `karpenter.sh/nodepool=${pool}` });
}

export const isTrue = (o: KubeObject, type: string): boolean =>
  o.status?.conditions?.some((c) => c.type === type && c.status === "True") ?? false;

/** `wave <component> --config config.yaml` with the chart's environment plus `env`. */
export function startComponent(
  work: string,
  name: string,
  component: "core" | "agent" | "webhook",
  env: Record<string, string>,
): WaveProcess {
  const config = join(work, `${name}.yaml`);
  writeFileSync(config, JSON.stringify({ host: "127.0.0.1", dataDir: join(work, `${name}-data`) }));
  return spawnWave(name, [component, "--config", config], {
    env: {
      WAVE_POD_NAME: name,
      WAVE_LOG_LEVEL: "info",
      WAVE_AGENT_TOKEN: tokens.agent,
      ...env,
      KUBECONFIG: kubeconfigPath,
    },
    home: work,
  });
}

export async function waitApiUp(p: WaveProcess, port: number): Promise<void> {
  await waitFor(
    `${p.name}'s API /healthz`,
    async () => {
      if (!alive(p)) throw new Error(`${p.name} exited:\n${p.output.slice(-30).join("\n")}`);
      return (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5_000) })).ok;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

export interface ApiAnswer<T> {
  body: T;
  /** The replica that answered (x-wave-replica) and the owner it read through (x-wave-owner). */
  replica: string | null;
  owner: string | null;
}

/** A request to core's API on `port` with the viewer (GET) or admin token. */
export async function call<T>(
  port: number,
  path: string,
  init: { method?: string; body?: unknown } = {},
): Promise<ApiAnswer<T>> {
  const method = init.method ?? "GET";
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${method === "GET" ? tokens.viewer : tokens.admin}`,
      ...(init.body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return {
    body: (text === "" ? undefined : JSON.parse(text)) as T,
    replica: res.headers.get("x-wave-replica"),
    owner: res.headers.get("x-wave-owner"),
  };
}

/** The first `snapshot` event of a cluster's live stream on `port`. */
export async function firstSnapshot(
  port: number,
  cluster: string,
): Promise<{ data: unknown; owner: string | null }> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), 15_000);
  try {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/clusters/${cluster}/stream`, {
      headers: { authorization: `Bearer ${tokens.viewer}` },
      signal: ac.signal,
    });
    assert.equal(res.status, 200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const dec = new TextDecoder();
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended before a snapshot: ${text}`);
      text += dec.decode(value);
      const m = /event: snapshot\ndata: (.*)\n\n/.exec(text);
      if (m?.[1]) return { data: JSON.parse(m[1]) as unknown, owner: res.headers.get("x-wave-owner") };
    }
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
}

export interface Series {
  points: { t: number; nodes: number; spotNodes: number; vcpu: number; costPerHour: number }[];
  gaps: { from: number; to: number }[];
}

export interface EventRow {
  at: number;
  nodeClaim: string;
  phase: string;
}

/** SIGTERM every process (SIGKILL after `graceMs`); how each ended. */
export async function stopAll(procs: readonly WaveProcess[], graceMs = 10_000): Promise<string[]> {
  return Promise.all(
    procs.map(async (p) => {
      const code = await stopWave(p, graceMs);
      return `${p.name} ${code === "hung" ? "hung (killed)" : String(code ?? p.child.signalCode)}`;
    }),
  );
}

/**
 * A fresh PostgreSQL database for one test: on WAVE_TEST_POSTGRES_URL's server (CI starts one),
 * else on a throwaway server of hack/postgres/start.sh. Returns its URL and a cleanup.
 */
export async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  let server = process.env["WAVE_TEST_POSTGRES_URL"];
  let stopServer = (): void => undefined;
  if (!server) {
    const started = spawnSync("bash", ["hack/postgres/start.sh"], { encoding: "utf8" });
    assert.equal(started.status, 0, `hack/postgres/start.sh: ${started.stderr}`);
    server = started.stdout.trim();
    stopServer = () => void spawnSync("bash", ["hack/postgres/stop.sh"], { stdio: "ignore" });
  }
  const name = `wave_e2e_${randomBytes(5).toString("hex")}`;
  const admin = async (sql: string): Promise<void> => {
    const c = new pg.Client({ connectionString: server });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      stopServer();
    },
  };
}

/** Rows of one SQL query on `url`. */
export async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql)).rows as Record<string, unknown>[];
  } finally {
    await c.end();
  }
}
