// Group → role per cluster (docs/auth.md). The mapping is parsed and validated once by src/config
// (parseRoleMapping); this is the pure lookup the OIDC and auth-proxy identities use.
import { AuthRefused, type Identity, type IdentitySource, type Role } from "./identity.ts";

/** One cluster's rules (the same shape src/config's RoleMapping has). */
export interface ClusterRoles {
  admin: readonly string[];
  viewer: readonly string[];
  namespaceEditors: readonly { group: string; namespaces: readonly string[] }[];
}

/** `clusters["*"]` applies to every cluster without its own entry. */
export interface RoleMapping {
  clusters: Readonly<Record<string, ClusterRoles>>;
}

/**
 * The role a user's groups grant in `clusterId` (undefined: none; routes without a cluster use
 * "*"): admin if any group is an admin group, else namespace-editor with the namespaces of every
 * matching rule, else viewer.
 */
export function roleInCluster(
  mapping: RoleMapping,
  clusterId: string | undefined,
  groups: readonly string[],
): { role: Role; namespaces?: string[] } | undefined {
  const rules = (clusterId !== undefined ? mapping.clusters[clusterId] : undefined) ?? mapping.clusters["*"];
  if (!rules) return undefined;
  const has = new Set(groups);
  if (rules.admin.some((g) => has.has(g))) return { role: "admin" };
  const namespaces = [
    ...new Set(rules.namespaceEditors.filter((e) => has.has(e.group)).flatMap((e) => e.namespaces)),
  ].sort();
  if (namespaces.length > 0) return { role: "namespace-editor", namespaces };
  if (rules.viewer.some((g) => has.has(g))) return { role: "viewer" };
  return undefined;
}

/**
 * A signed-in user's identity in `cluster` from their groups (OIDC, auth proxy); AuthRefused (403)
 * when none of the groups has a role there, the message led by `who` (who they are, how signed in).
 */
export function groupIdentity(
  mapping: RoleMapping,
  cluster: string,
  user: { subject: string; groups: string[]; source: IdentitySource },
  who: string,
): Identity {
  const r = roleInCluster(mapping, cluster, user.groups);
  if (!r)
    throw new AuthRefused(
      `${who} none of their groups (${user.groups.join(", ") || "none"}) has a role in cluster ${cluster}`,
    );
  const readsCluster = (id: string): boolean => roleInCluster(mapping, id, user.groups) !== undefined;
  return { ...user, role: r.role, ...(r.namespaces ? { namespaces: r.namespaces } : {}), readsCluster };
}
