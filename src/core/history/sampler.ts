// The thin loop around a SeriesRecorder: at every step boundary of the injected clock it takes a
// snapshot of the cluster (undefined while the cluster's state is not live, e.g. the agent is
// disconnected), records it and hands the rows to `write`. Rows whose write failed are kept and
// sent again with the next ones (the store ignores duplicates), so a store outage loses nothing
// until `maxPendingRows` is exceeded.
import type { Clock } from "../../shared/clock.ts";
import type { Logger } from "../../shared/log.ts";
import { alignDown } from "./downsample.ts";
import type { SeriesRecorder } from "./recorder.ts";
import type { PoolSample, SeriesRow } from "./series.ts";

export interface SamplerOptions {
  recorder: SeriesRecorder;
  clock: Clock;
  snapshot: () => readonly PoolSample[] | undefined;
  write: (rows: SeriesRow[]) => Promise<void>;
  log: Logger;
  signal: AbortSignal;
  /** Oldest rows are dropped (and logged) beyond this many unwritten rows. Default 100 000. */
  maxPendingRows?: number;
}

export async function runSampler(opts: SamplerOptions): Promise<void> {
  const { recorder, clock, log, signal } = opts;
  const maxPending = opts.maxPendingRows ?? 100_000;
  let pending: SeriesRow[] = [];
  while (!signal.aborted) {
    const now = clock.now();
    try {
      await clock.sleep(alignDown(now, recorder.stepMs) + recorder.stepMs - now, signal);
    } catch {
      break; // aborted
    }
    try {
      const samples = opts.snapshot();
      if (samples) pending.push(...recorder.record(samples));
    } catch (err) {
      log.warn("history snapshot rejected", { cluster: recorder.clusterId, err });
    }
    if (pending.length > maxPending) {
      log.error("history rows dropped: store unavailable for too long", {
        cluster: recorder.clusterId,
        dropped: pending.length - maxPending,
      });
      pending = pending.slice(pending.length - maxPending);
    }
    if (pending.length === 0) continue;
    try {
      await opts.write(pending);
      pending = [];
    } catch (err) {
      log.warn("history write failed; will retry", {
        cluster: recorder.clusterId,
        rows: pending.length,
        err,
      });
    }
  }
}
