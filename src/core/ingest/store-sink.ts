// IngestSink over the history Store (src/core/store): one store transaction per ingest batch, with
// the agent's sequence as the ingest checkpoint, so an ack never runs ahead of the stored rows.
import { lifecyclePhases } from "../store/store.ts";
import type { Disruption, LifecycleEvent as StoredLifecycle, LifecyclePhase, Store } from "../store/store.ts";
import type { LifecycleEvent } from "../lifecycle/derive.ts";
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

export class StoreSink implements IngestSink {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
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

  async write(b: IngestBatch): Promise<void> {
    const rows = toStoreRows(b.clusterId, b.lifecycle, b.receivedAt);
    await this.#store.write({
      ...rows,
      checkpoint: { clusterId: b.clusterId, epoch: b.sessionId, sequence: b.sequence, at: b.receivedAt },
    });
  }
}
