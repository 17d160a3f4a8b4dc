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
import { STATIC_SCALE_REASON, staticReplicas } from "../../karpenter/static-pool.ts";
import { staticScaled } from "./static.ts";
import type { ThrashingOptions, ThrashingSignals } from "./types.ts";

export type { ThrashingOptions, ThrashingSignals } from "./types.ts";

const MIN = 60_000;

export const DEFAULT_THRASHING_OPTIONS: ThrashingOptions = {
  windowMs: 30 * MIN,
  shortLifetimeMs: 15 * MIN,
  replacementWithinMs: 5 * MIN,
  relaunchEarlyMs: MIN,
  flatTolerance: 0.2,
  minChurnForFlat: 6,
  plannedReasons: ["Drifted", "Expired"],
  involuntaryReasons: ["Interrupted", "Unhealthy", "Deleted"],
};

export type Severity = "none" | "low" | "medium" | "high";

/** Score thresholds (inclusive lower bounds). */
export const SEVERITY_THRESHOLDS = { low: 20, medium: 45, high: 70 } as const;

/**
 * Flagged as thrashing: the severities `wave_nodepool_thrashing` (help: "warning or critical"),
 * `WaveNodePoolThrashing`, the overview's list and the fixes list go by. Low is churn above the
 * normal but not thrashing: shown with its score, never alerted on.
 */
export function isFlagged(severity: Severity): boolean {
  return severity === "medium" || severity === "high";
}

/**
 * Points of the score (they add up to 100; no points below two cycles). Turnover: churn cycles
 * per node of the pool's average size, full at `full`. Repetition: the longest chain of cycles (a
 * relaunched node churned again …) beyond the first, full at `full` generations. Share: the part
 * of the window's launches that only undid a removal. Repetition and share are scaled by the
 * turnover up to `fullFromTurnover` (half the pool's nodes cycling).
 */
export const SCORE_WEIGHTS = {
  turnover: { full: 3, max: 50 },
  repetition: { full: 3, max: 30 },
  share: { max: 20 },
  /** Repetition and share count in full from this turnover on (half the pool cycling), in proportion below it. */
  fullFromTurnover: 0.5,
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

export interface ThrashingReport {
  nodePool: string;
  window: Window;
  severity: Severity;
  /** 0–100. */
  score: number;
  signals: ThrashingSignals;
  /** The NodeClaims behind the score: the churn cycles, by launch time. */
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
  /**
   * The pool's NodeClaims at `now` (core's state): with the history it gives the pool's size
   * through the window, nodes launched before the history included.
   */
  nodes?: number;
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

/**
 * Node count at window start and end, and the average (one sample a minute), from the lives:
 * walked back from the count now when it is known (nodes older than the history included), else
 * the lives alive at each instant.
 */
function countsFromLives(lives: readonly NodeClaimLife[], w: Window, nodesNow: number | undefined) {
  const at = (t: number): number => {
    if (nodesNow !== undefined) {
      let n = nodesNow;
      for (const l of lives) {
        if (l.launchedAt !== undefined && l.launchedAt > t) n--;
        if (l.terminatedAt !== undefined && l.terminatedAt > t) n++;
      }
      return Math.max(0, n);
    }
    return lives.filter(
      (l) => (l.launchedAt ?? -Infinity) <= t && (l.terminatedAt === undefined || l.terminatedAt > t),
    ).length;
  };
  const samples: number[] = [];
  for (let t = w.from; t < w.to; t += MIN) samples.push(at(t));
  const end = at(w.to);
  return {
    start: samples[0] ?? end,
    end,
    average: samples.reduce((a, n) => a + n, 0) / (samples.length || 1),
  };
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

/**
 * Each removal in the window takes the nearest unclaimed launch from `relaunchEarlyMs` before it
 * to `replacementWithinMs` after it, preferring the same instance type: Karpenter decides a
 * removal, then launches what replaces it (a consolidation's replacement, a drifted node's) or,
 * when demand returns, what provisioning needs again. Removals in time order, so chains build
 * forward.
 */
function relaunches(
  lives: readonly NodeClaimLife[],
  removed: readonly NodeClaimLife[],
  w: Window,
  o: ThrashingOptions,
): Map<NodeClaimLife, NodeClaimLife> {
  const launchedNear = lives.filter(
    (l) => l.launchedAt !== undefined && l.launchedAt >= w.from - o.relaunchEarlyMs,
  );
  const taken = new Set<NodeClaimLife>();
  const out = new Map<NodeClaimLife, NodeClaimLife>();
  for (const x of removed) {
    const gone = goneAt(x) ?? 0;
    const after = (y: NodeClaimLife): number => (y.launchedAt ?? 0) - gone;
    const y = launchedNear
      .filter(
        (c) =>
          c !== x &&
          !taken.has(c) &&
          after(c) >= -o.relaunchEarlyMs &&
          after(c) <= o.replacementWithinMs &&
          // a relaunch comes after the node it replaces
          (x.launchedAt === undefined || (c.launchedAt ?? 0) > x.launchedAt),
      )
      .sort((a, b) => {
        const same = Number(b.instanceType === x.instanceType) - Number(a.instanceType === x.instanceType);
        return same || Math.abs(after(a)) - Math.abs(after(b));
      })[0];
    if (y) {
      taken.add(y);
      out.set(x, y);
    }
  }
  return out;
}

function churnedOf(
  x: NodeClaimLife,
  lifetime: number | undefined,
  y: NodeClaimLife | undefined,
  generation: number,
  warmNodes: ReadonlySet<string> | undefined,
): ChurnedNodeClaim {
  const e: ChurnedNodeClaim = {
    nodeClaim: x.nodeClaim,
    reason: x.reason ?? "Unknown",
    shortLived: true,
    sameTypeReplacement: y !== undefined && x.instanceType !== undefined && y.instanceType === x.instanceType,
    generation,
    warmup: x.nodeName !== undefined && (warmNodes?.has(x.nodeName) ?? false),
  };
  if (x.instanceType) e.instanceType = x.instanceType;
  if (x.capacityType) e.capacityType = x.capacityType;
  if (x.zone) e.zone = x.zone;
  if (x.launchedAt !== undefined) e.launchedAt = x.launchedAt;
  if (x.disruptedAt !== undefined) e.disruptedAt = x.disruptedAt;
  if (x.terminatedAt !== undefined) e.terminatedAt = x.terminatedAt;
  if (lifetime !== undefined) e.lifetimeMs = lifetime;
  if (y) e.replacedBy = y.nodeClaim;
  return e;
}

/** Disruptions in the window: the explicit records, plus lives disrupted in it that no record covers. */
function disruptionsIn(
  input: ThrashingInput,
  lives: readonly NodeClaimLife[],
  w: Window,
): Map<string, string> {
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
  return disrupted;
}

function scoreOf(turnover: number, maxGeneration: number, relaunchShare: number): number {
  const W = SCORE_WEIGHTS;
  const repetition = Math.min(
    W.repetition.max,
    (W.repetition.max * Math.max(0, maxGeneration - 1)) / (W.repetition.full - 1),
  );
  // Repetition and share count in proportion to the turnover (up to half the pool cycling): a
  // few nodes cycling in a large pool weigh as much as their part of it.
  return Math.round(
    Math.min(W.turnover.max, (W.turnover.max * turnover) / W.turnover.full) +
      (repetition + W.share.max * Math.min(1, relaunchShare)) * Math.min(1, turnover / W.fullFromTurnover),
  );
}

function summaryOf(
  nodePool: string,
  severity: Severity,
  score: number,
  s: ThrashingSignals,
  o: ThrashingOptions,
) {
  if (s.cycles === 0)
    return `${nodePool}: no thrashing in the last ${minutes(o.windowMs)} (${String(s.launched)} launched, ${String(s.removed)} removed)`;
  const what = severity === "none" ? "normal churn" : `${severity} thrashing`;
  return (
    `${nodePool}: ${what} (score ${String(score)}) — ${String(s.cycles)} nodes removed younger than ` +
    minutes(o.shortLifetimeMs) +
    (s.medianLifetimeMs !== undefined ? ` (median life ${minutes(s.medianLifetimeMs)})` : "") +
    ` and launched again within ${minutes(o.replacementWithinMs)}, ${s.turnover.toFixed(1)}× the pool's ` +
    `${s.averageNodes.toFixed(1)} nodes in ${minutes(o.windowMs)}` +
    (s.maxGeneration > 1 ? `, ${String(s.maxGeneration)} times over` : "") +
    (s.sameTypeReplacements > 0
      ? `, ${String(s.sameTypeReplacements)} replaced by the same instance type`
      : "") +
    (s.warmupCaused > 0
      ? ` — ${String(s.warmupCaused)} of the churned nodes were Wave's own warm nodes, released unused and then consolidated`
      : "")
  );
}

/**
 * The cycles among the window's removals (by time): Karpenter's own choice, a short life, the
 * capacity launched again — with every removal's reason counted.
 */
function cyclesOf(
  removedInWindow: readonly NodeClaimLife[],
  replacement: ReadonlyMap<NodeClaimLife, NodeClaimLife>,
  chosen: (reason: string | undefined) => boolean,
  o: ThrashingOptions,
  warmNodes: ReadonlySet<string> | undefined,
) {
  const generation = new Map<NodeClaimLife, number>();
  const evidence: ChurnedNodeClaim[] = [];
  const cycleLifetimes: number[] = [];
  const reasons: Record<string, number> = {};
  let shortLived = 0;
  let sameType = 0;
  for (const x of removedInWindow) {
    const reason = x.reason ?? "Unknown";
    reasons[reason] = (reasons[reason] ?? 0) + 1;
    if (!chosen(x.reason)) continue; // counted in reasons, never as churn
    const lifetime = x.launchedAt !== undefined ? (goneAt(x) ?? 0) - x.launchedAt : undefined;
    if (lifetime === undefined || lifetime >= o.shortLifetimeMs) continue;
    shortLived++;
    const y = replacement.get(x);
    if (!y) continue;
    // generation: 1 for a cycle of a first node, +1 each time its relaunch churns again
    const g = (generation.get(x) ?? 0) + 1;
    generation.set(y, g);
    cycleLifetimes.push(lifetime);
    const e = churnedOf(x, lifetime, y, g, warmNodes);
    if (e.sameTypeReplacement) sameType++;
    evidence.push(e);
  }
  evidence.sort(
    (a, b) => (a.launchedAt ?? 0) - (b.launchedAt ?? 0) || a.nodeClaim.localeCompare(b.nodeClaim),
  );
  const cycleReasons: Record<string, number> = {};
  for (const e of evidence)
    cycleReasons[e.reason ?? "Unknown"] = (cycleReasons[e.reason ?? "Unknown"] ?? 0) + 1;
  return { evidence, cycleLifetimes, reasons, cycleReasons, shortLived, sameType };
}

/** Launches and removals enough to matter, the node count flat: planned and involuntary moves left out. */
function flatUnderChurn(x: {
  removedInWindow: readonly NodeClaimLife[];
  replacement: ReadonlyMap<NodeClaimLife, NodeClaimLife>;
  chosen: (reason: string | undefined) => boolean;
  launched: number;
  netChange: number;
  averageNodes: number;
  w: Window;
  o: ThrashingOptions;
}): boolean {
  let notChurn = 0;
  for (const r of x.removedInWindow) {
    if (x.chosen(r.reason)) continue;
    notChurn++;
    const y = x.replacement.get(r);
    if (y?.launchedAt !== undefined && inWindow(y.launchedAt, x.w)) notChurn++;
  }
  const churn = x.launched + x.removedInWindow.length - notChurn;
  return (
    churn >= x.o.minChurnForFlat && Math.abs(x.netChange) <= Math.max(1, x.o.flatTolerance * x.averageNodes)
  );
}

export function detectThrashing(input: ThrashingInput): ThrashingReport {
  const o: ThrashingOptions = { ...DEFAULT_THRASHING_OPTIONS, ...input.options };
  const w: Window = { from: input.now - o.windowMs, to: input.now + 1 }; // include events at `now`
  const planned = new Set(o.plannedReasons.map((r) => canonicalReason(r)));
  const involuntary = new Set(o.involuntaryReasons.map((r) => canonicalReason(r)));
  // A static pool's removals without a reason are its replicas changing: planned, never churn.
  const isStatic = staticReplicas(input.pool) !== undefined;
  if (isStatic) planned.add(STATIC_SCALE_REASON);
  const chosen = (reason: string | undefined): boolean => {
    const r = reason ?? "Unknown";
    return !planned.has(r) && !involuntary.has(r);
  };
  const lives = staticScaled(livesOf(input.events.filter((e) => e.nodePool === input.nodePool)), isStatic);
  const removedInWindow = lives
    .filter((l) => {
      const at = goneAt(l);
      return at !== undefined && inWindow(at, w);
    })
    .sort((a, b) => (goneAt(a) ?? 0) - (goneAt(b) ?? 0));
  const replacement = relaunches(lives, removedInWindow, w, o);

  const { evidence, cycleLifetimes, reasons, cycleReasons, shortLived, sameType } = cyclesOf(
    removedInWindow,
    replacement,
    chosen,
    o,
    input.warmNodes,
  );

  const disrupted = disruptionsIn(input, lives, w);
  const voluntary = [...disrupted.values()].filter((r) => chosen(r)).length;
  const launched = lives.filter((l) => l.launchedAt !== undefined && inWindow(l.launchedAt, w)).length;
  const removed = removedInWindow.length;
  const counts =
    (input.nodeCounts ? countsFrom(input.nodeCounts, input.nodePool, w) : undefined) ??
    countsFromLives(lives, w, input.nodes);
  const netChange = counts.end - counts.start;
  const averageNodes = Math.max(1, counts.average);
  const flat = flatUnderChurn({
    removedInWindow,
    replacement,
    chosen,
    launched,
    netChange,
    averageNodes,
    w,
    o,
  });
  const cycles = evidence.length;
  const maxGeneration = Math.max(0, ...evidence.map((e) => e.generation));
  const turnover = cycles / averageNodes;
  const relaunchShare = launched > 0 ? Math.min(1, cycles / launched) : 0;
  // One cycle is an odd node, not thrashing: churn must repeat.
  const score = cycles < 2 ? 0 : scoreOf(turnover, maxGeneration, relaunchShare);
  const severity = severityOf(score);
  const medianLifetimeMs = median(cycleLifetimes);

  const signals: ThrashingSignals = {
    launched,
    removed,
    shortLived,
    replacements: replacement.size,
    sameTypeReplacements: sameType,
    cycles,
    turnover,
    relaunchShare,
    disruptions: disrupted.size,
    voluntaryDisruptions: voluntary,
    reasons,
    cycleReasons,
    netChange,
    averageNodes,
    flat,
    maxGeneration,
    warmupCaused: evidence.filter((e) => e.warmup).length,
  };
  if (medianLifetimeMs !== undefined) signals.medianLifetimeMs = medianLifetimeMs;

  // Karpenter ignores a static pool's consolidation settings: no advice would change its churn.
  const advice = isFlagged(severity) && !isStatic ? adviseFor(signals, input.pool, o) : [];
  const summary = summaryOf(input.nodePool, severity, score, signals, o);
  return { nodePool: input.nodePool, window: w, severity, score, signals, evidence, advice, summary };
}

export interface DetectAllInput {
  pools: readonly NodePool[];
  /** Each pool's NodeClaims at `now` (see ThrashingInput.nodes). */
  nodes?: ReadonlyMap<string, number>;
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
        ...(input.nodes ? { nodes: input.nodes.get(nodePool) ?? 0 } : {}),
        ...(input.warmNodes ? { warmNodes: input.warmNodes } : {}),
        now: input.now,
        ...(input.options ? { options: input.options } : {}),
      });
    })
    .sort((a, b) => b.score - a.score || a.nodePool.localeCompare(b.nodePool));
}
