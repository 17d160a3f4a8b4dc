// Pods per workload (namespace/Kind/name), the demand `wave whatif` replays: every live pod of a
// Deployment, StatefulSet or ReplicaSet, pending or running (pending pods are demand too). Wave's
// own pods and DaemonSet pods are not a workload's demand (the simulator does not place them).
import type { WorkloadPodsRow } from "../../core/store/store.ts";
import { isDaemonSetPod } from "../../karpenter/room.ts";
import type { Pod } from "../../objects/kube.ts";
import { isWavePod } from "../../objects/wave.ts";
import type { ClusterState } from "../../state/cluster.ts";
import { resolveWorkload } from "../../webhook/workload.ts";
import { workloadName } from "./savings.ts";

/** The workload a pod counts for (its Deployment before its ReplicaSet), or undefined. */
export function podWorkload(pod: Pod): string | undefined {
  if (pod.metadata.deletionTimestamp !== undefined) return undefined;
  if (pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") return undefined;
  if (isWavePod(pod) || isDaemonSetPod(pod)) return undefined;
  const r = resolveWorkload(pod, pod.metadata.namespace ?? "default");
  const ref = r.managed ? r.candidates[0] : undefined;
  return ref ? workloadName(ref) : undefined;
}

/** Live pods per workload, sorted by name. */
export function workloadPodCounts(pods: Iterable<Pod>): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of pods) {
    const w = podWorkload(p);
    if (w !== undefined) out.set(w, (out.get(w) ?? 0) + 1);
  }
  return new Map([...out].sort(([a], [b]) => a.localeCompare(b)));
}

/** One history bucket of pod counts. */
export function workloadPodsRows(
  counts: ReadonlyMap<string, number>,
  o: { clusterId: string; ts: number; stepMs: number },
): WorkloadPodsRow[] {
  return [...counts].map(([workload, pods]) => ({
    clusterId: o.clusterId,
    workload,
    ts: o.ts,
    stepMs: o.stepMs,
    pods,
  }));
}

/** Workloads whose last pod core remembers, per cluster (the newest first out when over). */
const MAX_TEMPLATES = 2000;
const TEMPLATES = Symbol("workload templates");

/**
 * The newest live pod core has seen of each workload, kept after the workload's pods are gone: a
 * job that is between runs when a what-if is asked still has a pod template to replay its
 * recorded pods with (without it, its pool's cost was left out of the replay).
 */
export class WorkloadTemplates {
  readonly #pods = new Map<string, Pod>();

  constructor(state: ClusterState) {
    for (const p of state.pods()) this.#see(p);
    state.on("Pod", (c) => {
      if (c.type !== "delete") this.#see(c.object);
    });
  }

  #see(p: Pod): void {
    const w = podWorkload(p);
    if (w === undefined) return;
    // Map order is the recency order: the least recently seen workload goes first.
    this.#pods.delete(w);
    this.#pods.set(w, p);
    if (this.#pods.size > MAX_TEMPLATES) {
      const oldest = this.#pods.keys().next().value;
      if (oldest !== undefined) this.#pods.delete(oldest);
    }
  }

  /** The remembered pod of each workload (namespace/Kind/name). */
  pods(): Pod[] {
    return [...this.#pods.values()];
  }
}

/** The cluster state's template memory, made (and subscribed) on first use. */
export function workloadTemplates(state: ClusterState): WorkloadTemplates {
  return state.derived(TEMPLATES, () => new WorkloadTemplates(state));
}
