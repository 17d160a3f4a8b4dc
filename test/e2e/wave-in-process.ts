// Wave as `wave start --kubeconfig` runs it — agent, core, API and webhook in this process — on the
// rig, with a data directory of its own that stopping removes. The e2e tests that read Wave's API
// and /metrics about objects they made on the rig start it this way.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startWave, type Started } from "../../src/cli/start.ts";
import { DEFAULTS } from "../../src/config/config.ts";
import { createLogger } from "../../src/shared/log.ts";
import { kubeconfigPath } from "./harness.ts";

export interface InProcessWave {
  wave: Started;
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
  return {
    wave,
    stop: async () => {
      await wave.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
