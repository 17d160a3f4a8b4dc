// The API as a Fastify app built from plugins. `build()` wires them; servers only listen.
// Tests call build() and inject() requests.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from "fastify";
import swagger from "@fastify/swagger";
import { realClock, type Clock } from "../shared/clock.ts";
import { silentLogger, type Logger } from "../shared/log.ts";
import { FailureLimiter, roleFor, tokenFingerprint, type Tokens } from "./auth.ts";
import {
  AuthRefused,
  AuthUnavailable,
  satisfies,
  tokenIdentity,
  type Identity,
  type Role,
} from "./identity.ts";
import { coerceQuery, unboundedNumbers } from "./query.ts";
import { ChangeLimiter, DEFAULT_CHANGE_RATE, throttled, type ChangeRate } from "./change-rate.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The least role a route needs; routes without one are public (health, UI). */
    role?: Role;
  }
  interface FastifyRequest {
    /** Who sent this authenticated request, with their role in its cluster (identity.ts). */
    identity: Identity | undefined;
    /** identity.role, kept for the routes written before identities. */
    role: Role | undefined;
  }
}

/**
 * One more way to authenticate a request besides the static tokens (OIDC session or bearer
 * token, auth-proxy headers). Resolves the caller's identity in the request's cluster (`clusterId`:
 * the path's `:id`, undefined on routes without one), or undefined when the request carries no
 * credential of this kind or one that does not verify (then 401).
 */
export type Authenticator = (
  req: FastifyRequest,
  clusterId: string | undefined,
) => Promise<Identity | undefined> | Identity | undefined;

export interface ApiPlugin {
  (app: FastifyInstance): Promise<void> | void;
}

export interface BuildOptions {
  tokens: Tokens;
  /** Tried in order after the static tokens (identity.ts; the OIDC and proxy modes). */
  authenticators?: Authenticator[];
  plugins: ApiPlugin[];
  logger?: FastifyServerOptions["logger"];
  /** Where failed requests (every 5xx, with its request id) and throttled logins are logged. */
  log?: Logger;
  /** Largest request body accepted, bytes. */
  bodyLimit?: number;
  /**
   * Runs before every authorized route's handler; resolving true means it answered instead
   * (core replicas: a cluster another replica owns is read through it, routes/read-through.ts).
   */
  forward?: (req: FastifyRequest, reply: FastifyReply) => Promise<boolean>;
  /** This core replica's name, sent back in an x-wave-replica header (several replicas). */
  replica?: string;
  /** Time a client has to send a whole request, headers and body (default 30 s); then 408. */
  requestTimeoutMs?: number;
  /**
   * Serve /metrics and /openapi.json without a token (default false: they need the viewer
   * role). A documented choice for scrapers that cannot send a bearer token.
   */
  publicMetrics?: boolean;
  /** Serve the UI's JavaScript source maps (default false: they expose the source). */
  serveSourceMaps?: boolean;
  /**
   * Failed logins of one token from one client address per window before that token gets 429
   * (default 20 per minute); the address's wrong tokens all get 429 past `max × addressFactor`
   * (default 5). Valid tokens are never refused.
   */
  authFailures?: { max: number; windowMs: number; addressFactor?: number };
  clock?: Clock;
  /** Changes per identity (default DEFAULT_CHANGE_RATE): beyond it 429 (change-rate.ts). */
  changeRate?: ChangeRate;
  /** Told of every route as it is registered, with the role it needs (the fuzzer's route list). */
  onRoute?: (route: { method: string; url: string; role: Role | undefined; schema: RouteSchema }) => void;
}

/** A route's schema parts, as its plugin gave them. */
export interface RouteSchema {
  params?: unknown;
  querystring?: unknown;
  body?: unknown;
}

/**
 * Headers on every answer. The UI is a Vite build (module scripts and CSS files from 'self',
 * no inline script); uPlot and React set element styles, which style-src 'unsafe-inline' allows.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-security-policy": [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; "),
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
});

/** Paths whose protection is a deployment choice (`publicMetrics`). */
const METRICS_PATHS = new Set(["/metrics", "/openapi.json"]);

const newRequestId = (): string => randomBytes(8).toString("hex");

/**
 * Whether a request path names a source map as the router and the static files read it: percent-
 * decoded first (issue 42: `.ma%70` and `%2emap` got past a check of the raw path).
 */
export function isSourceMap(path: string): boolean {
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    /* malformed escapes: the router refuses them; check the raw path */
  }
  return /\.map$/i.test(decoded) || /\.map$/i.test(path);
}

const pascal = (word: string): string =>
  word
    .split(/[^A-Za-z0-9]+/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join("");

/**
 * A route's OpenAPI operationId unless it names one: the method and the path's fixed words
 * (`GET /api/v1/clusters/:id/thrashing/fixes` → `getClustersThrashingFixes`), plus `By<Param>`
 * when the path ends in a parameter (`getClustersNodesByName`). Unique because paths are.
 */
export function operationIdOf(method: string, url: string): string {
  const segments = url
    .replace(/^\/api\/v1/, "")
    .split("/")
    .filter(Boolean);
  const words = segments.filter((s) => !s.startsWith(":")).map(pascal);
  const last = segments.at(-1);
  const by = last?.startsWith(":") ? `By${pascal(last.slice(1))}` : "";
  return method.toLowerCase() + (words.join("") || "Root") + by;
}

/** Fastify with Wave's request ids, timeouts and strict (non-coercing) validation. */
function createApp(opts: BuildOptions): FastifyInstance {
  const requestTimeout = opts.requestTimeoutMs ?? 30_000;
  return Fastify({
    logger: opts.logger ?? false,
    bodyLimit: opts.bodyLimit ?? 256 * 1024,
    // Workload names may be 253 characters (Fastify's default of 100 answered them 414): the
    // route schemas set each parameter's real limit and answer 400.
    routerOptions: { maxParamLength: 256 },
    // Our own ids (never a client's header), returned as x-request-id and logged with every 5xx.
    genReqId: newRequestId,
    requestIdHeader: false,
    // Node checks the request deadline on an interval: keep it well below the deadline.
    serverFactory: (handler: (req: IncomingMessage, res: ServerResponse) => void) =>
      createServer(
        {
          requestTimeout,
          headersTimeout: Math.min(requestTimeout, 60_000),
          connectionsCheckingInterval: Math.max(50, Math.min(requestTimeout / 4, 5000)),
        },
        handler,
      ),
    // No coercion at all: a policy body's "0x10", "" or null is a type error, not 16, 0 or "no
    // cap". Query strings are converted by coerceQuery (strict decimal) before validation.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
  });
}

/**
 * Checks and names each route as it is registered: every numeric query parameter bounded (issue
 * 32: `?to=9007199254740992` was a 500 on three routes whose schema set no maximum; a route that
 * leaves one open is refused at start) and an operationId for the OpenAPI document.
 */
function checkRoutes(app: FastifyInstance, opts: BuildOptions): void {
  app.addHook("onRoute", (route) => {
    const methods = ([] as string[]).concat(route.method);
    for (const method of methods)
      opts.onRoute?.({
        method,
        url: route.url,
        role: route.config?.role,
        schema: route.schema ?? {},
      });
    const open = unboundedNumbers(route.schema?.querystring);
    if (open.length > 0) {
      throw new Error(
        `${methods.join(",")} ${route.url}: numeric query parameter(s) ${open.join(", ")} need a minimum and a maximum`,
      );
    }
    const method = methods.find((m) => m !== "HEAD") ?? methods[0] ?? "GET";
    if (!route.schema?.hide && !route.schema?.operationId)
      route.schema = { ...route.schema, operationId: operationIdOf(method, route.url) };
  });
}

/** Who sent each request (static token, then the authenticators) and whether their role suffices. */
function authenticate(app: FastifyInstance, opts: BuildOptions, log: Logger, clock: Clock): void {
  const limiter = new FailureLimiter(opts.authFailures ?? { max: 20, windowMs: 60_000 }, clock);
  const changes = new ChangeLimiter(opts.changeRate ?? DEFAULT_CHANGE_RATE, clock);
  app.decorateRequest("identity", undefined);
  app.decorateRequest("role", undefined);
  const authenticators = opts.authenticators ?? [];
  const identify = async (
    req: FastifyRequest,
  ): Promise<Identity | AuthRefused | AuthUnavailable | undefined> => {
    const role = roleFor(req.headers.authorization, opts.tokens);
    if (role !== undefined) return tokenIdentity(role);
    const clusterId = (req.params as { id?: unknown } | undefined)?.id;
    for (const a of authenticators) {
      try {
        const id = await a(req, typeof clusterId === "string" ? clusterId : undefined);
        if (id) return id;
      } catch (err) {
        if (err instanceof AuthRefused || err instanceof AuthUnavailable) return err;
        throw err;
      }
    }
    return undefined;
  };
  app.addHook("onRequest", async (req, reply) => {
    // On the raw response too, so hijacked replies (the event stream) carry them.
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) reply.raw.setHeader(k, v);
    reply.raw.setHeader("x-request-id", req.id);
    const path = req.url.split("?")[0] ?? "";
    if (!opts.serveSourceMaps && isSourceMap(path)) {
      await reply.code(404).send({ error: "not_found", message: `no route ${req.method} ${path}` });
      return reply;
    }
    const need =
      req.routeOptions.config.role ?? (METRICS_PATHS.has(path) && !opts.publicMetrics ? "viewer" : undefined);
    if (need === undefined) return;
    const peer = req.socket.remoteAddress ?? "";
    // The token is checked first: a valid one always passes, whatever others sent from the same
    // address (throttling is per address and token fingerprint; see FailureLimiter).
    const identity = await identify(req);
    if (identity instanceof AuthUnavailable) {
      const after = Math.max(1, Math.ceil(identity.retryAfterMs / 1000));
      return reply
        .code(503)
        .header("retry-after", String(after))
        .send({ error: "unavailable", message: identity.message });
    }
    if (identity instanceof AuthRefused) {
      await reply.code(403).send({ error: "forbidden", message: identity.message });
      return reply;
    }
    if (identity === undefined) {
      const fingerprint = tokenFingerprint(req.headers.authorization);
      if (req.headers.authorization !== undefined && limiter.blocked(peer, fingerprint)) {
        log.warn("login throttled", { peer, fingerprint, requestId: req.id });
        await reply
          .code(429)
          .header("retry-after", String(Math.ceil(limiter.retryAfterMs(peer, fingerprint) / 1000)))
          .send({ error: "too_many_requests", message: "too many failed logins; try again later" });
        return reply;
      }
      if (req.headers.authorization !== undefined) limiter.failed(peer, fingerprint);
      await reply
        .code(401)
        .header("www-authenticate", 'Bearer realm="wave"')
        .send({ error: "unauthorized", message: "a valid bearer token or sign-in is required" });
      return reply;
    }
    if (!satisfies(identity.role, need)) {
      await reply.code(403).send({
        error: "forbidden",
        message: `${identity.subject} has the ${identity.role} role: this needs the ${need} role`,
      });
      return reply;
    }
    req.identity = identity;
    req.role = identity.role;
    if (need !== "viewer" && (await throttled(changes, req, reply, identity))) return reply;
  });
}

/** One JSON error shape for every failure; every 5xx logged with its request id. */
function handleErrors(app: FastifyInstance, log: Logger): void {
  app.setErrorHandler(
    async (err: Error & { statusCode?: number; validation?: unknown; code?: string }, req, reply) => {
      const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
      if (status >= 500) {
        log.error("request failed", {
          requestId: req.id,
          method: req.method,
          path: req.url.split("?")[0],
          status,
          err,
        });
      }
      await reply.code(status).send({
        error: err.validation ? "bad_request" : status >= 500 ? "internal" : "bad_request",
        message: status >= 500 ? `internal error (request ${req.id})` : err.message,
      });
    },
  );
  // 5xx that did not come through the error handler (a handler that set the code itself).
  app.addHook("onResponse", async (req, reply) => {
    if (reply.statusCode >= 500 && !(req as { waveLogged?: boolean }).waveLogged) {
      log.error("request answered with a server error", {
        requestId: req.id,
        method: req.method,
        path: req.url.split("?")[0],
        status: reply.statusCode,
      });
    }
  });
  app.addHook("onError", (req, _reply, _err, done) => {
    (req as { waveLogged?: boolean }).waveLogged = true;
    done();
  });
  app.setNotFoundHandler(async (req, reply) => {
    await reply
      .code(404)
      .send({ error: "not_found", message: `no route ${req.method} ${req.url.split("?")[0] ?? ""}` });
  });
}

export async function build(opts: BuildOptions): Promise<FastifyInstance> {
  const log = (opts.log ?? silentLogger).child({ component: "api" });
  const app = createApp(opts);
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Wave API",
        version: "v1",
        description: "Karpenter dashboard, warmup and spot placement",
      },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
      security: [{ bearer: [] }],
    },
  });

  checkRoutes(app, opts);
  authenticate(app, opts, log, opts.clock ?? realClock);
  app.addHook("preValidation", (req, _reply, done) => {
    coerceQuery(req);
    done();
  });

  const forward = opts.forward;
  if (forward) {
    app.addHook("preHandler", async (req, reply) => {
      if (req.routeOptions.config.role !== undefined && (await forward(req, reply))) return reply;
    });
  }
  const replica = opts.replica;
  if (replica !== undefined) {
    app.addHook("onSend", async (_req, reply) => {
      reply.header("x-wave-replica", replica);
    });
  }

  handleErrors(app, log);

  app.get("/healthz", { schema: { hide: true } }, () => ({ ok: true }));
  app.get("/openapi.json", { schema: { hide: true } }, () => app.swagger());

  for (const plugin of opts.plugins) await app.register(async (scope) => plugin(scope));
  await app.ready();
  return app;
}
