// The core half of the streams benchmark: core's API built from the same route plugins as
// `wave core` (src/cli/parts.ts apiRoutes) over a ClusterHub on SQLite holding a small cluster,
// with V8 tuned as `wave core` runs it, in its own process so its RSS is core's alone.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { syntheticCluster } from "../../src/agent/fixtures.ts";
import { build } from "../../src/api/app.ts";
import { tuneHeapForService } from "../../src/cli/heap.ts";
import { apiRoutes } from "../../src/cli/parts.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { deliver } from "../../src/core/hub/testing.ts";
import { openStore } from "../../src/core/store/open.ts";
import { KwokPriceProvider } from "../../src/pricing/kwok.ts";
import { realClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";

tuneHeapForService();
const dir = mkdtempSync(join(tmpdir(), "wave-bench-streams-"));
const store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
const hub = new ClusterHub(store, realClock);
await hub.clusterConnected({
  clusterId: "bench",
  kubernetesVersion: "v1.34.0",
  karpenterVersion: "1.8.2",
  agentVersion: "bench",
  sessionId: "s1",
  connectedAt: realClock.now(),
});
await deliver(hub, {
  clusterId: "bench",
  sessionId: "s1",
  sequence: 1,
  receivedAt: realClock.now(),
  snapshot: syntheticCluster({ nodes: 50, pods: 1000, nodeClaims: 50 }),
  changes: [],
  lifecycle: [],
});
const app = await build({
  tokens: {
    admin: process.env["WAVE_BENCH_ADMIN"] ?? "",
    viewer: process.env["WAVE_BENCH_VIEWER"] ?? "",
  },
  clock: realClock,
  plugins: apiRoutes({ hub, store, prices: new KwokPriceProvider(), clock: realClock, clusterId: "bench" }),
});
await app.listen({ host: "127.0.0.1", port: 0 });

process.on("message", (m: { type: string }) => {
  if (m.type === "stats") {
    (globalThis as { gc?: () => void }).gc?.();
    process.send?.({ type: "stats", rss: process.memoryUsage.rss() });
  } else if (m.type === "stop") {
    void app.close().then(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
  }
});
process.send?.({ type: "ready", port: (app.server.address() as { port: number }).port });
