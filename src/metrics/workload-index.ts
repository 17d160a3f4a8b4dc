// Which pods belong to which workload, kept current by the state's own change notifications
// (like the dashboard's machine index), so a scrape reads only the pods of the workloads it asks
// about instead of resolving 150,000 pods' owners every time.
import type { Pod } from "../objects/kube.ts";
import type { ClusterState } from "../state/cluster.ts";
import { resolveWorkload } from "../webhook/workload.ts";

export interface IndexedPod {
  /** Workload keys (namespace/Kind/name), the Deployment before its ReplicaSet. */
  candidates: string[];
  nodeName: string | undefined;
  /** Not terminal and not being deleted. */
  live: boolean;
}

const keyOf = (namespace: string, kind: string, name: string): string => `${namespace}/${kind}/${name}`;

export class WorkloadIndex {
  readonly #state: ClusterState;
  readonly #unsubscribe: () => void;
  readonly #pending = new Set<string>();
  readonly #pods = new Map<string, IndexedPod>();
  readonly #members = new Map<string, Set<string>>();
  readonly #versions = new Map<string, number>();
  #nodeVersion = 0;

  constructor(state: ClusterState) {
    this.#state = state;
    this.#unsubscribe = state.subscribe(
      (c) => {
        if (c.kind === "Pod") this.#pending.add(c.key);
        else this.#nodeVersion++;
      },
      ["Pod", "Node"],
    );
    for (const p of state.pods()) this.#pending.add(`${p.metadata.namespace ?? ""}/${p.metadata.name ?? ""}`);
  }

  close(): void {
    this.#unsubscribe();
  }

  /**
   * Changes whenever a pod of the workload or any Node changed (a node's capacity type may move
   * its pods): what a reader may cache the workload's counts by.
   */
  version(workload: string): string {
    this.#sync();
    return `${this.#versions.get(workload) ?? 0}/${this.#nodeVersion}`;
  }

  /** The indexed pods of one workload (namespace/Kind/name). */
  podsOf(workload: string): IndexedPod[] {
    this.#sync();
    const out: IndexedPod[] = [];
    for (const k of this.#members.get(workload) ?? []) {
      const p = this.#pods.get(k);
      if (p) out.push(p);
    }
    return out;
  }

  #sync(): void {
    if (this.#pending.size === 0) return;
    for (const key of this.#pending) {
      this.#drop(key);
      const slash = key.indexOf("/");
      const pod = this.#state.pod(key.slice(0, slash), key.slice(slash + 1));
      if (pod) this.#add(key, pod);
    }
    this.#pending.clear();
  }

  #add(key: string, pod: Pod): void {
    const ns = pod.metadata.namespace ?? "default";
    const owner = resolveWorkload(pod, ns);
    if (!owner.managed) return;
    const phase = pod.status?.phase;
    const entry: IndexedPod = {
      candidates: owner.candidates.map((c) => keyOf(c.namespace, c.kind, c.name)),
      nodeName: pod.spec.nodeName || undefined,
      live: pod.metadata.deletionTimestamp === undefined && phase !== "Succeeded" && phase !== "Failed",
    };
    this.#pods.set(key, entry);
    for (const w of entry.candidates) {
      this.#versions.set(w, (this.#versions.get(w) ?? 0) + 1);
      let set = this.#members.get(w);
      if (!set) this.#members.set(w, (set = new Set()));
      set.add(key);
    }
  }

  #drop(key: string): void {
    const old = this.#pods.get(key);
    if (!old) return;
    this.#pods.delete(key);
    for (const w of old.candidates) {
      this.#versions.set(w, (this.#versions.get(w) ?? 0) + 1);
      const set = this.#members.get(w);
      set?.delete(key);
      if (set?.size === 0) this.#members.delete(w);
    }
  }
}

/** The state's workload index, created on first use and kept by the state (`derived`). */
export function workloadIndex(state: ClusterState): WorkloadIndex {
  return state.derived(WorkloadIndex, () => new WorkloadIndex(state));
}
