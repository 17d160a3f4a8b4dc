import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { JwtError, verifyJwt, type Jwk } from "./jwt.ts";

const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
const jwk = (k: KeyObject, kid: string): Jwk => ({ ...(k.export({ format: "jwk" }) as Jwk), kid });

const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString("base64url");
function jwt(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  key: KeyObject,
  ecdsa = false,
): string {
  const data = `${b64(header)}.${b64(claims)}`;
  const sig = sign("sha256", Buffer.from(data), ecdsa ? { key, dsaEncoding: "ieee-p1363" } : key);
  return `${data}.${sig.toString("base64url")}`;
}

const NOW = 1_800_000_000;
const claims = { iss: "https://idp", aud: "wave", sub: "u1", exp: NOW + 300, email: "u1@example.com" };
const check = (keys: Jwk[][], over: Partial<Parameters<typeof verifyJwt>[1]> = {}) => {
  let calls = 0;
  return {
    opts: {
      issuer: "https://idp",
      audience: "wave",
      now: NOW,
      keys: (refresh: boolean) => {
        calls++;
        return Promise.resolve(keys[refresh ? 1 : 0] ?? []);
      },
      ...over,
    },
    calls: () => calls,
  };
};

describe("verifyJwt", () => {
  const keys = [jwk(rsa.publicKey, "r1"), jwk(ec.publicKey, "e1")];

  it("accepts RS256 and ES256 tokens for the audience", async () => {
    const c = check([keys]);
    assert.equal(
      (await verifyJwt(jwt({ alg: "RS256", kid: "r1" }, claims, rsa.privateKey), c.opts)).sub,
      "u1",
    );
    const es = jwt({ alg: "ES256", kid: "e1" }, { ...claims, aud: ["other", "wave"] }, ec.privateKey, true);
    assert.equal((await verifyJwt(es, c.opts)).email, "u1@example.com");
  });

  it("refuses another audience, issuer, expiry, tampering, none and HMAC", async () => {
    const c = check([keys]);
    const bad: [string, RegExp][] = [
      [jwt({ alg: "RS256", kid: "r1" }, { ...claims, aud: "other-app" }, rsa.privateKey), /audience wave/],
      [
        jwt({ alg: "RS256", kid: "r1" }, { ...claims, iss: "https://evil" }, rsa.privateKey),
        /another provider/,
      ],
      [jwt({ alg: "RS256", kid: "r1" }, { ...claims, exp: NOW - 61 }, rsa.privateKey), /expired/],
      [jwt({ alg: "RS256", kid: "r1" }, { ...claims, nbf: NOW + 120 }, rsa.privateKey), /not valid yet/],
      [`${b64({ alg: "none" })}.${b64(claims)}.x`, /algorithm none/],
      [`${b64({ alg: "HS256" })}.${b64(claims)}.x`, /algorithm HS256/],
    ];
    const ok = jwt({ alg: "RS256", kid: "r1" }, claims, rsa.privateKey);
    const [h, , s] = ok.split(".");
    bad.push([`${h}.${b64({ ...claims, sub: "admin" })}.${s}`, /bad signature/]);
    // Signed by a key the provider does not publish.
    const stranger = generateKeyPairSync("rsa", { modulusLength: 2048 });
    bad.push([jwt({ alg: "RS256", kid: "r1" }, claims, stranger.privateKey), /bad signature/]);
    for (const [token, re] of bad)
      await assert.rejects(
        verifyJwt(token, c.opts),
        (e: unknown) => e instanceof JwtError && re.test(e.message),
      );
  });

  it("re-reads the provider's keys for an unknown key id (rotation)", async () => {
    const c = check([[keys[1] as Jwk], keys]);
    await verifyJwt(jwt({ alg: "RS256", kid: "r1" }, claims, rsa.privateKey), c.opts);
    assert.equal(c.calls(), 2);
    const none = check([[], []]);
    await assert.rejects(
      verifyJwt(jwt({ alg: "RS256", kid: "r9" }, claims, rsa.privateKey), none.opts),
      /a key the provider does not publish/,
    );
  });
});
