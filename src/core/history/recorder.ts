// Turns per-NodePool snapshots of one cluster into series rows at a fixed step.
//
// - One point per series per bucket (bucket = alignDown(now, step)); later snapshots in a bucket
//   that already has one are ignored, so a fast caller cannot skew the averages.
// - A series that was in the previous snapshot and is missing from this one gets an explicit
//   zero point once (the snapshot is the complete state: the pool has no such nodes any more).
// - No snapshot for more than `gapAfterSteps` steps (agent or core down) produces one gap row for
//   the missing period. Nothing is interpolated: a single late bucket simply has no point.
// - After resume() (core restarted) every missed bucket is a gap: the process was down then, so
//   the tolerance for a late sampler does not apply, and the chart must not bridge the outage.
import type { Clock } from "../../shared/clock.ts";
import { alignDown } from "./downsample.ts";
import { seriesKey, validateSample } from "./series.ts";
import type { PoolSample, SeriesGap, SeriesPoint, SeriesRow } from "./series.ts";

export interface RecorderOptions {
  clusterId: string;
  /** The raw step (the finest retention tier's step). */
  stepMs: number;
  clock: Clock;
  /** A gap is marked when more than this many steps pass without a snapshot (default 2). */
  gapAfterSteps?: number;
}

interface Last {
  ts: number;
  series: Map<string, { nodePool: string; capacityType: string }>;
}

export class SeriesRecorder {
  readonly clusterId: string;
  readonly stepMs: number;
  readonly #clock: Clock;
  readonly #gapAfterMs: number;
  #last: Last | undefined;
  /** Set by resume() until the next record: any missed bucket since then is downtime. */
  #resumed = false;

  constructor(opts: RecorderOptions) {
    if (!Number.isSafeInteger(opts.stepMs) || opts.stepMs <= 0) {
      throw new Error(`recorder: stepMs must be a positive integer, got ${opts.stepMs}`);
    }
    const after = opts.gapAfterSteps ?? 2;
    if (!Number.isInteger(after) || after < 1) throw new Error(`recorder: gapAfterSteps must be >= 1`);
    this.clusterId = opts.clusterId;
    this.stepMs = opts.stepMs;
    this.#clock = opts.clock;
    this.#gapAfterMs = after * opts.stepMs;
  }

  /**
   * Seeds the recorder with the last stored bucket (after a core restart), so the downtime is
   * marked as a gap and vanished series still get their zero point.
   */
  resume(lastTs: number, series: readonly { nodePool: string; capacityType: string }[]): void {
    if (this.#last && this.#last.ts >= lastTs) return;
    this.#resumed = true;
    this.#last = {
      ts: alignDown(lastTs, this.stepMs),
      series: new Map(
        series.map((s) => [seriesKey(s), { nodePool: s.nodePool, capacityType: s.capacityType }]),
      ),
    };
  }

  /** The bucket of the last recorded snapshot, if any. */
  get lastTs(): number | undefined {
    return this.#last?.ts;
  }

  /** Records a complete snapshot of the cluster's pools taken now. Throws on bad samples. */
  record(samples: readonly PoolSample[]): SeriesRow[] {
    const seen = new Map<string, PoolSample>();
    for (const s of samples) {
      validateSample(s);
      const key = seriesKey(s);
      if (seen.has(key)) throw new Error(`snapshot lists ${s.nodePool}/${s.capacityType} twice`);
      seen.set(key, s);
    }
    const ts = alignDown(this.#clock.now(), this.stepMs);
    const last = this.#last;
    if (last && ts <= last.ts) return [];

    const rows: SeriesRow[] = [];
    if (last && ts - last.ts > this.#gapAfter()) rows.push(this.#gap(last.ts + this.stepMs, ts));
    this.#resumed = false;
    const point = (s: PoolSample): SeriesPoint => ({
      kind: "point",
      clusterId: this.clusterId,
      nodePool: s.nodePool,
      capacityType: s.capacityType,
      ts,
      resolutionMs: this.stepMs,
      nodes: s.nodes,
      vcpu: s.vcpu,
      memoryBytes: s.memoryBytes,
      costPerHour: s.costPerHour,
      nodesMax: s.nodes,
      samples: 1,
    });
    for (const s of seen.values()) rows.push(point(s));
    for (const [key, s] of last?.series ?? []) {
      if (!seen.has(key)) {
        rows.push(point({ ...s, nodes: 0, vcpu: 0, memoryBytes: 0, costPerHour: 0 }));
      }
    }
    this.#last = { ts, series: new Map([...seen].map(([k, s]) => [k, s])) };
    return rows;
  }

  /** The gap currently open (no snapshot for too long), for live views; undefined otherwise. */
  openGap(): SeriesGap | undefined {
    const last = this.#last;
    if (!last) return undefined;
    const ts = alignDown(this.#clock.now(), this.stepMs);
    return ts - last.ts > this.#gapAfter() ? this.#gap(last.ts + this.stepMs, ts) : undefined;
  }

  /** How long without a snapshot is a gap: one step right after a restart, else gapAfterSteps. */
  #gapAfter(): number {
    return this.#resumed ? this.stepMs : this.#gapAfterMs;
  }

  #gap(from: number, until: number): SeriesGap {
    return { kind: "gap", clusterId: this.clusterId, ts: from, until, resolutionMs: this.stepMs };
  }
}
