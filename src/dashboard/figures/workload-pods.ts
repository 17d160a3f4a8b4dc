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

/** One workload's live pods, and its newest revision's (see WorkloadPodsRow). */
export interface WorkloadCensus {
  pods: number;
  revision?: string;
  revisionPods?: number;
}

/** The revision a pod runs: its ReplicaSet's pod-template-hash, its StatefulSet's controller-revision-hash. */
export function podRevision(pod: Pod): string | undefined {
  const l = pod.metadata.labels;
  const r = l?.["pod-template-hash"] ?? l?.["controller-revision-hash"];
  return r === "" ? undefined : r;
}

/**
 * Live pods per workload, sorted by name, with the newest revision of each and its pods: the
 * revision whose first live pod was created last (an older revision's pod re-created mid-rollout
 * does not make it the newest again; ties go to the larger name, so the count is deterministic).
 */
export function workloadPodCounts(pods: Iterable<Pod>): Map<string, WorkloadCensus> {
  const out = new Map<string, { pods: number; revisions: Map<string, { first: string; pods: number }> }>();
  for (const p of pods) {
    const w = podWorkload(p);
    if (w === undefined) continue;
    let c = out.get(w);
    if (!c) out.set(w, (c = { pods: 0, revisions: new Map() }));
    c.pods++;
    const rev = podRevision(p);
    if (rev === undefined) continue;
    const created = p.metadata.creationTimestamp ?? "";
    const r = c.revisions.get(rev);
    if (!r) c.revisions.set(rev, { first: created, pods: 1 });
    else {
      r.pods++;
      if (created < r.first) r.first = created;
    }
  }
  const census = (c: {
    pods: number;
    revisions: Map<string, { first: string; pods: number }>;
  }): WorkloadCensus => {
    let newest: [string, { first: string; pods: number }] | undefined;
    for (const e of c.revisions)
      if (!newest || e[1].first > newest[1].first || (e[1].first === newest[1].first && e[0] > newest[0]))
        newest = e;
    return newest ? { pods: c.pods, revision: newest[0], revisionPods: newest[1].pods } : { pods: c.pods };
  };
  return new Map([...out].sort(([a], [b]) => a.localeCompare(b)).map(([w, c]) => [w, census(c)]));
}

/** One history bucket of pod counts. */
export function workloadPodsRows(
  counts: ReadonlyMap<string, WorkloadCensus>,
  o: { clusterId: string; ts: number; stepMs: number },
): WorkloadPodsRow[] {
  return [...counts].map(([workload, c]) => ({
    clusterId: o.clusterId,
    workload,
    ts: o.ts,
    stepMs: o.stepMs,
    pods: c.pods,
    ...(c.revision === undefined ? {} : { revision: c.revision, revisionPods: c.revisionPods ?? 0 }),
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
