// Deep links: the page, cluster, range, open node and page filters live in the URL fragment
// (#/warmup?cluster=prod&range=6h&node=ip-10-0-1-5), so any view can be shared or reloaded.
import { DEFAULT_RANGE, formatRange, parseRange, type RangeSpec } from "./range.ts";

export const PAGES = [
  { id: "overview", label: "Overview" },
  { id: "nodepools", label: "NodePools" },
  { id: "nodes", label: "Nodes" },
  { id: "warmup", label: "Warmup" },
  { id: "spot", label: "Spot placement" },
  { id: "disruptions", label: "Disruptions & lifecycle" },
  { id: "thrashing", label: "Thrashing" },
  { id: "consolidation", label: "Consolidation" },
  { id: "whatif", label: "What if?" },
  { id: "audit", label: "Audit" },
] as const;
export type PageId = (typeof PAGES)[number]["id"];

export interface Route {
  page: PageId;
  cluster: string | undefined;
  range: RangeSpec;
  /** Node or NodeClaim shown in the drawer. */
  node: string | undefined;
  /** Page-specific filters (pool, reason, workload …). */
  params: Record<string, string>;
}

const RESERVED = new Set(["cluster", "range", "node", "token"]);

export function parseRoute(hash: string): Route {
  const h = hash.replace(/^#/, "");
  const [path = "", query = ""] = h.split("?", 2);
  const id = path.replace(/^\//, "");
  const page = PAGES.find((p) => p.id === id)?.id ?? "overview";
  const q = new URLSearchParams(query);
  const params: Record<string, string> = {};
  for (const [k, v] of q) if (!RESERVED.has(k)) params[k] = v;
  return {
    page,
    cluster: q.get("cluster") ?? undefined,
    range: q.has("range") ? parseRange(q.get("range")) : DEFAULT_RANGE,
    node: q.get("node") ?? undefined,
    params,
  };
}

export function formatRoute(r: Route): string {
  const q = new URLSearchParams();
  if (r.cluster !== undefined) q.set("cluster", r.cluster);
  q.set("range", formatRange(r.range));
  if (r.node !== undefined) q.set("node", r.node);
  for (const [k, v] of Object.entries(r.params)) if (v !== "") q.set(k, v);
  return `#/${r.page}?${q.toString()}`;
}
