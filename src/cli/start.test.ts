// `wave start` is the three per-process builders composed in one process (issue #17): the core,
// agent and webhook it runs are the ones startCoreComponent, startAgentComponent and
// startWebhookComponent return, and stopping Wave stops those.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { LIVING_SPOT_POLICIES } from "../sim/living.ts";
import { silentLogger } from "../shared/log.ts";
import { simulatedConfig } from "../../test/support/wave.ts";
import type { ClusterEntry } from "../core/hub/hub.ts";
import type { CommandContext } from "./commands.ts";
import { quietInTerminal, startWave, statusLine } from "./start.ts";

describe("wave start composes the core, agent and webhook builders", { timeout: 180_000 }, () => {
  it("serves the simulated cluster from the core component, streamed by the agent component; stop stops them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wave-start-composed-"));
    // A data directory start creates itself (mkdtemp's own is 0700 already).
    const dataDir = join(dir, "data");
    // Minutes of history: a short prehistory, then the agent streams the rest.
    const w = await startWave(
      simulatedConfig(dataDir, "composed"),
      {},
      {
        log: silentLogger,
        simulatedHistoryMs: 5 * 60_000,
      },
    );
    const { core, agent, webhook } = w.components;
    try {
      // docs/security.md: the data directory (history, tokens, the dev CA's key) is 0700 (issue 32).
      assert.equal((statSync(dataDir).mode & 0o777).toString(8), "700");
      assert.equal(w.hub, core.hub);
      assert.equal(w.store, core.store);
      assert.equal(w.apiPort, core.apiPort);
      assert.equal(w.grpcPort, core.grpcPort);
      // The simulator admits in process: the webhook component serves no HTTPS.
      assert.equal(w.webhookPort, webhook.port);
      assert.equal(webhook.port, 0);
      // The one agent of its cluster holds no Lease.
      assert.equal(agent.elector, undefined);
      await w.caughtUp;

      // The agent component's agent streams to the core component's ingest …
      assert.equal(agent.agent()?.agent.status, "streaming");
      // … and the core component's API serves what it streamed, with the viewer token start printed.
      const res = await fetch(`http://127.0.0.1:${core.apiPort}/api/v1/clusters`, {
        headers: { authorization: `Bearer ${w.tokens.viewer}` },
      });
      assert.equal(res.status, 200);
      const clusters = (await res.json()) as {
        id: string;
        connected: boolean;
        simulated: boolean;
        kubernetesVersion: string;
      }[];
      const cluster = clusters.find((c) => c.id === "composed");
      assert.deepEqual(
        cluster && {
          connected: cluster.connected,
          simulated: cluster.simulated,
          k8s: cluster.kubernetesVersion,
        },
        { connected: true, simulated: true, k8s: "v1.34.0-sim" },
      );
      assert.ok((core.hub.get("composed")?.state.nodes().length ?? 0) > 0, "core holds the cluster's nodes");

      // The webhook component admits with the spot policies core stored for the scenario, and the
      // warmup controller beside the agent acts on the warmup policies core sent it.
      assert.equal(webhook.policies.all().length, LIVING_SPOT_POLICIES.length);
      assert.equal(agent.warmup()?.policies.get("general").enabled, true);
    } finally {
      await w.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    // Stopping Wave stopped the components: the agent's term is over, core's API is closed.
    assert.equal(agent.agent(), undefined);
    assert.equal(agent.warmup(), undefined);
    await assert.rejects(fetch(`http://127.0.0.1:${core.apiPort}/api/v1/clusters`));
  });
});

describe("wave start in a terminal", () => {
  it("is quiet unless a log level was asked for, and says it is alive in one status line", () => {
    const ctx = (tty: boolean, given: string[] = []): CommandContext =>
      ({ io: { tty }, given: new Set(given) }) as unknown as CommandContext;
    assert.equal(quietInTerminal(ctx(true)), true);
    assert.equal(quietInTerminal(ctx(true, ["logLevel"])), false);
    assert.equal(quietInTerminal(ctx(false)), false);
    const entry = {
      id: "default",
      connected: true,
      state: {
        nodes: () => [1, 2, 3],
        pods: () => Array.from({ length: 40 }, (_, i) => i),
        nodePools: () => [1, 2],
      },
    } as unknown as ClusterEntry;
    assert.equal(
      statusLine(Date.parse("2026-03-02T12:01:00Z"), [entry], 0),
      "[12:01:00] cluster default: 3 nodes, 40 pods, 2 NodePools, streaming",
    );
    assert.equal(
      statusLine(0, [{ ...entry, connected: false }], 30 * 60_000),
      "[00:00:00] cluster default: 3 nodes, 40 pods, 2 NodePools, agent disconnected; simulated history 30 min behind",
    );
    assert.equal(statusLine(0, [], 0), "[00:00:00] no cluster yet");
  });
});
