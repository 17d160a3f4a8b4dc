// Console sign-in with OpenID Connect (issue 31): authorization code + PKCE through openid-client,
// a server-side session behind a signed HttpOnly SameSite cookie, and bearer ID/access tokens
// (JWTs for Wave's audience) on the API. The user's groups map to a role per cluster (roles.ts).
// Routes: GET /auth/login → the provider; GET /auth/callback ← the provider; POST /auth/logout.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import * as client from "openid-client";
import type { ConsoleSession, Store } from "../core/store/store.ts";
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import type { Authenticator } from "./app.ts";
import { AuthRefused, type Identity } from "./identity.ts";
import { JwtError, looksLikeJwt, verifyJwt } from "./jwt.ts";
import { ProviderKeys } from "./provider-keys.ts";
import { groupIdentity, type RoleMapping } from "./roles.ts";

export interface OidcOptions {
  issuerUrl: string;
  clientId: string;
  /** Unset: a public client (PKCE only). */
  clientSecret?: string | undefined;
  redirectUrl: string;
  scopes: readonly string[];
  groupsClaim: string;
  /** The audience bearer tokens must carry; default the client id. */
  audience?: string | undefined;
  /** The name on the sign-in button; default the issuer's host. */
  providerName?: string | undefined;
  roles: RoleMapping;
  /** The cluster of routes without one in their path (core's --cluster-id). */
  defaultClusterId: string;
  sessionTtlMs: number;
  clock: Clock;
  log?: Logger;
  /**
   * Where sessions live: core's store, so every replica knows every sign-in and a restart keeps
   * them; default in this process's memory.
   */
  sessions?: SessionStore;
  /**
   * The key that signs the cookies; replicas must share it (core derives it from the admin
   * token); default random per process.
   */
  cookieKey?: Buffer;
  /** Allow an http:// issuer (tests, a provider on localhost); never in a deployment. */
  allowHttp?: boolean;
}

export const SESSION_COOKIE = "wave_session";
const LOGIN_COOKIE = "wave_login";
const LOGIN_TTL_MS = 10 * 60_000;
const MAX_SESSIONS = 10_000;

export type SessionStore = Pick<Store, "putSession" | "getSession" | "deleteSession">;

/** Sessions in this process's memory (tests, and a core without a store). */
export function memorySessions(max = MAX_SESSIONS): SessionStore {
  const m = new Map<string, ConsoleSession>();
  return {
    putSession(s, now) {
      for (const [k, v] of m) if (v.expiresAt <= now) m.delete(k);
      const oldest = m.keys().next().value;
      if (m.size >= max && oldest !== undefined) m.delete(oldest);
      m.set(s.idHash, { ...s, groups: [...s.groups] });
      return Promise.resolve();
    },
    getSession(idHash, now) {
      const s = m.get(idHash);
      return Promise.resolve(s && s.expiresAt > now ? s : undefined);
    },
    deleteSession(idHash) {
      m.delete(idHash);
      return Promise.resolve();
    },
  };
}

const hashId = (id: string): string => createHash("sha256").update(id).digest("hex");

/**
 * A sign-in under way, in its own signed HttpOnly cookie (no server state: the callback may reach
 * another core replica than the login did).
 */
interface Pending {
  state: string;
  verifier: string;
  nonce: string;
  expiresAt: number;
}

/** The value of one cookie in a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** A login cookie's sign-in, while it has not expired. */
function pendingOf(value: string, now: number): Pending | undefined {
  try {
    const p = JSON.parse(Buffer.from(value, "base64url").toString("utf8")) as Partial<Pending>;
    if (typeof p.state !== "string" || typeof p.verifier !== "string" || typeof p.nonce !== "string")
      return undefined;
    if (typeof p.expiresAt !== "number" || p.expiresAt <= now) return undefined;
    return { state: p.state, verifier: p.verifier, nonce: p.nonce, expiresAt: p.expiresAt };
  } catch {
    return undefined;
  }
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** A claim's groups: a list of strings, or one comma-separated string. */
export function groupsOf(claims: Record<string, unknown>, claim: string): string[] {
  const v = claims[claim];
  if (Array.isArray(v)) return v.filter((g): g is string => typeof g === "string" && g !== "");
  if (typeof v === "string")
    return v
      .split(",")
      .map((g) => g.trim())
      .filter((g) => g !== "");
  return [];
}

/** The name Wave records for a user: their email, else preferred_username, else `sub`. */
export const subjectOf = (claims: Record<string, unknown>): string =>
  str(claims.email) ?? str(claims.preferred_username) ?? str(claims.sub) ?? "unknown";

export class OidcAuth {
  readonly #o: OidcOptions;
  readonly #key: Buffer;
  readonly #sessions: SessionStore;
  readonly #secure: boolean;
  readonly #cookiePath: string;
  #config: Promise<client.Configuration> | undefined;
  readonly #providerKeys: ProviderKeys;

  constructor(o: OidcOptions) {
    this.#o = o;
    this.#sessions = o.sessions ?? memorySessions();
    this.#key = o.cookieKey ?? randomBytes(32);
    const redirect = new URL(o.redirectUrl);
    this.#secure = redirect.protocol === "https:";
    // The console lives at the redirect URL's parent (…/auth/callback → …/).
    this.#cookiePath = redirect.pathname.replace(/auth\/callback\/?$/, "") || "/";
    this.#providerKeys = new ProviderKeys(
      async () => (await this.#discover()).serverMetadata(),
      o.clock,
      o.log,
    );
  }

  get providerName(): string {
    return this.#o.providerName ?? new URL(this.#o.issuerUrl).host;
  }

  get audience(): string {
    return this.#o.audience ?? this.#o.clientId;
  }

  /** The provider's metadata, discovered on first use (a provider down at start is retried later). */
  #discover(): Promise<client.Configuration> {
    this.#config ??= client
      .discovery(
        new URL(this.#o.issuerUrl),
        this.#o.clientId,
        this.#o.clientSecret,
        this.#o.clientSecret === undefined ? client.None() : undefined,
        // eslint-disable-next-line @typescript-eslint/no-deprecated -- a provider on this machine only (cli/identity.ts)
        this.#o.allowHttp ? { execute: [client.allowInsecureRequests] } : undefined,
      )
      .catch((err: unknown) => {
        this.#config = undefined;
        throw err;
      });
    return this.#config;
  }

  #sign(value: string): string {
    return `${value}.${createHmac("sha256", this.#key).update(value).digest("base64url")}`;
  }

  /** The signed value of a cookie, or undefined when absent or not signed by this process. */
  #unsign(cookie: string | undefined): string | undefined {
    if (!cookie) return undefined;
    const dot = cookie.lastIndexOf(".");
    if (dot <= 0) return undefined;
    const value = cookie.slice(0, dot);
    const want = Buffer.from(this.#sign(value));
    const got = Buffer.from(cookie);
    return want.length === got.length && timingSafeEqual(want, got) ? value : undefined;
  }

  #cookie(name: string, value: string, maxAgeMs: number): string {
    return [
      `${name}=${value}`,
      `Path=${this.#cookiePath}`,
      "HttpOnly",
      "SameSite=Lax",
      ...(this.#secure ? ["Secure"] : []),
      `Max-Age=${Math.max(0, Math.floor(maxAgeMs / 1000))}`,
    ].join("; ");
  }

  /** The session a request's cookie names, if it is alive. */
  async session(req: FastifyRequest): Promise<ConsoleSession | undefined> {
    const id = this.#unsign(cookieValue(req.headers.cookie, SESSION_COOKIE));
    return id === undefined ? undefined : this.#sessions.getSession(hashId(id), this.#o.clock.now());
  }

  #identity(subject: string, groups: string[], clusterId: string | undefined): Identity {
    const cluster = clusterId ?? this.#o.defaultClusterId;
    return groupIdentity(
      this.#o.roles,
      cluster,
      { subject, groups, source: "oidc" },
      `${subject} is signed in, but`,
    );
  }

  /**
   * The API's authenticator: a live session cookie, or a bearer JWT from this provider for Wave's
   * audience. A token for another audience, expired or badly signed grants nothing (401).
   */
  readonly authenticate: Authenticator = async (req, clusterId) => {
    const auth = req.headers.authorization;
    const bearer = auth ? /^Bearer\s+(\S+)\s*$/i.exec(auth)?.[1] : undefined;
    if (bearer !== undefined) {
      if (!looksLikeJwt(bearer)) return undefined;
      // The provider down: 503 after one fetch per backoff, never a fetch per request (issue 42).
      const issuer = await this.#providerKeys.issuer();
      let claims: Record<string, unknown>;
      try {
        claims = await verifyJwt(bearer, {
          issuer,
          audience: this.audience,
          now: Math.floor(this.#o.clock.now() / 1000),
          keys: (refresh) => this.#providerKeys.keys(refresh),
        });
      } catch (err) {
        if (!(err instanceof JwtError)) throw err;
        this.#o.log?.info("bearer token refused", { reason: err.message });
        return undefined;
      }
      return this.#identity(subjectOf(claims), groupsOf(claims, this.#o.groupsClaim), clusterId);
    }
    const s = await this.session(req);
    if (!s) return undefined;
    // A signed-in browser changes things only from the console itself: cross-site forms cannot
    // set this header, and the API allows no cross-origin requests (CSRF).
    if (!["GET", "HEAD", "OPTIONS"].includes(req.method) && req.headers["x-wave-client"] !== "ui")
      throw new AuthRefused("changes with a console sign-in must come from the console (x-wave-client: ui)");
    return this.#identity(s.subject, s.groups, clusterId);
  };

  /** GET /auth/login: a fresh state, nonce and PKCE verifier; off to the provider. */
  async login(_req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const config = await this.#discover();
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const pending: Pending = { state, verifier, nonce, expiresAt: this.#o.clock.now() + LOGIN_TTL_MS };
    const value = Buffer.from(JSON.stringify(pending)).toString("base64url");
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: this.#o.redirectUrl,
      scope: this.#o.scopes.join(" "),
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      nonce,
    });
    return reply
      .header("set-cookie", this.#cookie(LOGIN_COOKIE, this.#sign(value), LOGIN_TTL_MS))
      .header("cache-control", "no-store")
      .redirect(url.href, 302);
  }

  /** GET /auth/callback: the code for tokens (PKCE, state and nonce checked), then a session. */
  async callback(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const signed = this.#unsign(cookieValue(req.headers.cookie, LOGIN_COOKIE));
    const pending = signed === undefined ? undefined : pendingOf(signed, this.#o.clock.now());
    const clear = this.#cookie(LOGIN_COOKIE, "", 0);
    if (!pending)
      return reply.code(400).header("set-cookie", clear).send({
        error: "bad_request",
        message: "sign-in expired or started in another browser: sign in again",
      });
    const config = await this.#discover();
    const current = new URL(this.#o.redirectUrl);
    current.search = new URL(req.url, "http://x").search;
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      const e = err as Error & { error?: string; error_description?: string };
      this.#o.log?.warn("sign-in failed", { reason: e.error ?? e.message });
      return reply
        .code(401)
        .header("set-cookie", clear)
        .send({
          error: "unauthorized",
          message: `sign-in failed: ${e.error_description ?? e.error ?? e.message}`,
        });
    }
    const claims = (tokens.claims() ?? {}) as Record<string, unknown>;
    let groups = groupsOf(claims, this.#o.groupsClaim);
    if (!(this.#o.groupsClaim in claims) && tokens.access_token && typeof claims.sub === "string") {
      // Some providers put groups only in the userinfo answer.
      const info = (await client.fetchUserInfo(config, tokens.access_token, claims.sub)) as Record<
        string,
        unknown
      >;
      groups = groupsOf(info, this.#o.groupsClaim);
    }
    const id = randomBytes(24).toString("base64url");
    const subject = subjectOf(claims);
    await this.#sessions.putSession(
      {
        idHash: hashId(id),
        subject,
        name: str(claims.name) ?? subject,
        groups,
        expiresAt: this.#o.clock.now() + this.#o.sessionTtlMs,
      },
      this.#o.clock.now(),
    );
    this.#o.log?.info("signed in", { subject, groups: groups.join(",") });
    return reply
      .header("set-cookie", [clear, this.#cookie(SESSION_COOKIE, this.#sign(id), this.#o.sessionTtlMs)])
      .header("cache-control", "no-store")
      .redirect(this.#cookiePath, 302);
  }

  /**
   * POST /auth/logout: the session ends here (its row is deleted); the answer names the provider's
   * end-session URL with Wave's client_id, never an id_token_hint (issue 42: the hint handed the ID
   * token, an admin-capable bearer, to page script; Wave keeps no token to give).
   */
  async logout(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const id = this.#unsign(cookieValue(req.headers.cookie, SESSION_COOKIE));
    if (id !== undefined) await this.#sessions.deleteSession(hashId(id));
    let endSession: string | null = null;
    try {
      const config = await this.#discover();
      if (config.serverMetadata().end_session_endpoint)
        endSession = client.buildEndSessionUrl(config, {
          post_logout_redirect_uri: new URL(this.#cookiePath, this.#o.redirectUrl).href,
        }).href;
    } catch {
      /* signed out of Wave anyway */
    }
    return reply
      .header("set-cookie", this.#cookie(SESSION_COOKIE, "", 0))
      .send({ signedOut: true, endSessionUrl: endSession });
  }

  /** The /auth routes (public: they are how one signs in). */
  routes(): (app: FastifyInstance) => void {
    return (app) => {
      app.get("/auth/login", { schema: { hide: true } }, (req, reply) => this.login(req, reply));
      app.get("/auth/callback", { schema: { hide: true } }, (req, reply) => this.callback(req, reply));
      app.post("/auth/logout", { schema: { hide: true } }, (req, reply) => this.logout(req, reply));
    };
  }
}
