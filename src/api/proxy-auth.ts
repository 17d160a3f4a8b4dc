// Auth-proxy mode (oauth2-proxy, nginx auth_request and the like in front of core): the proxy signs
// the user in and sends who they are in headers of ONE family, chosen in the configuration —
// `x-auth-request` (X-Auth-Request-User/-Email/-Groups) or `x-forwarded` (X-Forwarded-User/…).
// Never a fallback from one family to the other (issue 42: behind an nginx auth_request proxy that
// sets only X-Auth-Request-*, a client's own X-Forwarded-Groups made a viewer an admin). Anyone can
// send such headers, so they count only from the configured proxy addresses or with the shared
// secret in X-Wave-Proxy-Secret; otherwise they are ignored (the request needs another credential).
import { createHash, timingSafeEqual } from "node:crypto";
import { BlockList, isIPv4, isIPv6 } from "node:net";
import type { FastifyRequest } from "fastify";
import type { Authenticator } from "./app.ts";
import { groupIdentity, type RoleMapping } from "./roles.ts";

export type ProxyHeaderFamily = "x-auth-request" | "x-forwarded";

export interface ProxyOptions {
  /** Addresses or CIDRs of the proxy. */
  trusted: readonly string[];
  /** Shared secret the proxy sends in X-Wave-Proxy-Secret. */
  secret?: string | undefined;
  /** The header family the proxy sets (default x-auth-request). */
  headers?: ProxyHeaderFamily;
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

/**
 * The client's address as the proxy saw it: X-Forwarded-For read from the right, skipping the
 * trusted proxies' own hops; the first untrusted hop is the one a trusted proxy appended (a client
 * can put anything on the left, never on the right). All trusted: the leftmost; none: the peer.
 */
export function proxiedClientAddress(
  forwardedFor: string | readonly string[] | undefined,
  peer: string,
  trusted: (address: string) => boolean,
): string {
  const hops = ([] as string[])
    .concat(forwardedFor ?? [])
    .flatMap((h) => h.split(","))
    .map((h) => h.trim())
    .filter((h) => h !== "");
  for (let i = hops.length - 1; i >= 0; i--) if (!trusted(hops[i] ?? "")) return hops[i] ?? "";
  return hops[0] ?? peer;
}

/** The client address of each request the proxy authenticated (read by the audit). */
const proxied = new WeakMap<FastifyRequest, string>();

/** Where a proxy-authenticated request came from, in the proxy's view; undefined for others. */
export const proxyClientAddress = (req: FastifyRequest): string | undefined => proxied.get(req);

const digest = (s: string): Buffer => createHash("sha256").update(s).digest();

export function proxyAuthenticator(o: ProxyOptions): Authenticator {
  const fromProxy = trustList(o.trusted);
  const secret = o.secret;
  const family = o.headers ?? "x-auth-request";
  return (req, clusterId) => {
    const email = header(req, `${family}-email`);
    const user = header(req, `${family}-user`) ?? email;
    if (user === undefined) return undefined;
    const peer = req.socket.remoteAddress ?? "";
    const presented = header(req, PROXY_SECRET_HEADER);
    const trusted =
      (o.trusted.length > 0 && fromProxy(peer)) ||
      (secret !== undefined && presented !== undefined && timingSafeEqual(digest(presented), digest(secret)));
    if (!trusted) return undefined;
    const subject = email ?? user;
    const groups = (header(req, `${family}-groups`) ?? "")
      .split(",")
      .map((g) => g.trim())
      .filter((g) => g !== "");
    proxied.set(req, proxiedClientAddress(req.headers["x-forwarded-for"], peer, fromProxy));
    const cluster = clusterId ?? o.defaultClusterId;
    return groupIdentity(o.roles, cluster, { subject, groups, source: "proxy" }, `${subject} (auth proxy):`);
  };
}
