// The core half of the ingest benchmark, in its own process so agent and core each get their own
// RSS and CPU figures (as in production). Talks to the parent over the IPC channel.
// WAVE_BENCH_SINK=hub uses production's sink (ClusterHub: SQLite history store + ClusterState,
// as src/cli/core-component.ts composes it); the default in-memory sink isolates transport and ingest.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tuneHeapForService } from "../../src/cli/heap.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { IngestCore } from "../../src/core/ingest/core.ts";
import { MemorySink } from "../../src/core/ingest/sink.ts";
import type { IngestSink } from "../../src/core/ingest/sink.ts";
import { startIngestServer } from "../../src/core/ingest/server.ts";
import { openStore } from "../../src/core/store/open.ts";
import { realClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";

// Core's heap as `wave core` runs it, unless the benchmark compares Node's defaults.
if (process.env["WAVE_BENCH_HEAP"] !== "node") tuneHeapForService();
const token = process.env["WAVE_BENCH_TOKEN"] ?? "";
const useHub = process.env["WAVE_BENCH_SINK"] === "hub";
const dir = useHub ? mkdtempSync(join(tmpdir(), "wave-bench-ingest-")) : undefined;
const memory = new MemorySink();
const hub = dir
  ? new ClusterHub(
      await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger }),
      realClock,
    )
  : undefined;
const sink: IngestSink = hub ?? memory;
// --max-snapshot-objects of run.ts: a small bound shows the run failing with core's reason.
const maxSnapshotObjects = Number(process.env["WAVE_BENCH_MAX_SNAPSHOT_OBJECTS"]) || undefined;
const core = new IngestCore({ sink, ...(maxSnapshotObjects ? { maxSnapshotObjects } : {}) });
const server = await startIngestServer({ core, port: 0, host: "127.0.0.1", tokens: [token] });

process.on("message", (m: { type: string }) => {
  if (m.type === "stats") {
    // With --expose-gc (bench/ingest/amplification.ts): what is still held, not garbage.
    if ((m as { gc?: boolean }).gc) (globalThis as { gc?: () => void }).gc?.();
    const objects = hub
      ? (() => {
          const c = hub.get("bench")?.state.counts();
          // ClusterState holds no Events; the synthetic cluster has none.
          return c ? c.nodes + c.nodeClaims + c.nodePools + c.pods : 0;
        })()
      : (memory.objects.get("bench")?.size ?? 0);
    process.send?.({
      type: "stats",
      rss: process.memoryUsage.rss(),
      cpu: process.cpuUsage(),
      objects,
      sequence: core.clusters.get("bench")?.durable ?? 0,
    });
  } else if (m.type === "stop") {
    void server.close().then(async () => {
      await hub?.store.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
  }
});
process.send?.({ type: "ready", port: server.port });
