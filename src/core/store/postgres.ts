// PostgreSQL backend through `pg`: a connection pool, named prepared statements (one name per SQL
// text, prepared once per connection), transactions on a dedicated pooled client. Optionally
// keeps Wave's tables in their own schema (created if missing).
import pg from "pg";
import type { PoolClient, QueryResult } from "pg";
import type { RetentionPolicy } from "../history/downsample.ts";
import type { Logger } from "../../shared/log.ts";
import type { SqlDriver, SqlExecutor, SqlParam, SqlRow } from "./driver.ts";
import { postgresMigrations } from "./migrations.ts";
import { openSqlStore, type OpenedStore } from "./sql-store.ts";

export interface PostgresOptions {
  /** postgres://user:password@host:port/database */
  url: string;
  /** Schema for Wave's tables (default: the connection's default, usually public). */
  schema?: string;
  retention?: RetentionPolicy;
  /** Pool size, default 5. */
  maxConnections?: number;
  log?: Logger;
  now?: () => number;
}

export type { OpenedStore };

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export async function openPostgresStore(opts: PostgresOptions): Promise<OpenedStore> {
  if (opts.schema !== undefined && !SCHEMA_NAME.test(opts.schema)) {
    throw new Error(`postgres: schema must match ${SCHEMA_NAME.source}, got ${JSON.stringify(opts.schema)}`);
  }
  const driver = new PostgresDriver(opts);
  const setup = opts.schema ? `CREATE SCHEMA IF NOT EXISTS ${opts.schema}` : undefined;
  return openSqlStore(driver, postgresMigrations, opts, setup);
}

export class PostgresDriver implements SqlDriver {
  readonly dialect = "postgres";
  readonly #pool: pg.Pool;
  readonly #names = new Map<string, string>();
  #closing: Promise<void> | undefined;

  constructor(opts: Pick<PostgresOptions, "url" | "schema" | "maxConnections" | "log">) {
    this.#pool = new pg.Pool({
      connectionString: opts.url,
      max: opts.maxConnections ?? 5,
      // Schema names are validated above; search_path is set at connection start-up.
      ...(opts.schema ? { options: `-c search_path=${opts.schema}` } : {}),
    });
    // An idle client losing its connection must not crash core; the pool replaces it.
    this.#pool.on("error", (err) => opts.log?.warn("postgres idle connection error", { err }));
  }

  run(sql: string, params?: readonly SqlParam[]): Promise<number> {
    return runOn(this.#pool, this.#query(sql, params));
  }

  all(sql: string, params?: readonly SqlParam[]): Promise<SqlRow[]> {
    return allOn(this.#pool, this.#query(sql, params));
  }

  async exec(sql: string): Promise<void> {
    await this.#pool.query(sql);
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.#inTransaction("BEGIN", fn);
  }

  snapshot<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.#inTransaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", fn);
  }

  async #inTransaction<T>(begin: string, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    const tx: SqlExecutor = {
      run: (sql, params) => runOn(client, this.#query(sql, params)),
      all: (sql, params) => allOn(client, this.#query(sql, params)),
      exec: async (sql) => {
        await client.query(sql);
      },
    };
    let broken: Error | undefined;
    try {
      await client.query(begin);
      const result = await fn(tx);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      try {
        await client.query("ROLLBACK");
      } catch (rollbackErr) {
        broken = rollbackErr as Error; // the connection is gone: do not hand it back to the pool
      }
      throw err;
    } finally {
      client.release(broken);
    }
  }

  /** Idempotent: a second close is a no-op. */
  async close(): Promise<void> {
    if (this.#closing) return this.#closing;
    this.#closing = this.#pool.end();
    return this.#closing;
  }

  #query(sql: string, params: readonly SqlParam[] = []): pg.QueryConfig {
    let name = this.#names.get(sql);
    if (!name) {
      name = `wave_${this.#names.size + 1}`;
      this.#names.set(sql, name);
    }
    return { name, text: sql, values: [...params] };
  }
}

type Queryable = pg.Pool | PoolClient;

async function runOn(q: Queryable, config: pg.QueryConfig): Promise<number> {
  const res: QueryResult = await q.query(config);
  return res.rowCount ?? 0;
}

async function allOn(q: Queryable, config: pg.QueryConfig): Promise<SqlRow[]> {
  const res: QueryResult<SqlRow> = await q.query<SqlRow>(config);
  return res.rows;
}
