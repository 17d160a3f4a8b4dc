// Test helper: hands the hub a batch as ingest does (objects into the cluster's state, then the
// durable write), for tests that seed a hub without an agent stream.
import { applyChange, applySnapshot } from "../ingest/apply.ts";
import type { IngestBatch } from "../ingest/sink.ts";
import type { ClusterHub } from "./hub.ts";
import type { ClusterInfo } from "../ingest/sink.ts";

export async function deliver(hub: ClusterHub, batch: IngestBatch): Promise<void> {
  const state = hub.state(batch.clusterId);
  state.batch(() => {
    if (batch.snapshot) applySnapshot(state, batch.snapshot);
    for (const c of batch.changes) applyChange(state, c);
  });
  await hub.write(batch);
}

/**
 * Cluster c1 (or `o.clusterId`) connected at `connectedAt` as an agent's hello reports it:
 * Kubernetes v1.34.1, Karpenter v1.8.2, session s1 unless `o` says otherwise.
 */
export function connectTestCluster(
  hub: ClusterHub,
  connectedAt: number,
  o: Partial<Omit<ClusterInfo, "connectedAt">> = {},
): Promise<void> {
  return hub.clusterConnected({
    clusterId: "c1",
    kubernetesVersion: "v1.34.1",
    karpenterVersion: "v1.8.2",
    agentVersion: "0.1.0",
    sessionId: "s1",
    ...o,
    connectedAt,
  });
}

/**
 * A session's first batch: `snapshot` as the cluster's whole state, received at `receivedAt`
 * (cluster c1, session s1 unless `o` says otherwise).
 */
export function deliverSnapshot(
  hub: ClusterHub,
  receivedAt: number,
  snapshot: NonNullable<IngestBatch["snapshot"]>,
  o: { clusterId?: string; sessionId?: string } = {},
): Promise<void> {
  return deliver(hub, {
    clusterId: o.clusterId ?? "c1",
    sessionId: o.sessionId ?? "s1",
    sequence: 1,
    receivedAt,
    snapshot,
    changes: [],
    lifecycle: [],
  });
}
