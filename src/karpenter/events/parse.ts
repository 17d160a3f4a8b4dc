// Karpenter's Events in readable parts: why a node is not disrupted (DisruptionBlocked,
// Unconsolidatable, the v1.15 ConsolidationCandidate/Rejected) and why a pod has no node yet
// (FailedScheduling "incompatible with nodepool …", per NodePool). Pure; the messages differ
// between releases (docs/consolidation.md), so every parse keeps the raw text and an unknown
// message is "other", never an error. Fixtures recorded per Karpenter release run against these.
import type { Event } from "../../objects/kube.ts";

/** Why Karpenter says it will not disrupt a node (or a pool's nodes), from its own Event. */
export type DisruptionEventReason =
  | "do-not-disrupt"
  | "pdb"
  | "nominated"
  | "not-initialized"
  | "being-disrupted"
  | "budget"
  | "consolidation-disabled"
  | "when-empty"
  | "spot-to-spot"
  | "uninitialized-neighbor"
  | "pods-fit-nowhere"
  | "repair-blocked"
  | "other";

export interface DisruptionEventParse {
  reason: DisruptionEventReason;
  /** The Event's message as Karpenter wrote it. */
  message: string;
  /** The NodePool the message names, when it names one. */
  nodePool?: string;
  /** The pod the message names ("namespace/name"): a pod that would fit nowhere else. */
  pod?: string;
  /** What that pod's placement failed on (the scheduling error for it), when named. */
  podError?: string;
  /** For a budget: the disruption reason it blocks ("Underutilized", "Empty", …), when named. */
  disruptionReason?: string;
  /** v1.15 consolidation Events: the savings figure Karpenter printed (USD/h). */
  savingsPerHour?: number;
}

/** Event reasons this parser reads about nodes and NodeClaims. */
export const DISRUPTION_EVENT_REASONS = [
  "DisruptionBlocked",
  "Unconsolidatable",
  "ConsolidationCandidate",
  "ConsolidationRejected",
  // v1.15 node repair (NodeRepair gate): why a NodePool's repair is held (disruption/repair.go).
  "NodeRepairBlocked",
] as const;

const quoted = (s: string, after: RegExp): string | undefined => {
  const m = new RegExp(after.source + String.raw`\s*"([^"]+)"`).exec(s);
  return m?.[1];
};

/**
 * One DisruptionBlocked / Unconsolidatable / ConsolidationRejected message in parts. Unknown
 * wording gives reason "other" with the message kept.
 */
export function parseDisruptionMessage(message: string): DisruptionEventParse {
  const m = message.trim();
  const out: DisruptionEventParse = { reason: "other", message: m };
  const savings = /savings:\s*\$?(\d+(?:\.\d+)?)/.exec(m);
  if (savings) out.savingsPerHour = Number(savings[1]);
  const pool = quoted(m, /[Nn]ode[Pp]ool/);
  if (pool) out.nodePool = pool;

  // "not all pods would schedule, ns/pod => incompatible with nodepool …" (the pod first named).
  const fit = /not all pods would schedule,\s*([^\s/]+)\/(\S+)\s*=>\s*(.*)$/s.exec(m);
  if (fit) {
    out.reason = "pods-fit-nowhere";
    out.pod = `${fit[1]}/${fit[2]}`;
    out.podError = (fit[3] ?? "").trim();
    return out;
  }
  // v1.15 repair, not consolidation: do-not-repair, no drain bound, the 20 % breaker, a static
  // pool that cannot stage a replacement (disruption/repair.go, staticdrift.go).
  if (/\brepair\b|are unhealthy|cannot stage a replacement/i.test(m)) out.reason = "repair-blocked";
  else if (/would schedule against (?:an )?uninitialized/i.test(m)) out.reason = "uninitialized-neighbor";
  else if (/do-not-disrupt/.test(m) && !/Invalid karpenter\.sh\/do-not-disrupt/.test(m))
    out.reason = "do-not-disrupt";
  else if (/\bpdb\b|PodDisruptionBudget|disruption budget.*pod|evict/i.test(m) && !/blocking budget/.test(m))
    out.reason = "pdb";
  else if (/blocking budget|No allowed disruptions/i.test(m)) {
    out.reason = "budget";
    const r = /disruption reason (\w+)/.exec(m);
    if (r?.[1]) out.disruptionReason = r[1];
  } else if (/nominated/i.test(m)) out.reason = "nominated";
  else if (/(?:isn't|is not|not) initialized/i.test(m)) out.reason = "not-initialized";
  else if (/already being disrupted/i.test(m)) out.reason = "being-disrupted";
  // v1.6–v1.8 word WhenEmpty on a non-empty node "has non-empty consolidation disabled" (fixtures).
  else if (/WhenEmpty, but node is not empty|policy WhenEmpty|non-empty consolidation disabled/.test(m))
    out.reason = "when-empty";
  else if (/consolidation disabled/i.test(m)) out.reason = "consolidation-disabled";
  else if (/SpotToSpotConsolidation/.test(m)) out.reason = "spot-to-spot";
  return out;
}

/** Why Karpenter launched no node for a pod, for one NodePool (or for all when `nodePool` is null). */
export type PendingReasonKind = "requirement" | "taint" | "limit" | "resources" | "no-nodepool" | "other";

export interface PendingReason {
  /** The NodePool this part names; null when the part names none. */
  nodePool: string | null;
  kind: PendingReasonKind;
  /** The requirement key that conflicts (kind "requirement"), or the taint (kind "taint"). */
  key: string | null;
  /** The part of Karpenter's message this reason was read from. */
  detail: string;
}

/** FailedScheduling from Karpenter: "Failed to schedule pod, <error>" (the error per NodePool). */
export function parseSchedulingMessage(message: string): PendingReason[] {
  const body = message.trim().replace(/^Failed to schedule pod,\s*/i, "");
  // NodePools are joined with "; " (Karpenter's multierr); a quoted value never holds one.
  const parts = body
    .split(/;\s+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return parts.map(parsePart);
}

function parsePart(part: string): PendingReason {
  const pool =
    /incompatible with nodepool\s+"([^"]+)"/i.exec(part)?.[1] ??
    // v1.6–v1.15: "… exceed limits for nodepool (NodePool=name)" (serrors values).
    /exceed limits for nodepool \(NodePool=([^)]+)\)/i.exec(part)?.[1] ??
    /exceed limits for nodepool:?\s*"?([^",\s]+)"?/i.exec(part)?.[1] ??
    /nodepool\s+"([^"]+)"/i.exec(part)?.[1] ??
    // v1.15 names no pool per part; a resources part carries it among its requirements.
    /karpenter\.sh\/nodepool In \[([^\]\s]+)\]/.exec(part)?.[1] ??
    null;
  const out = (kind: PendingReasonKind, key: string | null = null): PendingReason => ({
    nodePool: pool,
    kind,
    key,
    detail: part,
  });
  // "did not tolerate taint (taint=key=value:Effect)" (v1.6–v1.15) or older "… taint=…".
  const taint =
    /did not tolerate taint \(taint=([^)]+)\)/i.exec(part) ??
    /did not tolerate(?: taint)?[=:\s]*([^,;]+?)(?:,|$)/i.exec(part);
  if (taint) return out("taint", (taint[1] ?? "").trim() || null);
  if (/exceed limits/i.test(part)) return out("limit");
  const key =
    /incompatible requirements, key ([^\s,]+)/i.exec(part)?.[1] ??
    /label "([^"]+)" does not have known values/i.exec(part)?.[1] ??
    /key ([^\s,]+), /i.exec(part)?.[1];
  if (key || /incompatible requirements/i.test(part)) return out("requirement", key ?? null);
  if (/no instance type|had enough resources|satisfied resources/i.test(part)) return out("resources");
  if (/no nodepools? found|nodepool.* not found|no nodepools/i.test(part)) return out("no-nodepool");
  return out("other");
}

/** A Karpenter Event about a pod, read: FailedScheduling reasons or the node it was nominated to. */
export interface PodEventParse {
  kind: "failed-scheduling" | "nominated" | "other";
  reasons: PendingReason[];
  /** Nominated: the NodeClaim or Node named. */
  nominatedTo?: string;
}

export function parsePodEvent(ev: Pick<Event, "reason" | "message">): PodEventParse {
  const msg = ev.message ?? "";
  if (ev.reason === "FailedScheduling")
    return { kind: "failed-scheduling", reasons: parseSchedulingMessage(msg) };
  if (ev.reason === "Nominated") {
    const to = /schedule on:?\s*(.+)$/i.exec(msg)?.[1]?.trim();
    return { kind: "nominated", reasons: [], ...(to ? { nominatedTo: to } : {}) };
  }
  return { kind: "other", reasons: [] };
}

/** When an Event last happened (epoch ms), from whichever timestamp the reporter set. */
export function eventTime(
  ev: Pick<Event, "lastTimestamp" | "eventTime" | "firstTimestamp" | "metadata">,
): number {
  for (const t of [ev.lastTimestamp, ev.eventTime, ev.firstTimestamp, ev.metadata.creationTimestamp]) {
    const ms = t ? Date.parse(t) : NaN;
    if (!Number.isNaN(ms)) return ms;
  }
  return 0;
}
