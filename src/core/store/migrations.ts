// Versioned schema migrations. Each backend has its own numbered list, built from one schema with
// its column types (they differ, the semantics do not). All pending migrations apply in ONE
// transaction together with their ledger rows, so a crash mid-way leaves the previous version
// intact, and re-running is a no-op.
// PostgreSQL takes an advisory lock first, so replicas starting together apply them once.
//
// Expand/contract (docs/upgrade.md): a schema change ships as an EXPAND (additive: new tables,
// nullable or defaulted columns, plain indexes; the previous release keeps working on it) and, in a
// later release, a CONTRACT (drops, renames, type changes: what the previous release may still
// need). The two go to two ledgers: contracts to schema_migrations, whose highest version is what a
// build must know to start (the rule every release so far applies, 23cd1c2 included), expands to
// schema_expansions, which a build that does not know them ignores. So `helm rollback` across a
// release that only expanded the schema finds a database the older core accepts.
import type { SqlDriver } from "./driver.ts";
import { num } from "./driver.ts";

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * "expand" (the default): additive only, checked by assertExpand; an older build runs on the
   * schema it leaves. "contract": may remove or change what an older build uses; a build that does
   * not know it refuses to start. Versions 1–8 predate the policy and are all "contract".
   */
  kind?: "expand" | "contract";
}

export interface MigrateResult {
  applied: number[];
  version: number;
  /** Expand migrations of a newer build found in the database (after a rollback); absent if none. */
  ahead?: number[];
}

/** Any fixed number: the key of PostgreSQL's advisory lock for migrations. */
const PG_MIGRATION_LOCK = 0x77617665; // "wave"

// What an expand must not do, each with why the previous release would break on it.
const NOT_EXPAND: readonly [RegExp, string][] = [
  [/\bDROP\b/i, "DROP removes what the previous release reads"],
  [/\bRENAME\b/i, "RENAME removes the old name the previous release uses"],
  [
    /\bALTER\s+COLUMN\b|\bMODIFY\b/i,
    "changing a column's type or constraints breaks the previous release's writes",
  ],
  [/\bTRUNCATE\b|\bDELETE\s+FROM\b/i, "deleting rows loses data a rollback still needs"],
  [/\bCREATE\s+UNIQUE\s+INDEX\b/i, "a new unique index can refuse the previous release's inserts"],
];

/**
 * Throws if an expand migration's SQL is not purely additive (see NOT_EXPAND; a new column must be
 * nullable or have a DEFAULT, or the previous release's INSERTs fail).
 */
export function assertExpand(m: Migration): void {
  for (const [re, why] of NOT_EXPAND)
    if (re.test(m.sql))
      throw new Error(
        `migration ${m.version} (${m.name}) is an expand but matches ${re.source}: ${why}; make it a contract in a later release`,
      );
  for (const stmt of m.sql.split(";"))
    if (/\bADD\s+(COLUMN\b)?/i.test(stmt) && /\bNOT\s+NULL\b/i.test(stmt) && !/\bDEFAULT\b/i.test(stmt))
      throw new Error(
        `migration ${m.version} (${m.name}) is an expand but adds a NOT NULL column without a DEFAULT: the previous release's INSERTs would fail`,
      );
}

/**
 * Applies pending migrations. `setup` runs first inside the same locked transaction (PostgreSQL:
 * creating the schema — CREATE SCHEMA IF NOT EXISTS is not safe against concurrent callers).
 */
export async function migrate(
  driver: SqlDriver,
  migrations: readonly Migration[],
  now: number,
  setup?: string,
): Promise<MigrateResult> {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1)
      throw new Error(`migration ${m.name}: expected version ${i + 1}, got ${m.version}`);
    if ((m.kind ?? "expand") === "expand") assertExpand(m);
  });
  return driver.transaction(async (tx) => {
    if (driver.dialect === "postgres") await tx.all(`SELECT pg_advisory_xact_lock(${PG_MIGRATION_LOCK})`);
    if (setup) await tx.exec(setup);
    for (const ledger of ["schema_migrations", "schema_expansions"])
      await tx.exec(
        `CREATE TABLE IF NOT EXISTS ${ledger} (
           version INTEGER PRIMARY KEY,
           name TEXT NOT NULL,
           applied_at BIGINT NOT NULL
         )`,
      );
    const contracts = (await tx.all("SELECT version FROM schema_migrations")).map((r) => num(r.version));
    const expands = (await tx.all("SELECT version FROM schema_expansions")).map((r) => num(r.version));
    const newest = Math.max(0, ...contracts);
    if (newest > migrations.length) {
      throw new Error(
        `database schema version ${newest} is newer than this build knows (${migrations.length}): refusing to run an older Wave against it`,
      );
    }
    const done = new Set([...contracts, ...expands]);
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      try {
        await tx.exec(m.sql);
      } catch (err) {
        throw new Error(`migration ${m.version} (${m.name}) failed: ${(err as Error).message}`, {
          cause: err,
        });
      }
      const ledger = m.kind === "contract" ? "schema_migrations" : "schema_expansions";
      await tx.run(`INSERT INTO ${ledger} (version, name, applied_at) VALUES ($1, $2, $3)`, [
        m.version,
        m.name,
        now,
      ]);
      applied.push(m.version);
    }
    const ahead = expands.filter((v) => v > migrations.length).sort((a, b) => a - b);
    return { applied, version: migrations.length, ...(ahead.length > 0 ? { ahead } : {}) };
  });
}

// ---- the schema ----
// series: one row per (cluster, tier step, kind, NodePool, capacity type, bucket start). Gap rows
// use '' for NodePool and capacity type (a gap is cluster-wide) and carry until_ts.

// The two dialects' column types (the semantics do not differ).
interface ColumnTypes {
  /** A row id the database assigns. */
  id: string;
  /** A 64-bit integer: epoch ms, durations, counts. */
  int: string;
  real: string;
  /** SQLite's clause for a table keyed by its primary key alone (PostgreSQL has no rowid). */
  withoutRowid: string;
}
const SQLITE: ColumnTypes = {
  id: "INTEGER PRIMARY KEY",
  int: "INTEGER",
  real: "REAL",
  withoutRowid: " WITHOUT ROWID",
};
const POSTGRES: ColumnTypes = {
  id: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
  int: "BIGINT",
  real: "DOUBLE PRECISION",
  withoutRowid: "",
};

const initialSchema = (t: ColumnTypes): string => `
CREATE TABLE clusters (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  first_seen ${t.int} NOT NULL,
  last_seen ${t.int} NOT NULL,
  versions TEXT NOT NULL
);
CREATE TABLE lifecycle_events (
  id ${t.id},
  cluster_id TEXT NOT NULL,
  node_claim TEXT NOT NULL,
  node_claim_uid TEXT NOT NULL,
  node_pool TEXT NOT NULL,
  node_name TEXT,
  instance_type TEXT,
  capacity_type TEXT,
  zone TEXT,
  phase TEXT NOT NULL CHECK (phase IN ('Launched','Registered','Initialized','Disrupted','Terminated')),
  reason TEXT,
  at ${t.int} NOT NULL,
  UNIQUE (cluster_id, node_claim_uid, phase)
);
CREATE INDEX lifecycle_events_time ON lifecycle_events (cluster_id, at);
CREATE INDEX lifecycle_events_pool_time ON lifecycle_events (cluster_id, node_pool, at);
CREATE INDEX lifecycle_events_retention ON lifecycle_events (at);
CREATE TABLE disruptions (
  id ${t.id},
  cluster_id TEXT NOT NULL,
  node_claim TEXT NOT NULL,
  node_pool TEXT NOT NULL,
  reason TEXT NOT NULL,
  at ${t.int} NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('event','condition')),
  UNIQUE (cluster_id, node_claim, reason)
);
CREATE INDEX disruptions_time ON disruptions (cluster_id, at);
CREATE INDEX disruptions_pool_time ON disruptions (cluster_id, node_pool, at);
CREATE INDEX disruptions_retention ON disruptions (at);
CREATE TABLE series (
  cluster_id TEXT NOT NULL,
  resolution_ms ${t.int} NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('point','gap')),
  node_pool TEXT NOT NULL,
  capacity_type TEXT NOT NULL,
  ts ${t.int} NOT NULL,
  until_ts ${t.int},
  nodes ${t.real},
  nodes_max ${t.real},
  vcpu ${t.real},
  memory_bytes ${t.real},
  cost_per_hour ${t.real},
  samples ${t.int},
  PRIMARY KEY (cluster_id, resolution_ms, kind, node_pool, capacity_type, ts)
)${t.withoutRowid};
CREATE INDEX series_time ON series (cluster_id, resolution_ms, ts);
CREATE INDEX series_rollup ON series (resolution_ms, kind, ts);
CREATE TABLE series_tiers (
  resolution_ms ${t.int} PRIMARY KEY,
  retained_from ${t.int},
  rolled_up_to ${t.int}
);
CREATE TABLE ingest_checkpoints (
  cluster_id TEXT PRIMARY KEY,
  epoch TEXT NOT NULL,
  sequence ${t.int} NOT NULL,
  updated_at ${t.int} NOT NULL
);
CREATE TABLE policies (
  kind TEXT NOT NULL CHECK (kind IN ('spot','warmup')),
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  updated_at ${t.int} NOT NULL,
  PRIMARY KEY (kind, key)
);
`;

// warmup_events: append-only. '' stands for "none" in node/pod/image/reason so the natural key
// (NULLs are distinct in a UNIQUE constraint on both backends) still de-duplicates.
const warmupEvents = (t: ColumnTypes): string => `
CREATE TABLE warmup_events (
  id ${t.id},
  cluster_id TEXT NOT NULL,
  pool TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('created','hit','miss','prepull')),
  at ${t.int} NOT NULL,
  node TEXT NOT NULL DEFAULT '',
  pod TEXT NOT NULL DEFAULT '',
  image TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  UNIQUE (cluster_id, pool, type, at, node, pod, image, reason)
);
CREATE INDEX warmup_events_time ON warmup_events (cluster_id, at);
CREATE INDEX warmup_events_retention ON warmup_events (at);
`;

// Policies per cluster (ADR 0012): the table is rebuilt with cluster_id in its key. Rows written
// before had no cluster; they keep '' until core adopts them for its own --cluster-id
// (Store.adoptPolicies), the only cluster a core of that version acted on.
const clusterPolicies = (t: ColumnTypes): string => `
CREATE TABLE policies_by_cluster (
  cluster_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('spot','warmup')),
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  updated_at ${t.int} NOT NULL,
  PRIMARY KEY (cluster_id, kind, key)
);
INSERT INTO policies_by_cluster (cluster_id, kind, key, value, updated_at)
  SELECT '', kind, key, value, updated_at FROM policies;
DROP TABLE policies;
ALTER TABLE policies_by_cluster RENAME TO policies;
`;

// cluster_leases: which core replica owns a cluster's live state (ADR 0012). One row per cluster;
// generation grows at every change of holder, so a replica can tell it was replaced.
const clusterLeases = (t: ColumnTypes): string => `
CREATE TABLE cluster_leases (
  cluster_id TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  url TEXT NOT NULL,
  generation ${t.int} NOT NULL,
  acquired_at ${t.int} NOT NULL,
  renewed_at ${t.int} NOT NULL,
  expires_at ${t.int} NOT NULL
);
`;

// savings: what each NodePool's and each workload's capacity cost in one history bucket, as run
// and as if all on-demand (dollars over the bucket, not rates), so any range sums exactly.
// scope 'pool' names a NodePool; scope 'workload' names namespace/Kind/name (node_pool is where
// its pods ran, '' when several). See src/dashboard/figures/savings.ts.
const savings = (t: ColumnTypes): string => `
CREATE TABLE savings (
  cluster_id TEXT NOT NULL,
  scope TEXT NOT NULL CHECK (scope IN ('pool','workload')),
  name TEXT NOT NULL,
  ts ${t.int} NOT NULL,
  step_ms ${t.int} NOT NULL,
  actual_usd ${t.real} NOT NULL,
  on_demand_usd ${t.real} NOT NULL,
  PRIMARY KEY (cluster_id, scope, name, ts)
);
CREATE INDEX savings_time ON savings (cluster_id, ts);
CREATE INDEX savings_retention ON savings (ts);
`;

// spot_repairs: the spot repair's self-heal actions (WaveSpotRepair Events, ADR 0006), one row
// per Event, written in the ingest batch's transaction; the spot page counts them per workload.
const spotRepairs = (t: ColumnTypes): string => `
CREATE TABLE spot_repairs (
  cluster_id TEXT NOT NULL,
  event TEXT NOT NULL,
  workload TEXT NOT NULL,
  action TEXT NOT NULL,
  pod TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('Normal','Warning')),
  message TEXT NOT NULL,
  at ${t.int} NOT NULL,
  PRIMARY KEY (cluster_id, event)
);
CREATE INDEX spot_repairs_time ON spot_repairs (cluster_id, at);
CREATE INDEX spot_repairs_retention ON spot_repairs (at);
`;

// workload_pods: how many pods each workload had in one history bucket (the last sample of the
// bucket), so `wave whatif` can replay a cluster's own last 24 h. workload is namespace/Kind/name.
const workloadPods = (t: ColumnTypes): string => `
CREATE TABLE workload_pods (
  cluster_id TEXT NOT NULL,
  workload TEXT NOT NULL,
  ts ${t.int} NOT NULL,
  step_ms ${t.int} NOT NULL,
  pods INTEGER NOT NULL CHECK (pods >= 0),
  PRIMARY KEY (cluster_id, workload, ts)
);
CREATE INDEX workload_pods_time ON workload_pods (cluster_id, ts);
CREATE INDEX workload_pods_retention ON workload_pods (ts);
`;

// spot_late_answers: the webhook's late answers (WaveSpotLateAnswer Events, one per workload per
// minute with the count), one row per Event, written in the ingest batch's transaction; the spot
// page sums them per workload over its range.
const spotLateAnswers = (t: ColumnTypes): string => `
CREATE TABLE spot_late_answers (
  cluster_id TEXT NOT NULL,
  event TEXT NOT NULL,
  workload TEXT NOT NULL,
  answers INTEGER NOT NULL CHECK (answers > 0),
  at ${t.int} NOT NULL,
  PRIMARY KEY (cluster_id, event)
);
CREATE INDEX spot_late_answers_time ON spot_late_answers (cluster_id, at);
CREATE INDEX spot_late_answers_retention ON spot_late_answers (at);
`;

// audit_log: every change made through Wave (issue 31), append-only; groups as a JSON array.
const auditLog = (t: ColumnTypes): string => `
CREATE TABLE audit_log (
  id ${t.id},
  cluster_id TEXT NOT NULL,
  at ${t.int} NOT NULL,
  subject TEXT NOT NULL,
  groups TEXT NOT NULL,
  source TEXT NOT NULL,
  via TEXT NOT NULL,
  address TEXT NOT NULL,
  action TEXT NOT NULL,
  object TEXT NOT NULL,
  before_summary TEXT,
  after_summary TEXT
);
CREATE INDEX audit_log_cluster ON audit_log (cluster_id, id);
`;

// Issue 31: the policy CRs are the source of truth. Core keeps each CR version it is streamed
// (history), and marks per cluster that its stored policies became CRs (the one-time migration).
const policyCrs = (t: ColumnTypes): string => `
CREATE TABLE policy_revisions (
  cluster_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  resource_version TEXT NOT NULL,
  at ${t.int} NOT NULL,
  deleted INTEGER NOT NULL,
  manager TEXT NOT NULL,
  changed_by TEXT NOT NULL,
  spec TEXT NOT NULL,
  PRIMARY KEY (cluster_id, kind, name, resource_version)
);
CREATE INDEX policy_revisions_at ON policy_revisions (cluster_id, kind, name, at);
CREATE TABLE policy_cr_migrations (
  cluster_id TEXT PRIMARY KEY,
  at ${t.int} NOT NULL,
  created INTEGER NOT NULL,
  existed INTEGER NOT NULL
);
`;

// console_sessions: OIDC sign-ins, shared by core replicas; id_hash is the SHA-256 of the
// cookie's session id (a leaked table holds no usable cookie).
const consoleSessions = (t: ColumnTypes): string => `
CREATE TABLE console_sessions (
  id_hash TEXT PRIMARY KEY,
  subject TEXT NOT NULL,
  name TEXT NOT NULL,
  groups TEXT NOT NULL,
  expires_at ${t.int} NOT NULL,
  id_token TEXT
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
`;

// Each workload's newest revision in a bucket (its pods' pod-template-hash, or controller-revision-hash
// for a StatefulSet) and how many of its live pods run it: a rollout is a new revision while older
// ones still run, and the pods beyond the revision's are the rollout's surge, not demand. What-if
// replays the rollouts (issue 29). Null on rows written before, or for pods without a revision.
const workloadRevisions = (): string => `
ALTER TABLE workload_pods ADD COLUMN revision TEXT;
ALTER TABLE workload_pods ADD COLUMN revision_pods INTEGER;
`;

// Warmup you can believe (issue 38): a hit's warm time starts at `since`, its pod's own start
// (`seconds`) and what it saved against the pool's cold start (`saved`) are kept with it; the cold
// starts themselves (pods that waited for a new node) in their own table. Null on older rows.
const warmupTimeSaved = (t: ColumnTypes): string => `
ALTER TABLE warmup_events ADD COLUMN since ${t.int};
ALTER TABLE warmup_events ADD COLUMN seconds ${t.real};
ALTER TABLE warmup_events ADD COLUMN saved ${t.real};
CREATE TABLE cold_starts (
  cluster_id TEXT NOT NULL,
  pool TEXT NOT NULL,
  pod TEXT NOT NULL,
  node TEXT NOT NULL,
  at ${t.int} NOT NULL,
  seconds ${t.real} NOT NULL,
  PRIMARY KEY (cluster_id, pod, at)
);
CREATE INDEX cold_starts_time ON cold_starts (cluster_id, at);
`;

// Sessions keep no provider token (issue 42: the ID token kept for the sign-out's id_token_hint
// worked as an admin bearer, also after sign-out). An expand: the data goes, the column stays (the
// previous release still names it and signs out without the hint); a later release's contract
// drops console_sessions.id_token.
export const SCRUB_SESSION_TOKENS = "console sessions keep no ID token";
const scrubSessionTokens = (): string => `
UPDATE console_sessions SET id_token = NULL WHERE id_token IS NOT NULL;
`;

const migrations = (t: ColumnTypes): readonly Migration[] => [
  { version: 1, name: "initial schema", sql: initialSchema(t), kind: "contract" },
  { version: 2, name: "warmup events", sql: warmupEvents(t), kind: "contract" },
  { version: 3, name: "policies per cluster", sql: clusterPolicies(t), kind: "contract" },
  { version: 4, name: "cluster leases", sql: clusterLeases(t), kind: "contract" },
  { version: 5, name: "realized savings", sql: savings(t), kind: "contract" },
  { version: 6, name: "spot repairs", sql: spotRepairs(t), kind: "contract" },
  { version: 7, name: "workload pod counts", sql: workloadPods(t), kind: "contract" },
  { version: 8, name: "spot late answers", sql: spotLateAnswers(t), kind: "contract" },
  { version: 9, name: "audit log", sql: auditLog(t) },
  { version: 10, name: "policy CR revisions and migration mark", sql: policyCrs(t) },
  { version: 11, name: "console sessions", sql: consoleSessions(t) },
  { version: 12, name: "workload revisions", sql: workloadRevisions() },
  { version: 13, name: "warmup time saved and cold starts", sql: warmupTimeSaved(t) },
  { version: 14, name: SCRUB_SESSION_TOKENS, sql: scrubSessionTokens() },
];
export const sqliteMigrations = migrations(SQLITE);
export const postgresMigrations = migrations(POSTGRES);
