// IngestSink over the history Store (src/core/store): one store transaction per ingest batch, with
// the agent's sequence as the ingest checkpoint, so an ack never runs ahead of the stored rows.
import { lifecyclePhases } from "../store/store.ts";
import type { Disruption, LifecycleEvent as StoredLifecycle, LifecyclePhase, Store } from "../store/store.ts";
import type { LifecycleEvent, OpenNodeClaim } from "../lifecycle/derive.ts";
import { ClusterState } from "../../state/cluster.ts";
import { lateAnswersOf, repairsOf } from "./repairs.ts";
import type { ClusterInfo, IngestBatch, IngestSink } from "./sink.ts";

const STORED_PHASES: ReadonlySet<string> = new Set(lifecyclePhases);

/**
 * The store keeps the five phases of the lifecycle (Launched … Terminated) and the disruptions;
 * the other derived steps (Created, Terminating, Drifted, …) are not part of its schema.
 */
export function toStoreRows(
  clusterId: string,
  steps: readonly LifecycleEvent[],
  fallbackAt: number,
): { lifecycle: StoredLifecycle[]; disruptions: Disruption[] } {
  const lifecycle: StoredLifecycle[] = [];
  const disruptions: Disruption[] = [];
  for (const e of steps) {
    if (!STORED_PHASES.has(e.type) || !e.uid) continue;
    const parsed = Date.parse(e.at);
    const at = Number.isFinite(parsed) ? parsed : fallbackAt;
    const nodePool = e.nodePool ?? "";
    lifecycle.push({
      clusterId,
      nodeClaim: e.nodeClaim,
      nodeClaimUid: e.uid,
      nodePool,
      nodeName: e.nodeName,
      instanceType: e.instanceType,
      capacityType: e.capacityType,
      zone: e.zone,
      phase: e.type as LifecyclePhase,
      reason: e.reason,
      at,
    });
    if (e.type === "Disrupted" && e.reason) {
      disruptions.push({
        clusterId,
        nodeClaim: e.nodeClaim,
        nodePool,
        reason: e.reason,
        at,
        source: e.source,
      });
    }
  }
  return { lifecycle, disruptions };
}

/** Lifecycle rows read per store query while looking for open NodeClaims. */
const PAGE = 5000;

/**
 * Folds lifecycle rows (any order, repeats allowed) into what they say of each NodeClaim; claims
 * with a Terminated row end up `terminated`.
 */
export function foldOpenNodeClaims(
  acc: Map<string, OpenNodeClaim & { terminated: boolean }>,
  rows: Iterable<StoredLifecycle>,
): void {
  for (const r of rows) {
    let c = acc.get(r.nodeClaimUid);
    if (!c) {
      c = { uid: r.nodeClaimUid, name: r.nodeClaim, terminated: false };
      acc.set(r.nodeClaimUid, c);
    }
    if (r.phase === "Terminated") c.terminated = true;
    if (r.phase === "Disrupted" && r.reason) c.disruptionReason = r.reason;
    if (r.nodePool) c.nodePool = r.nodePool;
    for (const k of ["nodeName", "capacityType", "instanceType", "zone"] as const) {
      const v = r[k];
      if (v) c[k] = v;
    }
  }
}

export class StoreSink implements IngestSink {
  readonly #store: Store;
  /** The clusters' states when this sink serves ingest alone (the hub keeps its own). */
  readonly #states = new Map<string, ClusterState>();

  constructor(store: Store) {
    this.#store = store;
  }

  state(clusterId: string): ClusterState {
    let s = this.#states.get(clusterId);
    if (!s) this.#states.set(clusterId, (s = new ClusterState()));
    return s;
  }

  async clusterConnected(info: ClusterInfo): Promise<void> {
    await this.#store.upsertCluster({
      id: info.clusterId,
      name: info.clusterId,
      versions: {
        agent: info.agentVersion,
        kubernetes: info.kubernetesVersion,
        karpenter: info.karpenterVersion,
      },
      at: info.connectedAt,
    });
  }

  async openNodeClaims(clusterId: string): Promise<OpenNodeClaim[]> {
    // Every stored row (retention bounds them), oldest first, page by page.
    const claims = new Map<string, OpenNodeClaim & { terminated: boolean }>();
    let from = 0;
    for (;;) {
      const rows = await this.#store.lifecycle({ clusterId, from, to: Number.MAX_SAFE_INTEGER, limit: PAGE });
      foldOpenNodeClaims(claims, rows);
      const last = rows.at(-1);
      if (rows.length < PAGE || !last) break;
      // Rows of the boundary's instant are read again (folding is idempotent); a page of one
      // instant only must move on.
      from = last.at === from ? from + 1 : last.at;
    }
    return [...claims.values()].filter((c) => !c.terminated).map(({ terminated: _, ...c }) => c);
  }

  async write(b: IngestBatch): Promise<void> {
    const rows = toStoreRows(b.clusterId, b.lifecycle, b.receivedAt);
    const events = [...(b.snapshot ?? []), ...b.changes.filter((c) => c.op === "upsert")];
    const repairs = repairsOf(b.clusterId, events, b.receivedAt);
    const lateAnswers = lateAnswersOf(b.clusterId, events, b.receivedAt);
    await this.#store.write({
      ...rows,
      ...(repairs.length > 0 ? { repairs } : {}),
      ...(lateAnswers.length > 0 ? { lateAnswers } : {}),
      checkpoint: { clusterId: b.clusterId, epoch: b.sessionId, sequence: b.sequence, at: b.receivedAt },
    });
  }
}
