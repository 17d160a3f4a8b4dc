// Lifecycle history for core: NodeClaim transitions (from condition changes, creation and
// deletion — src/karpenter/lifecycle.ts diffs two versions) enriched with the pool, capacity type
// and node, disruption reasons taken from Karpenter's DisruptionTerminating Events, and
// de-duplicated so replays (snapshots, reconnects, repeated Events) record each step once.
import type { Event } from "../../objects/kube.ts";
import {
  CAPACITY_TYPE_LABEL,
  INSTANCE_TYPE_LABEL,
  NODE_POOL_LABEL,
  TOPOLOGY_ZONE_LABEL,
} from "../../objects/karpenter.ts";
import type { NodeClaim } from "../../objects/karpenter.ts";
import { diffNodeClaim } from "../../karpenter/lifecycle.ts";
import type { LifecycleTransition, LifecycleTransitionType } from "../../karpenter/lifecycle.ts";

export interface LifecycleEvent extends LifecycleTransition {
  /**
   * Stable identity: the same step of the same NodeClaim always gets the same id, so a store can
   * ignore duplicates across core restarts (when this tracker's memory is gone).
   */
  id: string;
  nodePool?: string;
  nodeName?: string;
  capacityType?: string;
  instanceType?: string;
  zone?: string;
  /** Where the step was read from. */
  source: "condition" | "event";
}

/** Steps that happen at most once per NodeClaim; the others may repeat (keyed by time). */
const ONCE: ReadonlySet<LifecycleTransitionType> = new Set([
  "Created",
  "Launched",
  "Registered",
  "Initialized",
  "Disrupted",
  "Terminating",
  "Terminated",
]);

const DISRUPTING = /^Disrupting (?:Node|NodeClaim):\s*([A-Za-z]+)/;

export interface DisruptionSignal {
  /** The object the Event is about. */
  kind: "Node" | "NodeClaim";
  name: string;
  reason: string;
  /** RFC 3339. */
  at: string | undefined;
}

/**
 * Reads a DisruptionTerminating Event ("Disrupting Node: Underutilized", "Disrupting NodeClaim:
 * Drifted/Replace …"): which object and why. Anything else → undefined.
 */
export function disruptionFromEvent(ev: Event): DisruptionSignal | undefined {
  if (ev.reason !== "DisruptionTerminating") return undefined;
  const kind = ev.involvedObject.kind;
  const name = ev.involvedObject.name;
  if ((kind !== "Node" && kind !== "NodeClaim") || !name) return undefined;
  const m = DISRUPTING.exec(ev.message ?? "");
  if (!m?.[1]) return undefined;
  return { kind, name, reason: m[1], at: ev.lastTimestamp ?? ev.eventTime ?? ev.firstTimestamp };
}

function enrich(t: LifecycleTransition, nc: NodeClaim, source: LifecycleEvent["source"]): LifecycleEvent {
  const labels = nc.metadata.labels ?? {};
  const once = ONCE.has(t.type);
  const who = t.uid ?? t.nodeClaim;
  const id = once ? `${who}/${t.type}` : `${who}/${t.type}/${t.at}/${t.reason ?? ""}`;
  const out: LifecycleEvent = { ...t, id, source };
  const set = (
    k: "nodePool" | "capacityType" | "instanceType" | "zone" | "nodeName",
    v: string | undefined,
  ) => {
    if (v) out[k] = v;
  };
  set("nodePool", labels[NODE_POOL_LABEL]);
  set("capacityType", labels[CAPACITY_TYPE_LABEL]);
  set("instanceType", labels[INSTANCE_TYPE_LABEL]);
  set("zone", labels[TOPOLOGY_ZONE_LABEL]);
  set("nodeName", nc.status?.nodeName);
  return out;
}

/**
 * A NodeClaim the store last knew alive (lifecycle steps recorded, no Terminated): what a
 * restarted core remembers of it, to close it when the agent's first snapshot lacks it.
 */
export interface OpenNodeClaim {
  uid: string;
  name: string;
  nodePool?: string;
  nodeName?: string;
  capacityType?: string;
  instanceType?: string;
  zone?: string;
  /** The reason of its Disrupted step, when one was recorded. */
  disruptionReason?: string;
}

export interface LifecycleTrackerOptions {
  /** Terminated NodeClaims remembered for de-duplication after their state is gone. */
  maxForgotten?: number;
}

/**
 * Per-cluster de-duplicating deriver. Feed it every NodeClaim change (with the previous
 * version) and every Event; it returns the lifecycle steps not reported before.
 */
export class LifecycleTracker {
  /** uid (or name) → ids already emitted for that claim. */
  readonly #seen = new Map<string, Set<string>>();
  /** Claims whose Terminated was emitted, oldest first (bounded). */
  readonly #gone: string[] = [];
  readonly #maxGone: number;

  constructor(opts: LifecycleTrackerOptions = {}) {
    this.#maxGone = opts.maxForgotten ?? 10_000;
  }

  /** A NodeClaim was created, changed or deleted (`deleted`: next is its last state). */
  nodeClaim(
    prev: NodeClaim | undefined,
    next: NodeClaim,
    opts: { observedAt: string; deleted?: boolean },
  ): LifecycleEvent[] {
    const ts = diffNodeClaim(prev, next, { observedAt: opts.observedAt, deleted: opts.deleted ?? false });
    const out: LifecycleEvent[] = [];
    for (const t of ts) {
      const e = enrich(t, next, "condition");
      if (t.type === "DisruptionCancelled") this.#seenFor(e).delete(`${who(e)}/Disrupted`);
      if (this.#mark(e)) out.push(e);
    }
    if (opts.deleted) this.#forget(next.metadata.uid ?? next.metadata.name ?? "");
    return out;
  }

  /**
   * A claim core knew alive before it restarted, missing from the cluster now: it was deleted
   * while core was down. Its Terminated step, at `observedAt` (when core found out).
   */
  vanished(c: OpenNodeClaim, observedAt: string): LifecycleEvent[] {
    const e: LifecycleEvent = {
      type: "Terminated",
      at: observedAt,
      nodeClaim: c.name,
      uid: c.uid,
      id: `${c.uid}/Terminated`,
      source: "condition",
    };
    if (c.disruptionReason) e.reason = c.disruptionReason;
    for (const k of ["nodePool", "nodeName", "capacityType", "instanceType", "zone"] as const) {
      const v = c[k];
      if (v) e[k] = v;
    }
    if (!this.#mark(e)) return [];
    this.#forget(c.uid);
    return [e];
  }

  /**
   * A Karpenter Event; `claimFor` finds the NodeClaim it is about (by claim name, or by the name
   * of the Node a claim launched). Returns a Disrupted step when it names a disruption reason
   * not yet reported for that claim.
   */
  event(
    ev: Event,
    claimFor: (kind: "Node" | "NodeClaim", name: string) => NodeClaim | undefined,
  ): LifecycleEvent[] {
    const d = disruptionFromEvent(ev);
    if (!d) return [];
    const nc = claimFor(d.kind, d.name);
    if (!nc?.metadata.name) return [];
    const t: LifecycleTransition = {
      type: "Disrupted",
      at: d.at ?? nc.metadata.deletionTimestamp ?? "",
      nodeClaim: nc.metadata.name,
      reason: d.reason,
    };
    if (nc.metadata.uid) t.uid = nc.metadata.uid;
    if (!t.at) return [];
    const e = enrich(t, nc, "event");
    return this.#mark(e) ? [e] : [];
  }

  /** Forget everything (a cluster's session was reset; ids still de-duplicate in the store). */
  clear(): void {
    this.#seen.clear();
    this.#gone.length = 0;
  }

  #seenFor(e: LifecycleEvent): Set<string> {
    const k = who(e);
    let s = this.#seen.get(k);
    if (!s) {
      s = new Set();
      this.#seen.set(k, s);
    }
    return s;
  }

  #mark(e: LifecycleEvent): boolean {
    const s = this.#seenFor(e);
    if (s.has(e.id)) return false;
    s.add(e.id);
    return true;
  }

  #forget(claim: string): void {
    this.#gone.push(claim);
    while (this.#gone.length > this.#maxGone) {
      const old = this.#gone.shift();
      if (old !== undefined) this.#seen.delete(old);
    }
  }
}

function who(e: { uid?: string; nodeClaim: string }): string {
  return e.uid ?? e.nodeClaim;
}
