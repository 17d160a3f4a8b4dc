// Issue 42, finding 3: idle connections must not starve the apiserver. The probe: 256 idle
// keep-alive connections from one address (no credentials), then 30 reviews — before the fix 0 of
// 30 were answered (every connection slot held). Here the attacker and the apiserver are two
// loopback addresses (127.0.0.2… and 127.0.0.1) against the webhook with its default limits, and
// the reviews go through node's HTTPS client with a keep-alive agent, as the apiserver's does; each
// must be answered within the registration's timeoutSeconds.
import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { Agent, request } from "node:https";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type TLSSocket } from "node:tls";
import { after, before, describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import { FakeClock } from "../shared/clock.ts";
import { SlotAllocator } from "./allocator.ts";
import { generateDevCerts, type DevCerts } from "./certs.ts";
import { InMemoryPolicySource } from "./policy-source.ts";
import { startWebhookServer, type ServerLimits, type WebhookServer } from "./server.ts";
import { reviewFor } from "./test-helpers.ts";
import { buildWebhookConfiguration } from "./webhook-config.ts";

const APISERVER = "127.0.0.1";

describe("the webhook under idle connections (issue 42, finding 3)", { timeout: 60_000 }, () => {
  let certs: DevCerts;
  const sockets: TLSSocket[] = [];
  /** The registration's timeoutSeconds: the apiserver gives up on a review after this. */
  const registration = buildWebhookConfiguration({
    caPem: "-----BEGIN CERTIFICATE-----",
    waveNamespace: "wave",
    url: "https://x",
  });
  const deadlineMs = Number(registration.webhooks?.[0]?.timeoutSeconds) * 1000;

  before(async () => {
    const dir = await mkdtemp(join(tmpdir(), "wave-webhook-starve-"));
    certs = await generateDevCerts({ dir, hosts: ["localhost", "127.0.0.1"] });
  });
  after(() => {
    for (const s of sockets) s.destroy();
  });

  async function webhook(limits: Partial<ServerLimits> = {}): Promise<WebhookServer> {
    const clock = new FakeClock();
    return startWebhookServer({
      certFile: certs.certFile,
      keyFile: certs.keyFile,
      host: "0.0.0.0",
      policies: new InMemoryPolicySource({
        apiVersion: "wave.sh/v1alpha1",
        kind: "SpotPolicySet",
        policies: [
          {
            workload: { namespace: "shop", kind: "Deployment", name: "web" },
            threshold: 1,
            strategy: "Prefer",
          },
        ],
      }),
      allocator: new SlotAllocator({ kube: new MemoryKube({ clock }), namespace: "wave", clock }),
      clock,
      limits,
    });
  }

  /**
   * One attacker connection from `from`: a GET /healthz, answered, then held idle with keep-alive.
   * Resolves whether it stayed open after its answer.
   */
  function idle(port: number, from: string): Promise<boolean> {
    return new Promise((resolve) => {
      const tcp = netConnect({ host: APISERVER, port, localAddress: from });
      tcp.on("error", () => undefined);
      const s = connect({ socket: tcp, servername: "localhost", ca: certs.caPem });
      sockets.push(s);
      s.on("error", () => undefined);
      s.once("close", () => resolve(false));
      s.once("secureConnect", () => s.write("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"));
      s.once("data", () => resolve(true));
    });
  }

  /** The apiserver's review through a keep-alive agent: status and ms, or the error's code. */
  function review(agent: Agent, port: number, i: number): Promise<{ status: number | string; ms: number }> {
    const body = JSON.stringify(reviewFor("deployment-pod-generatename", i));
    const started = performance.now();
    return new Promise((resolve) => {
      const req = request(
        {
          agent,
          host: APISERVER,
          port,
          localAddress: APISERVER,
          servername: "localhost",
          path: "/mutate",
          method: "POST",
          timeout: deadlineMs,
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
        },
      );
      req.on("timeout", () => req.destroy(new Error("timeout")));
      req.on("error", (err: NodeJS.ErrnoException) =>
        resolve({ status: err.code ?? err.message, ms: performance.now() - started }),
      );
      req.end(body);
    });
  }

  /** 30 concurrent reviews, as a burst of pod creations; asserts each answered 200 in time. */
  async function thirtyReviews(port: number, first = 0): Promise<void> {
    const agent = new Agent({ ca: certs.caPem, keepAlive: true });
    try {
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => review(agent, port, first + i)));
      const late = answers.filter((a) => a.status !== 200 || a.ms > deadlineMs);
      assert.deepEqual(late, [], `${30 - late.length} of 30 reviews answered within ${deadlineMs} ms`);
    } finally {
      agent.destroy();
    }
  }

  it("256 idle connections from one address, then 30 reviews: all answered within timeoutSeconds", async () => {
    assert.equal(deadlineMs, 3_000);
    const server = await webhook();
    try {
      const held = await Promise.all(Array.from({ length: 256 }, () => idle(server.port, "127.0.0.2")));
      await thirtyReviews(server.port);
      const kept = held.filter(Boolean).length;
      assert.ok(kept <= 32, `one address holds ${kept} connections`);
    } finally {
      await server.close();
    }
  });

  it("256 idle connections from 8 addresses fill the cap: a configured apiserver CIDR takes idle ones", async () => {
    const server = await webhook({ trustedCidrs: [`${APISERVER}/32`] });
    try {
      const from = (i: number): string => `127.0.0.${2 + (i % 8)}`;
      const held = await Promise.all(Array.from({ length: 256 }, (_, i) => idle(server.port, from(i))));
      assert.equal(held.filter(Boolean).length, 256, "the attack holds every slot");
      await thirtyReviews(server.port);
      assert.ok(server.connections().evicted >= 29, `evicted ${server.connections().evicted}`);
    } finally {
      await server.close();
    }
  });

  it("without configured CIDRs, an apiserver that reviewed lately takes idle ones from the 8 addresses", async () => {
    const server = await webhook();
    try {
      const from = (i: number): string => `127.0.0.${2 + (i % 8)}`;
      await Promise.all(Array.from({ length: 256 }, (_, i) => idle(server.port, from(i))));
      const agent = new Agent({ ca: certs.caPem, keepAlive: true });
      assert.equal((await review(agent, server.port, 100)).status, 200, "its first review: fair share");
      agent.destroy();
      await thirtyReviews(server.port);
    } finally {
      await server.close();
    }
  });
});
