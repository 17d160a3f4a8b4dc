import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { IngestCore } from "../core/ingest/core.ts";
import { startIngestServer } from "../core/ingest/server.ts";
import { MemorySink } from "../core/ingest/sink.ts";
import { MemoryKube } from "../kube/memory/memory.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { runAgent } from "./run.ts";

/** Core's ingest on a loopback port, into `sink`, accepting the token "t". */
const ingestServer = (sink: MemorySink) =>
  startIngestServer({ core: new IngestCore({ sink }), port: 0, host: "127.0.0.1", tokens: ["t"] });

describe("runAgent", { timeout: 30_000 }, () => {
  it("streams a cluster from the Kubernetes port to core and serves /metrics", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    await kube.create("Node", { metadata: { name: "n1", labels: { "karpenter.sh/nodepool": "default" } } });
    const sink = new MemorySink();
    const server = await ingestServer(sink);
    const running = await runAgent({
      kube,
      clock,
      log: silentLogger,
      coreUrl: `http://127.0.0.1:${server.port}`,
      token: "t",
      clusterId: "dev",
      agentVersion: "0.1.0",
      metricsPort: 0,
      metricsHost: "127.0.0.1",
    });
    try {
      await sink.until((s) => s.objects.get("dev")?.has("Node/n1") === true);
      await kube.create("Node", { metadata: { name: "n2" } });
      await sink.until((s) => s.objects.get("dev")?.has("Node/n2") === true);
      const text = await (await fetch(`http://127.0.0.1:${String(running.metricsPort)}/metrics`)).text();
      assert.match(text, /^wave_agent_connected 1$/m);
      assert.match(text, /^wave_agent_objects 2$/m);
    } finally {
      await running.stop();
      await server.close();
    }
  });

  it("holds its stream until startWhen resolves, and stops while held", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    await kube.create("Node", { metadata: { name: "n1" } });
    const sink = new MemorySink();
    const server = await ingestServer(sink);
    const common = {
      kube,
      clock,
      log: silentLogger,
      coreUrl: `http://127.0.0.1:${server.port}`,
      token: "t",
      agentVersion: "0.1.0",
    };
    let release!: () => void;
    const held = await runAgent({
      ...common,
      clusterId: "held",
      startWhen: new Promise((r) => (release = r)),
    });
    // Stopped before it was released: it never streams, and stop does not wait for the release.
    const never = await runAgent({ ...common, clusterId: "never", startWhen: new Promise(() => undefined) });
    // Started with them and not held: by the time its objects are in core, the held one's would be.
    const free = await runAgent({ ...common, clusterId: "free" });
    try {
      await never.stop();
      assert.equal(never.agent.status, "idle");
      await sink.until((s) => s.objects.get("free")?.has("Node/n1") === true);
      assert.equal(held.agent.status, "idle");
      assert.equal(sink.objects.get("held"), undefined);
      release();
      await sink.until((s) => s.objects.get("held")?.has("Node/n1") === true);
      assert.equal(sink.objects.get("never"), undefined);
    } finally {
      await held.stop();
      await free.stop();
      await server.close();
    }
  });
});
