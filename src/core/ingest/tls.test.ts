// TLS (mutual) and bearer-token authentication on the real gRPC path, with throwaway CAs made by
// the openssl CLI (test/support/pki.ts).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent } from "../../agent/agent.ts";
import type { AgentOptions } from "../../agent/agent.ts";
import { node, nodePool } from "../../agent/fixtures.ts";
import { MemorySource } from "../../agent/source.ts";
import { Registry } from "../../shared/metrics.ts";
import { CLIENT_EXT, makePki, SERVER_EXT } from "../../../test/support/pki.ts";
import { runAgent } from "./agent.test-helper.ts";
import { IngestCore } from "./core.ts";
import { startIngestServer } from "./server.ts";
import type { IngestServer } from "./server.ts";
import { MemorySink } from "./sink.ts";

let dir = "";
const f = (name: string): string => join(dir, name);

/** A CA with a server certificate for 127.0.0.1/localhost and an agent's client certificate, and
 * another ("rogue") CA with a client certificate of its own. */
function makeCerts(): void {
  dir = mkdtempSync(join(tmpdir(), "wave-tls-"));
  makePki(join(dir, "trusted"), [
    { dir: "server", cn: "server", ext: SERVER_EXT },
    { dir: "agent", cn: "agent", ext: CLIENT_EXT },
  ]);
  makePki(join(dir, "rogue"), [{ dir: "agent", cn: "rogue", ext: CLIENT_EXT }]);
}

describe("ingest over mutual TLS", { timeout: 60_000 }, () => {
  let server: IngestServer;
  let sink: MemorySink;
  before(async () => {
    makeCerts();
    sink = new MemorySink();
    server = await startIngestServer({
      core: new IngestCore({ sink }),
      port: 0,
      host: "127.0.0.1",
      tokens: ["tls-token"],
      tls: {
        certFile: f("trusted/server/tls.crt"),
        keyFile: f("trusted/server/tls.key"),
        clientCaFile: f("trusted/ca/ca.crt"),
      },
    });
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs an agent until it streams or fails once; returns it with its error codes. */
  async function tryAgent(
    opts: Partial<AgentOptions>,
    clusterId: string,
  ): Promise<{ agent: Agent; registry: Registry; stop: () => Promise<void> }> {
    const registry = new Registry();
    const { agent, stop } = runAgent({
      source: new MemorySource([nodePool("default"), node(1)]),
      coreUrl: `https://127.0.0.1:${server.port}`,
      token: "tls-token",
      clusterId,
      agentVersion: "test",
      metrics: registry,
      tls: {
        caFile: f("trusted/ca/ca.crt"),
        certFile: f("trusted/agent/tls.crt"),
        keyFile: f("trusted/agent/tls.key"),
      },
      ...opts,
    });
    await agent.until((a) => a.status === "streaming" || a.status === "backoff");
    return { agent, registry, stop };
  }

  it("streams with a client certificate from the trusted CA and a valid token", async () => {
    const { agent, stop } = await tryAgent({}, "tls-ok");
    try {
      assert.equal(agent.status, "streaming");
      await sink.until((s) => (s.objects.get("tls-ok")?.size ?? 0) === 2);
    } finally {
      await stop();
    }
  });

  it("rejects a wrong token with UNAUTHENTICATED", async () => {
    const { agent, registry, stop } = await tryAgent({ token: "nope" }, "tls-bad-token");
    await stop();
    assert.equal(agent.status, "stopped");
    assert.match(await registry.render(), /wave_agent_stream_errors_total\{code="Unauthenticated"\} 1/);
    assert.equal(sink.clusters.has("tls-bad-token"), false);
  });

  it("refuses agents without a client certificate or with one from another CA", async () => {
    for (const [name, tls] of [
      ["tls-no-cert", { caFile: f("trusted/ca/ca.crt") }],
      [
        "tls-rogue",
        {
          caFile: f("trusted/ca/ca.crt"),
          certFile: f("rogue/agent/tls.crt"),
          keyFile: f("rogue/agent/tls.key"),
        },
      ],
    ] as const) {
      const { agent, stop } = await tryAgent({ tls }, name);
      const status = agent.status;
      await stop();
      assert.equal(status, "backoff", name);
      assert.equal(sink.clusters.has(name), false, name);
    }
  });

  it("refuses a core whose certificate the agent's CA did not sign", async () => {
    const { agent, stop } = await tryAgent(
      {
        tls: {
          caFile: f("rogue/ca/ca.crt"),
          certFile: f("trusted/agent/tls.crt"),
          keyFile: f("trusted/agent/tls.key"),
        },
      },
      "tls-wrong-ca",
    );
    const status = agent.status;
    await stop();
    assert.equal(status, "backoff");
    assert.equal(sink.clusters.has("tls-wrong-ca"), false);
  });
});
