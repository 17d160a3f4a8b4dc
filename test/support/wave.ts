// The configuration tests give `startWave` for a simulated cluster: every port picked free, the
// store in the test's own directory, quiet logs.
import { DEFAULTS, type WaveConfig } from "../../src/config/config.ts";

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
