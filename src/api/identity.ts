// Who a request comes from (issue 31): the contract every route and the audit read. The auth layer
// (app.ts) sets `req.identity` on every authenticated request — from a static token, an OIDC
// session or bearer token, or a trusted auth proxy's headers — with the role it has in the
// request's cluster (OIDC and proxy groups map to a role per cluster). Routes that change
// something call requireRole(); namespace editors may change only spot policies in their namespaces.
import type { FastifyReply, FastifyRequest } from "fastify";

export type Role = "viewer" | "namespace-editor" | "admin";
export const ROLES: readonly Role[] = ["viewer", "namespace-editor", "admin"];

export type IdentitySource = "token" | "oidc" | "proxy";

export interface Identity {
  /** Stable name of the caller: "token:viewer", "token:admin", an OIDC `sub`/email, a proxy user. */
  subject: string;
  groups: string[];
  /** The role in this request's cluster. */
  role: Role;
  /** namespace-editor only: the namespaces whose spot policies this caller may change. */
  namespaces?: string[];
  source: IdentitySource;
  /**
   * Whether this caller has any role in a cluster (group-mapped identities; issue 42: lists across
   * clusters showed every cluster). Absent: every cluster (the static tokens are core-wide).
   */
  readsCluster?: (clusterId: string) => boolean;
}

/** Whether `id` may see cluster `clusterId` in a list across clusters (the list, /metrics). */
export const mayReadCluster = (id: Identity | undefined, clusterId: string): boolean =>
  id !== undefined && (id.readsCluster?.(clusterId) ?? true);

/**
 * Thrown by an authenticator for a caller it recognises who has no role here (signed in, but no
 * group of theirs maps to a role in this cluster): 403 with this message rather than 401.
 */
export class AuthRefused extends Error {
  override name = "AuthRefused";
}

/**
 * Thrown by an authenticator that cannot decide now (its provider is unreachable): 503 with
 * Retry-After rather than 500 or a refusal.
 */
export class AuthUnavailable extends Error {
  override name = "AuthUnavailable";
  readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number) {
    super(message);
    this.retryAfterMs = retryAfterMs;
  }
}

const RANK: Readonly<Record<Role, number>> = { viewer: 0, "namespace-editor": 1, admin: 2 };

/** Whether a role is at least `need` (admin ⊇ namespace-editor ⊇ viewer). */
export const satisfies = (have: Role, need: Role): boolean => RANK[have] >= RANK[need];

/** The identity of a static API token: the token's role, no groups. */
export const tokenIdentity = (role: "viewer" | "admin"): Identity => ({
  subject: `token:${role}`,
  groups: [],
  role,
  source: "token",
});

/**
 * Whether `id` may change what lives in `namespace` (a spot policy of a workload there): admins
 * anywhere, namespace editors in their namespaces, viewers nowhere. Without a namespace (warmup
 * policies, NodePools: cluster-wide objects) only admins may.
 */
export function mayChange(id: Identity | undefined, namespace?: string): boolean {
  if (!id) return false;
  if (id.role === "admin") return true;
  if (id.role !== "namespace-editor" || namespace === undefined) return false;
  return (id.namespaces ?? []).includes(namespace);
}

/** Why mayChange refused, one line for the 403. */
export function refusal(id: Identity | undefined, namespace?: string): string {
  if (!id) return "a valid sign-in or bearer token is required";
  if (id.role === "namespace-editor" && namespace !== undefined)
    return `${id.subject} may change spot policies only in namespace(s) ${(id.namespaces ?? []).join(", ") || "(none)"}, not in ${namespace}`;
  if (id.role === "namespace-editor") return `${id.subject} is a namespace editor: this needs the admin role`;
  return `${id.subject} has the ${id.role} role: this needs the ${namespace === undefined ? "admin" : "namespace-editor or admin"} role`;
}

/**
 * The check a changing route runs first: true when the caller may change what lives in
 * `namespace` (or, without one, something cluster-wide); otherwise it answers 403 and returns false
 * (`if (!(await requireChange(req, reply, ns))) return reply;`).
 */
export async function requireChange(
  req: FastifyRequest,
  reply: FastifyReply,
  namespace?: string,
): Promise<boolean> {
  if (mayChange(req.identity, namespace)) return true;
  await reply.code(403).send({ error: "forbidden", message: refusal(req.identity, namespace) });
  return false;
}

/** Where a change came from: the console sends x-wave-client: ui, the CLI x-wave-client: cli. */
export function clientOf(req: FastifyRequest): "ui" | "api" | "cli" {
  const c = req.headers["x-wave-client"];
  return c === "ui" || c === "cli" ? c : "api";
}
