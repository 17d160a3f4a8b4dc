// What lifecycle derivation needs of a cluster between batches: its NodeClaims (the previous
// version a change is compared with), which claim runs on which node (to attribute Node Events),
// and the snapshot's Events. Not a model of the cluster — that is the ClusterState the hub keeps;
// Nodes, Pods and NodePools pass through here without being held.
import type { Event } from "../../objects/kube.ts";
import type { NodeClaim } from "../../objects/karpenter.ts";
import { objectKey } from "../../wire/wire.ts";
import type { WireKind, WireObject } from "../../wire/wire.ts";
import type { LifecycleEvent, LifecycleTracker } from "../lifecycle/derive.ts";

export class LifecycleObjects {
  readonly nodeClaims = new Map<string, NodeClaim>();
  readonly events = new Map<string, Event>();
  /** Node name → NodeClaim name (status.nodeName), to attribute Node Events to claims. */
  readonly #claimByNode = new Map<string, string>();

  /** The map a kind is held in; Nodes, Pods and NodePools are not held. */
  #map(kind: WireKind): Map<string, WireObject["object"]> | undefined {
    return kind === "NodeClaim" ? this.nodeClaims : kind === "Event" ? this.events : undefined;
  }

  /** Stores a NodeClaim or Event; returns the version it replaced. */
  upsert(w: WireObject): WireObject["object"] | undefined {
    const key = objectKey(w.object);
    const map = this.#map(w.kind);
    if (map === undefined) return undefined;
    const prev = map.get(key);
    map.set(key, w.object);
    if (w.kind === "NodeClaim") this.#indexClaim(prev as NodeClaim | undefined, w.object);
    return prev;
  }

  /** Removes a NodeClaim or Event; returns what was stored. */
  delete(w: WireObject): WireObject["object"] | undefined {
    const key = objectKey(w.object);
    const map = this.#map(w.kind);
    if (map === undefined) return undefined;
    const prev = map.get(key);
    map.delete(key);
    if (w.kind === "NodeClaim") this.#indexClaim((prev as NodeClaim | undefined) ?? w.object, undefined);
    return prev;
  }

  clear(): void {
    this.nodeClaims.clear();
    this.events.clear();
    this.#claimByNode.clear();
  }

  /** The NodeClaim an Event's involved object refers to (by claim name or by its Node's name). */
  claimFor(kind: "Node" | "NodeClaim", name: string): NodeClaim | undefined {
    if (kind === "NodeClaim") return this.nodeClaims.get(name);
    const claim = this.#claimByNode.get(name);
    return claim === undefined ? undefined : this.nodeClaims.get(claim);
  }

  #indexClaim(prev: NodeClaim | undefined, next: NodeClaim | undefined): void {
    const before = prev?.status?.nodeName;
    if (before !== undefined && this.#claimByNode.get(before) === prev?.metadata.name) {
      this.#claimByNode.delete(before);
    }
    const after = next?.status?.nodeName;
    if (after !== undefined && next?.metadata.name) this.#claimByNode.set(after, next.metadata.name);
  }
}

/**
 * The lifecycle steps one change derives, with `objects` updated: core's ingest runs it per delta,
 * the embedded cluster's prehistory (src/cli/prehistory.ts) per change it mirrors.
 */
export function deriveChange(
  objects: LifecycleObjects,
  tracker: LifecycleTracker,
  op: "upsert" | "delete",
  wire: WireObject,
  observedAtMs: number,
): LifecycleEvent[] {
  const at = new Date(observedAtMs).toISOString();
  if (op === "upsert") {
    const prev = objects.upsert(wire);
    if (wire.kind === "NodeClaim")
      return tracker.nodeClaim(prev as NodeClaim | undefined, wire.object, { observedAt: at });
    if (wire.kind === "Event") return tracker.event(wire.object, (k, n) => objects.claimFor(k, n));
    return [];
  }
  const prev = objects.delete(wire);
  if (wire.kind !== "NodeClaim") return [];
  const last = wire.object;
  return tracker.nodeClaim((prev as NodeClaim | undefined) ?? last, last, { observedAt: at, deleted: true });
}
