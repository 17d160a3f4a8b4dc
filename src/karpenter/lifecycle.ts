// A NodeClaim's lifecycle, read from its status conditions and deletionTimestamp (Karpenter
// records lifecycle in condition transitions, not Events), and the transitions between two
// observed versions, which core turns into lifecycle history.
import type { Condition, Node } from "../objects/kube.ts";
import { parseDuration } from "./duration.ts";
import { conditionOf, isDisruptionTainted } from "./node.ts";
import { DISRUPTED_TAINT, type NodeClaim } from "../objects/karpenter.ts";

/** NodeClaim condition types (sigs.k8s.io/karpenter pkg/apis/v1/nodeclaim_status.go). */
export const NodeClaimConditions = {
  Launched: "Launched",
  Registered: "Registered",
  Initialized: "Initialized",
  Consolidatable: "Consolidatable",
  Drifted: "Drifted",
  Drained: "Drained",
  VolumesDetached: "VolumesDetached",
  InstanceTerminating: "InstanceTerminating",
  ConsistentStateFound: "ConsistentStateFound",
  DisruptionReason: "DisruptionReason",
  Ready: "Ready",
} as const;

/**
 * Reasons Karpenter's disruption controller writes into the DisruptionReason condition (Unhealthy:
 * v1.15 node repair, also set on a NodeClaim it reboots in place).
 */
export type DisruptionReason = "Underutilized" | "Empty" | "Drifted" | "Unhealthy";

export type NodeClaimPhase =
  "Pending" | "Launched" | "Registered" | "Initialized" | "Disrupting" | "Terminating";

export interface NodeClaimState {
  phase: NodeClaimPhase;
  /** When the claim entered this phase (RFC 3339), when known. */
  since?: string;
  /**
   * Disrupting/Terminating: why (Underutilized, Empty, Drifted, or Expired when deletion came at
   * expireAfter). Pending: why the launch is stalled (e.g. InsufficientCapacity, LaunchFailed).
   */
  reason?: string;
  /** Disruption candidacy markers, independent of phase. */
  drifted: boolean;
  consolidatable: boolean;
}

// Karpenter's initial reason for every Unknown condition (operatorpkg status.SetUnknown).
const AWAITING = "AwaitingReconciliation";

function trueCondition(nc: NodeClaim, type: string): Condition | undefined {
  const c = conditionOf(nc.status?.conditions, type);
  return c?.status === "True" ? c : undefined;
}

/**
 * "Expired" when the claim was deleted at or after creation + spec.expireAfter: the expiration
 * controller deletes the claim directly, without a DisruptionReason condition.
 */
function inferredTerminationReason(nc: NodeClaim): string | undefined {
  const { creationTimestamp, deletionTimestamp } = nc.metadata;
  const expireAfter = nc.spec.expireAfter;
  if (!creationTimestamp || !deletionTimestamp || !expireAfter) return undefined;
  let ttl: number | null;
  try {
    ttl = parseDuration(expireAfter);
  } catch {
    return undefined;
  }
  if (ttl === null) return undefined;
  return Date.parse(deletionTimestamp) >= Date.parse(creationTimestamp) + ttl ? "Expired" : undefined;
}

/** Why Karpenter is disrupting (or did disrupt) this claim, if it says or it can be inferred. */
export function disruptionReasonOf(nc: NodeClaim): string | undefined {
  const c = trueCondition(nc, NodeClaimConditions.DisruptionReason);
  if (c) return c.reason || c.message || undefined;
  return inferredTerminationReason(nc);
}

/**
 * The claim's phase. Pass its Node when known: a node tainted karpenter.sh/disrupted counts as
 * Disrupting even without the DisruptionReason condition (Karpenter releases before it existed,
 * or a condition write not yet observed).
 */
export function nodeClaimState(nc: NodeClaim, node?: Node): NodeClaimState {
  const drifted = trueCondition(nc, NodeClaimConditions.Drifted) !== undefined;
  const consolidatable = trueCondition(nc, NodeClaimConditions.Consolidatable) !== undefined;
  const base = { drifted, consolidatable };
  const withTime = <T extends object>(s: T, at: string | undefined): T & { since?: string } =>
    at === undefined ? s : { ...s, since: at };
  const withReason = <T extends object>(s: T, r: string | undefined): T & { reason?: string } =>
    r === undefined ? s : { ...s, reason: r };

  if (nc.metadata.deletionTimestamp !== undefined) {
    return withReason(
      withTime({ ...base, phase: "Terminating" as const }, nc.metadata.deletionTimestamp),
      disruptionReasonOf(nc),
    );
  }
  const disruption = trueCondition(nc, NodeClaimConditions.DisruptionReason);
  if (disruption) {
    return withReason(
      withTime({ ...base, phase: "Disrupting" as const }, disruption.lastTransitionTime),
      disruption.reason || disruption.message || undefined,
    );
  }
  if (node && isDisruptionTainted(node)) {
    const taint = node.spec?.taints?.find((t) => t.key === DISRUPTED_TAINT);
    return withReason(
      withTime({ ...base, phase: "Disrupting" as const }, taint?.timeAdded),
      drifted ? "Drifted" : undefined,
    );
  }
  for (const phase of ["Initialized", "Registered", "Launched"] as const) {
    const c = trueCondition(nc, phase);
    if (c) return withTime({ ...base, phase }, c.lastTransitionTime);
  }
  const launched = conditionOf(nc.status?.conditions, NodeClaimConditions.Launched);
  const stalled = launched?.reason && launched.reason !== AWAITING ? launched.reason : undefined;
  return withReason(withTime({ ...base, phase: "Pending" as const }, nc.metadata.creationTimestamp), stalled);
}

export function nodeClaimPhase(nc: NodeClaim, node?: Node): NodeClaimPhase {
  return nodeClaimState(nc, node).phase;
}

// ---- transitions ------------------------------------------------------------------------------

export type LifecycleTransitionType =
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

export interface LifecycleTransition {
  type: LifecycleTransitionType;
  /** When it happened (RFC 3339): the condition's lastTransitionTime where Karpenter records one. */
  at: string;
  nodeClaim: string;
  uid?: string;
  /** Disrupted/Terminating: disruption reason; Drifted: drift kind; LaunchFailed: the error reason. */
  reason?: string;
}

export interface DiffOptions {
  /** When the change was observed (RFC 3339): the time of transitions Karpenter does not stamp. */
  observedAt: string;
  /** `next` is the object's last state, delivered with its deletion. */
  deleted?: boolean;
}

/** lastTransitionTime of a True condition, "" when True without a time, undefined when not True. */
function trueSince(nc: NodeClaim | undefined, type: string): string | undefined {
  if (!nc) return undefined;
  const c = trueCondition(nc, type);
  return c ? (c.lastTransitionTime ?? "") : undefined;
}

function launchFailure(nc: NodeClaim | undefined): Condition | undefined {
  const c = conditionOf(nc?.status?.conditions, NodeClaimConditions.Launched);
  return c && c.status !== "True" && c.reason && c.reason !== AWAITING ? c : undefined;
}

/**
 * The lifecycle transitions between two observed versions of one NodeClaim, in lifecycle order.
 * `prev` undefined means first sight (every stage already reached is reported, so a consumer
 * that stores them should de-duplicate on uid + type + at). Pure: same input, same output.
 */
export function diffNodeClaim(
  prev: NodeClaim | undefined,
  next: NodeClaim,
  opts: DiffOptions,
): LifecycleTransition[] {
  const name = next.metadata.name ?? prev?.metadata.name ?? "";
  const uid = next.metadata.uid ?? prev?.metadata.uid;
  const out: LifecycleTransition[] = [];
  const push = (type: LifecycleTransitionType, at: string | undefined, reason?: string): void => {
    const t: LifecycleTransition = { type, at: at || opts.observedAt, nodeClaim: name };
    if (uid !== undefined) t.uid = uid;
    if (reason) t.reason = reason;
    out.push(t);
  };
  // A True condition whose lastTransitionTime moved went through a transition we did not see.
  const becameTrue = (type: string): string | undefined => {
    const now = trueSince(next, type);
    if (now === undefined) return undefined;
    return trueSince(prev, type) === now ? undefined : now;
  };

  if (!prev) push("Created", next.metadata.creationTimestamp);

  const failed = launchFailure(next);
  if (failed && failed.reason !== launchFailure(prev)?.reason) {
    push("LaunchFailed", failed.lastTransitionTime, failed.reason);
  }
  for (const type of ["Launched", "Registered", "Initialized"] as const) {
    const at = becameTrue(type);
    if (at !== undefined) push(type, at);
  }
  const driftAt = becameTrue(NodeClaimConditions.Drifted);
  if (driftAt !== undefined) {
    push("Drifted", driftAt, trueCondition(next, NodeClaimConditions.Drifted)?.reason);
  }
  const disruptedAt = becameTrue(NodeClaimConditions.DisruptionReason);
  if (disruptedAt !== undefined) {
    const c = trueCondition(next, NodeClaimConditions.DisruptionReason);
    push("Disrupted", disruptedAt, c?.reason || c?.message);
  } else if (
    prev &&
    trueSince(prev, NodeClaimConditions.DisruptionReason) !== undefined &&
    trueSince(next, NodeClaimConditions.DisruptionReason) === undefined &&
    next.metadata.deletionTimestamp === undefined &&
    !opts.deleted
  ) {
    // Karpenter clears the condition when a disruption command is abandoned.
    push("DisruptionCancelled", undefined, disruptionReasonOf(prev));
  }
  if (next.metadata.deletionTimestamp !== undefined && prev?.metadata.deletionTimestamp === undefined) {
    const reason = disruptionReasonOf(next);
    // Expiration deletes the claim without a DisruptionReason condition: report the disruption
    // here so every voluntary disruption has a Disrupted step.
    if (
      reason === "Expired" &&
      trueSince(next, NodeClaimConditions.DisruptionReason) === undefined &&
      trueSince(prev, NodeClaimConditions.DisruptionReason) === undefined
    ) {
      push("Disrupted", next.metadata.deletionTimestamp, reason);
    }
    push("Terminating", next.metadata.deletionTimestamp, reason);
  }
  if (opts.deleted) push("Terminated", undefined, disruptionReasonOf(next));
  return out;
}
