// Test helper: hands the hub a batch as ingest does (objects into the cluster's state, then the
// durable write), for tests that seed a hub without an agent stream.
import { applyChange, applySnapshot } from "../ingest/apply.ts";
import type { IngestBatch } from "../ingest/sink.ts";
import type { ClusterHub } from "./hub.ts";

export async function deliver(hub: ClusterHub, batch: IngestBatch): Promise<void> {
  const state = hub.state(batch.clusterId);
  state.batch(() => {
    if (batch.snapshot) applySnapshot(state, batch.snapshot);
    for (const c of batch.changes) applyChange(state, c);
  });
  await hub.write(batch);
}
