// The core half of the ingest benchmark, in its own process so agent and core each get their own
// RSS and CPU figures (as in production). Talks to the parent over the IPC channel.
import { IngestCore } from "../../src/core/ingest/core.ts";
import { MemorySink } from "../../src/core/ingest/sink.ts";
import { startIngestServer } from "../../src/core/ingest/server.ts";

const token = process.env["WAVE_BENCH_TOKEN"] ?? "";
const sink = new MemorySink();
const core = new IngestCore({ sink });
const server = await startIngestServer({ core, port: 0, host: "127.0.0.1", tokens: [token] });

process.on("message", (m: { type: string }) => {
  if (m.type === "stats") {
    const objects = sink.objects.get("bench")?.size ?? 0;
    process.send?.({
      type: "stats",
      rss: process.memoryUsage.rss(),
      cpu: process.cpuUsage(),
      objects,
      sequence: sink.sequences.get("bench") ?? 0,
    });
  } else if (m.type === "stop") {
    void server.close().then(() => process.exit(0));
  }
});
process.send?.({ type: "ready", port: server.port });
