// Child process for sqlite-crash.test.ts: writes ingest batches to a SQLite store and is killed
// with SIGKILL by the test (no close, no shutdown). Prints "acked <seq>" after each commit.
//   node sqlite-crash.child.ts <db path> loop          — commit batches until killed
//   node sqlite-crash.child.ts <db path> torn <n>      — commit n batches, then stop in the middle
//                                                         of a large one and print "mid-batch"
import { defaultRetention } from "../history/downsample.ts";
import type { SeriesPoint } from "../history/series.ts";
import type { SqlDriver, SqlExecutor } from "./driver.ts";
import { migrate, sqliteMigrations } from "./migrations.ts";
import { SqliteDriver } from "./sqlite.ts";
import { SqlStore } from "./sql-store.ts";
import type { WriteBatch } from "./store.ts";

export const EVENTS_PER_BATCH = 5;
export const POINTS_PER_BATCH = 20;
export const TORN_BATCH_POINTS = 30_000;
const T0 = Date.UTC(2026, 0, 1);

export function batch(seq: number, points = POINTS_PER_BATCH): WriteBatch {
  const series: SeriesPoint[] = [];
  for (let i = 0; i < points; i++) {
    series.push({
      kind: "point",
      clusterId: "c1",
      nodePool: `pool-${i % 50}`,
      capacityType: "spot",
      ts: T0 + seq * 3_600_000 + Math.floor(i / 50) * 60_000,
      resolutionMs: 60_000,
      nodes: i,
      vcpu: i * 2,
      memoryBytes: i * 1e9,
      costPerHour: i * 0.01,
      nodesMax: i,
      samples: 1,
    });
  }
  return {
    lifecycle: Array.from({ length: EVENTS_PER_BATCH }, (_, j) => ({
      clusterId: "c1",
      nodeClaim: `nc-${seq}-${j}`,
      nodeClaimUid: `uid-${seq}-${j}`,
      nodePool: "general",
      phase: "Launched" as const,
      at: T0 + seq * 1000 + j,
    })),
    series,
    checkpoint: { clusterId: "c1", epoch: "e1", sequence: seq, at: T0 + seq },
  };
}

/** Passes everything through, but parks forever inside a transaction after `pauseAfter` statements. */
class PausingDriver implements SqlDriver {
  readonly dialect = "sqlite";
  pauseAfter = Infinity;
  readonly #inner: SqlDriver;

  constructor(inner: SqlDriver) {
    this.#inner = inner;
  }

  run: SqlDriver["run"] = (sql, params) => this.#inner.run(sql, params);
  all: SqlDriver["all"] = (sql, params) => this.#inner.all(sql, params);
  exec: SqlDriver["exec"] = (sql) => this.#inner.exec(sql);
  close: SqlDriver["close"] = () => this.#inner.close();
  snapshot: SqlDriver["snapshot"] = (fn) => this.#inner.snapshot(fn);

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.#inner.transaction((tx) => {
      let count = 0;
      return fn({
        all: (sql, params) => tx.all(sql, params),
        exec: (sql) => tx.exec(sql),
        run: async (sql, params) => {
          const n = await tx.run(sql, params);
          if (++count === this.pauseAfter) {
            process.stdout.write("mid-batch\n");
            setInterval(() => undefined, 60_000); // stay alive, transaction open, until killed
            await new Promise<never>(() => undefined);
          }
          return n;
        },
      });
    });
  }
}

async function main(): Promise<void> {
  const [path, mode, n] = process.argv.slice(2);
  if (!path || (mode !== "loop" && mode !== "torn")) throw new Error("usage: <db path> loop|torn <n>");
  const driver = new PausingDriver(new SqliteDriver({ path }));
  await migrate(driver, sqliteMigrations, T0);
  const store = new SqlStore(driver, defaultRetention);
  const committed = mode === "torn" ? Number(n) : Infinity;
  let seq = 1;
  for (; seq <= committed; seq++) {
    await store.write(batch(seq));
    process.stdout.write(`acked ${seq}\n`);
    // Let stdout and the parent's kill in: the loop is otherwise fully synchronous under the hood.
    await new Promise((r) => setImmediate(r));
  }
  driver.pauseAfter = TORN_BATCH_POINTS - 1;
  await store.write(batch(seq, TORN_BATCH_POINTS));
}

if (import.meta.main) await main();
