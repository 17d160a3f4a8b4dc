// One advisor for a NodePool's disruption settings (issue 43): every advice path — the Thrashing
// page's fixes, the Consolidation page's and the node drawer's blocker fixes, Warmup (which never
// patches a NodePool) — reads the same holds here, so no path proposes a value another path or a
// fix Wave applied contradicts. Stability comes first: a pool that thrashed, or that Wave's fix
// just tuned, keeps the values the thrashing advice chose; consolidation advice defers to them.
import type { NodePool } from "../objects/karpenter.ts";
import { APPLIED_FIX_ANNOTATION } from "../objects/wave.ts";
import type { ThrashingReport } from "./thrashing/detect.ts";

/** The disruption fields an advice may set (spec.disruption.*, spec.template.spec.expireAfter). */
export const POOL_FIELDS = ["consolidateAfter", "consolidationPolicy", "budgets", "expireAfter"] as const;
export type PoolField = (typeof POOL_FIELDS)[number];

export interface Hold {
  field: PoolField;
  /** The value every advice path keeps (the thrashing advice's, else the pool's own). */
  value: unknown;
  /** Why, in one line for the fix's detail. */
  why: string;
}

/** How long a fix Wave applied keeps its fields (the thrashing window, with margin, and a day's cycle). */
export const APPLIED_FIX_HOLD_MS = 24 * 3_600_000;

/** The disruption fields a NodePool merge patch sets, with their values. */
export function poolFieldsOf(patch: unknown): Partial<Record<PoolField, unknown>> {
  const spec = (patch as { spec?: Record<string, unknown> } | null)?.spec;
  const d = spec?.["disruption"] as Record<string, unknown> | undefined;
  const tmpl = (spec?.["template"] as { spec?: Record<string, unknown> } | undefined)?.spec;
  const out: Partial<Record<PoolField, unknown>> = {};
  for (const f of ["consolidateAfter", "consolidationPolicy", "budgets"] as const)
    if (d && f in d) out[f] = d[f];
  if (tmpl && "expireAfter" in tmpl) out.expireAfter = tmpl["expireAfter"];
  return out;
}

/** A fix's merge patch that also records it on the pool (APPLIED_FIX_ANNOTATION), as Wave applies it. */
export function withAppliedFix(
  patch: Record<string, unknown>,
  title: string,
  at: number,
): Record<string, unknown> {
  const record = JSON.stringify({ at, source: "thrashing", title, patch });
  return { ...patch, metadata: { annotations: { [APPLIED_FIX_ANNOTATION]: record } } };
}

/** The pool's current value of a field. */
function current(pool: NodePool | undefined, f: PoolField): unknown {
  if (f === "expireAfter")
    return (pool?.spec.template.spec as { expireAfter?: unknown } | undefined)?.expireAfter;
  return pool?.spec.disruption?.[f];
}

/** The fix Wave applied to the pool (its annotation), if it is recent. */
export function appliedFix(
  pool: NodePool | undefined,
  now: number,
): { at: number; title: string; patch: Record<string, unknown> } | undefined {
  const raw = pool?.metadata.annotations?.[APPLIED_FIX_ANNOTATION];
  if (!raw) return undefined;
  try {
    const v = JSON.parse(raw) as { at?: unknown; title?: unknown; patch?: unknown };
    if (
      typeof v.at !== "number" ||
      now - v.at > APPLIED_FIX_HOLD_MS ||
      typeof v.patch !== "object" ||
      !v.patch
    )
      return undefined;
    return {
      at: v.at,
      title: typeof v.title === "string" ? v.title : "",
      patch: v.patch as Record<string, unknown>,
    };
  } catch {
    return undefined;
  }
}

/**
 * What stability asks of one pool's disruption fields now: a pool with churn cycles in the
 * thrashing window keeps the thrashing advice's values (else its own), and a fix Wave applied in
 * the last day keeps the fields it set.
 */
export function poolHolds(
  pool: NodePool | undefined,
  report: ThrashingReport | undefined,
  now: number,
): Hold[] {
  const out = new Map<PoolField, Hold>();
  const name = pool?.metadata.name ?? report?.nodePool ?? "";
  // Churn that repeats (the detector scores nothing below two cycles) holds the pool's fields.
  const churned = report !== undefined && report.signals.cycles >= 2;
  const churn = (f: PoolField, v: unknown): Hold => ({
    field: f,
    value: v,
    why: `${name} churned ${String(report?.signals.cycles ?? 0)} nodes in the last 30 min (Thrashing page): ${f} stays ${JSON.stringify(v)}`,
  });
  // 1. What the thrashing advice proposes now (the newest word on stability).
  if (churned)
    for (const a of report.advice)
      for (const [f, v] of Object.entries(poolFieldsOf(a.patch)) as [PoolField, unknown][])
        out.set(f, churn(f, v));
  // 2. What a fix Wave applied set, while the pool still has it (a later edit is the user's word).
  const fix = appliedFix(pool, now);
  if (fix)
    for (const [f, v] of Object.entries(poolFieldsOf(fix.patch)) as [PoolField, unknown][])
      if (!out.has(f) && JSON.stringify(current(pool, f)) === JSON.stringify(v))
        out.set(f, {
          field: f,
          value: v,
          why: `Wave applied "${fix.title}" to ${name} at ${new Date(fix.at).toISOString()}: it keeps ${f}: ${JSON.stringify(v)}`,
        });
  // 3. A churning pool's other fields stay as they are.
  if (churned)
    for (const f of ["consolidateAfter", "consolidationPolicy", "budgets"] as const) {
      const v = current(pool, f);
      if (!out.has(f) && v !== undefined) out.set(f, churn(f, v));
    }
  return [...out.values()];
}

/** Each pool's holds, by pool name (the consolidation route and the node drawer read them). */
export function holdsByPool(
  pools: readonly NodePool[],
  reports: readonly ThrashingReport[],
  now: number,
): Map<string, Hold[]> {
  const out = new Map<string, Hold[]>();
  for (const p of pools) {
    const name = p.metadata.name ?? "";
    const h = poolHolds(
      p,
      reports.find((r) => r.nodePool === name),
      now,
    );
    if (h.length > 0) out.set(name, h);
  }
  return out;
}

/** One NodePool patch an advice path proposes (the cross-check reads them from each page's answer). */
export interface ProposedPatch {
  source: string;
  pool: string;
  patch: unknown;
}

/** The NodePool patches in any answer: every `kubectl patch nodepool <name> --type merge -p '<json>'` line. */
export function nodePoolPatchesIn(source: string, answer: unknown): ProposedPatch[] {
  const out: ProposedPatch[] = [];
  const re = /^kubectl patch nodepool (\S+) --type merge -p '(.*)'$/s;
  const walk = (v: unknown): void => {
    if (typeof v === "string") {
      const m = re.exec(v);
      if (m?.[1] && m[2] !== undefined)
        out.push({ source, pool: m[1], patch: JSON.parse(m[2].replaceAll("'\\''", "'")) as unknown });
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") Object.values(v).forEach(walk);
  };
  walk(answer);
  return out;
}

/**
 * Where advice contradicts itself: a pool's field set to different values by two sources (or
 * twice by one source that offers no alternatives; the thrashing advice's policy options —
 * Balanced, "or" WhenEmpty — are alternatives of one advice).
 */
export function patchConflicts(patches: readonly ProposedPatch[], alternatives = ["thrashing"]): string[] {
  const seen = new Map<string, Map<string, Set<string>>>();
  for (const p of patches)
    for (const [f, v] of Object.entries(poolFieldsOf(p.patch))) {
      const k = `${p.pool} ${f}`;
      const bySource = seen.get(k) ?? new Map<string, Set<string>>();
      const values = bySource.get(p.source) ?? new Set<string>();
      values.add(JSON.stringify(v));
      bySource.set(p.source, values);
      seen.set(k, bySource);
    }
  const out: string[] = [];
  for (const [k, bySource] of seen) {
    const all = new Set([...bySource.values()].flatMap((s) => [...s]));
    const within = [...bySource].some(([s, v]) => v.size > 1 && !alternatives.includes(s));
    const across = [...bySource.keys()].length > 1 && all.size > 1;
    if (within || across)
      out.push(`${k}: ${[...bySource].map(([s, v]) => `${s} ${[...v].join(" | ")}`).join("; ")}`);
  }
  return out.sort();
}
