// Versioned schema migrations. Each backend has its own numbered list (column types differ, the
// semantics do not). All pending migrations apply in ONE transaction together with their rows in
// schema_migrations, so a crash mid-way leaves the previous version intact, and re-running is a
// no-op. PostgreSQL takes an advisory lock first, so replicas starting together apply them once.
import type { SqlDriver } from "./driver.ts";
import { num } from "./driver.ts";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export interface MigrateResult {
  applied: number[];
  version: number;
}

/** Any fixed number: the key of PostgreSQL's advisory lock for migrations. */
const PG_MIGRATION_LOCK = 0x77617665; // "wave"

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
  });
  return driver.transaction(async (tx) => {
    if (driver.dialect === "postgres") await tx.all(`SELECT pg_advisory_xact_lock(${PG_MIGRATION_LOCK})`);
    if (setup) await tx.exec(setup);
    await tx.exec(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version INTEGER PRIMARY KEY,
         name TEXT NOT NULL,
         applied_at BIGINT NOT NULL
       )`,
    );
    const rows = await tx.all("SELECT version FROM schema_migrations ORDER BY version");
    const done = new Set(rows.map((r) => num(r.version)));
    const newest = Math.max(0, ...done);
    if (newest > migrations.length) {
      throw new Error(
        `database schema version ${newest} is newer than this build knows (${migrations.length}): refusing to run an older Wave against it`,
      );
    }
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
      await tx.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
        m.version,
        m.name,
        now,
      ]);
      applied.push(m.version);
    }
    return { applied, version: migrations.length };
  });
}

// ---- the schema ----
// series: one row per (cluster, tier step, kind, NodePool, capacity type, bucket start). Gap rows
// use '' for NodePool and capacity type (a gap is cluster-wide) and carry until_ts.

const sqlite1 = `
CREATE TABLE clusters (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  first_seen INTEGER NOT NULL,
  last_seen INTEGER NOT NULL,
  versions TEXT NOT NULL
);
CREATE TABLE lifecycle_events (
  id INTEGER PRIMARY KEY,
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
  at INTEGER NOT NULL,
  UNIQUE (cluster_id, node_claim_uid, phase)
);
CREATE INDEX lifecycle_events_time ON lifecycle_events (cluster_id, at);
CREATE INDEX lifecycle_events_pool_time ON lifecycle_events (cluster_id, node_pool, at);
CREATE INDEX lifecycle_events_retention ON lifecycle_events (at);
CREATE TABLE disruptions (
  id INTEGER PRIMARY KEY,
  cluster_id TEXT NOT NULL,
  node_claim TEXT NOT NULL,
  node_pool TEXT NOT NULL,
  reason TEXT NOT NULL,
  at INTEGER NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('event','condition')),
  UNIQUE (cluster_id, node_claim, reason)
);
CREATE INDEX disruptions_time ON disruptions (cluster_id, at);
CREATE INDEX disruptions_pool_time ON disruptions (cluster_id, node_pool, at);
CREATE INDEX disruptions_retention ON disruptions (at);
CREATE TABLE series (
  cluster_id TEXT NOT NULL,
  resolution_ms INTEGER NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('point','gap')),
  node_pool TEXT NOT NULL,
  capacity_type TEXT NOT NULL,
  ts INTEGER NOT NULL,
  until_ts INTEGER,
  nodes REAL,
  nodes_max REAL,
  vcpu REAL,
  memory_bytes REAL,
  cost_per_hour REAL,
  samples INTEGER,
  PRIMARY KEY (cluster_id, resolution_ms, kind, node_pool, capacity_type, ts)
) WITHOUT ROWID;
CREATE INDEX series_time ON series (cluster_id, resolution_ms, ts);
CREATE INDEX series_rollup ON series (resolution_ms, kind, ts);
CREATE TABLE series_tiers (
  resolution_ms INTEGER PRIMARY KEY,
  retained_from INTEGER,
  rolled_up_to INTEGER
);
CREATE TABLE ingest_checkpoints (
  cluster_id TEXT PRIMARY KEY,
  epoch TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE TABLE policies (
  kind TEXT NOT NULL CHECK (kind IN ('spot','warmup')),
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (kind, key)
);
`;

const postgres1 = `
CREATE TABLE clusters (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  first_seen BIGINT NOT NULL,
  last_seen BIGINT NOT NULL,
  versions TEXT NOT NULL
);
CREATE TABLE lifecycle_events (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
  at BIGINT NOT NULL,
  UNIQUE (cluster_id, node_claim_uid, phase)
);
CREATE INDEX lifecycle_events_time ON lifecycle_events (cluster_id, at);
CREATE INDEX lifecycle_events_pool_time ON lifecycle_events (cluster_id, node_pool, at);
CREATE INDEX lifecycle_events_retention ON lifecycle_events (at);
CREATE TABLE disruptions (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  cluster_id TEXT NOT NULL,
  node_claim TEXT NOT NULL,
  node_pool TEXT NOT NULL,
  reason TEXT NOT NULL,
  at BIGINT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('event','condition')),
  UNIQUE (cluster_id, node_claim, reason)
);
CREATE INDEX disruptions_time ON disruptions (cluster_id, at);
CREATE INDEX disruptions_pool_time ON disruptions (cluster_id, node_pool, at);
CREATE INDEX disruptions_retention ON disruptions (at);
CREATE TABLE series (
  cluster_id TEXT NOT NULL,
  resolution_ms BIGINT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('point','gap')),
  node_pool TEXT NOT NULL,
  capacity_type TEXT NOT NULL,
  ts BIGINT NOT NULL,
  until_ts BIGINT,
  nodes DOUBLE PRECISION,
  nodes_max DOUBLE PRECISION,
  vcpu DOUBLE PRECISION,
  memory_bytes DOUBLE PRECISION,
  cost_per_hour DOUBLE PRECISION,
  samples BIGINT,
  PRIMARY KEY (cluster_id, resolution_ms, kind, node_pool, capacity_type, ts)
);
CREATE INDEX series_time ON series (cluster_id, resolution_ms, ts);
CREATE INDEX series_rollup ON series (resolution_ms, kind, ts);
CREATE TABLE series_tiers (
  resolution_ms BIGINT PRIMARY KEY,
  retained_from BIGINT,
  rolled_up_to BIGINT
);
CREATE TABLE ingest_checkpoints (
  cluster_id TEXT PRIMARY KEY,
  epoch TEXT NOT NULL,
  sequence BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE policies (
  kind TEXT NOT NULL CHECK (kind IN ('spot','warmup')),
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (kind, key)
);
`;

// warmup_events: append-only. '' stands for "none" in node/pod/image/reason so the natural key
// (NULLs are distinct in a UNIQUE constraint on both backends) still de-duplicates.
const warmupEvents = (id: string, time: string): string => `
CREATE TABLE warmup_events (
  id ${id},
  cluster_id TEXT NOT NULL,
  pool TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('created','hit','miss','prepull')),
  at ${time} NOT NULL,
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
const clusterPolicies = (time: string): string => `
CREATE TABLE policies_by_cluster (
  cluster_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('spot','warmup')),
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  updated_at ${time} NOT NULL,
  PRIMARY KEY (cluster_id, kind, key)
);
INSERT INTO policies_by_cluster (cluster_id, kind, key, value, updated_at)
  SELECT '', kind, key, value, updated_at FROM policies;
DROP TABLE policies;
ALTER TABLE policies_by_cluster RENAME TO policies;
`;

// cluster_leases: which core replica owns a cluster's live state (ADR 0012). One row per cluster;
// generation grows at every change of holder, so a replica can tell it was replaced.
const clusterLeases = (time: string): string => `
CREATE TABLE cluster_leases (
  cluster_id TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  url TEXT NOT NULL,
  generation ${time} NOT NULL,
  acquired_at ${time} NOT NULL,
  renewed_at ${time} NOT NULL,
  expires_at ${time} NOT NULL
);
`;

// savings: what each NodePool's and each workload's capacity cost in one history bucket, as run
// and as if all on-demand (dollars over the bucket, not rates), so any range sums exactly.
// scope 'pool' names a NodePool; scope 'workload' names namespace/Kind/name (node_pool is where
// its pods ran, '' when several). See src/dashboard/figures/savings.ts.
const savings = (time: string, real: string): string => `
CREATE TABLE savings (
  cluster_id TEXT NOT NULL,
  scope TEXT NOT NULL CHECK (scope IN ('pool','workload')),
  name TEXT NOT NULL,
  ts ${time} NOT NULL,
  step_ms ${time} NOT NULL,
  actual_usd ${real} NOT NULL,
  on_demand_usd ${real} NOT NULL,
  PRIMARY KEY (cluster_id, scope, name, ts)
);
CREATE INDEX savings_time ON savings (cluster_id, ts);
CREATE INDEX savings_retention ON savings (ts);
`;

// spot_repairs: the spot repair's self-heal actions (WaveSpotRepair Events, ADR 0006), one row
// per Event, written in the ingest batch's transaction; the spot page counts them per workload.
const spotRepairs = (time: string): string => `
CREATE TABLE spot_repairs (
  cluster_id TEXT NOT NULL,
  event TEXT NOT NULL,
  workload TEXT NOT NULL,
  action TEXT NOT NULL,
  pod TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('Normal','Warning')),
  message TEXT NOT NULL,
  at ${time} NOT NULL,
  PRIMARY KEY (cluster_id, event)
);
CREATE INDEX spot_repairs_time ON spot_repairs (cluster_id, at);
CREATE INDEX spot_repairs_retention ON spot_repairs (at);
`;

// workload_pods: how many pods each workload had in one history bucket (the last sample of the
// bucket), so `wave whatif` can replay a cluster's own last 24 h. workload is namespace/Kind/name.
const workloadPods = (time: string): string => `
CREATE TABLE workload_pods (
  cluster_id TEXT NOT NULL,
  workload TEXT NOT NULL,
  ts ${time} NOT NULL,
  step_ms ${time} NOT NULL,
  pods INTEGER NOT NULL CHECK (pods >= 0),
  PRIMARY KEY (cluster_id, workload, ts)
);
CREATE INDEX workload_pods_time ON workload_pods (cluster_id, ts);
CREATE INDEX workload_pods_retention ON workload_pods (ts);
`;

// spot_late_answers: the webhook's late answers (WaveSpotLateAnswer Events, one per workload per
// minute with the count), one row per Event, written in the ingest batch's transaction; the spot
// page sums them per workload over its range.
const spotLateAnswers = (time: string): string => `
CREATE TABLE spot_late_answers (
  cluster_id TEXT NOT NULL,
  event TEXT NOT NULL,
  workload TEXT NOT NULL,
  answers INTEGER NOT NULL CHECK (answers > 0),
  at ${time} NOT NULL,
  PRIMARY KEY (cluster_id, event)
);
CREATE INDEX spot_late_answers_time ON spot_late_answers (cluster_id, at);
CREATE INDEX spot_late_answers_retention ON spot_late_answers (at);
`;

// audit_log: every change made through Wave (issue 31), append-only; groups as a JSON array.
const auditLog = (id: string, time: string): string => `
CREATE TABLE audit_log (
  id ${id},
  cluster_id TEXT NOT NULL,
  at ${time} NOT NULL,
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
const policyCrs = (time: string): string => `
CREATE TABLE policy_revisions (
  cluster_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  resource_version TEXT NOT NULL,
  at ${time} NOT NULL,
  deleted INTEGER NOT NULL,
  manager TEXT NOT NULL,
  changed_by TEXT NOT NULL,
  spec TEXT NOT NULL,
  PRIMARY KEY (cluster_id, kind, name, resource_version)
);
CREATE INDEX policy_revisions_at ON policy_revisions (cluster_id, kind, name, at);
CREATE TABLE policy_cr_migrations (
  cluster_id TEXT PRIMARY KEY,
  at ${time} NOT NULL,
  created INTEGER NOT NULL,
  existed INTEGER NOT NULL
);
`;

// console_sessions: OIDC sign-ins, shared by core replicas; id_hash is the SHA-256 of the
// cookie's session id (a leaked table holds no usable cookie).
const consoleSessions = (time: string): string => `
CREATE TABLE console_sessions (
  id_hash TEXT PRIMARY KEY,
  subject TEXT NOT NULL,
  name TEXT NOT NULL,
  groups TEXT NOT NULL,
  expires_at ${time} NOT NULL,
  id_token TEXT
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
`;

export const sqliteMigrations: readonly Migration[] = [
  { version: 1, name: "initial schema", sql: sqlite1 },
  { version: 2, name: "warmup events", sql: warmupEvents("INTEGER PRIMARY KEY", "INTEGER") },
  { version: 3, name: "policies per cluster", sql: clusterPolicies("INTEGER") },
  { version: 4, name: "cluster leases", sql: clusterLeases("INTEGER") },
  { version: 5, name: "realized savings", sql: savings("INTEGER", "REAL") },
  { version: 6, name: "spot repairs", sql: spotRepairs("INTEGER") },
  { version: 7, name: "workload pod counts", sql: workloadPods("INTEGER") },
  { version: 8, name: "spot late answers", sql: spotLateAnswers("INTEGER") },
  { version: 9, name: "audit log", sql: auditLog("INTEGER PRIMARY KEY", "INTEGER") },
  { version: 10, name: "policy CR revisions and migration mark", sql: policyCrs("INTEGER") },
  { version: 11, name: "console sessions", sql: consoleSessions("INTEGER") },
];
export const postgresMigrations: readonly Migration[] = [
  { version: 1, name: "initial schema", sql: postgres1 },
  {
    version: 2,
    name: "warmup events",
    sql: warmupEvents("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "BIGINT"),
  },
  { version: 3, name: "policies per cluster", sql: clusterPolicies("BIGINT") },
  { version: 4, name: "cluster leases", sql: clusterLeases("BIGINT") },
  { version: 5, name: "realized savings", sql: savings("BIGINT", "DOUBLE PRECISION") },
  { version: 6, name: "spot repairs", sql: spotRepairs("BIGINT") },
  { version: 7, name: "workload pod counts", sql: workloadPods("BIGINT") },
  { version: 8, name: "spot late answers", sql: spotLateAnswers("BIGINT") },
  {
    version: 9,
    name: "audit log",
    sql: auditLog("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "BIGINT"),
  },
  { version: 10, name: "policy CR revisions and migration mark", sql: policyCrs("BIGINT") },
  { version: 11, name: "console sessions", sql: consoleSessions("BIGINT") },
];
