// The configuration tests give `startWave` for a simulated cluster: every port picked free, the
// store in the test's own directory, quiet logs.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startWave, type Started } from "../../src/cli/start.ts";
import { DEFAULTS, type WaveConfig } from "../../src/config/config.ts";
import { createLogger } from "../../src/shared/log.ts";

export function simulatedConfig(dataDir: string, clusterId: string): WaveConfig {
  return {
    ...DEFAULTS,
    port: 0,
    grpcPort: 0,
    webhookPort: 0,
    dataDir,
    logLevel: "error",
    simulate: true,
    clusterId,
  };
}

type StartOptions = NonNullable<Parameters<typeof startWave>[2]>;

export interface SimulatedWave {
  w: Started;
  tmp: string;
  /** Stops Wave and removes its data directory. */
  stop(): Promise<void>;
}

/**
 * `wave start` on the embedded simulated cluster in a fresh data directory, caught up with its
 * generated history; logs at error level under `app`.
 */
export async function startSimulatedWave(
  app: string,
  clusterId: string,
  opts: Omit<StartOptions, "log"> = {},
): Promise<SimulatedWave> {
  const tmp = mkdtempSync(join(tmpdir(), `wave-${app}-`));
  const w = await startWave(
    simulatedConfig(tmp, clusterId),
    {},
    {
      ...opts,
      log: createLogger({ level: "error", base: { app } }),
    },
  );
  await w.caughtUp;
  return {
    w,
    tmp,
    stop: async () => {
      await w.stop();
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}
