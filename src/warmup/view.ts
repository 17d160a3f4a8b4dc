// What the warmup controller reads about the cluster. Core adapts its shared cluster state
// (src/state) to this; `kubeWarmupView` reads straight from any KubeClient for standalone runs,
// the rig and tests. Writes never go through here — only through KubeClient.
import type { Node, Pod } from "../objects/kube.ts";
import type { KubeClient } from "../kube/port.ts";
import type { NodeClaim, NodePool } from "../objects/karpenter.ts";

export interface WarmupView {
  nodePools(): Promise<readonly NodePool[]>;
  nodes(): Promise<readonly Node[]>;
  nodeClaims(): Promise<readonly NodeClaim[]>;
  /** Every pod in the cluster: pending pods tie workload to pools before they have a node. */
  pods(): Promise<readonly Pod[]>;
}

/** A view that lists from the apiserver on every call (fine for one reconcile per pool). */
export function kubeWarmupView(client: KubeClient): WarmupView {
  const all = async <T>(
    list: (cont?: string) => Promise<{ items: T[]; continue?: string }>,
  ): Promise<T[]> => {
    const out: T[] = [];
    let cont: string | undefined;
    do {
      const page = await list(cont);
      out.push(...page.items);
      cont = page.continue;
    } while (cont !== undefined && cont !== "");
    return out;
  };
  return {
    nodePools: () =>
      all((c) => client.list("NodePool", c === undefined ? { limit: 500 } : { limit: 500, continue: c })),
    nodes: () =>
      all((c) => client.list("Node", c === undefined ? { limit: 500 } : { limit: 500, continue: c })),
    nodeClaims: () =>
      all((c) => client.list("NodeClaim", c === undefined ? { limit: 500 } : { limit: 500, continue: c })),
    pods: () =>
      all((c) => client.list("Pod", c === undefined ? { limit: 500 } : { limit: 500, continue: c })),
  };
}

/** The synchronous reads src/state's ClusterState offers (matched structurally). */
export interface ClusterReads {
  nodePools(): readonly NodePool[];
  nodes(): readonly Node[];
  nodeClaims(): readonly NodeClaim[];
  pods(): readonly Pod[];
}

/**
 * A view over core's in-memory cluster state (informer-fed, so possibly a little behind; the
 * controller re-reads its own pods from the apiserver and patches with resourceVersions).
 */
export function stateWarmupView(state: ClusterReads): WarmupView {
  return {
    nodePools: () => Promise.resolve(state.nodePools()),
    nodes: () => Promise.resolve(state.nodes()),
    nodeClaims: () => Promise.resolve(state.nodeClaims()),
    pods: () => Promise.resolve(state.pods()),
  };
}
