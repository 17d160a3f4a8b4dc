// The thin loop around SeriesRecorders, one per cluster core samples: at every step boundary of
// the injected clock it takes a snapshot of each cluster (undefined while the cluster's state is
// not live, e.g. its agent is disconnected), records it and hands the rows to `write`. Rows whose write failed are kept and
// sent again with the next ones (the store ignores duplicates), so a store outage loses nothing
// until `maxPendingRows` is exceeded.
import type { Clock } from "../../shared/clock.ts";
import type { Logger } from "../../shared/log.ts";
import { sleepToNextStep } from "./downsample.ts";
import { SeriesRecorder } from "./recorder.ts";
import type { PoolSample, SeriesRow } from "./series.ts";

export interface ClusterSamplerOptions {
  /** The raw step (the store's finest tier). */
  stepMs: number;
  clock: Clock;
  log: Logger;
  signal: AbortSignal;
  /** The clusters this core samples now (the ones it owns), connected or not. */
  clusters: () => Iterable<string>;
  /** A cluster's snapshot, or undefined while its state is not live (agent away: a gap). */
  snapshot: (clusterId: string) => readonly PoolSample[] | undefined;
  /** Where a cluster's series stand in the store (its recorder resumes from there). */
  latest: (
    clusterId: string,
  ) => Promise<{ ts: number; series: { nodePool: string; capacityType: string }[] } | undefined>;
  write: (rows: SeriesRow[]) => Promise<void>;
  /** Oldest rows are dropped (and logged) beyond this many unwritten rows. Default 100 000. */
  maxPendingRows?: number;
}

/**
 * One recorder per cluster, made when the cluster
 * first shows up (resumed from its last stored bucket, so a takeover or a restart continues the
 * series or marks the gap) and dropped when it leaves `clusters()` (another core replica owns it
 * now: a later return resumes from the store again, which has what that replica wrote).
 */
export async function runClusterSampler(opts: ClusterSamplerOptions): Promise<void> {
  const { clock, log, signal, stepMs } = opts;
  const maxPending = opts.maxPendingRows ?? 100_000;
  const recorders = new Map<string, SeriesRecorder>();
  let pending: SeriesRow[] = [];
  const recorderOf = async (id: string): Promise<SeriesRecorder> => {
    let r = recorders.get(id);
    if (r) return r;
    r = new SeriesRecorder({ clusterId: id, stepMs, clock });
    const latest = await opts.latest(id);
    if (latest) r.resume(latest.ts, latest.series);
    recorders.set(id, r);
    return r;
  };
  while (!signal.aborted) {
    if (!(await sleepToNextStep(clock, stepMs, signal))) break;
    const ids = new Set(opts.clusters());
    for (const id of recorders.keys()) if (!ids.has(id)) recorders.delete(id);
    for (const id of ids) {
      try {
        // The snapshot first: a recorder made after it would resume at the bucket it must record.
        const samples = opts.snapshot(id);
        const recorder = await recorderOf(id);
        if (samples) pending.push(...recorder.record(samples));
      } catch (err) {
        log.warn("history snapshot rejected", { cluster: id, err });
      }
    }
    if (pending.length > maxPending) {
      log.error("history rows dropped: store unavailable for too long", {
        dropped: pending.length - maxPending,
      });
      pending = pending.slice(pending.length - maxPending);
    }
    if (pending.length === 0) continue;
    try {
      await opts.write(pending);
      pending = [];
    } catch (err) {
      log.warn("history write failed; will retry", { rows: pending.length, err });
    }
  }
}
