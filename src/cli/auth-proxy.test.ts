// Issue 42, finding 1: core's real app behind a stand-in nginx `auth_request` proxy — a real HTTP
// server that signs its users in, sets only X-Auth-Request-User/-Email/-Groups (overwriting any a
// client sent), appends the client's address to X-Forwarded-For and passes every other header
// through. A viewer's own X-Forwarded-Groups must not make them an admin, and the audit records
// the proxy's user and the address the proxy saw.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, request, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { parseConfig } from "../config/config.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import type { AuditListDto } from "../dashboard/dto.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { Registry } from "../shared/metrics.ts";
import { coreApi } from "./parts.ts";

/** The proxy's signed-in users, by its session cookie. */
const SESSIONS: Record<string, { user: string; email: string; groups: string }> = {
  "victor-session": { user: "victor", email: "victor@example.com", groups: "developers" },
  "ada-session": { user: "ada", email: "ada@example.com", groups: "wave-admins" },
};
/** The client's own address (the proxy listens on 127.0.0.1, the only address core trusts). */
const CLIENT = "127.0.0.7";

let dir = "";
let store: Store;
let core: FastifyInstance;
let proxy: Server;
let coreUrl: URL;
let proxyPort = 0;

/** nginx `auth_request` + `auth_request_set`/`proxy_set_header X-Auth-Request-*` in front of core. */
function standInProxy(upstream: URL): Server {
  return createServer((req, res) => {
    const cookie = /_oauth2_proxy=([\w-]+)/.exec(req.headers.cookie ?? "")?.[1] ?? "";
    const who = SESSIONS[cookie];
    if (!who) {
      res.writeHead(401).end();
      return;
    }
    const headers: IncomingHttpHeaders = { ...req.headers };
    headers["x-auth-request-user"] = who.user;
    headers["x-auth-request-email"] = who.email;
    headers["x-auth-request-groups"] = who.groups;
    // $proxy_add_x_forwarded_for: what the client sent, then the address the proxy saw.
    const seen = req.socket.remoteAddress ?? "";
    headers["x-forwarded-for"] = req.headers["x-forwarded-for"]
      ? `${String(req.headers["x-forwarded-for"])}, ${seen}`
      : seen;
    const up = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    req.pipe(up);
  });
}

/** A request from the client's address, to the proxy (or straight to core). */
function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method,
        path,
        localAddress: CLIENT,
        headers: { ...headers, ...(payload ? { "content-type": "application/json" } : {}) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-auth-proxy-"));
  const roles = join(dir, "roles.yaml");
  await writeFile(roles, 'clusters:\n  "*":\n    admin: [wave-admins]\n    viewer: [developers]\n');
  const { config } = parseConfig([], {
    WAVE_CLUSTER_ID: "prod",
    WAVE_AUTH_ROLES: roles,
    WAVE_AUTH_PROXY_TRUSTED: "127.0.0.1",
    WAVE_AUTH_PROXY_HEADERS: "x-auth-request",
  });
  const clock = new FakeClock(Date.UTC(2026, 5, 1));
  store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  const hub = new ClusterHub(store, clock);
  hub.ensure("prod", false);
  core = await coreApi({
    config,
    tokens: { admin: "admin-token-0123456789", viewer: "viewer-token-0123456789" },
    hub,
    store,
    prices: new KwokPriceProvider(),
    clock,
    metrics: new Registry(),
    warmupTotals: () => ({ hits: 0, misses: 0, timeSavedSeconds: 0 }),
    onPolicyChange: () => Promise.resolve(),
  });
  coreUrl = new URL(await core.listen({ host: "127.0.0.1", port: 0 }));
  proxy = standInProxy(coreUrl);
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  proxyPort = (proxy.address() as AddressInfo).port;
});

after(async () => {
  proxy.closeAllConnections();
  await new Promise((r) => proxy.close(r));
  await core.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const WARMUP = "/api/v1/clusters/prod/policies/warmup/general";
const forged = {
  "x-forwarded-user": "mallory",
  "x-forwarded-email": "mallory@example.com",
  "x-forwarded-groups": "wave-admins",
  "x-forwarded-for": "203.0.113.66",
  "x-wave-client": "api",
};

describe("auth proxy: one header family, the proxy's view of the client", { timeout: 30_000 }, () => {
  it("a viewer sending X-Forwarded-Groups: wave-admins through the proxy gets 403 on a warmup change", async () => {
    const r = await send(
      proxyPort,
      "PUT",
      WARMUP,
      { ...forged, cookie: "_oauth2_proxy=victor-session" },
      {
        enabled: true,
      },
    );
    assert.equal(r.status, 403, r.body);
    assert.match(r.body, /victor@example\.com has the viewer role/);
  });

  it("the proxy's own headers sent straight to core from the client's address are ignored (401)", async () => {
    const r = await send(
      Number(coreUrl.port),
      "PUT",
      WARMUP,
      { "x-auth-request-user": "ada", "x-auth-request-groups": "wave-admins" },
      { enabled: true },
    );
    assert.equal(r.status, 401, r.body);
  });

  it("the audit records the proxy's user and the address the proxy saw, not the client's choice", async () => {
    const r = await send(
      proxyPort,
      "PUT",
      WARMUP,
      { ...forged, cookie: "_oauth2_proxy=ada-session" },
      {
        enabled: true,
        maxWarmNodes: 1,
      },
    );
    assert.equal(r.status, 200, r.body);
    const list = await send(proxyPort, "GET", "/api/v1/clusters/prod/audit", {
      cookie: "_oauth2_proxy=ada-session",
    });
    assert.equal(list.status, 200, list.body);
    const entries = (JSON.parse(list.body) as AuditListDto).entries;
    assert.equal(entries.length, 1, list.body);
    const [e] = entries;
    assert.ok(e);
    assert.equal(e.subject, "ada@example.com");
    assert.deepEqual(e.groups, ["wave-admins"]);
    assert.equal(e.address, CLIENT);
  });
});
