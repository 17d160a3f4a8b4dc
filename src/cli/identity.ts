// Core's console identity from its configuration (docs/auth.md): the OIDC sign-in and the
// auth-proxy mode as API authenticators, and the public /auth routes the console asks first.
import type { FastifyInstance } from "fastify";
import type { WaveConfig } from "../config/config.ts";
import type { ApiPlugin, Authenticator } from "../api/app.ts";
import { createHmac } from "node:crypto";
import { OidcAuth, type SessionStore } from "../api/oidc.ts";
import { proxyAuthenticator } from "../api/proxy-auth.ts";
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { AuthInfoSchema, type AuthInfoDto } from "../dashboard/dto.ts";

export type IdentityConfig = Pick<
  WaveConfig,
  | "clusterId"
  | "oidcIssuerUrl"
  | "oidcClientId"
  | "oidcClientSecret"
  | "oidcRedirectUrl"
  | "oidcScopes"
  | "oidcGroupsClaim"
  | "oidcAudience"
  | "oidcProviderName"
  | "sessionTtlMs"
  | "authRoles"
  | "authProxyTrusted"
  | "authProxySecret"
  | "authProxyHeaders"
>;

export interface ConsoleIdentity {
  authenticators: Authenticator[];
  plugins: ApiPlugin[];
  oidc: OidcAuth | undefined;
}

export function consoleIdentity(
  config: IdentityConfig,
  clock: Clock,
  log?: Logger,
  opts: {
    allowHttpIssuer?: boolean;
    /** Core's store: sessions every replica sees. */
    sessions?: SessionStore;
    /** A secret every replica shares (the admin token): the cookies' signing key is derived from it. */
    sharedSecret?: string;
  } = {},
): ConsoleIdentity {
  const roles = config.authRoles;
  const authenticators: Authenticator[] = [];
  let oidc: OidcAuth | undefined;
  if (config.oidcIssuerUrl !== undefined && config.oidcClientId !== undefined && roles) {
    const issuer = new URL(config.oidcIssuerUrl);
    oidc = new OidcAuth({
      issuerUrl: config.oidcIssuerUrl,
      clientId: config.oidcClientId,
      clientSecret: config.oidcClientSecret,
      redirectUrl: config.oidcRedirectUrl ?? "",
      scopes: config.oidcScopes,
      groupsClaim: config.oidcGroupsClaim,
      audience: config.oidcAudience,
      providerName: config.oidcProviderName,
      roles,
      defaultClusterId: config.clusterId,
      sessionTtlMs: config.sessionTtlMs,
      ...(opts.sessions ? { sessions: opts.sessions } : {}),
      ...(opts.sharedSecret !== undefined
        ? { cookieKey: createHmac("sha256", opts.sharedSecret).update("wave console cookies").digest() }
        : {}),
      clock,
      ...(log ? { log: log.child({ component: "oidc" }) } : {}),
      // Plain HTTP only to a provider on this machine (a local test provider); never across a network.
      allowHttp:
        opts.allowHttpIssuer === true ||
        (issuer.protocol === "http:" && ["localhost", "127.0.0.1", "[::1]"].includes(issuer.hostname)),
    });
    authenticators.push(oidc.authenticate);
  }
  const proxy = config.authProxyTrusted.length > 0 || config.authProxySecret !== undefined;
  // config.ts refuses proxy settings without a role mapping.
  if (proxy && roles)
    authenticators.push(
      proxyAuthenticator({
        trusted: config.authProxyTrusted,
        secret: config.authProxySecret,
        headers: config.authProxyHeaders,
        roles,
        defaultClusterId: config.clusterId,
      }),
    );
  const info: AuthInfoDto = {
    oidc: oidc ? { provider: oidc.providerName, loginPath: "auth/login" } : null,
    proxy,
  };
  const plugins: ApiPlugin[] = [
    (s: FastifyInstance) => {
      s.get("/auth/info", { schema: { hide: true, response: { 200: AuthInfoSchema } } }, () => info);
    },
  ];
  if (oidc) plugins.push(oidc.routes());
  return { authenticators, plugins, oidc };
}
