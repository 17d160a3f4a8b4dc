import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { build, type Authenticator } from "./app.ts";
import { mayChange, tokenIdentity, type Identity } from "./identity.ts";
import { policyRoutes } from "./routes/policies.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import { silentLogger } from "../shared/log.ts";

const tokens = { admin: "a-token", viewer: "v-token" };

// A stand-in for the OIDC and proxy authenticators: `x-test-user: NAME` is a user whose role
// depends on the cluster, as a group → role mapping per cluster gives it.
const users: Record<string, (cluster: string | undefined) => Identity> = {
  team: (cluster) => ({
    subject: "team-lead",
    groups: ["team-a"],
    role: cluster === "prod" ? "viewer" : "namespace-editor",
    namespaces: ["team-a"],
    source: "oidc",
  }),
  boss: () => ({ subject: "boss", groups: ["ops"], role: "admin", source: "proxy" }),
};
const testAuth: Authenticator = (req, cluster) => {
  const u = req.headers["x-test-user"];
  return typeof u === "string" ? users[u]?.(cluster) : undefined;
};

let dir: string;
let store: Store;
let app: FastifyInstance;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-identity-"));
  store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  app = await build({
    tokens,
    authenticators: [testAuth],
    plugins: [
      policyRoutes({ store, defaultClusterId: "dev", now: () => 1 }),
      (s) => {
        s.get("/api/v1/clusters/:id/me", { config: { role: "viewer" } }, (req) => req.identity);
      },
    ],
  });
});

after(async () => {
  await app.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const spot = { threshold: 1, strategy: "Prefer" };

describe("request identity", () => {
  it("static tokens are token:viewer and token:admin", async () => {
    const r = await app.inject({
      url: "/api/v1/clusters/dev/me",
      headers: { authorization: "Bearer a-token" },
    });
    assert.deepEqual(r.json(), tokenIdentity("admin"));
    const v = await app.inject({
      url: "/api/v1/clusters/dev/me",
      headers: { authorization: "Bearer v-token" },
    });
    assert.deepEqual(v.json(), { subject: "token:viewer", groups: [], role: "viewer", source: "token" });
  });

  it("other authenticators resolve the role in the request's cluster", async () => {
    const dev = await app.inject({ url: "/api/v1/clusters/dev/me", headers: { "x-test-user": "team" } });
    assert.equal(dev.json<Identity>().role, "namespace-editor");
    const prod = await app.inject({ url: "/api/v1/clusters/prod/me", headers: { "x-test-user": "team" } });
    assert.equal(prod.json<Identity>().role, "viewer");
    assert.equal((await app.inject({ url: "/api/v1/clusters/dev/me" })).statusCode, 401);
  });

  it("namespace editors change spot policies in their namespaces only", async () => {
    const put = (cluster: string, ns: string, who: Record<string, string>) =>
      app.inject({
        method: "PUT",
        url: `/api/v1/clusters/${cluster}/policies/spot/Deployment/${ns}/web`,
        headers: who,
        payload: spot,
      });
    assert.equal((await put("dev", "team-a", { "x-test-user": "team" })).statusCode, 200);
    const other = await put("dev", "team-b", { "x-test-user": "team" });
    assert.equal(other.statusCode, 403);
    assert.match(other.json<{ message: string }>().message, /only in namespace\(s\) team-a, not in team-b/);
    // The same user is a viewer in prod: refused before the handler.
    assert.equal((await put("prod", "team-a", { "x-test-user": "team" })).statusCode, 403);
    assert.equal((await put("dev", "team-b", { "x-test-user": "boss" })).statusCode, 200);
    assert.equal((await put("dev", "team-b", { authorization: "Bearer v-token" })).statusCode, 403);
    assert.equal((await put("dev", "team-b", { authorization: "Bearer a-token" })).statusCode, 200);
    const del = await app.inject({
      method: "DELETE",
      url: "/api/v1/clusters/dev/policies/spot/Deployment/team-b/web",
      headers: { "x-test-user": "team" },
    });
    assert.equal(del.statusCode, 403);
  });

  it("warmup policies (cluster-wide) stay for admins", async () => {
    const r = await app.inject({
      method: "PUT",
      url: "/api/v1/clusters/dev/policies/warmup/default",
      headers: { "x-test-user": "team" },
      payload: { enabled: true },
    });
    assert.equal(r.statusCode, 403);
  });

  it("mayChange", () => {
    const ed: Identity = {
      subject: "e",
      groups: [],
      role: "namespace-editor",
      namespaces: ["a"],
      source: "oidc",
    };
    assert.ok(mayChange(ed, "a"));
    assert.ok(!mayChange(ed, "b"));
    assert.ok(!mayChange(ed));
    assert.ok(mayChange(tokenIdentity("admin")));
    assert.ok(!mayChange(tokenIdentity("viewer"), "a"));
    assert.ok(!mayChange(undefined, "a"));
  });
});
