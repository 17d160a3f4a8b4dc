// The webhook server's bounds (issue 32), with limits shrunk so the test is quick: slow headers and
// slow bodies are cut off with 408, bodies beyond the shared in-flight budget get 429 (and their
// connection closed) while a small review still gets its answer, and connections beyond the cap are
// closed. Node's timeouts run on the real clock, so this test waits (≈ 3 s in all).
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtemp } from "node:fs/promises";
import { Agent } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type TLSSocket } from "node:tls";
import { after, before, describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import { FakeClock } from "../shared/clock.ts";
import { SlotAllocator } from "./allocator.ts";
import { generateDevCerts, type DevCerts } from "./certs.ts";
import { createSpotMetrics } from "./metrics.ts";
import { InMemoryPolicySource } from "./policy-source.ts";
import { startWebhookServer, type WebhookServer, type WebhookServerOptions } from "./server.ts";
import { httpsRequest, loadFixture } from "./test-helpers.ts";

/** A server on 127.0.0.1 without policies, its ledger in memory, with `extra` options. */
function policylessServer(certs: DevCerts, extra: Partial<WebhookServerOptions>): Promise<WebhookServer> {
  const clock = new FakeClock();
  return startWebhookServer({
    certFile: certs.certFile,
    keyFile: certs.keyFile,
    host: "127.0.0.1",
    policies: new InMemoryPolicySource(),
    allocator: new SlotAllocator({ kube: new MemoryKube({ clock }), namespace: "wave", clock }),
    clock,
    ...extra,
  });
}

describe("webhook server limits (issue 32)", { timeout: 30_000 }, () => {
  let certs: DevCerts;
  let server: WebhookServer;
  const open: TLSSocket[] = [];

  before(async () => {
    const dir = await mkdtemp(join(tmpdir(), "wave-webhook-limits-"));
    certs = await generateDevCerts({ dir, hosts: ["localhost", "127.0.0.1"] });
    server = await policylessServer(certs, {
      maxBodyBytes: 1024 * 1024,
      limits: {
        maxConnections: 4,
        idleTimeoutMs: 1_500, // after the 408s below (checked every 500 ms)
        headersTimeoutMs: 500,
        requestTimeoutMs: 1_000,
        handshakeTimeoutMs: 1_000,
        bodyBudgetBytes: 256 * 1024,
        freeBytesPerRequest: 16 * 1024,
      },
    });
  });
  after(async () => {
    for (const s of open) s.destroy();
    await server.close();
  });

  /** A raw TLS connection; resolves the first status line it is answered, or "closed". */
  async function raw(): Promise<{ socket: TLSSocket; answer: Promise<string> }> {
    const socket = connect({
      host: "127.0.0.1",
      port: server.port,
      servername: "localhost",
      ca: certs.caPem,
    });
    open.push(socket);
    socket.on("error", () => undefined);
    const answer = new Promise<string>((resolve) => {
      socket.once("data", (d: Buffer) =>
        resolve(/^HTTP\/1\.1 (\d+)/.exec(d.toString("latin1"))?.[1] ?? "data"),
      );
      socket.once("close", () => resolve("closed"));
    });
    await once(socket, "secureConnect");
    return { socket, answer };
  }

  const head = (length: number): string =>
    `POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

  const small = (): Promise<number> =>
    httpsRequest(
      new Agent({ ca: certs.caPem }),
      server.port,
      JSON.stringify(loadFixture("deployment-pod-generatename")),
    ).then((r) => r.status);

  it("cuts off slow headers and slow bodies with 408 within the timeouts", async () => {
    const started = performance.now();
    const headers = await raw();
    headers.socket.write("POST /mutate HTTP/1.1\r\nHost: local");
    const body = await raw();
    body.socket.write(head(10_000) + "x".repeat(1_000));
    assert.deepEqual(await Promise.all([headers.answer, body.answer]), ["408", "408"]);
    const ms = performance.now() - started;
    assert.ok(ms < 3_000, `cut off after ${ms.toFixed(0)} ms`);
    headers.socket.destroy();
    body.socket.destroy();
  });

  it("answers 429 and closes a body beyond the shared budget, while a small review is still answered", async () => {
    const a = await raw();
    a.socket.write(head(300 * 1024) + "x".repeat(200 * 1024)); // holds 184 KiB of the 256 KiB budget
    await new Promise((r) => setTimeout(r, 100));
    const b = await raw();
    b.socket.write(head(300 * 1024) + "x".repeat(200 * 1024)); // would need another 184 KiB
    assert.equal(await b.answer, "429");
    assert.equal(await small(), 200, "a review within its free share never waits on big bodies");
    a.socket.destroy();
    b.socket.destroy();
  });

  it("closes a connection that sends nothing, and an idle keep-alive one, within the idle timeout (issue 42)", async () => {
    const started = performance.now();
    const silent = await raw();
    const kept = await raw();
    kept.socket.write("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert.equal(await kept.answer, "200");
    const closed = (s: TLSSocket): Promise<number> =>
      s.closed ? Promise.resolve(performance.now()) : once(s, "close").then(() => performance.now());
    const [a, b] = await Promise.all([closed(silent.socket), closed(kept.socket)]);
    assert.ok(Math.max(a, b) - started < 4_000, `closed after ${(Math.max(a, b) - started).toFixed(0)} ms`);
  });

  it("closes connections beyond the cap at once", async () => {
    await new Promise((r) => setTimeout(r, 500)); // the previous tests' sockets are gone
    const held = await Promise.all([raw(), raw(), raw(), raw()]);
    const extra = connect({ host: "127.0.0.1", port: server.port, servername: "localhost", ca: certs.caPem });
    extra.on("error", () => undefined);
    const outcome = await new Promise<string>((resolve) => {
      extra.once("secureConnect", () => resolve("connected"));
      extra.once("close", () => resolve("closed"));
    });
    assert.equal(outcome, "closed");
    for (const h of held) h.socket.destroy();
  });
});

describe("the webhook's /metrics needs the viewer token (issue 32)", () => {
  it("401 without it or with another, 200 with it; public only when no token is configured", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wave-webhook-metrics-"));
    const certs = await generateDevCerts({ dir, hosts: ["localhost", "127.0.0.1"] });
    const start = (metricsToken?: string): Promise<WebhookServer> =>
      policylessServer(certs, {
        metrics: createSpotMetrics(),
        ...(metricsToken === undefined ? {} : { metricsToken }),
      });
    const scrape = (s: WebhookServer, authorization?: string) =>
      httpsRequest(new Agent({ ca: certs.caPem }), s.port, "", {
        path: "/metrics",
        method: "GET",
        ...(authorization === undefined ? {} : { headers: { authorization } }),
      });
    const guarded = await start("viewer-token-0123456789");
    try {
      const none = await scrape(guarded);
      assert.equal(none.status, 401);
      assert.doesNotMatch(none.body, /wave_spot/);
      assert.equal((await scrape(guarded, "Bearer not-the-token")).status, 401);
      const ok = await scrape(guarded, "Bearer viewer-token-0123456789");
      assert.equal(ok.status, 200);
      assert.match(ok.body, /wave_spot_admissions_total/);
      assert.equal(
        (
          await httpsRequest(new Agent({ ca: certs.caPem }), guarded.port, "", {
            path: "/healthz",
            method: "GET",
          })
        ).status,
        200,
        "health stays public (probes)",
      );
    } finally {
      await guarded.close();
    }
    const open = await start();
    try {
      assert.equal((await scrape(open)).status, 200, "--public-metrics");
    } finally {
      await open.close();
    }
  });
});
