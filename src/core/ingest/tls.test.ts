// TLS (mutual) and bearer-token authentication on the real gRPC path, with a throwaway CA made by
// the openssl CLI.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent } from "../../agent/agent.ts";
import type { AgentOptions } from "../../agent/agent.ts";
import { node, nodePool } from "../../agent/fixtures.ts";
import { MemorySource } from "../../agent/source.ts";
import { Registry } from "../../shared/metrics.ts";
import { runAgent } from "./agent.test-helper.ts";
import { IngestCore } from "./core.ts";
import { startIngestServer } from "./server.ts";
import type { IngestServer } from "./server.ts";
import { MemorySink } from "./sink.ts";

let dir = "";
const f = (name: string): string => join(dir, name);

function openssl(...args: string[]): void {
  execFileSync("openssl", args, { stdio: "pipe" });
}

/** A CA, a server certificate for 127.0.0.1/localhost, and two client certificates (one from another CA). */
function makePki(): void {
  dir = mkdtempSync(join(tmpdir(), "wave-tls-"));
  for (const ca of ["ca", "rogue-ca"]) {
    openssl(
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-days",
      "1",
      "-subj",
      `/CN=${ca}`,
      "-keyout",
      f(`${ca}.key`),
      "-out",
      f(`${ca}.crt`),
    );
  }
  writeFileSync(f("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  writeFileSync(f("client.ext"), "extendedKeyUsage=clientAuth\n");
  const leaf = (name: string, ca: string, ext: string): void => {
    openssl(
      "req",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-subj",
      `/CN=${name}`,
      "-keyout",
      f(`${name}.key`),
      "-out",
      f(`${name}.csr`),
    );
    openssl(
      "x509",
      "-req",
      "-in",
      f(`${name}.csr`),
      "-CA",
      f(`${ca}.crt`),
      "-CAkey",
      f(`${ca}.key`),
      "-CAcreateserial",
      "-days",
      "1",
      "-extfile",
      f(ext),
      "-out",
      f(`${name}.crt`),
    );
  };
  leaf("server", "ca", "server.ext");
  leaf("agent", "ca", "client.ext");
  leaf("rogue", "rogue-ca", "client.ext");
}

describe("ingest over mutual TLS", { timeout: 60_000 }, () => {
  let server: IngestServer;
  let sink: MemorySink;
  before(async () => {
    makePki();
    sink = new MemorySink();
    server = await startIngestServer({
      core: new IngestCore({ sink }),
      port: 0,
      host: "127.0.0.1",
      tokens: ["tls-token"],
      tls: { certFile: f("server.crt"), keyFile: f("server.key"), clientCaFile: f("ca.crt") },
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
      tls: { caFile: f("ca.crt"), certFile: f("agent.crt"), keyFile: f("agent.key") },
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
      ["tls-no-cert", { caFile: f("ca.crt") }],
      ["tls-rogue", { caFile: f("ca.crt"), certFile: f("rogue.crt"), keyFile: f("rogue.key") }],
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
      { tls: { caFile: f("rogue-ca.crt"), certFile: f("agent.crt"), keyFile: f("agent.key") } },
      "tls-wrong-ca",
    );
    const status = agent.status;
    await stop();
    assert.equal(status, "backoff");
    assert.equal(sink.clusters.has("tls-wrong-ca"), false);
  });
});
