// Auth-proxy mode (oauth2-proxy and the like in front of core): the proxy signs the user in and
// sends who they are in headers — X-Forwarded-User / X-Forwarded-Groups, or X-Auth-Request-User /
// X-Auth-Request-Groups (and -Email). Anyone can send such headers, so they count only from the
// configured proxy addresses or with the shared secret in X-Wave-Proxy-Secret; otherwise they are
// ignored (the request then needs another credential).
import { createHash, timingSafeEqual } from "node:crypto";
import { BlockList, isIPv4, isIPv6 } from "node:net";
import type { FastifyRequest } from "fastify";
import type { Authenticator } from "./app.ts";
import { groupIdentity, type RoleMapping } from "./roles.ts";

export interface ProxyOptions {
  /** Addresses or CIDRs of the proxy. */
  trusted: readonly string[];
  /** Shared secret the proxy sends in X-Wave-Proxy-Secret. */
  secret?: string | undefined;
  roles: RoleMapping;
  defaultClusterId: string;
}

export const PROXY_SECRET_HEADER = "x-wave-proxy-secret";

const header = (req: FastifyRequest, name: string): string | undefined => {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s !== undefined && s.trim() !== "" ? s.trim() : undefined;
};

/** The proxy's addresses as a BlockList (IPv4-mapped IPv6 peers match their IPv4 entries). */
export function trustList(trusted: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const t of trusted) {
    const [addr = "", bits] = t.split("/");
    const type = isIPv6(addr) ? "ipv6" : "ipv4";
    if (bits === undefined) list.addAddress(addr, type);
    else list.addSubnet(addr, Number(bits), type);
  }
  return (address) => {
    const plain = address.startsWith("::ffff:") && isIPv4(address.slice(7)) ? address.slice(7) : address;
    if (isIPv4(plain)) return list.check(plain, "ipv4");
    return isIPv6(plain) && list.check(plain, "ipv6");
  };
}

const digest = (s: string): Buffer => createHash("sha256").update(s).digest();

export function proxyAuthenticator(o: ProxyOptions): Authenticator {
  const fromProxy = trustList(o.trusted);
  const secret = o.secret;
  return (req, clusterId) => {
    const user =
      header(req, "x-forwarded-user") ??
      header(req, "x-auth-request-user") ??
      header(req, "x-forwarded-email") ??
      header(req, "x-auth-request-email");
    if (user === undefined) return undefined;
    const presented = header(req, PROXY_SECRET_HEADER);
    const trusted =
      (o.trusted.length > 0 && fromProxy(req.socket.remoteAddress ?? "")) ||
      (secret !== undefined && presented !== undefined && timingSafeEqual(digest(presented), digest(secret)));
    if (!trusted) return undefined;
    const email = header(req, "x-forwarded-email") ?? header(req, "x-auth-request-email");
    const subject = email ?? user;
    const groups = (header(req, "x-forwarded-groups") ?? header(req, "x-auth-request-groups") ?? "")
      .split(",")
      .map((g) => g.trim())
      .filter((g) => g !== "");
    const cluster = clusterId ?? o.defaultClusterId;
    return groupIdentity(o.roles, cluster, { subject, groups, source: "proxy" }, `${subject} (auth proxy):`);
  };
}
