// Group → role per cluster (docs/auth.md). The mapping is parsed and validated once by src/config
// (parseRoleMapping); this is the pure lookup the OIDC and auth-proxy identities use.
import type { Role } from "./identity.ts";

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
