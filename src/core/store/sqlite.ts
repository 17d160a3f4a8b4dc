// SQLite backend: node:sqlite's DatabaseSync (built into Node 24, no native addon to build).
// WAL journal (readers never block the writer), synchronous=NORMAL by default (a process crash
// loses nothing committed; a power cut can lose the last transactions, never corrupt the file —
// choose FULL to make every commit durable on power loss too), busy_timeout for the rare
// concurrent opener, prepared statements cached per SQL text.
//
// DatabaseSync is synchronous and one connection; the Store's API is async. Every operation goes
// through one queue, so an open transaction can never interleave with another caller's statements.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { SQLInputValue, StatementSync } from "node:sqlite";
import type { RetentionPolicy } from "../history/downsample.ts";
import type { SqlDriver, SqlExecutor, SqlParam, SqlRow } from "./driver.ts";
import { sqliteMigrations } from "./migrations.ts";
import { openSqlStore, type OpenedStore } from "./sql-store.ts";

export interface SqliteOptions {
  /** A file path, or ":memory:" (tests). */
  path: string;
  retention?: RetentionPolicy;
  /** How long to wait for a lock held by another connection. Default 5000 ms. */
  busyTimeoutMs?: number;
  synchronous?: "NORMAL" | "FULL";
  /** Time for schema_migrations.applied_at. */
  now?: () => number;
}

export type { OpenedStore };

export async function openSqliteStore(opts: SqliteOptions): Promise<OpenedStore> {
  const driver = new SqliteDriver(opts);
  return openSqlStore(driver, sqliteMigrations, opts);
}

export class SqliteDriver implements SqlDriver {
  readonly dialect = "sqlite";
  readonly #db: DatabaseSync;
  readonly #stmts = new Map<string, StatementSync>();
  #tail: Promise<unknown> = Promise.resolve();
  readonly #direct: SqlExecutor;

  constructor(opts: Pick<SqliteOptions, "path" | "busyTimeoutMs" | "synchronous">) {
    const onDisk = opts.path !== ":memory:" && !opts.path.startsWith("file:");
    if (onDisk) {
      mkdirSync(dirname(opts.path), { recursive: true, mode: 0o700 });
      // The history holds the cluster's inventory: owner-only, created so (no umask window).
      if (!existsSync(opts.path)) closeSync(openSync(opts.path, "a", 0o600));
    }
    this.#db = new DatabaseSync(opts.path, { timeout: opts.busyTimeoutMs ?? 5000 });
    try {
      this.#db.exec("PRAGMA journal_mode = WAL");
      // SQLite gives the -wal and -shm files the main file's mode; older files are tightened too.
      if (onDisk)
        for (const f of [opts.path, `${opts.path}-wal`, `${opts.path}-shm`])
          if (existsSync(f)) chmodSync(f, 0o600);
      this.#db.exec(`PRAGMA synchronous = ${opts.synchronous === "FULL" ? "FULL" : "NORMAL"}`);
      this.#db.exec("PRAGMA foreign_keys = ON");
    } catch (err) {
      this.#db.close();
      throw err;
    }
    this.#direct = {
      run: (sql, params) => Promise.resolve(Number(this.#stmt(sql).run(...bind(params)).changes)),
      all: (sql, params) => Promise.resolve(this.#stmt(sql).all(...bind(params)) as SqlRow[]),
      exec: (sql) => {
        this.#db.exec(sql);
        return Promise.resolve();
      },
    };
  }

  run(sql: string, params?: readonly SqlParam[]): Promise<number> {
    return this.#serial(() => this.#direct.run(sql, params));
  }

  all(sql: string, params?: readonly SqlParam[]): Promise<SqlRow[]> {
    return this.#serial(() => this.#direct.all(sql, params));
  }

  exec(sql: string): Promise<void> {
    return this.#serial(() => this.#direct.exec(sql));
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    // IMMEDIATE takes the write lock up front: no deadlock upgrading a read lock later.
    return this.#inTransaction("BEGIN IMMEDIATE", fn);
  }

  snapshot<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    // A deferred transaction that only reads sees one WAL snapshot and blocks no other process.
    return this.#inTransaction("BEGIN", fn);
  }

  #inTransaction<T>(begin: string, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.#serial(async () => {
      this.#db.exec(begin);
      try {
        const result = await fn(this.#direct);
        this.#db.exec("COMMIT");
        return result;
      } catch (err) {
        if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
        throw err;
      }
    });
  }

  async close(): Promise<void> {
    await this.#tail;
    if (this.#db.isOpen) this.#db.close();
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(fn);
    this.#tail = run.catch(() => undefined);
    return run;
  }

  #stmt(sql: string): StatementSync {
    let s = this.#stmts.get(sql);
    if (!s) {
      s = this.#db.prepare(sql.replace(/\$(\d+)/g, "?$1"));
      this.#stmts.set(sql, s);
    }
    return s;
  }
}

/** Integers bind as INTEGER (node:sqlite binds every JS number as REAL otherwise). */
function bind(params: readonly SqlParam[] = []): SQLInputValue[] {
  return params.map((p) => (typeof p === "number" && Number.isSafeInteger(p) ? BigInt(p) : p));
}
