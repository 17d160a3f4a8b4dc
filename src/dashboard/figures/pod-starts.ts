// Pod starts core saw (pending → running): each workload pod's creation → Ready, its NodePool and
// whether it waited for a new node. The what-if's model check sets the replay's pod-start
// percentiles beside these, and calibrates each pool's image pull from its cold starts. Kept in
// memory per cluster (made on first use, like the workload templates): the last 25 h, at most
// 100,000 starts; a restarted core has only what it saw since.
import { NODE_POOL_LABEL } from "../../objects/karpenter.ts";
import type { Pod } from "../../objects/kube.ts";
import { isDaemonSetPod } from "../../karpenter/room.ts";
import { isWavePod, parseTime } from "../../objects/wave.ts";
import type { ClusterState } from "../../state/cluster.ts";

/** One pod's start. */
export interface PodStartSample {
  /** Pod creation, epoch ms. */
  created: number;
  /** Creation → Ready, ms. */
  ms: number;
  /** The NodePool of the node it started on ("" when unknown). */
  pool: string;
  /** It waited for a node launched after it was created (a cold start). */
  cold: boolean;
}

const KEEP_MS = 25 * 3_600_000;
const MAX_SAMPLES = 100_000;
const STARTS = Symbol("pod starts");

/** When a pod became Ready, epoch ms. */
function readyAt(p: Pod): number | undefined {
  const c = p.status?.conditions?.find((x) => x.type === "Ready" && x.status === "True");
  return parseTime(c?.lastTransitionTime);
}

/** The start `p` shows, if it is a workload pod that has started on a node the state knows. */
export function startOf(p: Pod, state: Pick<ClusterState, "node">): PodStartSample | undefined {
  if (isWavePod(p) || isDaemonSetPod(p)) return undefined;
  const created = parseTime(p.metadata.creationTimestamp);
  const ready = readyAt(p);
  if (created === undefined || ready === undefined || ready < created) return undefined;
  const node = state.node(p.spec.nodeName ?? "");
  const nodeCreated = parseTime(node?.metadata.creationTimestamp);
  return {
    created,
    ms: ready - created,
    pool: node?.metadata.labels?.[NODE_POOL_LABEL] ?? "",
    cold: nodeCreated !== undefined && nodeCreated > created,
  };
}

export class PodStarts {
  /** By pod uid, in the order seen (the oldest first out). */
  readonly #byUid = new Map<string, PodStartSample>();
  readonly #state: ClusterState;

  constructor(state: ClusterState) {
    this.#state = state;
    for (const p of state.pods()) this.#see(p);
    state.on("Pod", (c) => {
      if (c.type !== "delete") this.#see(c.object);
    });
  }

  #see(p: Pod): void {
    const uid = p.metadata.uid ?? `${p.metadata.namespace ?? ""}/${p.metadata.name ?? ""}`;
    if (this.#byUid.has(uid)) return;
    const s = startOf(p, this.#state);
    if (!s) return;
    this.#byUid.set(uid, s);
    while (this.#byUid.size > MAX_SAMPLES) {
      const oldest = this.#byUid.keys().next().value;
      if (oldest === undefined) break;
      this.#byUid.delete(oldest);
    }
    // Starts from before the kept window go (seen in order, so the oldest are first).
    for (const [k, v] of this.#byUid) {
      if (v.created >= s.created - KEEP_MS) break;
      this.#byUid.delete(k);
    }
  }

  /** Starts of pods created in [from, to). */
  between(from: number, to: number): PodStartSample[] {
    return [...this.#byUid.values()].filter((s) => s.created >= from && s.created < to);
  }
}

/** The cluster state's pod starts, recorded from first use on. */
export function podStarts(state: ClusterState): PodStarts {
  return state.derived(STARTS, () => new PodStarts(state));
}
