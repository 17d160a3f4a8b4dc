// What the warmup controller reads about the cluster: the in-memory cluster state (src/state),
// kept by informers in the process the controller runs in — Karpenter's shape, informers → state
// → controllers. Every read is an index lookup, so a reconcile costs the size of its pool, not of
// the cluster, and never lists from the apiserver. Writes never go through here, and neither do
// Wave's own pods: the controller reads those consistently from the apiserver.
import { NODE_POOL_LABEL } from "../objects/karpenter.ts";
import type { ClusterState } from "../state/cluster.ts";

export type WarmupView = Pick<
  ClusterState,
  | "nodePools"
  | "nodePool"
  | "node"
  | "nodes"
  | "nodeClaims"
  | "nodesInPool"
  | "nodeClaimsInPool"
  | "nodeClaimForNode"
  | "podsOnNode"
  | "pendingPods"
  | "subscribe"
>;

/** Only `pool`: a controller that shares its cluster with other tenants' pools (the rig's e2e). */
export function scopedView(view: WarmupView, pool: string): WarmupView {
  const mine = (o: { metadata: { labels?: Record<string, string> } }): boolean =>
    o.metadata.labels?.[NODE_POOL_LABEL] === pool;
  return {
    nodePools: () => view.nodePools().filter((p) => p.metadata.name === pool),
    nodePool: (name) => (name === pool ? view.nodePool(name) : undefined),
    node: (name) => {
      const n = view.node(name);
      return n !== undefined && mine(n) ? n : undefined;
    },
    nodes: () => view.nodesInPool(pool),
    nodeClaims: () => view.nodeClaimsInPool(pool),
    nodesInPool: (p) => (p === pool ? view.nodesInPool(p) : []),
    nodeClaimsInPool: (p) => (p === pool ? view.nodeClaimsInPool(p) : []),
    nodeClaimForNode: (name) => view.nodeClaimForNode(name),
    podsOnNode: (name, opts) => view.podsOnNode(name, opts),
    pendingPods: (opts) => view.pendingPods(opts),
    subscribe: (fn, kinds) => view.subscribe(fn, kinds),
  };
}
