// A cluster's Karpenter version, kept current from the state's Pod changes: the /clusters route is
// polled by every open dashboard, and scanning every pod per poll is what this avoids.
import { karpenterVersionOfPod, newestVersion } from "../karpenter/version.ts";
import type { Pod } from "../objects/kube.ts";
import type { ClusterState } from "../state/cluster.ts";

/** The key of the state's index: Karpenter controller pods (namespace/name) → their version. */
const KARPENTER_PODS = Symbol("karpenter controller pods");

export function clusterKarpenterVersion(state: ClusterState): string | undefined {
  const pods = state.derived(KARPENTER_PODS, () => {
    const found = new Map<string, string>();
    const note = (key: string, pod: Pod | undefined): void => {
      const v = pod && karpenterVersionOfPod(pod);
      if (v) found.set(key, v);
      else found.delete(key);
    };
    state.subscribe(
      (c) => {
        if (c.kind === "Pod") note(c.key, c.type === "delete" ? undefined : c.object);
      },
      ["Pod"],
    );
    for (const p of state.pods()) note(`${p.metadata.namespace ?? ""}/${p.metadata.name ?? ""}`, p);
    return found;
  });
  return newestVersion(pods.values());
}

/** Where the detected version stands against the releases Wave is tested with (for the API). */
export { karpenterSupport, type KarpenterSupport } from "../karpenter/compat.ts";
