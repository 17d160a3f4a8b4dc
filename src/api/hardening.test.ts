// Issue #16's API findings, each through build() + inject() (or a real socket where the finding is
// about the transport): strict query validation, no coercion of policy bodies, 5xx logged with a
// request id, security headers, no public source maps, login throttling, name validation, request
// deadline, HEAD on the event stream, and /metrics + /openapi.json behind a token unless chosen.
import { connectTestCluster } from "../core/hub/testing.ts";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { ClusterHub } from "../core/hub/hub.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { FakeClock } from "../shared/clock.ts";
import { createLogger, silentLogger } from "../shared/log.ts";
import { build, SECURITY_HEADERS, type BuildOptions } from "./app.ts";
import { dashboardRoutes } from "./routes/dashboard.ts";
import { policyRoutes } from "./routes/policies.ts";

const tokens = { admin: "admin-token-0123456789", viewer: "viewer-token-0123456789" };
const V = { authorization: `Bearer ${tokens.viewer}` };
const A = { authorization: `Bearer ${tokens.admin}`, "content-type": "application/json" };
const NOW = Date.parse("2026-03-02T12:00:00Z");

let dir: string;
let store: Store;
let hub: ClusterHub;
let clock: FakeClock;
const lines: Record<string, unknown>[] = [];

async function api(extra: Partial<BuildOptions> = {}): Promise<FastifyInstance> {
  return build({
    tokens,
    log: createLogger({ level: "debug", write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) }),
    clock,
    plugins: [
      dashboardRoutes({ hub, prices: new KwokPriceProvider(), now: () => clock.now() }),
      policyRoutes({ store, now: () => clock.now(), defaultClusterId: "c1" }),
      (s) => {
        s.get("/metrics", { schema: { hide: true } }, () => "wave_up 1\n");
        s.get("/boom", { config: { role: "viewer" } }, () => {
          throw new Error("kaboom");
        });
        s.get("/assets/index-abc.js.map", () => "{}");
      },
    ],
    ...extra,
  });
}

let app: FastifyInstance;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-hardening-"));
  store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  clock = new FakeClock(NOW);
  hub = new ClusterHub(store, clock);
  await connectTestCluster(hub, NOW);
  app = await api();
});

after(async () => {
  await app.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe("viewer query parameters (issue #16: five 500s)", () => {
  for (const url of [
    "/api/v1/clusters/c1/series?window=7776000&step=1",
    "/api/v1/clusters/c1/events?to=1e20",
    "/api/v1/clusters/c1/events?from=9007199254740993",
    "/api/v1/clusters/c1/events?from=9007199254740992&to=9007199254740993",
    "/api/v1/clusters/c1/disruptions?to=1e20",
    "/api/v1/clusters/c1/events?limit=0x10",
    "/api/v1/clusters/c1/events?limit=%2010",
    "/api/v1/clusters/c1/events?unknown=1",
    "/api/v1/clusters/c1/nodes?desc=yes",
    "/api/v1/clusters/c1/events?pool=%00",
    "/api/v1/clusters/C1%0D%0A/events",
  ]) {
    it(`400 with a clear message: ${url}`, async () => {
      const r = await app.inject({ url, headers: V });
      assert.equal(r.statusCode, 400, r.body);
      assert.equal(r.json<{ error: string }>().error, "bad_request");
      assert.ok(r.json<{ message: string }>().message.length > 5);
    });
  }

  it("still accepts plain decimal values", async () => {
    const r = await app.inject({
      url: `/api/v1/clusters/c1/events?from=${NOW - 1000}&to=${NOW}&limit=5`,
      headers: V,
    });
    assert.equal(r.statusCode, 200, r.body);
    const s = await app.inject({ url: "/api/v1/clusters/c1/series?window=3600&step=60", headers: V });
    assert.equal(s.statusCode, 200, s.body);
    const n = await app.inject({ url: "/api/v1/clusters/c1/nodes?desc=true&limit=10", headers: V });
    assert.equal(n.statusCode, 200, n.body);
  });
});

describe("5xx are logged with a request id", () => {
  it("logs the error and returns the same id to the client", async () => {
    lines.length = 0;
    const r = await app.inject({ url: "/boom", headers: V });
    assert.equal(r.statusCode, 500);
    const id = r.headers["x-request-id"];
    assert.ok(typeof id === "string" && id.length >= 8);
    assert.match(r.json<{ message: string }>().message, new RegExp(id));
    const logged = lines.find((l) => l.msg === "request failed");
    assert.ok(logged, JSON.stringify(lines));
    assert.equal(logged.requestId, id);
    assert.equal(logged.err, "kaboom");
  });
});

describe("policy writes are not coerced", () => {
  for (const [url, body] of [
    ["/api/v1/policies/warmup/general", { enabled: true, maxCostPerHour: "" }],
    ["/api/v1/policies/warmup/general", { enabled: true, maxWarmNodes: "0x10" }],
    ["/api/v1/policies/warmup/general", { enabled: "true" }],
    ["/api/v1/policies/spot/Deployment/shop/api", { threshold: null, strategy: "Prefer" }],
    ["/api/v1/policies/spot/Deployment/shop/api", { threshold: "0x10", strategy: "Prefer" }],
    ["/api/v1/policies/spot/Deployment/shop/api", { threshold: "3", strategy: "Prefer" }],
    ["/api/v1/policies/spot/Deployment/shop/api", { threshold: [3], strategy: "Prefer" }],
  ] as const) {
    it(`rejects ${JSON.stringify(body)}`, async () => {
      const r = await app.inject({ method: "PUT", url, headers: A, payload: JSON.stringify(body) });
      assert.equal(r.statusCode, 400, r.body);
    });
  }

  it("keeps null as the explicit 'no cap' and stores nothing from rejected writes", async () => {
    const ok = await app.inject({
      method: "PUT",
      url: "/api/v1/policies/warmup/general",
      headers: A,
      payload: JSON.stringify({ enabled: true, maxCostPerHour: null }),
    });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(
      (await store.listPolicies("c1", "spot")).map((p) => p.key),
      [],
    );
  });
});

describe("NodePool and workload names are validated", () => {
  for (const pool of ["a%00b", "a%0D%0Ab", "%3Cscript%3E", "UPPER", "x".repeat(64), "x".repeat(120)]) {
    it(`PUT warmup policy for ${pool.slice(0, 12)}… (${pool.length}) → 400`, async () => {
      const r = await app.inject({
        method: "PUT",
        url: `/api/v1/policies/warmup/${pool}`,
        headers: A,
        payload: "{}",
      });
      assert.equal(r.statusCode, 400, r.body);
    });
  }
  it("a workload name of 101-253 characters can get a policy", async () => {
    const name = "w".repeat(200);
    const r = await app.inject({
      method: "PUT",
      url: `/api/v1/policies/spot/Deployment/shop/${name}`,
      headers: A,
      payload: JSON.stringify({ threshold: 1, strategy: "Prefer" }),
    });
    assert.equal(r.statusCode, 200, r.body);
    await app.inject({ method: "DELETE", url: `/api/v1/policies/spot/Deployment/shop/${name}`, headers: A });
  });

  it("spot workload names too", async () => {
    const r = await app.inject({
      method: "PUT",
      url: "/api/v1/policies/spot/Deployment/shop/%3Cscript%3E",
      headers: A,
      payload: JSON.stringify({ threshold: 1, strategy: "Prefer" }),
    });
    assert.equal(r.statusCode, 400, r.body);
    assert.equal(
      (await store.listPolicies("c1", "warmup")).filter((p) => /[^a-z0-9.-]/.test(p.key)).length,
      0,
    );
  });
});

describe("security headers and source maps", () => {
  it("sends CSP, frame-ancestors, nosniff and referrer policy on every answer, the stream included", async () => {
    for (const url of ["/healthz", "/api/v1/clusters", "/nope"]) {
      const r = await app.inject({ url, headers: V });
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) assert.equal(r.headers[k], v, `${url} ${k}`);
    }
    const csp = SECURITY_HEADERS["content-security-policy"] ?? "";
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/);
  });

  it("does not serve source maps unless asked to", async () => {
    assert.equal((await app.inject({ url: "/assets/index-abc.js.map" })).statusCode, 404);
    // Percent-encoded spellings the router and the static files decode (issue 42).
    for (const url of [
      "/assets/index-abc.js.ma%70",
      "/assets/index-abc.js%2emap",
      "/assets/index-abc.js.%6D%61%70",
    ])
      assert.equal((await app.inject({ url })).statusCode, 404, url);
    const open = await api({ serveSourceMaps: true });
    assert.equal((await open.inject({ url: "/assets/index-abc.js.map" })).statusCode, 200);
    await open.close();
  });
});

describe("/metrics and /openapi.json", () => {
  it("need the viewer token by default; --public-metrics opens them", async () => {
    assert.equal((await app.inject({ url: "/metrics" })).statusCode, 401);
    assert.equal((await app.inject({ url: "/openapi.json" })).statusCode, 401);
    assert.equal((await app.inject({ url: "/metrics", headers: V })).statusCode, 200);
    const open = await api({ publicMetrics: true });
    assert.equal((await open.inject({ url: "/metrics" })).statusCode, 200);
    assert.equal((await open.inject({ url: "/openapi.json" })).statusCode, 200);
    await open.close();
  });
});

describe("failed logins are rate-limited", () => {
  it("429 for a wrong token after the limit, per address and token, until the window passes", async () => {
    const a = await api({ authFailures: { max: 3, windowMs: 60_000 } });
    const bad = { authorization: "Bearer guess-guess-guess-guess" };
    for (let i = 0; i < 3; i++)
      assert.equal((await a.inject({ url: "/api/v1/clusters", headers: bad })).statusCode, 401);
    const r = await a.inject({ url: "/api/v1/clusters", headers: bad });
    assert.equal(r.statusCode, 429);
    assert.ok(Number(r.headers["retry-after"]) > 0);
    assert.ok(
      lines.some((l) => l.msg === "login throttled" && typeof l.fingerprint === "string"),
      "the throttled token is logged by its fingerprint",
    );
    await clock.advance(60_000);
    assert.equal((await a.inject({ url: "/api/v1/clusters", headers: bad })).statusCode, 401);
    await a.close();
  });

  it("after 20 wrong tokens from one address, its valid viewer and admin tokens still pass (issue 32)", async () => {
    const a = await api();
    // One address for everyone: an ingress, SNAT or a port-forward.
    for (let i = 0; i < 20; i++) {
      const guess = { authorization: `Bearer guess-${i}-0123456789abcdef` };
      assert.equal((await a.inject({ url: "/api/v1/clusters", headers: guess })).statusCode, 401);
    }
    const same = { authorization: "Bearer guess-0-0123456789abcdef" };
    for (let i = 0; i < 20; i++) await a.inject({ url: "/api/v1/clusters", headers: same });
    assert.equal((await a.inject({ url: "/api/v1/clusters", headers: same })).statusCode, 429);
    assert.equal((await a.inject({ url: "/api/v1/clusters", headers: V })).statusCode, 200);
    assert.equal(
      (
        await a.inject({
          method: "DELETE",
          url: "/api/v1/policies/warmup/nope",
          headers: { authorization: A.authorization },
        })
      ).statusCode,
      404,
      "the admin token passes too",
    );
    await a.close();
  });

  it("an address spraying many different wrong tokens is refused past max × 5, valid tokens still pass", async () => {
    const a = await api({ authFailures: { max: 2, windowMs: 60_000 } });
    for (let i = 0; i < 10; i++) {
      const guess = { authorization: `Bearer spray-${i}-0123456789abcdef` };
      assert.equal((await a.inject({ url: "/api/v1/clusters", headers: guess })).statusCode, 401);
    }
    const fresh = { authorization: "Bearer never-tried-0123456789abcdef" };
    assert.equal((await a.inject({ url: "/api/v1/clusters", headers: fresh })).statusCode, 429);
    assert.equal(
      (await a.inject({ url: "/api/v1/clusters", headers: fresh, remoteAddress: "10.0.0.9" })).statusCode,
      401,
      "another address is not affected",
    );
    assert.equal((await a.inject({ url: "/api/v1/clusters", headers: V })).statusCode, 200);
    await a.close();
  });
});

describe("HEAD on the event stream", () => {
  it("answers with the stream's headers and ends", async () => {
    const r = await app.inject({ method: "HEAD", url: "/api/v1/clusters/c1/stream", headers: V });
    assert.equal(r.statusCode, 200);
    assert.match(String(r.headers["content-type"]), /text\/event-stream/);
    assert.equal(r.body, "");
  });
});

describe("request bodies have a deadline", () => {
  it("a client that never finishes its body gets 408 and the socket closes", async () => {
    const a = await api({ requestTimeoutMs: 300 });
    await a.listen({ host: "127.0.0.1", port: 0 });
    const port = (a.server.address() as { port: number }).port;
    const answer = await new Promise<string>((resolve, reject) => {
      const sock = connect(port, "127.0.0.1", () => {
        sock.write(
          `PUT /api/v1/policies/warmup/general HTTP/1.1\r\nhost: x\r\nauthorization: ${A.authorization}\r\n` +
            "content-type: application/json\r\ncontent-length: 1000\r\n\r\n{",
        );
      });
      let got = "";
      sock.on("data", (d: Buffer) => (got += d.toString()));
      sock.on("close", () => resolve(got));
      sock.on("error", reject);
      setTimeout(() => reject(new Error("no answer within 10 s")), 10_000).unref();
    });
    assert.match(answer, /^HTTP\/1\.1 408/);
    await a.close();
  });
});
