// The history records figures and the thrashing detector read. Shapes match what core's store
// keeps (src/core/store/store.ts LifecycleEvent, Disruption, SeriesPoint) minus storage fields, so
// its rows can be passed as they are; times are ms since the epoch.

/**
 * NodeClaim lifecycle phases: the store's five (Launched … Terminated) plus the finer transitions
 * core's lifecycle derivation sees (Created, Terminating, DisruptionCancelled, …), so either
 * stream can be passed. Unknown extras are kept in `phases` and otherwise ignored.
 */
export type LifecyclePhase =
  | "Created"
  | "LaunchFailed"
  | "Launched"
  | "Registered"
  | "Initialized"
  | "Drifted"
  | "Disrupted"
  | "DisruptionCancelled"
  | "Terminating"
  | "Terminated";

export interface LifecycleRecord {
  nodeClaim: string;
  nodePool: string;
  /** The Node it became (known from registration on). */
  nodeName?: string | undefined;
  instanceType?: string | undefined;
  capacityType?: string | undefined;
  zone?: string | undefined;
  phase: LifecyclePhase;
  /** Disrupted/Terminated: why (Underutilized, Empty, Drifted, Expired, Interrupted, ...). */
  reason?: string | undefined;
  at: number;
}

export interface DisruptionRecord {
  nodeClaim: string;
  nodePool: string;
  reason: string;
  at: number;
}

/** Nodes of one pool (optionally one capacity type of it) at one instant. */
export interface NodeCountPoint {
  nodePool: string;
  capacityType?: string;
  ts: number;
  nodes: number;
}

/** [from, to) in ms since the epoch. */
export interface Window {
  from: number;
  to: number;
}

export function inWindow(at: number, w: Window): boolean {
  return at >= w.from && at < w.to;
}

const CANONICAL_REASONS = [
  "Underutilized",
  "Empty",
  "Drifted",
  "Expired",
  "Interrupted",
  "Unhealthy",
  "Deleted",
];
const BY_LOWER = new Map(CANONICAL_REASONS.map((r) => [r.toLowerCase(), r]));

/**
 * Karpenter spells reasons "Underutilized" in conditions and "underutilized" in metric labels;
 * figures group them as one. Unknown reasons pass through unchanged.
 */
export function canonicalReason(reason: string | undefined): string {
  if (!reason) return "Unknown";
  return BY_LOWER.get(reason.toLowerCase()) ?? reason;
}

/** One NodeClaim's life as history saw it. */
/** The phases that only set when they happened. */
const PHASE_AT: Partial<
  Record<LifecyclePhase, "createdAt" | "launchedAt" | "registeredAt" | "initializedAt">
> = {
  Created: "createdAt",
  Launched: "launchedAt",
  Registered: "registeredAt",
  Initialized: "initializedAt",
};

export interface NodeClaimLife {
  nodeClaim: string;
  nodePool: string;
  nodeName?: string;
  instanceType?: string;
  capacityType?: string;
  zone?: string;
  createdAt?: number;
  launchedAt?: number;
  registeredAt?: number;
  initializedAt?: number;
  disruptedAt?: number;
  terminatingAt?: number;
  terminatedAt?: number;
  /** Disruption or termination reason, canonical spelling. */
  reason?: string;
  /** terminatedAt − launchedAt (createdAt when no launch was seen), when both are known. */
  lifetimeMs?: number;
  phases: { phase: LifecyclePhase; at: number; reason?: string }[];
}

/** Groups lifecycle records (any order, duplicates tolerated) into one life per NodeClaim. */
export function livesOf(events: readonly LifecycleRecord[]): NodeClaimLife[] {
  const by = new Map<string, NodeClaimLife>();
  const sorted = [...events].sort((a, b) => a.at - b.at);
  for (const e of sorted) {
    const key = `${e.nodePool}/${e.nodeClaim}`;
    let life = by.get(key);
    if (!life) {
      life = { nodeClaim: e.nodeClaim, nodePool: e.nodePool, phases: [] };
      by.set(key, life);
    }
    if (e.instanceType && !life.instanceType) life.instanceType = e.instanceType;
    if (e.capacityType && !life.capacityType) life.capacityType = e.capacityType;
    if (e.zone && !life.zone) life.zone = e.zone;
    if (e.nodeName && !life.nodeName) life.nodeName = e.nodeName;
    // First occurrence of a phase wins, as in the store; a cancelled disruption may recur.
    if (life.phases.some((p) => p.phase === e.phase)) continue;
    life.phases.push(
      e.reason ? { phase: e.phase, at: e.at, reason: e.reason } : { phase: e.phase, at: e.at },
    );
    const field = PHASE_AT[e.phase];
    if (field !== undefined) {
      life[field] = e.at;
      continue;
    }
    switch (e.phase) {
      case "Disrupted":
        life.disruptedAt = e.at;
        if (e.reason) life.reason = canonicalReason(e.reason);
        break;
      case "DisruptionCancelled":
        if (life.disruptedAt !== undefined && life.terminatingAt === undefined) {
          delete life.disruptedAt;
          delete life.reason;
          life.phases = life.phases.filter(
            (p) => p.phase !== "Disrupted" && p.phase !== "DisruptionCancelled",
          );
        }
        break;
      case "Terminating":
      case "Terminated":
        life[e.phase === "Terminating" ? "terminatingAt" : "terminatedAt"] = e.at;
        if (e.reason && !life.reason) life.reason = canonicalReason(e.reason);
        break;
      default:
        break;
    }
  }
  for (const life of by.values()) {
    // Without a Launched record, creation stands in (a claim whose launch failed never ran).
    const failed = life.phases.some((p) => p.phase === "LaunchFailed");
    if (life.launchedAt === undefined && life.createdAt !== undefined && !failed)
      life.launchedAt = life.createdAt;
    const start = life.launchedAt ?? life.createdAt;
    if (start !== undefined && life.terminatedAt !== undefined) life.lifetimeMs = life.terminatedAt - start;
  }
  return [...by.values()];
}

/** When the NodeClaim started going away: disruption decided, else deletion, else gone. */
export function goneAt(life: NodeClaimLife): number | undefined {
  return life.disruptedAt ?? life.terminatingAt ?? life.terminatedAt;
}
