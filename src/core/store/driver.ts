// The small SQL surface both backends provide. SQL text is written once, with PostgreSQL's
// numbered placeholders ($1, $2 …); the SQLite driver rewrites them to ?1, ?2 ….

export type SqlParam = string | number | null;
export type SqlRow = Record<string, unknown>;

export interface SqlExecutor {
  /** Runs one statement; returns the number of rows it changed. */
  run(sql: string, params?: readonly SqlParam[]): Promise<number>;
  /** Runs one query; returns its rows. */
  all(sql: string, params?: readonly SqlParam[]): Promise<SqlRow[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface SqlDriver extends SqlExecutor {
  readonly dialect: "sqlite" | "postgres";
  /** Runs `fn` in one transaction: committed if it resolves, rolled back if it throws. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** Runs read-only `fn` against one consistent snapshot of the database. */
  snapshot<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** Numbers from either backend (pg returns BIGINT as a string). */
export function num(v: unknown): number {
  if (typeof v === "number") return v;
  if (typeof v === "string" || typeof v === "bigint") return Number(v);
  throw new Error(`expected a number from the database, got ${typeof v}`);
}

export function optText(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

export function text(v: unknown): string {
  if (typeof v !== "string") throw new Error(`expected text from the database, got ${typeof v}`);
  return v;
}
