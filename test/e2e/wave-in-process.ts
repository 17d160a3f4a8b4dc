// Wave as `wave start --kubeconfig` runs it — agent, core, API and webhook in this process — on the
// rig, with a data directory of its own that stopping removes. The e2e tests that read Wave's API
// and /metrics about objects they made on the rig start it this way.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startWave, type Started } from "../../src/cli/start.ts";
import { DEFAULTS } from "../../src/config/config.ts";
import { createLogger } from "../../src/shared/log.ts";
import { parseExposition, type Sample } from "./crosscheck.ts";
import { kubeconfigPath } from "./harness.ts";

export interface InProcessWave {
  wave: Started;
  /** The cluster's API at `path` (a PUT as the admin, else the viewer); asserts a 200. */
  api<T>(path: string, init?: RequestInit): Promise<T>;
  /** Core's /metrics, parsed (read with `sumOf`). */
  metrics(): Promise<Sample[]>;
  /** Stops Wave and removes its data directory. */
  stop(): Promise<void>;
}

/** Wave for cluster id `clusterId`, installed in `namespace` (its warmup pods, its webhook). */
export async function startWaveOnRig(clusterId: string, namespace: string): Promise<InProcessWave> {
  const dataDir = mkdtempSync(join(tmpdir(), `wave-${clusterId}-`));
  const wave = await startWave(
    {
      ...DEFAULTS,
      kubeconfig: kubeconfigPath,
      clusterId,
      namespace,
      port: 0,
      grpcPort: 0,
      webhookPort: 0,
      dataDir,
      logLevel: "warn",
    },
    {},
    { log: createLogger({ level: "warn", base: { app: "wave-e2e" } }) },
  ).catch((err: unknown) => {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  const token = (init: RequestInit): string =>
    init.method === "PUT" ? wave.tokens.admin : wave.tokens.viewer;
  return {
    wave,
    async api<T>(path: string, init: RequestInit = {}): Promise<T> {
      const res = await fetch(new URL(`api/v1/clusters/${clusterId}/${path}`, wave.url), {
        ...init,
        headers: {
          authorization: `Bearer ${token(init)}`,
          ...(init.body ? { "content-type": "application/json" } : {}),
        },
      });
      assert.equal(
        res.status,
        200,
        `${init.method ?? "GET"} ${path}: ${res.status} ${await res.clone().text()}`,
      );
      return (await res.json()) as T;
    },
    async metrics(): Promise<Sample[]> {
      const res = await fetch(new URL("metrics", wave.url), {
        headers: { authorization: `Bearer ${wave.tokens.viewer}` },
      });
      assert.equal(res.status, 200, `GET /metrics: ${res.status}`);
      return parseExposition(await res.text());
    },
    stop: async () => {
      await wave.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
