// One cluster's current objects as core knows them, built only from the agent's stream.
import type { Event, Node, Pod } from "../../objects/kube.ts";
import type { NodeClaim, NodePool } from "../../objects/karpenter.ts";
import { objectKey } from "../../wire/wire.ts";
import type { WireKind, WireObject } from "../../wire/wire.ts";

export class ClusterObjects {
  readonly nodes = new Map<string, Node>();
  readonly pods = new Map<string, Pod>();
  readonly nodePools = new Map<string, NodePool>();
  readonly nodeClaims = new Map<string, NodeClaim>();
  readonly events = new Map<string, Event>();
  /** Node name → NodeClaim name (status.nodeName), to attribute Node Events to claims. */
  readonly #claimByNode = new Map<string, string>();

  #map(kind: WireKind): Map<string, WireObject["object"]> {
    switch (kind) {
      case "Node":
        return this.nodes;
      case "Pod":
        return this.pods;
      case "NodePool":
        return this.nodePools;
      case "NodeClaim":
        return this.nodeClaims;
      case "Event":
        return this.events;
    }
  }

  get size(): number {
    return this.nodes.size + this.pods.size + this.nodePools.size + this.nodeClaims.size + this.events.size;
  }

  get(kind: WireKind, key: string): WireObject["object"] | undefined {
    return this.#map(kind).get(key);
  }

  /** Stores the object; returns the version it replaced. */
  upsert(w: WireObject): WireObject["object"] | undefined {
    const key = objectKey(w.object);
    const map = this.#map(w.kind);
    const prev = map.get(key);
    map.set(key, w.object);
    if (w.kind === "NodeClaim") this.#indexClaim(prev as NodeClaim | undefined, w.object);
    return prev;
  }

  /** Removes the object; returns what was stored. */
  delete(w: WireObject): WireObject["object"] | undefined {
    const key = objectKey(w.object);
    const map = this.#map(w.kind);
    const prev = map.get(key);
    map.delete(key);
    if (w.kind === "NodeClaim") this.#indexClaim((prev as NodeClaim | undefined) ?? w.object, undefined);
    return prev;
  }

  clear(): void {
    for (const k of ["Node", "Pod", "NodePool", "NodeClaim", "Event"] as const) this.#map(k).clear();
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
