// Writes what an agent sent into the cluster's ClusterState, core's one model of the cluster.
// Ingest is its only writer (IngestCore, once per batch, before the batch is stored); what the
// state reports for each write is what lifecycle derivation compares (the previous object).
import type { KindTypes } from "../../kube/kinds.ts";
import type { NodeClaim } from "../../objects/karpenter.ts";
import type { Event } from "../../objects/kube.ts";
import type { LifecycleEvent, LifecycleTracker } from "../lifecycle/derive.ts";
import {
  STATE_KINDS,
  stateKey,
  type ClusterState,
  type StateChange,
  type StateKind,
} from "../../state/cluster.ts";
import type { WireObject } from "../../wire/wire.ts";
import type { IngestChange } from "./sink.ts";

export type NodeClaimChange = Extract<StateChange, { kind: "NodeClaim" }>;

/** Kinds the state keeps; Events pass through (lifecycle derivation reads them as they come). */
export const isStateKind = (k: string): k is StateKind => (STATE_KINDS as readonly string[]).includes(k);

/**
 * Makes `objects` the cluster's complete state (every kept kind replaced). Returns the NodeClaim
 * changes, one per claim added, changed or gone.
 */
export function applySnapshot(state: ClusterState, objects: readonly WireObject[]): NodeClaimChange[] {
  const byKind = new Map<StateKind, unknown[]>(STATE_KINDS.map((k) => [k, []]));
  for (const o of objects) if (isStateKind(o.kind)) byKind.get(o.kind)?.push(o.object);
  let claims: NodeClaimChange[] = [];
  state.batch(() => {
    for (const [kind, list] of byKind) {
      const changes = state.replaceAll(kind, list as KindTypes[typeof kind][]);
      if (kind === "NodeClaim") claims = changes as NodeClaimChange[];
    }
  });
  return claims;
}

/**
 * Applies one delta ("upsert" of a known object is an update). Returns the change the state
 * reports: undefined when nothing changed or the kind is not kept.
 */
export function applyChange(state: ClusterState, c: IngestChange): StateChange | undefined {
  if (!isStateKind(c.kind)) return undefined;
  return state.apply(c.kind, c.op === "delete" ? "delete" : "add", c.object);
}

/** The NodeClaim an Event is about: by its name, or by the name of the Node it launched. */
export function claimIn(
  state: ClusterState,
): (kind: "Node" | "NodeClaim", name: string) => NodeClaim | undefined {
  return (kind, name) => (kind === "NodeClaim" ? state.nodeClaim(name) : state.nodeClaimForNode(name));
}

/**
 * Applies a snapshot and derives its lifecycle steps from what the state reports: each claim added
 * or changed against its previous version, each claim gone as terminated meanwhile, each Event.
 * Core's ingest (per snapshot) and the embedded cluster's prehistory (src/cli/prehistory.ts) both
 * derive this way, so their lifecycle rows are the same.
 */
export function ingestSnapshot(
  state: ClusterState,
  tracker: LifecycleTracker,
  objects: readonly WireObject[],
  observedAtMs: number,
): LifecycleEvent[] {
  const at = new Date(observedAtMs).toISOString();
  const steps: LifecycleEvent[] = [];
  for (const c of applySnapshot(state, objects)) {
    if (c.type === "delete")
      steps.push(...tracker.nodeClaim(c.object, c.object, { observedAt: at, deleted: true }));
    else steps.push(...tracker.nodeClaim(c.previous, c.object, { observedAt: at }));
  }
  const claimFor = claimIn(state);
  for (const o of objects) if (o.kind === "Event") steps.push(...tracker.event(o.object, claimFor));
  return steps;
}

/** Applies one delta and derives its lifecycle steps (ingest per delta; the prehistory per change). */
export function ingestDelta(
  state: ClusterState,
  tracker: LifecycleTracker,
  change: IngestChange,
): LifecycleEvent[] {
  const at = new Date(change.observedAt).toISOString();
  const c = applyChange(state, change);
  const w = { kind: change.kind, object: change.object } as WireObject;
  if (w.kind === "NodeClaim") {
    const prev = c?.kind === "NodeClaim" ? c.previous : undefined;
    // No change reported (the same resourceVersion again): no step.
    if (change.op === "upsert") return c ? tracker.nodeClaim(prev, w.object, { observedAt: at }) : [];
    // A claim the state did not hold still ends: its last state is what the agent sent.
    return tracker.nodeClaim(prev ?? w.object, w.object, { observedAt: at, deleted: true });
  }
  if (w.kind === "Event" && change.op === "upsert") return tracker.event(w.object, claimIn(state));
  return [];
}

/**
 * A snapshot applied to the state as its chunks arrive (core's ingest, ADR 0020): each object is
 * added or updated at once, and when the snapshot ends every kept kind is replaced (relist
 * semantics: what the snapshot did not carry is deleted). What it holds until then grows with the
 * object count only: the keys seen of each kind that had objects when it began (into an empty kind
 * nothing can be absent), the NodeClaims' uids when asked for, and its Events (Karpenter's only,
 * after the agent's trim), whose steps need the complete state to find their claim.
 */
export class StreamedSnapshot {
  readonly #state: ClusterState;
  readonly #tracker: LifecycleTracker;
  readonly #seen = new Map<StateKind, Set<string>>();
  #events: Event[] = [];
  /** NodeClaim name → uid of every claim the snapshot carried (when asked for). */
  readonly claimUids: Map<string, string | undefined> | undefined;
  /** Objects applied so far. */
  objects = 0;

  constructor(state: ClusterState, tracker: LifecycleTracker, opts: { claimUids?: boolean } = {}) {
    this.#state = state;
    this.#tracker = tracker;
    for (const k of STATE_KINDS) if (state.count(k) > 0) this.#seen.set(k, new Set());
    this.claimUids = opts.claimUids ? new Map() : undefined;
  }

  /** Applies one chunk; returns the lifecycle steps of the claims it added or changed. */
  add(objects: readonly WireObject[], observedAtMs: number): LifecycleEvent[] {
    const at = new Date(observedAtMs).toISOString();
    const steps: LifecycleEvent[] = [];
    const state = this.#state;
    state.batch(() => {
      for (const o of objects) {
        this.objects++;
        if (o.kind === "Event") {
          this.#events.push(o.object);
          continue;
        }
        if (o.kind === "NodeClaim") this.claimUids?.set(o.object.metadata.name ?? "", o.object.metadata.uid);
        if (!isStateKind(o.kind)) continue;
        this.#seen.get(o.kind)?.add(stateKey(o.kind, o.object));
        const c = state.apply(o.kind, "add", o.object);
        if (c?.kind === "NodeClaim" && c.type !== "delete")
          steps.push(...this.#tracker.nodeClaim(c.previous, c.object, { observedAt: at }));
      }
    });
    return steps;
  }

  /** The snapshot is complete: deletes what it did not carry; the steps of those claims and of its Events. */
  end(observedAtMs: number): LifecycleEvent[] {
    const at = new Date(observedAtMs).toISOString();
    const steps: LifecycleEvent[] = [];
    const state = this.#state;
    state.batch(() => {
      for (const [kind, keep] of this.#seen) {
        for (const c of state.retainOnly(kind, keep)) {
          if (c.kind === "NodeClaim")
            steps.push(...this.#tracker.nodeClaim(c.object, c.object, { observedAt: at, deleted: true }));
        }
      }
    });
    this.#seen.clear();
    const claimFor = claimIn(state);
    for (const e of this.#events) steps.push(...this.#tracker.event(e, claimFor));
    this.#events = [];
    return steps;
  }
}
