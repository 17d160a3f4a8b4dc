// Thrashing (churn) detection per NodePool: nodes created and removed faster than they earn their
// keep. Definition, defaults and scoring are documented in docs/thrashing.md; keep them in sync.
// Pure: history in, report out, `now` injected.
import type { NodePool } from "../../objects/karpenter.ts";
import {
  canonicalReason,
  goneAt,
  inWindow,
  livesOf,
  type DisruptionRecord,
  type LifecycleRecord,
  type NodeClaimLife,
  type NodeCountPoint,
  type Window,
} from "../history.ts";
import { adviseFor, type Advice } from "./advice.ts";

const MIN = 60_000;

export interface ThrashingOptions {
  /** Look-back window ending at `now`. */
  windowMs: number;
  /** A node removed younger than this is short-lived. */
  shortLifetimeMs: number;
  /** A launch this close (before or after) to a removal in the same pool is its replacement. */
  replacementWithinMs: number;
  /** Node count is "flat" when |net change| ≤ max(1, flatTolerance × average nodes). */
  flatTolerance: number;
  /** Launches + removals in the window needed before a flat count means anything. */
  minChurnForFlat: number;
  /** Planned replacements (rolling updates, expiry): reported, never scored as churn. */
  plannedReasons: readonly string[];
  /**
   * The cluster's Karpenter, when detected: advice names only settings that release accepts
   * (consolidationPolicy Balanced exists from v1.14).
   */
  karpenterVersion?: string;
}

export const DEFAULT_THRASHING_OPTIONS: ThrashingOptions = {
  windowMs: 30 * MIN,
  shortLifetimeMs: 15 * MIN,
  replacementWithinMs: 5 * MIN,
  flatTolerance: 0.2,
  minChurnForFlat: 6,
  plannedReasons: ["Drifted", "Expired"],
};

export type Severity = "none" | "low" | "medium" | "high";

/** Score thresholds (inclusive lower bounds). */
export const SEVERITY_THRESHOLDS = { low: 20, medium: 45, high: 70 } as const;

/** Points per signal and the cap of each (they add up to 100). */
export const SCORE_WEIGHTS = {
  shortLived: { each: 10, max: 40 },
  sameTypeReplacement: { each: 8.5, max: 25 },
  /** Linear up to `full` voluntary disruptions in the window. */
  disruptions: { full: 15, max: 20 },
  flatUnderChurn: { max: 15 },
} as const;

export interface ChurnedNodeClaim {
  nodeClaim: string;
  instanceType?: string;
  capacityType?: string;
  zone?: string;
  launchedAt?: number;
  disruptedAt?: number;
  terminatedAt?: number;
  /** Launch to removal (disruption decision, else termination). */
  lifetimeMs?: number;
  reason?: string;
  shortLived: boolean;
  /** The NodeClaim launched to replace this one, if any. */
  replacedBy?: string;
  sameTypeReplacement: boolean;
  /** 0 for the first node of a replacement chain, +1 per replacement. */
  generation: number;
  /** A node Wave's warmup launched and released unused: Wave's own churn, not the workload's. */
  warmup: boolean;
}

export interface ThrashingSignals {
  launched: number;
  removed: number;
  shortLived: number;
  replacements: number;
  sameTypeReplacements: number;
  /** Disruptions in the window (all reasons) and those Karpenter chose (not planned). */
  disruptions: number;
  voluntaryDisruptions: number;
  reasons: Record<string, number>;
  /** Node count change over the window. */
  netChange: number;
  averageNodes?: number;
  flat: boolean;
  /** Longest replacement chain (aws#7146 saw 2–3 generations). */
  maxGeneration: number;
  medianLifetimeMs?: number;
  /** Churned nodes (evidence) that were Wave's own warm nodes, released unused. */
  warmupCaused: number;
}

export interface ThrashingReport {
  nodePool: string;
  window: Window;
  severity: Severity;
  /** 0–100. */
  score: number;
  signals: ThrashingSignals;
  /** The NodeClaims behind the score: short-lived or replaced ones, by launch time. */
  evidence: ChurnedNodeClaim[];
  advice: Advice[];
  summary: string;
}

export interface ThrashingInput {
  nodePool: string;
  /** The NodePool object, for disruption-spec-aware advice (optional). */
  pool?: NodePool;
  /** Lifecycle history (other pools' records are ignored). */
  events: readonly LifecycleRecord[];
  disruptions?: readonly DisruptionRecord[];
  nodeCounts?: readonly NodeCountPoint[];
  /** Nodes Wave's warmup held warm and released unused (its TTL passed): their removal is Wave's doing. */
  warmNodes?: ReadonlySet<string>;
  now: number;
  options?: Partial<ThrashingOptions>;
}

function median(xs: number[]): number | undefined {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const hi = s[mid] ?? 0;
  return s.length % 2 ? hi : ((s[mid - 1] ?? hi) + hi) / 2;
}

/** Node count at window start and end, and the average, from recorded points (summed per ts). */
function countsFrom(points: readonly NodeCountPoint[], pool: string, w: Window) {
  const byTs = new Map<number, number>();
  for (const p of points) if (p.nodePool === pool) byTs.set(p.ts, (byTs.get(p.ts) ?? 0) + p.nodes);
  const series = [...byTs.entries()].sort((a, b) => a[0] - b[0]);
  const before = series.filter(([ts]) => ts <= w.from).at(-1);
  const inside = series.filter(([ts]) => ts > w.from && ts <= w.to);
  const start = before ?? inside[0];
  const end = inside.at(-1) ?? before;
  if (!start || !end) return undefined;
  const used = before ? [before, ...inside] : inside;
  return { start: start[1], end: end[1], average: used.reduce((a, [, n]) => a + n, 0) / used.length };
}

function severityOf(score: number): Severity {
  if (score >= SEVERITY_THRESHOLDS.high) return "high";
  if (score >= SEVERITY_THRESHOLDS.medium) return "medium";
  if (score >= SEVERITY_THRESHOLDS.low) return "low";
  return "none";
}

function minutes(ms: number): string {
  return `${(ms / MIN).toFixed(ms < 10 * MIN ? 1 : 0)} min`;
}

export function detectThrashing(input: ThrashingInput): ThrashingReport {
  const o: ThrashingOptions = { ...DEFAULT_THRASHING_OPTIONS, ...input.options };
  const w: Window = { from: input.now - o.windowMs, to: input.now + 1 }; // include events at `now`
  const planned = new Set(o.plannedReasons.map((r) => canonicalReason(r)));
  const lives = livesOf(input.events.filter((e) => e.nodePool === input.nodePool));

  // Replacement links: each removal in the window takes the nearest unclaimed launch within
  // ±replacementWithinMs, preferring the same instance type. Walk removals in time order so
  // chains (generations) build forward.
  const removedInWindow = lives
    .filter((l) => {
      const at = goneAt(l);
      return at !== undefined && inWindow(at, w);
    })
    .sort((a, b) => (goneAt(a) ?? 0) - (goneAt(b) ?? 0));
  const launchedNear = lives.filter(
    (l) => l.launchedAt !== undefined && l.launchedAt >= w.from - o.replacementWithinMs,
  );
  const taken = new Set<NodeClaimLife>();
  const replacement = new Map<NodeClaimLife, NodeClaimLife>();
  const isPlanned = (l: NodeClaimLife): boolean => l.reason !== undefined && planned.has(l.reason);
  for (const x of removedInWindow) {
    const gone = goneAt(x) ?? 0;
    const candidates = launchedNear
      .filter(
        (y) =>
          y !== x &&
          !taken.has(y) &&
          Math.abs((y.launchedAt ?? 0) - gone) <= o.replacementWithinMs &&
          // a replacement comes after the node it replaces
          (x.launchedAt === undefined || (y.launchedAt ?? 0) > x.launchedAt),
      )
      .sort((a, b) => {
        const same = Number(b.instanceType === x.instanceType) - Number(a.instanceType === x.instanceType);
        return same || Math.abs((a.launchedAt ?? 0) - gone) - Math.abs((b.launchedAt ?? 0) - gone);
      });
    const y = candidates[0];
    if (y) {
      taken.add(y);
      replacement.set(x, y);
    }
  }
  const generation = new Map<NodeClaimLife, number>();
  for (const x of removedInWindow) {
    if (isPlanned(x)) continue;
    const g = generation.get(x) ?? 0;
    generation.set(x, g);
    const y = replacement.get(x);
    if (y) generation.set(y, Math.max(generation.get(y) ?? 0, g + 1));
  }

  const evidence: ChurnedNodeClaim[] = [];
  const shortLifetimes: number[] = [];
  let shortLived = 0;
  let sameType = 0;
  const reasons: Record<string, number> = {};
  for (const x of removedInWindow) {
    const gone = goneAt(x) ?? 0;
    const lifetime = x.launchedAt !== undefined ? gone - x.launchedAt : undefined;
    const reason = x.reason ?? "Unknown";
    reasons[reason] = (reasons[reason] ?? 0) + 1;
    if (isPlanned(x)) continue; // counted in reasons, never as churn
    const isShort = lifetime !== undefined && lifetime < o.shortLifetimeMs;
    const y = replacement.get(x);
    const isSameType = y !== undefined && x.instanceType !== undefined && y.instanceType === x.instanceType;
    if (isShort) {
      shortLived++;
      shortLifetimes.push(lifetime);
    }
    if (isSameType) sameType++;
    if (!isShort && !y) continue;
    const e: ChurnedNodeClaim = {
      nodeClaim: x.nodeClaim,
      reason,
      shortLived: isShort,
      sameTypeReplacement: isSameType,
      generation: generation.get(x) ?? 0,
      warmup: x.nodeName !== undefined && (input.warmNodes?.has(x.nodeName) ?? false),
    };
    if (x.instanceType) e.instanceType = x.instanceType;
    if (x.capacityType) e.capacityType = x.capacityType;
    if (x.zone) e.zone = x.zone;
    if (x.launchedAt !== undefined) e.launchedAt = x.launchedAt;
    if (x.disruptedAt !== undefined) e.disruptedAt = x.disruptedAt;
    if (x.terminatedAt !== undefined) e.terminatedAt = x.terminatedAt;
    if (lifetime !== undefined) e.lifetimeMs = lifetime;
    if (y) e.replacedBy = y.nodeClaim;
    evidence.push(e);
  }
  evidence.sort(
    (a, b) => (a.launchedAt ?? 0) - (b.launchedAt ?? 0) || a.nodeClaim.localeCompare(b.nodeClaim),
  );

  // Disruptions: the explicit records, plus lives disrupted in the window that no record covers.
  const disrupted = new Map<string, string>();
  for (const d of input.disruptions ?? []) {
    if (d.nodePool === input.nodePool && inWindow(d.at, w))
      disrupted.set(d.nodeClaim, canonicalReason(d.reason));
  }
  for (const l of lives) {
    if (l.disruptedAt !== undefined && inWindow(l.disruptedAt, w) && !disrupted.has(l.nodeClaim)) {
      disrupted.set(l.nodeClaim, l.reason ?? "Unknown");
    }
  }
  const voluntary = [...disrupted.values()].filter((r) => !planned.has(r)).length;

  const launched = lives.filter((l) => l.launchedAt !== undefined && inWindow(l.launchedAt, w)).length;
  const removed = removedInWindow.length;
  const counts = input.nodeCounts ? countsFrom(input.nodeCounts, input.nodePool, w) : undefined;
  const netChange = counts ? counts.end - counts.start : launched - removed;
  const scale = counts ? counts.average : Math.max(launched, removed);
  // Planned removals and the launches that replaced them are not churn.
  let plannedMoves = 0;
  for (const x of removedInWindow) {
    if (!isPlanned(x)) continue;
    plannedMoves++;
    const y = replacement.get(x);
    if (y?.launchedAt !== undefined && inWindow(y.launchedAt, w)) plannedMoves++;
  }
  const churn = launched + removed - plannedMoves;
  const flat = churn >= o.minChurnForFlat && Math.abs(netChange) <= Math.max(1, o.flatTolerance * scale);
  const maxGeneration = Math.max(
    0,
    ...[...generation.entries()].filter(([l]) => !isPlanned(l)).map(([, g]) => g),
  );

  const W = SCORE_WEIGHTS;
  const score = Math.round(
    Math.min(W.shortLived.max, W.shortLived.each * shortLived) +
      Math.min(W.sameTypeReplacement.max, W.sameTypeReplacement.each * sameType) +
      Math.min(W.disruptions.max, (W.disruptions.max * voluntary) / W.disruptions.full) +
      (flat ? W.flatUnderChurn.max : 0),
  );
  const severity = severityOf(score);
  const medianLifetimeMs = median(shortLifetimes);

  const signals: ThrashingSignals = {
    launched,
    removed,
    shortLived,
    replacements: replacement.size,
    sameTypeReplacements: sameType,
    disruptions: disrupted.size,
    voluntaryDisruptions: voluntary,
    reasons,
    netChange,
    flat,
    maxGeneration,
    warmupCaused: evidence.filter((e) => e.warmup).length,
  };
  if (counts) signals.averageNodes = counts.average;
  if (medianLifetimeMs !== undefined) signals.medianLifetimeMs = medianLifetimeMs;

  const advice = severity === "none" ? [] : adviseFor(signals, input.pool, o);
  const summary =
    severity === "none"
      ? `${input.nodePool}: no thrashing in the last ${minutes(o.windowMs)} (${String(launched)} launched, ${String(removed)} removed)`
      : `${input.nodePool}: ${severity} thrashing (score ${String(score)}) — ${String(shortLived)} nodes removed younger than ${minutes(o.shortLifetimeMs)}` +
        (medianLifetimeMs !== undefined ? ` (median life ${minutes(medianLifetimeMs)})` : "") +
        `, ${String(sameType)} replaced by the same instance type, ${String(voluntary)} disruptions in ${minutes(o.windowMs)}` +
        (flat ? ", node count flat" : "") +
        (signals.warmupCaused > 0
          ? ` — ${String(signals.warmupCaused)} of the churned nodes were Wave's own warm nodes, released unused and then consolidated`
          : "");
  return { nodePool: input.nodePool, window: w, severity, score, signals, evidence, advice, summary };
}

export interface DetectAllInput {
  pools: readonly NodePool[];
  events: readonly LifecycleRecord[];
  disruptions?: readonly DisruptionRecord[];
  nodeCounts?: readonly NodeCountPoint[];
  warmNodes?: ReadonlySet<string>;
  now: number;
  options?: Partial<ThrashingOptions>;
}

function groupByPool<T extends { nodePool: string }>(rows: readonly T[]): Map<string, T[]> {
  const by = new Map<string, T[]>();
  for (const r of rows) {
    const list = by.get(r.nodePool);
    if (list) list.push(r);
    else by.set(r.nodePool, [r]);
  }
  return by;
}

/**
 * One report per NodePool, worst first. A pool known only from history was deleted (its nodes
 * went with it): that removal is the user's, not churn, so it gets no report — unless no pool is
 * known at all (no snapshot of the cluster yet), when history is all there is.
 */
export function detectThrashingAll(input: DetectAllInput): ThrashingReport[] {
  const names = new Set<string>();
  for (const p of input.pools) if (p.metadata.name) names.add(p.metadata.name);
  if (names.size === 0) for (const e of input.events) names.add(e.nodePool);
  const byName = new Map(input.pools.map((p) => [p.metadata.name ?? "", p]));
  // Each pool's detector reads only its own records: hand it those instead of every pool's.
  const events = groupByPool(input.events);
  const disruptions = input.disruptions ? groupByPool(input.disruptions) : undefined;
  const nodeCounts = input.nodeCounts ? groupByPool(input.nodeCounts) : undefined;
  return [...names]
    .map((nodePool) => {
      const pool = byName.get(nodePool);
      return detectThrashing({
        nodePool,
        ...(pool ? { pool } : {}),
        events: events.get(nodePool) ?? [],
        ...(disruptions ? { disruptions: disruptions.get(nodePool) ?? [] } : {}),
        ...(nodeCounts ? { nodeCounts: nodeCounts.get(nodePool) ?? [] } : {}),
        ...(input.warmNodes ? { warmNodes: input.warmNodes } : {}),
        now: input.now,
        ...(input.options ? { options: input.options } : {}),
      });
    })
    .sort((a, b) => b.score - a.score || a.nodePool.localeCompare(b.nodePool));
}
