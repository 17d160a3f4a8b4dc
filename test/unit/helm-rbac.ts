// The permission tables of deploy/helm/wave/RBAC.md as comparable sets, shared by the chart's unit
// test (against the rendered Roles) and the rig e2e test (against `kubectl auth can-i --list` for
// each ServiceAccount). A permission is one string "scope|apiGroup|resource|verb|resourceName"
// ("-" = any name), so sets of them compare exactly and a difference names the permission.

/**
 * "namespace" is the release namespace; "warmup" the warmup namespace (warmup and pull pods);
 * "ledger" the spot ledger namespace (the webhook's Leases).
 */
export type Scope = "cluster" | "namespace" | "warmup" | "ledger";

/** A PolicyRule as rendered or documented; fields are read leniently (rendered YAML is untyped). */
export interface RuleLike {
  apiGroups?: unknown;
  resources?: unknown;
  verbs?: unknown;
  resourceNames?: unknown;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x) => typeof x === "string") : []);

export function ruleKeys(scope: string, rules: readonly RuleLike[]): string[] {
  const keys: string[] = [];
  for (const r of rules) {
    const names = strings(r.resourceNames);
    for (const g of strings(r.apiGroups))
      for (const res of strings(r.resources))
        for (const v of strings(r.verbs))
          for (const n of names.length ? names : ["-"]) keys.push(`${scope}|${g}|${res}|${v}|${n}`);
  }
  return keys;
}

/**
 * The tables of RBAC.md: a "## <component> (...)" heading, then rows
 * `| scope | apiGroup | resources | verbs | resourceNames |` (`""` = core group, `-` = any name).
 */
export function documentedPermissions(md: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  let component: string | undefined;
  for (const line of md.split("\n")) {
    const h = /^## (\w+) \(/.exec(line);
    if (h) {
      component = h[1];
      continue;
    }
    const cells = line.split("|").map((c) => c.trim());
    if (
      component === undefined ||
      cells.length !== 7 ||
      !/^(cluster|namespace|warmup|ledger)$/.test(cells[1] ?? "")
    )
      continue;
    const [, scope = "", group = "", resources = "", verbs = "", names = ""] = cells;
    const list = (s: string): string[] => s.split(",").map((x) => x.trim());
    const rule: RuleLike = {
      apiGroups: [group === '`""`' ? "" : group],
      resources: list(resources),
      verbs: list(verbs),
      ...(names === "-" ? {} : { resourceNames: list(names) }),
    };
    const set = out.get(component) ?? new Set<string>();
    for (const k of ruleKeys(scope, [rule])) set.add(k);
    out.set(component, set);
  }
  return out;
}

/**
 * What a ServiceAccount may do in a namespace, as `kubectl auth can-i --list -n NS` reports it:
 * the cluster-scoped permissions plus that namespace's. Keys without the scope:
 * "apiGroup|resource|verb|resourceName".
 */
export function effectiveIn(
  documented: ReadonlySet<string>,
  where: boolean | "release" | "warmup" | "ledger" | "other",
): Set<string> {
  const ns = where === true ? "release" : where === false ? "other" : where;
  const out = new Set<string>();
  for (const k of documented) {
    const [scope, ...rest] = k.split("|");
    if (
      scope === "cluster" ||
      (ns === "release" && scope === "namespace") ||
      (ns === "warmup" && scope === "warmup") ||
      (ns === "ledger" && scope === "ledger")
    )
      out.add(rest.join("|"));
  }
  return out;
}

/**
 * Parses the table `kubectl auth can-i --list` prints (it has no -o json) into keys
 * "apiGroup|resource|verb|resourceName" and, for non-resource URLs, "url|<path>|verb".
 * Columns are cut at the header's positions (cells may be empty).
 */
export function parseCanIList(table: string): Set<string> {
  const lines = table.split("\n").filter((l) => l.trim() !== "");
  const header = lines.shift() ?? "";
  const cols = ["Resources", "Non-Resource URLs", "Resource Names", "Verbs"].map((h) => header.indexOf(h));
  if (cols.some((c) => c < 0)) throw new Error(`not a kubectl auth can-i --list table: ${header}`);
  const [c0 = 0, c1 = 0, c2 = 0, c3 = 0] = cols;
  const bracket = (s: string): string[] => {
    const m = /^\[(.*)\]$/.exec(s.trim());
    if (!m) throw new Error(`expected a [list] cell, got ${JSON.stringify(s)}`);
    return (m[1] ?? "").split(/\s+/).filter((x) => x !== "");
  };
  const out = new Set<string>();
  for (const line of lines) {
    const resource = line.slice(c0, c1).trim();
    const urls = bracket(line.slice(c1, c2));
    const names = bracket(line.slice(c2, c3));
    const verbs = bracket(line.slice(c3));
    if (resource === "") {
      for (const u of urls) for (const v of verbs) out.add(`url|${u}|${v}`);
      continue;
    }
    // "leases.coordination.k8s.io" → group coordination.k8s.io; "nodes" → the core group "";
    // a subresource comes last: "warmuppolicies.wave.sh/status" → wave.sh, warmuppolicies/status.
    const slash = resource.indexOf("/");
    const sub = slash < 0 ? "" : resource.slice(slash);
    const qualified = slash < 0 ? resource : resource.slice(0, slash);
    const dot = qualified.indexOf(".");
    const res = (dot < 0 ? qualified : qualified.slice(0, dot)) + sub;
    const group = dot < 0 ? "" : qualified.slice(dot + 1);
    for (const v of verbs) for (const n of names.length ? names : ["-"]) out.add(`${group}|${res}|${v}|${n}`);
  }
  return out;
}

/** Elements of `a` not in `b`, sorted (for messages that name the difference). */
export function minus(a: Iterable<string>, b: ReadonlySet<string>): string[] {
  return [...a].filter((x) => !b.has(x)).sort();
}
