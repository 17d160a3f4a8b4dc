// The API as a Fastify app built from plugins. `build()` wires them; servers only listen.
// Tests call build() and inject() requests.
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from "fastify";
import swagger from "@fastify/swagger";
import { roleFor, satisfies, type Role, type Tokens } from "./auth.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The least role a route needs; routes without one are public (health, UI). */
    role?: Role;
  }
  interface FastifyRequest {
    role: Role | undefined;
  }
}

export interface ApiPlugin {
  (app: FastifyInstance): Promise<void> | void;
}

export interface BuildOptions {
  tokens: Tokens;
  plugins: ApiPlugin[];
  logger?: FastifyServerOptions["logger"];
  /** Largest request body accepted, bytes. */
  bodyLimit?: number;
  /**
   * Runs before every authorized route's handler; resolving true means it answered instead
   * (core replicas: a cluster another replica owns is read through it, routes/read-through.ts).
   */
  forward?: (req: FastifyRequest, reply: FastifyReply) => Promise<boolean>;
  /** This core replica's name, sent back in an x-wave-replica header (several replicas). */
  replica?: string;
}

export async function build(opts: BuildOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger ?? false,
    bodyLimit: opts.bodyLimit ?? 256 * 1024,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: "array", allErrors: false } },
  });

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

  app.decorateRequest("role", undefined);
  app.addHook("onRequest", async (req, reply) => {
    const need = req.routeOptions.config.role;
    if (need === undefined) return;
    const role = roleFor(req.headers.authorization, opts.tokens);
    if (role === undefined) {
      await reply
        .code(401)
        .header("www-authenticate", 'Bearer realm="wave"')
        .send({ error: "unauthorized", message: "a valid bearer token is required" });
      return reply;
    }
    if (!satisfies(role, need)) {
      await reply.code(403).send({ error: "forbidden", message: `this needs the ${need} role` });
      return reply;
    }
    req.role = role;
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

  app.setErrorHandler(async (err: Error & { statusCode?: number; validation?: unknown }, req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
    if (status >= 500) req.log.error({ err }, "request failed");
    await reply.code(status).send({
      error: err.validation ? "bad_request" : status >= 500 ? "internal" : "bad_request",
      message: status >= 500 ? "internal error" : err.message,
    });
  });
  app.setNotFoundHandler(async (req, reply) => {
    await reply
      .code(404)
      .send({ error: "not_found", message: `no route ${req.method} ${req.url.split("?")[0] ?? ""}` });
  });

  app.get("/healthz", { schema: { hide: true } }, () => ({ ok: true }));
  app.get("/openapi.json", { schema: { hide: true } }, () => app.swagger());

  for (const plugin of opts.plugins) await app.register(async (scope) => plugin(scope));
  await app.ready();
  return app;
}
