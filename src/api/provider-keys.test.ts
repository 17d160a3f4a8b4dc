// Issue 42 (low): a JWT-shaped bearer while the sign-in provider's key endpoint is down answered
// 500 and made one outbound fetch per request. Now 503 with Retry-After, and one fetch per
// backoff — against a real HTTP "provider" whose discovery works and whose keys fail.
import assert from "node:assert/strict";
import { generateKeyPairSync, sign } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { FakeClock } from "../shared/clock.ts";
import { build } from "./app.ts";
import { OidcAuth } from "./oidc.ts";

const clock = new FakeClock(Date.UTC(2026, 5, 1));
const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
let keysUp = false;
let keyFetches = 0;
let provider: Server;
let issuer = "";
let app: FastifyInstance;

/** A token signed by the provider's key for Wave's audience (an admin by its groups). */
function token(): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const now = Math.floor(clock.now() / 1000);
  const body = `${b64({ alg: "RS256", kid: "k1" })}.${b64({ iss: issuer, aud: "wave", sub: "ann", exp: now + 600, groups: ["ops"] })}`;
  return `${body}.${sign("sha256", Buffer.from(body), privateKey).toString("base64url")}`;
}

before(async () => {
  provider = createServer((req, res) => {
    if (req.url === "/.well-known/openid-configuration") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ issuer, authorization_endpoint: `${issuer}/auth`, jwks_uri: `${issuer}/jwks` }),
      );
      return;
    }
    keyFetches++;
    if (!keysUp) {
      res.writeHead(503).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        keys: [{ ...publicKey.export({ format: "jwk" }), kid: "k1", alg: "RS256", use: "sig" }],
      }),
    );
  });
  await new Promise<void>((r) => provider.listen(0, "127.0.0.1", r));
  issuer = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
  const oidc = new OidcAuth({
    issuerUrl: issuer,
    clientId: "wave",
    redirectUrl: "http://127.0.0.1/auth/callback",
    scopes: ["openid"],
    groupsClaim: "groups",
    roles: { clusters: { "*": { admin: ["ops"], viewer: [], namespaceEditors: [] } } },
    defaultClusterId: "c1",
    sessionTtlMs: 3_600_000,
    clock,
    allowHttp: true,
  });
  app = await build({
    tokens: { admin: "admin-token-0123456789", viewer: "viewer-token-0123456789" },
    authenticators: [oidc.authenticate],
    clock,
    plugins: [
      (s) => {
        s.get("/api/v1/clusters/:id/me", { config: { role: "viewer" } }, (req) => req.identity);
      },
    ],
  });
});

after(async () => {
  await app.close();
  provider.closeAllConnections();
  await new Promise((r) => provider.close(r));
});

const me = (bearer: string) =>
  app.inject({ url: "/api/v1/clusters/c1/me", headers: { authorization: `Bearer ${bearer}` } });

describe("bearer JWTs while the provider's keys are unreachable", () => {
  it("503 with Retry-After, one fetch per backoff, and accepted once the keys are back", async () => {
    const bearer = token();
    const answers: number[] = [];
    for (let i = 0; i < 20; i++) answers.push((await me(bearer)).statusCode);
    assert.deepEqual(new Set(answers), new Set([503]));
    assert.equal(keyFetches, 1, "one fetch, not one per request");
    assert.equal((await me(bearer)).headers["retry-after"], "1");

    await clock.advance(1000);
    assert.equal((await me(bearer)).statusCode, 503);
    assert.equal(keyFetches, 2, "the next fetch after the backoff");
    assert.equal((await me(bearer)).headers["retry-after"], "2", "the backoff doubles");

    keysUp = true;
    await clock.advance(2000);
    const ok = await me(bearer);
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json<{ subject: string }>().subject, "ann");
    assert.equal(keyFetches, 3);
  });
});
