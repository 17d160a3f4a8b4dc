// The loop behind the per-step history tables (realized savings, workload pod counts): at every
// step boundary of the injected clock it asks each cluster for the rows of the bucket that just
// ended (undefined while the cluster is not live: nothing is recorded for a period core could
// not see) and writes them. Rows whose write failed are sent again with the next ones (the store
// ignores duplicates), so a store outage loses nothing until `maxPendingRows` is exceeded.
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { alignDown, sleepToNextStep } from "../core/history/downsample.ts";

export interface BucketSamplerOptions<R> {
  /** What the rows are, for log lines ("savings", "workload pods"). */
  what: string;
  /** The clusters to record (every cluster this core replica owns). */
  clusters: () => readonly string[];
  stepMs: number;
  clock: Clock;
  /** The rows of bucket [ts, ts + stepMs) of one cluster, or undefined while it is not live. */
  rows: (clusterId: string, ts: number) => R[] | undefined;
  write: (rows: R[]) => Promise<void>;
  /** Called with each bucket's rows once written. */
  onWritten?: (rows: readonly R[]) => void;
  log: Logger;
  signal: AbortSignal;
  /** Oldest rows are dropped (and logged) beyond this many unwritten rows. Default 100 000. */
  maxPendingRows?: number;
}

export async function runBucketSampler<R>(o: BucketSamplerOptions<R>): Promise<void> {
  const { clock, log, signal, stepMs } = o;
  const maxPending = o.maxPendingRows ?? 100_000;
  let pending: R[] = [];
  let lastTs: number | undefined;
  while (!signal.aborted) {
    if (!(await sleepToNextStep(clock, stepMs, signal))) break;
    // The bucket that just ended.
    const ts = alignDown(clock.now(), stepMs) - stepMs;
    if (lastTs !== undefined && ts <= lastTs) continue;
    for (const clusterId of o.clusters()) {
      try {
        const rows = o.rows(clusterId, ts);
        if (rows) pending.push(...rows);
      } catch (err) {
        log.warn(`${o.what} snapshot failed`, { cluster: clusterId, err });
      }
    }
    lastTs = ts;
    if (pending.length > maxPending) {
      log.error(`${o.what} rows dropped: store unavailable for too long`, {
        dropped: pending.length - maxPending,
      });
      pending = pending.slice(pending.length - maxPending);
    }
    if (pending.length === 0) continue;
    try {
      await o.write(pending);
      o.onWritten?.(pending);
      pending = [];
    } catch (err) {
      log.warn(`${o.what} write failed; will retry`, { rows: pending.length, err });
    }
  }
}
