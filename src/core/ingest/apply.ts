// Writes what an agent sent into the cluster's ClusterState, core's one model of the cluster.
// Ingest is its only writer (IngestCore, once per batch, before the batch is stored); what the
// state reports for each write is what lifecycle derivation compares (the previous object).
import type { KindTypes } from "../../kube/kinds.ts";
import { STATE_KINDS, type ClusterState, type StateChange, type StateKind } from "../../state/cluster.ts";
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
