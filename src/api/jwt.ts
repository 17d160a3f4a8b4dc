// Verifies a bearer JWT (an OIDC ID token or a JWT access token) against the provider's JWKS:
// signature by one of its keys, issuer, audience, expiry. The login flow's own ID token is checked
// by openid-client; this covers tokens a client brings to the API. Pure apart from the injected
// key fetch, with node:crypto only.
import { constants, createPublicKey, verify, type JsonWebKey, type KeyObject } from "node:crypto";

export class JwtError extends Error {
  override name = "JwtError";
}

/** Signature algorithms accepted; "none" and the HMAC family (shared secrets) never are. */
const ALGS: Readonly<Record<string, { hash: string | null; pss?: boolean; ec?: boolean }>> = {
  RS256: { hash: "sha256" },
  RS384: { hash: "sha384" },
  RS512: { hash: "sha512" },
  PS256: { hash: "sha256", pss: true },
  PS384: { hash: "sha384", pss: true },
  PS512: { hash: "sha512", pss: true },
  ES256: { hash: "sha256", ec: true },
  ES384: { hash: "sha384", ec: true },
  ES512: { hash: "sha512", ec: true },
  EdDSA: { hash: null },
  Ed25519: { hash: null },
};

export interface Jwk extends JsonWebKey {
  kid?: string;
  alg?: string;
  use?: string;
}

export interface JwtCheck {
  issuer: string;
  audience: string;
  /** Seconds since the epoch. */
  now: number;
  /** Allowed clock difference, seconds (default 60). */
  skew?: number;
  /** The provider's keys; `refresh` true asks for a fresh copy (an unknown kid: keys rotated). */
  keys: (refresh: boolean) => Promise<readonly Jwk[]>;
}

const b64json = (part: string, what: string): Record<string, unknown> => {
  try {
    const v: unknown = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    /* below */
  }
  throw new JwtError(`malformed token ${what}`);
};

/** Whether a bearer credential looks like a JWT at all (three base64url parts). */
export const looksLikeJwt = (token: string): boolean => /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token);

function keyFor(keys: readonly Jwk[], kid: unknown, alg: string): KeyObject | undefined {
  const candidates = keys.filter(
    (k) =>
      (kid === undefined || k.kid === kid) &&
      (k.use === undefined || k.use === "sig") &&
      (k.alg === undefined || k.alg === alg),
  );
  for (const k of candidates) {
    try {
      return createPublicKey({ key: k, format: "jwk" });
    } catch {
      /* a key node cannot read: try the next */
    }
  }
  return undefined;
}

/** The token's claims once its signature, issuer, audience and times check out; JwtError otherwise. */
export async function verifyJwt(token: string, check: JwtCheck): Promise<Record<string, unknown>> {
  const parts = token.split(".");
  if (parts.length !== 3 || !looksLikeJwt(token)) throw new JwtError("not a JWT");
  const [h = "", p = "", sig = ""] = parts;
  const header = b64json(h, "header");
  const alg = typeof header.alg === "string" ? header.alg : "";
  const spec = ALGS[alg];
  if (!spec) throw new JwtError(`signature algorithm ${alg || "(none)"} is not accepted`);
  let key = keyFor(await check.keys(false), header.kid, alg);
  if (!key) key = keyFor(await check.keys(true), header.kid, alg);
  if (!key) throw new JwtError("signed by a key the provider does not publish");
  const data = Buffer.from(`${h}.${p}`);
  const signature = Buffer.from(sig, "base64url");
  const ok = verify(
    spec.hash,
    data,
    spec.pss
      ? { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }
      : spec.ec
        ? { key, dsaEncoding: "ieee-p1363" }
        : key,
    signature,
  );
  if (!ok) throw new JwtError("bad signature");
  const claims = b64json(p, "payload");
  if (claims.iss !== check.issuer) throw new JwtError("issued by another provider");
  const aud = claims.aud;
  const auds = Array.isArray(aud) ? aud : [aud];
  if (!auds.includes(check.audience)) throw new JwtError(`not issued for audience ${check.audience}`);
  const skew = check.skew ?? 60;
  if (typeof claims.exp !== "number" || claims.exp + skew <= check.now) throw new JwtError("expired");
  if (typeof claims.nbf === "number" && claims.nbf - skew > check.now) throw new JwtError("not valid yet");
  if (typeof claims.sub !== "string" || claims.sub === "") throw new JwtError("no subject");
  return claims;
}
