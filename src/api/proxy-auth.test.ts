import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { build } from "./app.ts";
import { proxiedClientAddress, proxyAuthenticator, trustList, type ProxyHeaderFamily } from "./proxy-auth.ts";
import type { RoleMapping } from "./roles.ts";
import { roleInCluster } from "./roles.ts";

const roles: RoleMapping = {
  clusters: {
    "*": { admin: ["ops"], viewer: ["dev"], namespaceEditors: [{ group: "team-a", namespaces: ["a"] }] },
    prod: { admin: ["sre"], viewer: ["dev", "ops"], namespaceEditors: [] },
  },
};
const SECRET = "proxy-shared-secret-0123";

async function app(trusted: string[], secret?: string, headers: ProxyHeaderFamily = "x-forwarded") {
  return build({
    tokens: { admin: "a-token-0123456789", viewer: "v-token-0123456789" },
    authenticators: [proxyAuthenticator({ trusted, secret, headers, roles, defaultClusterId: "dev" })],
    plugins: [
      (s) => {
        s.get("/api/v1/clusters/:id/me", { config: { role: "viewer" } }, (req) => req.identity);
      },
    ],
  });
}

describe("auth-proxy headers", () => {
  it("are trusted from the proxy's addresses (oauth2-proxy's X-Forwarded-* and X-Auth-Request-*)", async () => {
    const a = await app(["127.0.0.0/8"]);
    const r = await a.inject({
      url: "/api/v1/clusters/dev/me",
      headers: {
        "x-forwarded-user": "u1",
        "x-forwarded-email": "ann@example.com",
        "x-forwarded-groups": "dev,ops",
      },
    });
    assert.equal(r.statusCode, 200);
    assert.deepEqual(r.json(), {
      subject: "ann@example.com",
      groups: ["dev", "ops"],
      role: "admin",
      source: "proxy",
    });
    const xar = await app(["127.0.0.0/8"], undefined, "x-auth-request");
    const prod = await xar.inject({
      url: "/api/v1/clusters/prod/me",
      headers: { "x-auth-request-user": "ann", "x-auth-request-groups": "dev,ops" },
    });
    assert.equal(prod.json<{ role: string }>().role, "viewer", "prod has its own mapping");
    const none = await a.inject({
      url: "/api/v1/clusters/dev/me",
      headers: { "x-forwarded-user": "bob", "x-forwarded-groups": "nobody" },
    });
    assert.equal(none.statusCode, 403);
    assert.match(
      none.json<{ message: string }>().message,
      /none of their groups \(nobody\) has a role in cluster dev/,
    );
  });

  it("are ignored from any other address without the shared secret", async () => {
    const a = await app(["10.0.0.1"]); // inject() comes from 127.0.0.1
    const h = { "x-forwarded-user": "ann", "x-forwarded-groups": "ops" };
    assert.equal((await a.inject({ url: "/api/v1/clusters/dev/me", headers: h })).statusCode, 401);
    const s = await app([], SECRET);
    assert.equal((await s.inject({ url: "/api/v1/clusters/dev/me", headers: h })).statusCode, 401);
    const wrong = { ...h, "x-wave-proxy-secret": "not-the-secret-at-all" };
    assert.equal((await s.inject({ url: "/api/v1/clusters/dev/me", headers: wrong })).statusCode, 401);
    const right = { ...h, "x-wave-proxy-secret": SECRET };
    assert.equal((await s.inject({ url: "/api/v1/clusters/dev/me", headers: right })).statusCode, 200);
  });

  it("only the configured family counts: never a fallback to the other (issue 42)", async () => {
    const a = await app(["127.0.0.0/8"], undefined, "x-auth-request");
    const mixed = await a.inject({
      url: "/api/v1/clusters/dev/me",
      headers: {
        "x-auth-request-user": "vic",
        "x-auth-request-groups": "dev",
        "x-forwarded-user": "mallory",
        "x-forwarded-email": "mallory@example.com",
        "x-forwarded-groups": "ops",
      },
    });
    assert.deepEqual(mixed.json(), { subject: "vic", groups: ["dev"], role: "viewer", source: "proxy" });
    const other = await a.inject({
      url: "/api/v1/clusters/dev/me",
      headers: { "x-forwarded-user": "mallory", "x-forwarded-groups": "ops" },
    });
    assert.equal(other.statusCode, 401, "the other family alone is no credential");
    const f = await app(["127.0.0.0/8"], undefined, "x-forwarded");
    const back = await f.inject({
      url: "/api/v1/clusters/dev/me",
      headers: { "x-forwarded-user": "vic", "x-auth-request-groups": "ops" },
    });
    assert.equal(back.statusCode, 403, "x-forwarded's user gets no groups from x-auth-request");
  });

  it("the client's address is the rightmost X-Forwarded-For hop no trusted proxy owns", () => {
    const t = trustList(["10.0.0.0/8"]);
    assert.equal(proxiedClientAddress("6.6.6.6, 192.0.2.7", "10.0.0.2", t), "192.0.2.7");
    assert.equal(proxiedClientAddress("6.6.6.6, 192.0.2.7, 10.0.0.9", "10.0.0.2", t), "192.0.2.7");
    assert.equal(proxiedClientAddress(["6.6.6.6", "192.0.2.7"], "10.0.0.2", t), "192.0.2.7");
    assert.equal(proxiedClientAddress("10.0.0.4, 10.0.0.9", "10.0.0.2", t), "10.0.0.4");
    assert.equal(proxiedClientAddress(undefined, "10.0.0.2", t), "10.0.0.2");
  });

  it("trustList matches addresses, CIDRs and IPv4-mapped IPv6 peers", () => {
    const t = trustList(["10.1.0.0/16", "192.168.1.7", "fd00::/8"]);
    assert.ok(t("10.1.200.3"));
    assert.ok(t("::ffff:10.1.0.9"));
    assert.ok(t("192.168.1.7"));
    assert.ok(!t("192.168.1.8"));
    assert.ok(t("fd00::1"));
    assert.ok(!t("10.2.0.1"));
    assert.ok(!t(""));
  });

  it("roleInCluster: admin over namespace editor over viewer; namespaces merged", () => {
    assert.deepEqual(roleInCluster(roles, "x", ["dev", "team-a"]), {
      role: "namespace-editor",
      namespaces: ["a"],
    });
    assert.deepEqual(roleInCluster(roles, "x", ["team-a", "ops"]), { role: "admin" });
    assert.deepEqual(roleInCluster(roles, "prod", ["team-a"]), undefined);
    assert.deepEqual(roleInCluster({ clusters: {} }, "x", ["ops"]), undefined);
  });
});
