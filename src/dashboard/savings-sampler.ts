// The loop that records realized savings: at every step boundary each cluster's savings rates
// (the rates the bucket that just ended ran at) become one bucket of rows (bucket-sampler.ts).
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { savingsRows, type SavingsRates } from "./figures/savings.ts";
import type { SavingsRow } from "../core/store/store.ts";
import { runBucketSampler } from "./bucket-sampler.ts";

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

export function runSavingsSampler(o: SavingsSamplerOptions): Promise<void> {
  const { rates, ...rest } = o;
  return runBucketSampler<SavingsRow>({
    ...rest,
    what: "savings",
    rows: (clusterId, ts) => {
      const r = rates(clusterId);
      return r ? savingsRows(r, { clusterId, ts, stepMs: o.stepMs }) : undefined;
    },
  });
}
