// The Store, written once over SqlDriver: the same statements run on SQLite and PostgreSQL
// (both understand ON CONFLICT … DO NOTHING / DO UPDATE, RETURNING and integer division of
// integers), so the two backends cannot drift apart in semantics.
import {
  alignDown,
  defaultRetention,
  downsample,
  planSegments,
  validateRetention,
} from "../history/downsample.ts";
import type { RetentionPolicy, TierState } from "../history/downsample.ts";
import type { SeriesGap, SeriesPoint, SeriesRow } from "../history/series.ts";
import type { SqlDriver, SqlExecutor, SqlParam, SqlRow } from "./driver.ts";
import { num, optText, text } from "./driver.ts";
import { migrate, type MigrateResult, type Migration } from "./migrations.ts";
import {
  StoreInputError,
  validateBatch,
  validateHello,
  validateLease,
  validatePolicy,
  validateAudit,
  validateRange,
  validateSavings,
  validateWorkloadPods,
  validateWarmupEvents,
  validateColdStarts,
} from "./store.ts";
import type {
  ClusterHello,
  ClusterLease,
  LeaseRequest,
  ClusterRecord,
  CompactResult,
  Disruption,
  DisruptionCount,
  DisruptionSource,
  EventQuery,
  IngestCheckpoint,
  LatestSeries,
  LifecycleEvent,
  LifecyclePhase,
  PolicyKind,
  PolicyCrKind,
  PolicyMigrationMark,
  PolicyRecord,
  PolicyRevision,
  AuditEntry,
  AuditQuery,
  AuditRecord,
  ConsoleSession,
  LateAnswerTotal,
  RepairQuery,
  SavingsRow,
  SavingsScope,
  SavingsTotal,
  WorkloadPodsRow,
  SeriesQuery,
  SpotRepair,
  TimeRange,
  Store,
  StoredWarmupEvent,
  ColdStart,
  WarmupEventType,
  WriteBatch,
  WriteResult,
} from "./store.ts";

/** A store just opened, and what opening it migrated. */
export interface OpenedStore {
  store: SqlStore;
  migrations: MigrateResult;
}

/**
 * Brings `driver`'s database up to `migrations` (`setup` first, in the same transaction) and opens
 * the store on it; the driver is closed when that fails.
 */
export async function openSqlStore(
  driver: SqlDriver,
  migrations: readonly Migration[],
  opts: { now?: (() => number) | undefined; retention?: RetentionPolicy | undefined },
  setup?: string,
): Promise<OpenedStore> {
  try {
    const migrated = await migrate(driver, migrations, (opts.now ?? Date.now)(), setup);
    return { store: new SqlStore(driver, opts.retention ?? defaultRetention), migrations: migrated };
  } catch (err) {
    await driver.close();
    throw err;
  }
}

/** Refuse answers with more buckets than this: ask for a larger step instead. */
const MAX_BUCKETS = 200_000;
const NEVER = -Number.MAX_SAFE_INTEGER;

const SQL = {
  upsertCluster: `INSERT INTO clusters (id, name, first_seen, last_seen, versions) VALUES ($1, $2, $3, $3, $4)
    ON CONFLICT (id) DO UPDATE SET
      name = excluded.name,
      versions = excluded.versions,
      first_seen = CASE WHEN excluded.first_seen < clusters.first_seen THEN excluded.first_seen ELSE clusters.first_seen END,
      last_seen = CASE WHEN excluded.last_seen > clusters.last_seen THEN excluded.last_seen ELSE clusters.last_seen END
    RETURNING id, name, first_seen, last_seen, versions`,
  getCluster: "SELECT id, name, first_seen, last_seen, versions FROM clusters WHERE id = $1",
  listClusters: "SELECT id, name, first_seen, last_seen, versions FROM clusters ORDER BY id",
  insertLifecycle: `INSERT INTO lifecycle_events
      (cluster_id, node_claim, node_claim_uid, node_pool, node_name, instance_type, capacity_type, zone, phase, reason, at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    ON CONFLICT (cluster_id, node_claim_uid, phase) DO NOTHING`,
  insertDisruption: `INSERT INTO disruptions (cluster_id, node_claim, node_pool, reason, at, source)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (cluster_id, node_claim, reason) DO NOTHING`,
  insertPoint: `INSERT INTO series
      (cluster_id, resolution_ms, kind, node_pool, capacity_type, ts, until_ts,
       nodes, nodes_max, vcpu, memory_bytes, cost_per_hour, samples)
    VALUES ($1, $2, 'point', $3, $4, $5, NULL, $6, $7, $8, $9, $10, $11)
    ON CONFLICT (cluster_id, resolution_ms, kind, node_pool, capacity_type, ts) DO NOTHING`,
  insertGap: `INSERT INTO series (cluster_id, resolution_ms, kind, node_pool, capacity_type, ts, until_ts)
    VALUES ($1, $2, 'gap', '', '', $3, $4)
    ON CONFLICT (cluster_id, resolution_ms, kind, node_pool, capacity_type, ts) DO NOTHING`,
  upsertCheckpoint: `INSERT INTO ingest_checkpoints (cluster_id, epoch, sequence, updated_at) VALUES ($1, $2, $3, $4)
    ON CONFLICT (cluster_id) DO UPDATE SET
      sequence = CASE
        WHEN ingest_checkpoints.epoch <> excluded.epoch OR excluded.sequence > ingest_checkpoints.sequence
        THEN excluded.sequence ELSE ingest_checkpoints.sequence END,
      epoch = excluded.epoch,
      updated_at = excluded.updated_at
    RETURNING cluster_id, epoch, sequence, updated_at`,
  getCheckpoint:
    "SELECT cluster_id, epoch, sequence, updated_at FROM ingest_checkpoints WHERE cluster_id = $1",
  // $4 is the NodePool filter; '' (never a real NodePool name) means "all".
  lifecycle: `SELECT cluster_id, node_claim, node_claim_uid, node_pool, node_name, instance_type, capacity_type,
      zone, phase, reason, at
    FROM lifecycle_events
    WHERE cluster_id = $1 AND at >= $2 AND at < $3 AND ($4 = '' OR node_pool = $4)
    ORDER BY at, id LIMIT $5`,
  disruptions: `SELECT cluster_id, node_claim, node_pool, reason, at, source FROM disruptions
    WHERE cluster_id = $1 AND at >= $2 AND at < $3 AND ($4 = '' OR node_pool = $4)
    ORDER BY at, id LIMIT $5`,
  nodeClaimLifecycle: `SELECT cluster_id, node_claim, node_claim_uid, node_pool, node_name, instance_type,
      capacity_type, zone, phase, reason, at
    FROM lifecycle_events
    WHERE cluster_id = $1 AND node_claim_uid IN (
      SELECT node_claim_uid FROM lifecycle_events
      WHERE cluster_id = $1 AND (node_claim = $2 OR node_name = $2)
      ORDER BY at DESC, id DESC LIMIT 1)
    ORDER BY at, id`,
  disruptionCounts: `SELECT node_pool, reason, COUNT(*) AS n FROM disruptions
    WHERE cluster_id = $1 AND at >= $2 AND at < $3 AND ($4 = '' OR node_pool = $4)
    GROUP BY node_pool, reason ORDER BY node_pool, reason`,
  seriesPoints: `SELECT cluster_id, resolution_ms, node_pool, capacity_type, ts, nodes, nodes_max, vcpu,
      memory_bytes, cost_per_hour, samples
    FROM series
    WHERE cluster_id = $1 AND resolution_ms = $2 AND kind = 'point' AND ts >= $3 AND ts < $4
      AND ($5 = '' OR node_pool = $5) AND ($6 = '' OR capacity_type = $6)`,
  seriesGaps: `SELECT cluster_id, resolution_ms, ts, until_ts FROM series
    WHERE cluster_id = $1 AND resolution_ms = $2 AND kind = 'gap' AND ts < $4 AND until_ts > $3`,
  latestTs: `SELECT MAX(ts) AS ts FROM series WHERE cluster_id = $1 AND resolution_ms = $2 AND kind = 'point'`,
  latestSeries: `SELECT node_pool, capacity_type FROM series
    WHERE cluster_id = $1 AND resolution_ms = $2 AND kind = 'point' AND ts = $3 ORDER BY node_pool, capacity_type`,
  tiers: "SELECT resolution_ms, retained_from, rolled_up_to FROM series_tiers",
  // Sample-weighted averages, max of maxima, sum of samples: the same as history/downsample.ts.
  rollupPoints: `INSERT INTO series
      (cluster_id, resolution_ms, kind, node_pool, capacity_type, ts, until_ts,
       nodes, nodes_max, vcpu, memory_bytes, cost_per_hour, samples)
    SELECT cluster_id, CAST($1 AS BIGINT), 'point', node_pool, capacity_type, (ts / $1) * $1, NULL,
      SUM(nodes * samples) / SUM(samples), MAX(nodes_max), SUM(vcpu * samples) / SUM(samples),
      SUM(memory_bytes * samples) / SUM(samples), SUM(cost_per_hour * samples) / SUM(samples), SUM(samples)
    FROM series
    WHERE resolution_ms = $2 AND kind = 'point' AND ts >= $3 AND ts < $4
    GROUP BY cluster_id, node_pool, capacity_type, (ts / $1) * $1
    ON CONFLICT (cluster_id, resolution_ms, kind, node_pool, capacity_type, ts) DO UPDATE SET
      nodes = excluded.nodes, nodes_max = excluded.nodes_max, vcpu = excluded.vcpu,
      memory_bytes = excluded.memory_bytes, cost_per_hour = excluded.cost_per_hour, samples = excluded.samples`,
  // Every gap overlapping the window: a gap is written when data resumes, so it usually starts
  // long before the window (compaction went on while the agent was away).
  rollupGaps: `INSERT INTO series (cluster_id, resolution_ms, kind, node_pool, capacity_type, ts, until_ts)
    SELECT cluster_id, CAST($1 AS BIGINT), 'gap', '', '', ts, until_ts
    FROM series
    WHERE resolution_ms = $2 AND kind = 'gap' AND ts < $4 AND until_ts > $3
    ON CONFLICT (cluster_id, resolution_ms, kind, node_pool, capacity_type, ts) DO NOTHING`,
  upsertTier: `INSERT INTO series_tiers (resolution_ms, retained_from, rolled_up_to) VALUES ($1, $2, $3)
    ON CONFLICT (resolution_ms) DO UPDATE SET retained_from = excluded.retained_from, rolled_up_to = excluded.rolled_up_to`,
  deleteSeries: `DELETE FROM series
    WHERE resolution_ms = $1 AND ((kind = 'point' AND ts < $2) OR (kind = 'gap' AND until_ts <= $2))`,
  insertWarmupEvent: `INSERT INTO warmup_events (cluster_id, pool, type, at, node, pod, image, reason, since, seconds, saved)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    ON CONFLICT (cluster_id, pool, type, at, node, pod, image, reason) DO NOTHING`,
  // As above, $4 = '' means every pool.
  warmupEvents: `SELECT cluster_id, pool, type, at, node, pod, image, reason, since, seconds, saved FROM warmup_events
    WHERE cluster_id = $1 AND at >= $2 AND at < $3 AND ($4 = '' OR pool = $4)
    ORDER BY at, id LIMIT $5`,
  deleteWarmupEvents: "DELETE FROM warmup_events WHERE at < $1",
  insertColdStart: `INSERT INTO cold_starts (cluster_id, pool, pod, node, at, seconds)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (cluster_id, pod, at) DO NOTHING`,
  // $4 = '' means every pool.
  coldStarts: `SELECT cluster_id, pool, pod, node, at, seconds FROM cold_starts
    WHERE cluster_id = $1 AND at >= $2 AND at < $3 AND ($4 = '' OR pool = $4)
    ORDER BY at, pod LIMIT $5`,
  deleteColdStarts: "DELETE FROM cold_starts WHERE at < $1",
  insertRepair: `INSERT INTO spot_repairs (cluster_id, event, workload, action, pod, type, message, at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
    ON CONFLICT (cluster_id, event) DO NOTHING`,
  // $4 = '' means every workload.
  spotRepairs: `SELECT cluster_id, event, workload, action, pod, type, message, at FROM spot_repairs
    WHERE cluster_id = $1 AND at >= $2 AND at < $3 AND ($4 = '' OR workload = $4)
    ORDER BY at, event LIMIT $5`,
  deleteRepairs: "DELETE FROM spot_repairs WHERE at < $1",
  insertLateAnswer: `INSERT INTO spot_late_answers (cluster_id, event, workload, answers, at)
    VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (cluster_id, event) DO NOTHING`,
  spotLateAnswers: `SELECT workload, SUM(answers) AS answers FROM spot_late_answers
    WHERE cluster_id = $1 AND at >= $2 AND at < $3
    GROUP BY workload ORDER BY workload`,
  deleteLateAnswers: "DELETE FROM spot_late_answers WHERE at < $1",
  insertSavings: `INSERT INTO savings (cluster_id, scope, name, ts, step_ms, actual_usd, on_demand_usd)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (cluster_id, scope, name, ts) DO NOTHING`,
  // $4 = '' means every pool; workload rows are kept whatever the pool filter.
  savings: `SELECT scope, name, SUM(actual_usd) AS actual_usd, SUM(on_demand_usd) AS on_demand_usd,
      COUNT(*) AS buckets, MIN(ts) AS first_ts, MAX(ts + step_ms) AS last_ts
    FROM savings
    WHERE cluster_id = $1 AND ts >= $2 AND ts < $3 AND ($4 = '' OR scope = 'workload' OR name = $4)
    GROUP BY scope, name ORDER BY scope, name`,
  deleteSavings: "DELETE FROM savings WHERE ts < $1",
  insertWorkloadPods: `INSERT INTO workload_pods (cluster_id, workload, ts, step_ms, pods, revision, revision_pods)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (cluster_id, workload, ts) DO NOTHING`,
  workloadPods: `SELECT workload, ts, step_ms, pods, revision, revision_pods FROM workload_pods
    WHERE cluster_id = $1 AND ts >= $2 AND ts < $3 ORDER BY ts, workload`,
  deleteWorkloadPods: "DELETE FROM workload_pods WHERE ts < $1",
  deleteLifecycle: "DELETE FROM lifecycle_events WHERE at < $1",
  deleteDisruptions: "DELETE FROM disruptions WHERE at < $1",
  putPolicy: `INSERT INTO policies (cluster_id, kind, key, value, updated_at) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (cluster_id, kind, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
    RETURNING cluster_id, kind, key, value, updated_at`,
  getPolicy:
    "SELECT cluster_id, kind, key, value, updated_at FROM policies WHERE cluster_id = $1 AND kind = $2 AND key = $3",
  listPolicies:
    "SELECT cluster_id, kind, key, value, updated_at FROM policies WHERE cluster_id = $1 AND kind = $2 ORDER BY key",
  deletePolicy: "DELETE FROM policies WHERE cluster_id = $1 AND kind = $2 AND key = $3",
  // No token is kept (issue 42: the stored ID token worked as a bearer); id_token stays NULL.
  putSession: `INSERT INTO console_sessions (id_hash, subject, name, groups, expires_at)
    VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (id_hash) DO UPDATE SET subject = excluded.subject, name = excluded.name,
      groups = excluded.groups, expires_at = excluded.expires_at, id_token = NULL`,
  getSession: `SELECT id_hash, subject, name, groups, expires_at FROM console_sessions
    WHERE id_hash = $1 AND expires_at > $2`,
  deleteSession: "DELETE FROM console_sessions WHERE id_hash = $1",
  deleteExpiredSessions: "DELETE FROM console_sessions WHERE expires_at <= $1",
  appendAudit: `INSERT INTO audit_log
      (cluster_id, at, subject, groups, source, via, address, action, object, before_summary, after_summary)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
  // $2: entries older than this id (paging); a huge number for the newest page.
  listAudit: `SELECT id, cluster_id, at, subject, groups, source, via, address, action, object,
      before_summary, after_summary
    FROM audit_log WHERE cluster_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
  adoptPolicies: `UPDATE policies SET cluster_id = $1 WHERE cluster_id = '' AND NOT EXISTS
    (SELECT 1 FROM policies mine WHERE mine.cluster_id = $1 AND mine.kind = policies.kind AND mine.key = policies.key)`,
  dropUnscopedPolicies: "DELETE FROM policies WHERE cluster_id = ''",
  recordPolicyRevision: `INSERT INTO policy_revisions
      (cluster_id, kind, name, resource_version, at, deleted, manager, changed_by, spec)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
    ON CONFLICT (cluster_id, kind, name, resource_version) DO NOTHING`,
  policyRevisions: `SELECT cluster_id, kind, name, resource_version, at, deleted, manager, changed_by, spec
    FROM policy_revisions WHERE cluster_id = $1 AND kind = $2 AND name = $3
    ORDER BY at DESC, resource_version DESC LIMIT $4`,
  // $2, $3: the managers to leave out (Wave's own).
  foreignPolicyRevisions: `SELECT cluster_id, kind, name, resource_version, at, deleted, manager, changed_by, spec
    FROM policy_revisions WHERE cluster_id = $1 AND manager <> '' AND manager <> $2 AND manager <> $3
    ORDER BY at DESC, resource_version DESC LIMIT $4`,
  policyMigration: "SELECT cluster_id, at, created, existed FROM policy_cr_migrations WHERE cluster_id = $1",
  markPolicyMigration: `INSERT INTO policy_cr_migrations (cluster_id, at, created, existed) VALUES ($1, $2, $3, $4)
    ON CONFLICT (cluster_id) DO NOTHING`,
  // Take: a free, expired or (force) any lease. A new holder gets a new generation.
  acquireLease: `INSERT INTO cluster_leases (cluster_id, holder, url, generation, acquired_at, renewed_at, expires_at)
    VALUES ($1, $2, $3, 1, $4, $4, $5)
    ON CONFLICT (cluster_id) DO UPDATE SET
      generation = CASE WHEN cluster_leases.holder = excluded.holder THEN cluster_leases.generation ELSE cluster_leases.generation + 1 END,
      acquired_at = CASE WHEN cluster_leases.holder = excluded.holder THEN cluster_leases.acquired_at ELSE excluded.acquired_at END,
      holder = excluded.holder, url = excluded.url,
      renewed_at = excluded.renewed_at, expires_at = excluded.expires_at
    WHERE $6 = 1 OR cluster_leases.holder = excluded.holder OR cluster_leases.expires_at <= excluded.renewed_at`,
  lease: `SELECT cluster_id, holder, url, generation, acquired_at, renewed_at, expires_at
    FROM cluster_leases WHERE cluster_id = $1`,
  leases: `SELECT cluster_id, holder, url, generation, acquired_at, renewed_at, expires_at
    FROM cluster_leases ORDER BY cluster_id`,
  renewLease:
    "UPDATE cluster_leases SET renewed_at = $3, expires_at = $4 WHERE cluster_id = $1 AND holder = $2",
  releaseLease: "UPDATE cluster_leases SET expires_at = $3 WHERE cluster_id = $1 AND holder = $2",
} as const;

/** A lifecycle_events row as a LifecycleEvent (optional columns left out when NULL). */
function lifecycleRow(r: SqlRow): LifecycleEvent {
  const e: LifecycleEvent = {
    clusterId: text(r.cluster_id),
    nodeClaim: text(r.node_claim),
    nodeClaimUid: text(r.node_claim_uid),
    nodePool: text(r.node_pool),
    phase: text(r.phase) as LifecyclePhase,
    at: num(r.at),
  };
  for (const [field, col] of [
    ["nodeName", "node_name"],
    ["instanceType", "instance_type"],
    ["capacityType", "capacity_type"],
    ["zone", "zone"],
    ["reason", "reason"],
  ] as const) {
    const v = optText(r[col]);
    if (v !== undefined) e[field] = v;
  }
  return e;
}

const toRevision = (r: SqlRow): PolicyRevision => ({
  clusterId: text(r.cluster_id),
  kind: text(r.kind) as PolicyCrKind,
  name: text(r.name),
  resourceVersion: text(r.resource_version),
  at: num(r.at),
  deleted: num(r.deleted) === 1,
  manager: text(r.manager),
  changedBy: text(r.changed_by),
  spec: JSON.parse(text(r.spec)) as unknown,
});

export class SqlStore implements Store {
  readonly backend: "sqlite" | "postgres";
  readonly retention: RetentionPolicy;
  readonly #db: SqlDriver;

  constructor(driver: SqlDriver, retention: RetentionPolicy) {
    validateRetention(retention);
    this.#db = driver;
    this.backend = driver.dialect;
    this.retention = retention;
  }

  get #rawStep(): number {
    // validateRetention guarantees at least one tier.
    return this.retention.tiers[0]?.stepMs ?? 60_000;
  }

  async upsertCluster(hello: ClusterHello): Promise<ClusterRecord> {
    validateHello(hello);
    const rows = await this.#db.all(SQL.upsertCluster, [
      hello.id,
      hello.name,
      hello.at,
      JSON.stringify(hello.versions),
    ]);
    return toCluster(one(rows));
  }

  async getCluster(id: string): Promise<ClusterRecord | undefined> {
    const rows = await this.#db.all(SQL.getCluster, [id]);
    return rows[0] ? toCluster(rows[0]) : undefined;
  }

  async listClusters(): Promise<ClusterRecord[]> {
    return (await this.#db.all(SQL.listClusters)).map(toCluster);
  }

  async write(batch: WriteBatch): Promise<WriteResult> {
    validateBatch(batch);
    return this.#db.transaction(async (tx) => {
      const result: WriteResult = { lifecycle: 0, disruptions: 0, series: 0 };
      for (const e of batch.lifecycle ?? []) {
        result.lifecycle += await tx.run(SQL.insertLifecycle, [
          e.clusterId,
          e.nodeClaim,
          e.nodeClaimUid,
          e.nodePool,
          e.nodeName ?? null,
          e.instanceType ?? null,
          e.capacityType ?? null,
          e.zone ?? null,
          e.phase,
          e.reason ?? null,
          e.at,
        ]);
      }
      for (const d of batch.disruptions ?? []) {
        result.disruptions += await tx.run(SQL.insertDisruption, [
          d.clusterId,
          d.nodeClaim,
          d.nodePool,
          d.reason,
          d.at,
          d.source,
        ]);
      }
      for (const r of batch.series ?? []) result.series += await insertSeriesRow(tx, r);
      if (batch.repairs) {
        result.repairs = 0;
        for (const r of batch.repairs)
          result.repairs += await tx.run(SQL.insertRepair, [
            r.clusterId,
            r.event,
            r.workload,
            r.action,
            r.pod,
            r.type,
            r.message,
            r.at,
          ]);
      }
      if (batch.lateAnswers) {
        result.lateAnswers = 0;
        for (const r of batch.lateAnswers)
          result.lateAnswers += await tx.run(SQL.insertLateAnswer, [
            r.clusterId,
            r.event,
            r.workload,
            r.count,
            r.at,
          ]);
      }
      const c = batch.checkpoint;
      if (c) {
        const rows = await tx.all(SQL.upsertCheckpoint, [c.clusterId, c.epoch, c.sequence, c.at]);
        result.checkpoint = toCheckpoint(one(rows));
      }
      return result;
    });
  }

  async checkpoint(clusterId: string): Promise<IngestCheckpoint | undefined> {
    const rows = await this.#db.all(SQL.getCheckpoint, [clusterId]);
    return rows[0] ? toCheckpoint(rows[0]) : undefined;
  }

  async lifecycle(q: EventQuery): Promise<LifecycleEvent[]> {
    validateRange(q);
    const rows = await this.#db.all(SQL.lifecycle, [q.clusterId, q.from, q.to, q.nodePool ?? "", limit(q)]);
    return rows.map(lifecycleRow);
  }

  async nodeClaimLifecycle(clusterId: string, name: string): Promise<LifecycleEvent[]> {
    return (await this.#db.all(SQL.nodeClaimLifecycle, [clusterId, name])).map(lifecycleRow);
  }

  async disruptions(q: EventQuery): Promise<Disruption[]> {
    validateRange(q);
    const rows = await this.#db.all(SQL.disruptions, [q.clusterId, q.from, q.to, q.nodePool ?? "", limit(q)]);
    return rows.map((r) => ({
      clusterId: text(r.cluster_id),
      nodeClaim: text(r.node_claim),
      nodePool: text(r.node_pool),
      reason: text(r.reason),
      at: num(r.at),
      source: text(r.source) as DisruptionSource,
    }));
  }

  async disruptionCounts(q: TimeRange): Promise<DisruptionCount[]> {
    validateRange(q);
    const rows = await this.#db.all(SQL.disruptionCounts, [q.clusterId, q.from, q.to, q.nodePool ?? ""]);
    return rows.map((r) => ({ nodePool: text(r.node_pool), reason: text(r.reason), count: num(r.n) }));
  }

  async series(q: SeriesQuery): Promise<SeriesRow[]> {
    validateRange(q);
    const step = q.stepMs ?? this.#rawStep;
    if (!Number.isSafeInteger(step) || step <= 0) throw new StoreInputError(`query: bad stepMs ${step}`);
    if ((q.to - q.from) / step > MAX_BUCKETS) {
      throw new StoreInputError(`query: more than ${MAX_BUCKETS} buckets; use a larger stepMs`);
    }
    const tiers = this.retention.tiers;
    // One snapshot: a compaction committing in between must not move rows between tiers under us.
    const rows = await this.#db.snapshot(async (tx) => {
      const out: SeriesRow[] = [];
      const states = await tierStates(
        tx,
        tiers.map((t) => t.stepMs),
      );
      for (const seg of planSegments(tiers, states, q.from, q.to, step)) {
        const res = tiers[seg.tier]?.stepMs ?? step;
        const params: SqlParam[] = [
          q.clusterId,
          res,
          seg.from,
          seg.to,
          q.nodePool ?? "",
          q.capacityType ?? "",
        ];
        for (const r of await tx.all(SQL.seriesPoints, params)) out.push(toPoint(r));
        for (const r of await tx.all(SQL.seriesGaps, params.slice(0, 4))) out.push(toGap(r));
      }
      return out;
    });
    return downsample(rows, step);
  }

  async latestSeries(clusterId: string): Promise<LatestSeries | undefined> {
    const raw = this.#rawStep;
    return this.#db.snapshot(async (tx) => {
      const ts = (await tx.all(SQL.latestTs, [clusterId, raw]))[0]?.ts;
      if (ts === null || ts === undefined) return undefined;
      const rows = await tx.all(SQL.latestSeries, [clusterId, raw, num(ts)]);
      return {
        ts: num(ts),
        series: rows.map((r) => ({ nodePool: text(r.node_pool), capacityType: text(r.capacity_type) })),
      };
    });
  }

  async writeWarmupEvents(events: readonly StoredWarmupEvent[]): Promise<number> {
    validateWarmupEvents(events);
    if (events.length === 0) return 0;
    return this.#db.transaction(async (tx) => {
      let added = 0;
      for (const e of events) {
        added += await tx.run(SQL.insertWarmupEvent, [
          e.clusterId,
          e.pool,
          e.type,
          e.at,
          e.node ?? "",
          e.pod ?? "",
          e.image ?? "",
          e.reason ?? "",
          e.since ?? null,
          e.seconds ?? null,
          e.saved ?? null,
        ]);
      }
      return added;
    });
  }

  async writeSavings(rows: readonly SavingsRow[]): Promise<number> {
    validateSavings(rows);
    if (rows.length === 0) return 0;
    return this.#db.transaction(async (tx) => {
      let added = 0;
      for (const r of rows) {
        added += await tx.run(SQL.insertSavings, [
          r.clusterId,
          r.scope,
          r.name,
          r.ts,
          r.stepMs,
          r.actualUsd,
          r.onDemandUsd,
        ]);
      }
      return added;
    });
  }

  async savings(q: TimeRange): Promise<SavingsTotal[]> {
    validateRange(q);
    const rows = await this.#db.all(SQL.savings, [q.clusterId, q.from, q.to, q.nodePool ?? ""]);
    return rows.map((r) => ({
      scope: text(r.scope) as SavingsScope,
      name: text(r.name),
      actualUsd: num(r.actual_usd),
      onDemandUsd: num(r.on_demand_usd),
      buckets: num(r.buckets),
      from: num(r.first_ts),
      to: num(r.last_ts),
    }));
  }

  async writeWorkloadPods(rows: readonly WorkloadPodsRow[]): Promise<number> {
    validateWorkloadPods(rows);
    if (rows.length === 0) return 0;
    return this.#db.transaction(async (tx) => {
      let added = 0;
      for (const r of rows)
        added += await tx.run(SQL.insertWorkloadPods, [
          r.clusterId,
          r.workload,
          r.ts,
          r.stepMs,
          r.pods,
          r.revision ?? null,
          r.revisionPods ?? null,
        ]);
      return added;
    });
  }

  async workloadPods(q: TimeRange): Promise<WorkloadPodsRow[]> {
    validateRange(q);
    const rows = await this.#db.all(SQL.workloadPods, [q.clusterId, q.from, q.to]);
    return rows.map((r) => ({
      clusterId: q.clusterId,
      workload: text(r.workload),
      ts: num(r.ts),
      stepMs: num(r.step_ms),
      pods: num(r.pods),
      ...(r.revision === null || r.revision === undefined
        ? {}
        : { revision: text(r.revision), revisionPods: num(r.revision_pods) }),
    }));
  }

  async spotRepairs(q: RepairQuery): Promise<SpotRepair[]> {
    validateRange(q);
    const rows = await this.#db.all(SQL.spotRepairs, [q.clusterId, q.from, q.to, q.workload ?? "", limit(q)]);
    return rows.map((r) => ({
      clusterId: text(r.cluster_id),
      event: text(r.event),
      workload: text(r.workload),
      action: text(r.action),
      pod: text(r.pod),
      type: text(r.type) === "Warning" ? "Warning" : "Normal",
      message: text(r.message),
      at: num(r.at),
    }));
  }

  async spotLateAnswers(q: TimeRange): Promise<LateAnswerTotal[]> {
    validateRange(q);
    const rows = await this.#db.all(SQL.spotLateAnswers, [q.clusterId, q.from, q.to]);
    return rows.map((r) => ({ workload: text(r.workload), count: num(r.answers) }));
  }

  async warmupEvents(q: EventQuery): Promise<StoredWarmupEvent[]> {
    validateRange(q);
    const rows = await this.#db.all(SQL.warmupEvents, [
      q.clusterId,
      q.from,
      q.to,
      q.nodePool ?? "",
      limit(q),
    ]);
    return rows.map((r) => {
      const e: StoredWarmupEvent = {
        clusterId: text(r.cluster_id),
        pool: text(r.pool),
        type: text(r.type) as WarmupEventType,
        at: num(r.at),
      };
      for (const f of ["node", "pod", "image", "reason"] as const) {
        const v = optText(r[f]);
        if (v !== undefined && v !== "") e[f] = v;
      }
      for (const f of ["since", "seconds", "saved"] as const)
        if (r[f] !== null && r[f] !== undefined) e[f] = num(r[f]);
      return e;
    });
  }

  async writeColdStarts(rows: readonly ColdStart[]): Promise<number> {
    validateColdStarts(rows);
    if (rows.length === 0) return 0;
    return this.#db.transaction(async (tx) => {
      let added = 0;
      for (const r of rows)
        added += await tx.run(SQL.insertColdStart, [r.clusterId, r.pool, r.pod, r.node, r.at, r.seconds]);
      return added;
    });
  }

  async coldStarts(q: EventQuery): Promise<ColdStart[]> {
    validateRange(q);
    const rows = await this.#db.all(SQL.coldStarts, [q.clusterId, q.from, q.to, q.nodePool ?? "", limit(q)]);
    return rows.map((r) => ({
      clusterId: text(r.cluster_id),
      pool: text(r.pool),
      pod: text(r.pod),
      node: text(r.node),
      at: num(r.at),
      seconds: num(r.seconds),
    }));
  }

  async putPolicy(
    clusterId: string,
    kind: PolicyKind,
    key: string,
    value: unknown,
    at: number,
  ): Promise<PolicyRecord> {
    const json = validatePolicy(clusterId, kind, key, value, at);
    return toPolicy(one(await this.#db.all(SQL.putPolicy, [clusterId, kind, key, json, at])));
  }

  async getPolicy(clusterId: string, kind: PolicyKind, key: string): Promise<PolicyRecord | undefined> {
    const rows = await this.#db.all(SQL.getPolicy, [clusterId, kind, key]);
    return rows[0] ? toPolicy(rows[0]) : undefined;
  }

  async listPolicies(clusterId: string, kind: PolicyKind): Promise<PolicyRecord[]> {
    return (await this.#db.all(SQL.listPolicies, [clusterId, kind])).map(toPolicy);
  }

  async deletePolicy(clusterId: string, kind: PolicyKind, key: string): Promise<boolean> {
    return (await this.#db.run(SQL.deletePolicy, [clusterId, kind, key])) > 0;
  }

  async putSession(session: ConsoleSession, now: number): Promise<void> {
    if (!/^[0-9a-f]{64}$/.test(session.idHash))
      throw new StoreInputError("session idHash: a SHA-256 hex digest is required");
    if (session.subject === "" || !Number.isSafeInteger(session.expiresAt))
      throw new StoreInputError("session: subject and expiresAt are required");
    await this.#db.transaction(async (tx) => {
      await tx.run(SQL.deleteExpiredSessions, [now]);
      await tx.run(SQL.putSession, [
        session.idHash,
        session.subject,
        session.name,
        JSON.stringify(session.groups),
        session.expiresAt,
      ]);
    });
  }

  async getSession(idHash: string, now: number): Promise<ConsoleSession | undefined> {
    const r = (await this.#db.all(SQL.getSession, [idHash, now]))[0];
    if (!r) return undefined;
    return {
      idHash: text(r.id_hash),
      subject: text(r.subject),
      name: text(r.name),
      groups: JSON.parse(text(r.groups)) as string[],
      expiresAt: num(r.expires_at),
    };
  }

  async deleteSession(idHash: string): Promise<void> {
    await this.#db.run(SQL.deleteSession, [idHash]);
  }

  async appendAudit(entry: AuditEntry): Promise<AuditRecord> {
    validateAudit(entry);
    const row = one(
      await this.#db.all(SQL.appendAudit, [
        entry.clusterId,
        entry.at,
        entry.subject,
        JSON.stringify(entry.groups),
        entry.source,
        entry.via,
        entry.address,
        entry.action,
        entry.object,
        entry.before,
        entry.after,
      ]),
    );
    return { id: num(row.id), ...entry, groups: [...entry.groups] };
  }

  async listAudit(q: AuditQuery): Promise<AuditRecord[]> {
    const rows = await this.#db.all(SQL.listAudit, [
      q.clusterId,
      q.before ?? Number.MAX_SAFE_INTEGER,
      Math.max(1, Math.min(q.limit, 1000)),
    ]);
    return rows.map((r) => ({
      id: num(r.id),
      clusterId: text(r.cluster_id),
      at: num(r.at),
      subject: text(r.subject),
      groups: JSON.parse(text(r.groups)) as string[],
      source: text(r.source),
      via: text(r.via),
      address: text(r.address),
      action: text(r.action),
      object: text(r.object),
      before: r.before_summary === null || r.before_summary === undefined ? null : text(r.before_summary),
      after: r.after_summary === null || r.after_summary === undefined ? null : text(r.after_summary),
    }));
  }

  async recordPolicyRevision(r: PolicyRevision): Promise<boolean> {
    if (r.clusterId === "" || r.name === "" || r.resourceVersion === "")
      throw new StoreInputError("policy revision: clusterId, name and resourceVersion are required");
    if (!(["SpotPolicy", "WarmupPolicy"] as readonly string[]).includes(r.kind))
      throw new StoreInputError(`policy revision: unknown kind ${r.kind}`);
    const n = await this.#db.run(SQL.recordPolicyRevision, [
      r.clusterId,
      r.kind,
      r.name,
      r.resourceVersion,
      r.at,
      r.deleted ? 1 : 0,
      r.manager,
      r.changedBy,
      JSON.stringify(r.spec ?? null),
    ]);
    return n > 0;
  }

  async policyRevisions(
    clusterId: string,
    kind: PolicyCrKind,
    name: string,
    limit = 100,
  ): Promise<PolicyRevision[]> {
    const rows = await this.#db.all(SQL.policyRevisions, [
      clusterId,
      kind,
      name,
      Math.max(1, Math.min(limit, 1000)),
    ]);
    return rows.map(toRevision);
  }

  async foreignPolicyRevisions(
    clusterId: string,
    waveManagers: readonly [string, string],
    limit = 100,
  ): Promise<PolicyRevision[]> {
    const rows = await this.#db.all(SQL.foreignPolicyRevisions, [
      clusterId,
      waveManagers[0],
      waveManagers[1],
      Math.max(1, Math.min(limit, 1000)),
    ]);
    return rows.map(toRevision);
  }

  async policyMigration(clusterId: string): Promise<PolicyMigrationMark | undefined> {
    const r = (await this.#db.all(SQL.policyMigration, [clusterId]))[0];
    return r
      ? { clusterId: text(r.cluster_id), at: num(r.at), created: num(r.created), existed: num(r.existed) }
      : undefined;
  }

  async markPolicyMigration(m: PolicyMigrationMark): Promise<boolean> {
    return (await this.#db.run(SQL.markPolicyMigration, [m.clusterId, m.at, m.created, m.existed])) > 0;
  }

  async adoptPolicies(clusterId: string): Promise<number> {
    if (clusterId === "") throw new StoreInputError("adoptPolicies: clusterId is required");
    return this.#db.transaction(async (tx) => {
      const adopted = await tx.run(SQL.adoptPolicies, [clusterId]);
      await tx.run(SQL.dropUnscopedPolicies);
      return adopted;
    });
  }

  async acquireLease({ clusterId, holder, url, now, ttlMs, force }: LeaseRequest): Promise<ClusterLease> {
    validateLease(clusterId, holder, now, ttlMs);
    return this.#db.transaction(async (tx) => {
      await tx.run(SQL.acquireLease, [clusterId, holder, url, now, now + ttlMs, force ? 1 : 0]);
      return toLease(one(await tx.all(SQL.lease, [clusterId])));
    });
  }

  async renewLeases(
    holder: string,
    clusterIds: readonly string[],
    now: number,
    ttlMs: number,
  ): Promise<string[]> {
    if (clusterIds.length === 0) return [];
    for (const id of clusterIds) validateLease(id, holder, now, ttlMs);
    return this.#db.transaction(async (tx) => {
      const kept: string[] = [];
      for (const id of clusterIds) {
        if ((await tx.run(SQL.renewLease, [id, holder, now, now + ttlMs])) > 0) kept.push(id);
      }
      return kept;
    });
  }

  async leases(): Promise<ClusterLease[]> {
    return (await this.#db.all(SQL.leases)).map(toLease);
  }

  async releaseLease(clusterId: string, holder: string): Promise<boolean> {
    // Expired at the epoch: free for anyone, and the row keeps its generation.
    return (await this.#db.run(SQL.releaseLease, [clusterId, holder, 0])) > 0;
  }

  async compact(now: number): Promise<CompactResult> {
    if (!Number.isSafeInteger(now)) throw new StoreInputError("compact: now must be an integer epoch ms");
    const tiers = this.retention.tiers;
    return this.#db.transaction(async (tx) => {
      const result: CompactResult = { rolledUp: {}, deleted: {}, deletedEvents: 0 };
      const states = await tierStates(
        tx,
        tiers.map((t) => t.stepMs),
      );
      const rollupDelay = this.retention.rollupDelayMs ?? 2 * this.#rawStep;
      // Roll up finest first: tier i reads tier i-1, which is already rolled up at least as far.
      for (let i = 1; i < tiers.length; i++) {
        const fine = tiers[i - 1];
        const coarse = tiers[i];
        const state = states[i];
        if (!fine || !coarse || !state) continue;
        const start = Math.max(state.rolledUpTo, NEVER);
        const end = alignDown(now - rollupDelay, coarse.stepMs);
        result.rolledUp[coarse.stepMs] = 0;
        if (end <= start) continue;
        const params = [coarse.stepMs, fine.stepMs, start, end];
        const points = await tx.run(SQL.rollupPoints, params);
        const gaps = await tx.run(SQL.rollupGaps, params);
        result.rolledUp[coarse.stepMs] = points + gaps;
        state.rolledUpTo = end;
      }
      // Retention: a tier's rows go only once the next tier has rolled them up; cut-offs are
      // aligned to the next tier's buckets so no bucket is half in one tier and half in the other.
      for (let i = 0; i < tiers.length; i++) {
        const tier = tiers[i];
        const state = states[i];
        if (!tier || !state) continue;
        const next = tiers[i + 1];
        const nextState = states[i + 1];
        let cutoff = alignDown(now - tier.retainMs, next?.stepMs ?? tier.stepMs);
        if (nextState) cutoff = Math.min(cutoff, nextState.rolledUpTo);
        result.deleted[tier.stepMs] = 0;
        if (cutoff > state.retainedFrom) {
          result.deleted[tier.stepMs] = await tx.run(SQL.deleteSeries, [tier.stepMs, cutoff]);
          state.retainedFrom = cutoff;
        }
      }
      for (let i = 0; i < tiers.length; i++) {
        const tier = tiers[i];
        const state = states[i];
        if (!tier || !state) continue;
        await tx.run(SQL.upsertTier, [tier.stepMs, sqlTime(state.retainedFrom), sqlTime(state.rolledUpTo)]);
      }
      const eventCutoff = now - this.retention.eventRetainMs;
      result.deletedEvents += await tx.run(SQL.deleteLifecycle, [eventCutoff]);
      result.deletedEvents += await tx.run(SQL.deleteDisruptions, [eventCutoff]);
      result.deletedEvents += await tx.run(SQL.deleteWarmupEvents, [eventCutoff]);
      result.deletedEvents += await tx.run(SQL.deleteColdStarts, [eventCutoff]);
      result.deletedEvents += await tx.run(SQL.deleteRepairs, [eventCutoff]);
      result.deletedEvents += await tx.run(SQL.deleteLateAnswers, [eventCutoff]);
      // Savings rows are sums, kept as long as the coarsest series tier keeps its points.
      const longest = Math.max(...tiers.map((t) => t.retainMs));
      await tx.run(SQL.deleteSavings, [now - longest]);
      // Pod counts serve what-if's replay of the last 24 h: kept a day and an hour (or the raw tier's span).
      await tx.run(SQL.deleteWorkloadPods, [now - Math.max(25 * 3_600_000, tiers[0]?.retainMs ?? 0)]);
      return result;
    });
  }

  async close(): Promise<void> {
    await this.#db.close();
  }
}

async function insertSeriesRow(tx: SqlExecutor, r: SeriesRow): Promise<number> {
  if (r.kind === "gap") return tx.run(SQL.insertGap, [r.clusterId, r.resolutionMs, r.ts, r.until]);
  return tx.run(SQL.insertPoint, [
    r.clusterId,
    r.resolutionMs,
    r.nodePool,
    r.capacityType,
    r.ts,
    r.nodes,
    r.nodesMax,
    r.vcpu,
    r.memoryBytes,
    r.costPerHour,
    r.samples,
  ]);
}

async function tierStates(db: SqlExecutor, steps: readonly number[]): Promise<TierState[]> {
  const byStep = new Map<number, SqlRow>();
  for (const r of await db.all(SQL.tiers)) byStep.set(num(r.resolution_ms), r);
  return steps.map((step, i) => {
    const r = byStep.get(step);
    const time = (v: unknown, none: number): number => (v === null || v === undefined ? none : num(v));
    return {
      retainedFrom: time(r?.retained_from, -Infinity),
      rolledUpTo: i === 0 ? Infinity : time(r?.rolled_up_to, -Infinity),
    };
  });
}

function sqlTime(t: number): number | null {
  return Number.isFinite(t) ? t : null;
}

function limit(q: EventQuery): number {
  const n = q.limit ?? 10_000;
  if (!Number.isSafeInteger(n) || n <= 0) throw new StoreInputError(`query: bad limit ${n}`);
  return n;
}

function one(rows: SqlRow[]): SqlRow {
  const r = rows[0];
  if (!r) throw new Error("the database returned no row where one was expected");
  return r;
}

function toCluster(r: SqlRow): ClusterRecord {
  return {
    id: text(r.id),
    name: text(r.name),
    firstSeen: num(r.first_seen),
    lastSeen: num(r.last_seen),
    versions: JSON.parse(text(r.versions)) as Record<string, string>,
  };
}

function toCheckpoint(r: SqlRow): IngestCheckpoint {
  return {
    clusterId: text(r.cluster_id),
    epoch: text(r.epoch),
    sequence: num(r.sequence),
    updatedAt: num(r.updated_at),
  };
}

function toLease(r: SqlRow): ClusterLease {
  return {
    clusterId: text(r.cluster_id),
    holder: text(r.holder),
    url: text(r.url),
    generation: num(r.generation),
    acquiredAt: num(r.acquired_at),
    renewedAt: num(r.renewed_at),
    expiresAt: num(r.expires_at),
  };
}

function toPolicy(r: SqlRow): PolicyRecord {
  return {
    clusterId: text(r.cluster_id),
    kind: text(r.kind) as PolicyKind,
    key: text(r.key),
    value: JSON.parse(text(r.value)) as unknown,
    updatedAt: num(r.updated_at),
  };
}

function toPoint(r: SqlRow): SeriesPoint {
  return {
    kind: "point",
    clusterId: text(r.cluster_id),
    nodePool: text(r.node_pool),
    capacityType: text(r.capacity_type),
    ts: num(r.ts),
    resolutionMs: num(r.resolution_ms),
    nodes: num(r.nodes),
    nodesMax: num(r.nodes_max),
    vcpu: num(r.vcpu),
    memoryBytes: num(r.memory_bytes),
    costPerHour: num(r.cost_per_hour),
    samples: num(r.samples),
  };
}

function toGap(r: SqlRow): SeriesGap {
  return {
    kind: "gap",
    clusterId: text(r.cluster_id),
    ts: num(r.ts),
    until: num(r.until_ts),
    resolutionMs: num(r.resolution_ms),
  };
}
