// The loop that records realized savings: at every step boundary of the injected clock it takes
// each cluster's savings rates (undefined while the cluster is not live: nothing is recorded for
// a period core could not see), turns them into one bucket of rows and writes them. Rows whose
// write failed are sent again with the next ones (the store ignores duplicates).
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { savingsRows, type SavingsRates } from "./figures/savings.ts";
import type { SavingsRow } from "../core/store/store.ts";
import { alignDown } from "../core/history/downsample.ts";

export interface SavingsSamplerOptions {
  /** The clusters to record (every cluster this core replica owns). */
  clusters: () => readonly string[];
  stepMs: number;
  clock: Clock;
  rates: (clusterId: string) => SavingsRates | undefined;
  write: (rows: SavingsRow[]) => Promise<void>;
  /** Called with each bucket's rows once written (Prometheus's realized-savings counters). */
  onWritten?: (rows: readonly SavingsRow[]) => void;
  log: Logger;
  signal: AbortSignal;
  /** Oldest rows are dropped (and logged) beyond this many unwritten rows. Default 100 000. */
  maxPendingRows?: number;
}

export async function runSavingsSampler(o: SavingsSamplerOptions): Promise<void> {
  const { clock, log, signal, stepMs } = o;
  const maxPending = o.maxPendingRows ?? 100_000;
  let pending: SavingsRow[] = [];
  let lastTs: number | undefined;
  while (!signal.aborted) {
    const now = clock.now();
    try {
      await clock.sleep(alignDown(now, stepMs) + stepMs - now, signal);
    } catch {
      break; // aborted
    }
    // The bucket that just ended: its rates are what the step [ts, ts + step) ran at.
    const ts = alignDown(clock.now(), stepMs) - stepMs;
    if (lastTs !== undefined && ts <= lastTs) continue;
    for (const clusterId of o.clusters()) {
      try {
        const rates = o.rates(clusterId);
        if (rates) pending.push(...savingsRows(rates, { clusterId, ts, stepMs }));
      } catch (err) {
        log.warn("savings snapshot failed", { cluster: clusterId, err });
      }
    }
    lastTs = ts;
    if (pending.length > maxPending) {
      log.error("savings rows dropped: store unavailable for too long", {
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
      log.warn("savings write failed; will retry", { rows: pending.length, err });
    }
  }
}
