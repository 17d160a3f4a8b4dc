// Core's durable storage, behind one interface with two implementations: SQLite (node:sqlite,
// one file, the default) and PostgreSQL (pg, for shared or managed deployments). Both run the
// same SQL (src/core/store/sql-store.ts) over a small driver, and pass the same contract suite.
//
// Writes are idempotent: every table has a natural unique key and duplicates are ignored, so a
// batch resent after a reconnect (or a crash before the ack) is harmless. A batch and its ingest
// checkpoint commit in one transaction, so the acked sequence never runs ahead of the rows.
import type { RetentionPolicy } from "../history/downsample.ts";
import { validateSample } from "../history/series.ts";
import type { SeriesRow } from "../history/series.ts";

export type { SeriesGap, SeriesPoint, SeriesRow } from "../history/series.ts";
export type { RetentionPolicy, RetentionTier } from "../history/downsample.ts";

export interface ClusterHello {
  id: string;
  name: string;
  /** Component versions from the agent's hello (agent, kubernetes, karpenter, …). */
  versions: Record<string, string>;
  at: number;
}

export interface ClusterRecord {
  id: string;
  name: string;
  firstSeen: number;
  lastSeen: number;
  versions: Record<string, string>;
}

export const lifecyclePhases = ["Launched", "Registered", "Initialized", "Disrupted", "Terminated"] as const;
export type LifecyclePhase = (typeof lifecyclePhases)[number];

/** One NodeClaim lifecycle transition. Unique per (cluster, NodeClaim uid, phase): first one wins. */
export interface LifecycleEvent {
  clusterId: string;
  nodeClaim: string;
  nodeClaimUid: string;
  nodePool: string;
  nodeName?: string | undefined;
  instanceType?: string | undefined;
  capacityType?: string | undefined;
  zone?: string | undefined;
  phase: LifecyclePhase;
  reason?: string | undefined;
  at: number;
}

export const disruptionSources = ["event", "condition"] as const;
export type DisruptionSource = (typeof disruptionSources)[number];

/**
 * A NodeClaim disrupted by Karpenter. Unique per (cluster, NodeClaim, reason): the same disruption
 * seen through an Event and through the DisruptionReason condition is stored once (first wins).
 */
export interface Disruption {
  clusterId: string;
  nodeClaim: string;
  nodePool: string;
  reason: string;
  at: number;
  source: DisruptionSource;
}

/**
 * The last sequence core has durably stored (and may ack) for a cluster's stream. `epoch` names
 * the agent's sequence space: a new epoch (agent restarted, counting from scratch) replaces the
 * checkpoint; within an epoch it only moves forward.
 */
export const warmupEventTypes = ["created", "hit", "miss", "prepull"] as const;
export type WarmupEventType = (typeof warmupEventTypes)[number];

/**
 * One warmup controller event (src/warmup/stats.ts WarmupEvent), as stored: append-only, unique
 * per (cluster, pool, type, at, node, pod, image, reason), so a batch re-sent after a failed
 * write is not counted twice. `reason` is a miss's reason or a pre-pull's outcome.
 */
export interface StoredWarmupEvent {
  clusterId: string;
  pool: string;
  type: WarmupEventType;
  at: number;
  node?: string | undefined;
  pod?: string | undefined;
  image?: string | undefined;
  reason?: string | undefined;
  /** hit, miss: when the warm node's warm time began (the warmup's start; its cost counts from here). */
  since?: number | undefined;
  /** hit: the hitting pod's own start, pending → running, seconds. */
  seconds?: number | undefined;
  /** hit: what it saved against the pool's cold start, seconds (core's, set once when stored). */
  saved?: number | undefined;
}

/**
 * A cold start: a pod that waited for a new node (its node was created after it), pending →
 * running. Core records them from its state as pods become Ready (core/warmup/cold-starts.ts); a
 * warmup hit's time saved is measured against their median. Unique per (cluster, pod, at).
 */
export interface ColdStart {
  clusterId: string;
  pool: string;
  /** namespace/name */
  pod: string;
  node: string;
  /** When the pod became Ready, epoch ms. */
  at: number;
  seconds: number;
}

/**
 * One self-heal action of spot placement: a `WaveSpotRepair` Event the webhook's repair recorded
 * (ADR 0006), forwarded by the agent. Unique per (cluster, event): the Event's uid, else its
 * namespace/name, so a re-sent Event (snapshot, reconnect) is stored once.
 */
export interface SpotRepair {
  clusterId: string;
  event: string;
  /** namespace/Kind/name of the workload the repair acted for. */
  workload: string;
  /** Evict, EvictBlocked, Fallback, … ('' when the Event named none). */
  action: string;
  /** namespace/name of the pod acted on. */
  pod: string;
  type: "Normal" | "Warning";
  /** Why, without the workload prefix. */
  message: string;
  at: number;
}

/**
 * Admissions of one workload the webhook answered too late (after its deadline's fallback went
 * out): one `WaveSpotLateAnswer` Event, the webhook's count over up to a minute (late-events.ts).
 * Unique per (cluster, event), as repairs are.
 */
export interface SpotLateAnswer {
  clusterId: string;
  event: string;
  /** namespace/Kind/name of the workload whose pods were answered late. */
  workload: string;
  /** Late answers the Event carries (>= 1). */
  count: number;
  at: number;
}

/** One workload's late answers summed over a range. */
/** How many disruptions a pool had for one reason in a range (an exact count, never a page). */
export interface DisruptionCount {
  nodePool: string;
  reason: string;
  count: number;
}

export interface LateAnswerTotal {
  workload: string;
  count: number;
}

export interface RepairQuery extends EventQuery {
  /** One workload (namespace/Kind/name); default every workload. */
  workload?: string | undefined;
}

export const savingsScopes = ["pool", "workload"] as const;
export type SavingsScope = (typeof savingsScopes)[number];

/**
 * What one NodePool's or workload's capacity cost over one history bucket [ts, ts + stepMs):
 * as it ran (`actualUsd`) and the same capacity all on-demand (`onDemandUsd`). Dollars, not
 * rates, so a range is a plain sum. Unique per (cluster, scope, name, ts): first write wins.
 */
export interface SavingsRow {
  clusterId: string;
  scope: SavingsScope;
  /** A NodePool's name, or a workload's namespace/Kind/name. */
  name: string;
  ts: number;
  stepMs: number;
  actualUsd: number;
  onDemandUsd: number;
}

/** Sums of a scope's rows over a range, and the buckets they cover. */
export interface SavingsTotal {
  scope: SavingsScope;
  name: string;
  actualUsd: number;
  onDemandUsd: number;
  buckets: number;
  /** Start of the first and end of the last bucket summed. */
  from: number;
  to: number;
}

/**
 * How many live pods one workload (namespace/Kind/name) had at the end of one history bucket
 * [ts, ts + stepMs). Unique per (cluster, workload, ts): first write wins. What-if replays these.
 */
export interface WorkloadPodsRow {
  clusterId: string;
  workload: string;
  ts: number;
  stepMs: number;
  pods: number;
  /**
   * The workload's newest revision then (its pods' pod-template-hash, a StatefulSet's
   * controller-revision-hash: the revision whose first live pod is the newest) and how many of
   * the live pods run it. A change of revision is a rollout; while older revisions still run,
   * `pods` counts the rollout's surge too. Absent on rows from before (schema 12) or without one.
   */
  revision?: string;
  revisionPods?: number;
}

export interface IngestCheckpoint {
  clusterId: string;
  epoch: string;
  sequence: number;
  updatedAt: number;
}

export interface WriteBatch {
  lifecycle?: readonly LifecycleEvent[];
  disruptions?: readonly Disruption[];
  series?: readonly SeriesRow[];
  repairs?: readonly SpotRepair[];
  lateAnswers?: readonly SpotLateAnswer[];
  /** Committed together with the rows above. */
  checkpoint?: { clusterId: string; epoch: string; sequence: number; at: number };
}

/** How many rows were new (duplicates are ignored), and the checkpoint after the write. */
export interface WriteResult {
  lifecycle: number;
  disruptions: number;
  series: number;
  /** Set when the batch had repairs. */
  repairs?: number;
  /** Set when the batch had late-answer rows: how many were new. */
  lateAnswers?: number;
  checkpoint?: IngestCheckpoint;
}

export const policyKinds = ["spot", "warmup"] as const;
export type PolicyKind = (typeof policyKinds)[number];

/** A policy of one cluster (policies never act on another cluster than their own). */
export interface PolicyRecord {
  clusterId: string;
  kind: PolicyKind;
  key: string;
  value: unknown;
  updatedAt: number;
}

export type PolicyCrKind = "SpotPolicy" | "WarmupPolicy";

/** One version of a policy custom resource as core saw it streamed. */
export interface PolicyRevision {
  clusterId: string;
  kind: PolicyCrKind;
  /** "namespace/name" (SpotPolicy) or "name" (WarmupPolicy). */
  name: string;
  resourceVersion: string;
  /** Epoch ms core received it. */
  at: number;
  deleted: boolean;
  /** The field manager of its last change (managedFields' newest entry), "" unknown. */
  manager: string;
  /** Its wave.sh/changed-by annotation (changes made through Wave), "" otherwise. */
  changedBy: string;
  spec: unknown;
}

export interface PolicyMigrationMark {
  clusterId: string;
  at: number;
  /** CRs the migration created, and stored policies whose CR existed already (left as they were). */
  created: number;
  existed: number;
}

/**
 * One change made through Wave (issue 31): who (subject, groups, how they signed in), what (the
 * action on an object, before/after summaries), when, and from where (client address; ui, api or
 * cli). Append-only; never pruned by retention (an audit that forgets is no audit).
 */
export interface AuditEntry {
  clusterId: string;
  at: number;
  subject: string;
  groups: string[];
  /** How the caller signed in: token, oidc or proxy. */
  source: string;
  /** The client: ui, api or cli. */
  via: string;
  /** The caller's address as core saw it. */
  address: string;
  /** e.g. "spot-policy.put", "spot-policy.delete", "warmup-policy.put", "thrashing.apply". */
  action: string;
  /** The object changed, e.g. "SpotPolicy deployment/team-a/web", "NodePool default". */
  object: string;
  /** Short summaries (JSON of the changed fields), null where there was nothing (create, delete). */
  before: string | null;
  after: string | null;
}

export interface AuditRecord extends AuditEntry {
  id: number;
}

export const AUDIT_TEXT_MAX = 4096;

/** Checks an audit entry before it is stored; throws StoreInputError. */
export function validateAudit(e: AuditEntry): void {
  const text = (name: string, v: unknown, max = 512, empty = false): void => {
    if (typeof v !== "string" || (!empty && v === "") || v.length > max)
      throw new StoreInputError(`audit ${name}: a string of 1..${max} characters is required`);
  };
  text("clusterId", e.clusterId);
  if (!Number.isSafeInteger(e.at) || e.at < 0) throw new StoreInputError("audit at: epoch ms required");
  text("subject", e.subject);
  if (!Array.isArray(e.groups) || e.groups.length > 256)
    throw new StoreInputError("audit groups: at most 256");
  for (const g of e.groups) text("group", g);
  text("source", e.source, 16);
  text("via", e.via, 16);
  text("address", e.address, 64, true);
  text("action", e.action, 64);
  text("object", e.object);
  for (const [k, v] of [
    ["before", e.before],
    ["after", e.after],
  ] as const)
    if (v !== null) text(k, v, AUDIT_TEXT_MAX, true);
}

/**
 * A console sign-in (OIDC), kept in the store so every core replica knows it. `idHash` is the
 * SHA-256 of the session id the browser's cookie carries: the store never holds a usable cookie,
 * nor any token of the provider's (issue 42: the ID token kept here worked as an admin bearer).
 */
export interface ConsoleSession {
  idHash: string;
  subject: string;
  name: string;
  groups: string[];
  expiresAt: number;
}

export interface AuditQuery {
  clusterId: string;
  /** Newest first; entries with id < before (paging). */
  before?: number;
  limit: number;
}

/**
 * Which core replica owns a cluster's live state (ADR 0012): the one its agent streams to. Others
 * read through `url` while `expiresAt` is ahead; `generation` grows at every change of holder.
 */
export interface ClusterLease {
  clusterId: string;
  holder: string;
  /** The holder's API base URL, as other replicas reach it. */
  url: string;
  generation: number;
  acquiredAt: number;
  renewedAt: number;
  expiresAt: number;
}

/** A replica asking for a cluster's lease (Store.acquireLease). */
export interface LeaseRequest {
  clusterId: string;
  holder: string;
  /** The holder's API base URL, as other replicas reach it. */
  url: string;
  now: number;
  ttlMs: number;
  /** Take it even from a live holder. */
  force: boolean;
}

export interface TimeRange {
  clusterId: string;
  /** Inclusive, epoch ms. */
  from: number;
  /** Exclusive, epoch ms. */
  to: number;
  nodePool?: string | undefined;
}

export interface EventQuery extends TimeRange {
  /** Default 10 000. */
  limit?: number | undefined;
}

export interface SeriesQuery extends TimeRange {
  capacityType?: string | undefined;
  /** Bucket width of the answer; defaults to the raw step. Coarser tiers answer for old ranges. */
  stepMs?: number | undefined;
}

export interface LatestSeries {
  ts: number;
  series: { nodePool: string; capacityType: string }[];
}

export interface CompactResult {
  /** New or updated rows per tier step, from rolling up the finer tier. */
  rolledUp: Record<number, number>;
  /** Rows deleted by retention, per tier step. */
  deleted: Record<number, number>;
  /** Lifecycle events, disruptions, warmup events and spot repairs older than `eventRetainMs`. */
  deletedEvents: number;
}

export interface Store {
  readonly backend: "sqlite" | "postgres";
  readonly retention: RetentionPolicy;

  /** Records an agent hello: creates the cluster or updates its name, versions and lastSeen. */
  upsertCluster(hello: ClusterHello): Promise<ClusterRecord>;
  getCluster(id: string): Promise<ClusterRecord | undefined>;
  listClusters(): Promise<ClusterRecord[]>;

  /** Writes rows and the checkpoint atomically; duplicates are ignored. Bad input writes nothing. */
  write(batch: WriteBatch): Promise<WriteResult>;
  checkpoint(clusterId: string): Promise<IngestCheckpoint | undefined>;

  lifecycle(q: EventQuery): Promise<LifecycleEvent[]>;
  /**
   * Every lifecycle row of the newest NodeClaim named `name` or whose Node was `name`, oldest
   * first (the node drawer of a NodeClaim that is gone); empty when the store has none.
   */
  nodeClaimLifecycle(clusterId: string, name: string): Promise<LifecycleEvent[]>;
  disruptions(q: EventQuery): Promise<Disruption[]>;
  /** Disruptions in [from, to) counted per pool and reason, by pool then reason. */
  disruptionCounts(q: TimeRange): Promise<DisruptionCount[]>;
  /** Points and gaps in [from, to), re-bucketed to `stepMs`; gaps apply to every series. */
  series(q: SeriesQuery): Promise<SeriesRow[]>;
  /** The newest raw bucket of a cluster and its series (to resume a recorder after a restart). */
  latestSeries(clusterId: string): Promise<LatestSeries | undefined>;

  /** Appends warmup events in one transaction; returns how many were new. Bad input writes nothing. */
  writeWarmupEvents(events: readonly StoredWarmupEvent[]): Promise<number>;
  /** Warmup events in [from, to), oldest first (then in insertion order). */
  warmupEvents(q: EventQuery): Promise<StoredWarmupEvent[]>;
  /** Appends cold starts; returns how many were new (a pod's start seen again adds nothing). */
  writeColdStarts(rows: readonly ColdStart[]): Promise<number>;
  /** Cold starts whose pod became Ready in [from, to), oldest first. */
  coldStarts(q: EventQuery): Promise<ColdStart[]>;

  /** Spot repairs in [from, to), oldest first. */
  spotRepairs(q: RepairQuery): Promise<SpotRepair[]>;
  /** Late answers per workload whose Event falls in [from, to), by workload. */
  spotLateAnswers(q: TimeRange): Promise<LateAnswerTotal[]>;

  /** Appends savings rows in one transaction; returns how many were new. Bad input writes nothing. */
  writeSavings(rows: readonly SavingsRow[]): Promise<number>;
  /** Per scope and name, the sums of rows whose bucket starts in [from, to). */
  savings(q: TimeRange): Promise<SavingsTotal[]>;

  /** Appends workload pod counts in one transaction; returns how many were new. Bad input writes nothing. */
  writeWorkloadPods(rows: readonly WorkloadPodsRow[]): Promise<number>;
  /** A cluster's workload pod counts whose bucket starts in [from, to), oldest first. */
  workloadPods(q: TimeRange): Promise<WorkloadPodsRow[]>;

  putPolicy(
    clusterId: string,
    kind: PolicyKind,
    key: string,
    value: unknown,
    at: number,
  ): Promise<PolicyRecord>;
  getPolicy(clusterId: string, kind: PolicyKind, key: string): Promise<PolicyRecord | undefined>;
  listPolicies(clusterId: string, kind: PolicyKind): Promise<PolicyRecord[]>;
  deletePolicy(clusterId: string, kind: PolicyKind, key: string): Promise<boolean>;
  /** Stores a console session (replacing one with the same idHash); expired ones are dropped. */
  putSession(session: ConsoleSession, now: number): Promise<void>;
  /** The session with this idHash while it has not expired at `now`. */
  getSession(idHash: string, now: number): Promise<ConsoleSession | undefined>;
  deleteSession(idHash: string): Promise<void>;

  /** Records one change made through Wave (validated; bad input writes nothing). */
  appendAudit(entry: AuditEntry): Promise<AuditRecord>;
  /** A cluster's audit entries, newest first. */
  listAudit(q: AuditQuery): Promise<AuditRecord[]>;

  /**
   * Gives policies stored before they had a cluster (schema 3) to `clusterId`, the cluster core
   * acted on then; a policy the cluster already has wins. Returns how many were adopted.
   */
  adoptPolicies(clusterId: string): Promise<number>;

  /**
   * Keeps one version of a policy CR (issue 31: the CRs are the source of truth, core keeps their
   * history). Idempotent per resourceVersion; returns whether it was new.
   */
  recordPolicyRevision(r: PolicyRevision): Promise<boolean>;
  /** A policy CR's versions, newest first (at most `limit`, default 100). */
  policyRevisions(
    clusterId: string,
    kind: PolicyCrKind,
    name: string,
    limit?: number,
  ): Promise<PolicyRevision[]>;
  /**
   * A cluster's policy CR versions changed by another field manager than Wave's own two (kubectl,
   * Argo CD, Flux: the changes made outside Wave), newest first.
   */
  foreignPolicyRevisions(
    clusterId: string,
    waveManagers: readonly [string, string],
    limit?: number,
  ): Promise<PolicyRevision[]>;
  /** When the cluster's stored policies became CRs (the one-time migration), if they did. */
  policyMigration(clusterId: string): Promise<PolicyMigrationMark | undefined>;
  /** Marks the migration done; false when it was marked already (another replica, a re-run). */
  markPolicyMigration(m: PolicyMigrationMark): Promise<boolean>;

  /**
   * Takes a cluster's lease for `holder`: when it is free or expired, or always with `force` (the
   * cluster's agent now streams to this replica: the newest stream wins). Returns the lease as it
   * stands after the call (another holder's when not taken).
   */
  acquireLease(request: LeaseRequest): Promise<ClusterLease>;
  /** Extends the leases `holder` still holds among `clusterIds`; returns those (the others were taken). */
  renewLeases(holder: string, clusterIds: readonly string[], now: number, ttlMs: number): Promise<string[]>;
  /** Every lease row (expired ones included). */
  leases(): Promise<ClusterLease[]>;
  /** Gives a lease up (a clean shutdown), so another replica can take it at once. */
  releaseLease(clusterId: string, holder: string): Promise<boolean>;

  /** Rolls finer tiers up into coarser ones, then applies retention. Safe to run at any time. */
  compact(now: number): Promise<CompactResult>;
  close(): Promise<void>;
}

// ---- input validation: a bad row fails the whole batch before anything is written ----

export class StoreInputError extends Error {
  override name = "StoreInputError";
}

function need(cond: boolean, msg: string): asserts cond {
  if (!cond) throw new StoreInputError(msg);
}

const isText = (v: unknown): v is string => typeof v === "string" && v !== "";
const isOptText = (v: unknown): boolean => v === undefined || v === null || typeof v === "string";
const isTime = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v);

export function validateHello(h: ClusterHello): void {
  need(isText(h.id), "cluster hello: id is required");
  need(typeof h.name === "string", `cluster ${h.id}: name must be a string`);
  need(isTime(h.at), `cluster ${h.id}: at must be an integer epoch ms`);
  need(typeof h.versions === "object" && !Array.isArray(h.versions), `cluster ${h.id}: bad versions`);
  for (const [k, v] of Object.entries(h.versions)) {
    need(typeof v === "string", `cluster ${h.id}: version ${k} must be a string`);
  }
}

export function validateBatch(b: WriteBatch): void {
  for (const e of b.lifecycle ?? []) {
    const where = `lifecycle event ${e.nodeClaim}/${e.phase}`;
    need(isText(e.clusterId) && isText(e.nodeClaim) && isText(e.nodeClaimUid), `${where}: ids are required`);
    need(typeof e.nodePool === "string", `${where}: nodePool must be a string`);
    need((lifecyclePhases as readonly string[]).includes(e.phase), `${where}: unknown phase`);
    need(isTime(e.at), `${where}: at must be an integer epoch ms`);
    for (const f of ["nodeName", "instanceType", "capacityType", "zone", "reason"] as const) {
      need(isOptText(e[f]), `${where}: ${f} must be a string`);
    }
  }
  for (const d of b.disruptions ?? []) {
    const where = `disruption ${d.nodeClaim}`;
    need(isText(d.clusterId) && isText(d.nodeClaim), `${where}: ids are required`);
    need(typeof d.nodePool === "string" && isText(d.reason), `${where}: nodePool and reason are required`);
    need((disruptionSources as readonly string[]).includes(d.source), `${where}: unknown source`);
    need(isTime(d.at), `${where}: at must be an integer epoch ms`);
  }
  for (const r of b.series ?? []) {
    need(isText(r.clusterId), "series row: clusterId is required");
    need(isTime(r.ts), `series row ${r.clusterId}: ts must be an integer epoch ms`);
    need(Number.isSafeInteger(r.resolutionMs) && r.resolutionMs > 0, "series row: bad resolutionMs");
    if (r.kind === "gap") {
      need(isTime(r.until) && r.until > r.ts, `gap ${r.clusterId}: until must be after ts`);
    } else {
      // Rows may come from untyped input (decoded messages): check the kind at run time too.
      need((r as { kind: unknown }).kind === "point", `series row ${r.clusterId}: unknown kind`);
      try {
        validateSample(r);
      } catch (err) {
        throw new StoreInputError((err as Error).message);
      }
      need(typeof r.nodesMax === "number" && r.nodesMax >= r.nodes, `series row: nodesMax < nodes`);
      need(
        Number.isSafeInteger(r.samples) && r.samples > 0,
        `series row: samples must be a positive integer`,
      );
    }
  }
  for (const r of b.repairs ?? []) {
    const where = `spot repair ${r.event}`;
    need(isText(r.clusterId) && isText(r.event), `${where}: ids are required`);
    need(isText(r.workload), `${where}: workload is required`);
    // Rows may come from untyped input: check the type at run time too.
    const type: unknown = r.type;
    need(type === "Normal" || type === "Warning", `${where}: type must be Normal or Warning`);
    for (const f of ["action", "pod", "message"] as const)
      need(typeof r[f] === "string", `${where}: ${f} must be a string`);
    need(isTime(r.at), `${where}: at must be an integer epoch ms`);
  }
  for (const r of b.lateAnswers ?? []) {
    const where = `spot late answer ${r.event}`;
    need(isText(r.clusterId) && isText(r.event), `${where}: ids are required`);
    need(isText(r.workload), `${where}: workload is required`);
    need(Number.isSafeInteger(r.count) && r.count > 0, `${where}: count must be an integer > 0`);
    need(isTime(r.at), `${where}: at must be an integer epoch ms`);
  }
  const c = b.checkpoint;
  if (c) {
    need(isText(c.clusterId) && typeof c.epoch === "string", "checkpoint: clusterId and epoch are required");
    need(Number.isSafeInteger(c.sequence) && c.sequence >= 0, "checkpoint: sequence must be an integer >= 0");
    need(isTime(c.at), "checkpoint: at must be an integer epoch ms");
  }
}

export function validateSavings(rows: readonly SavingsRow[]): void {
  for (const r of rows) {
    const where = `savings row ${r.scope}/${r.name}`;
    need(isText(r.clusterId), `${where}: clusterId is required`);
    need((savingsScopes as readonly string[]).includes(r.scope), `${where}: unknown scope`);
    need(isText(r.name), `${where}: name is required`);
    need(isTime(r.ts), `${where}: ts must be an integer epoch ms`);
    need(Number.isSafeInteger(r.stepMs) && r.stepMs > 0, `${where}: stepMs must be a positive integer`);
    for (const f of ["actualUsd", "onDemandUsd"] as const) {
      need(Number.isFinite(r[f]) && r[f] >= 0, `${where}: ${f} must be a finite number >= 0`);
    }
  }
}

export function validateWarmupEvents(events: readonly StoredWarmupEvent[]): void {
  for (const e of events) {
    const where = `warmup event ${e.pool}/${e.type}`;
    need(isText(e.clusterId), `${where}: clusterId is required`);
    need(typeof e.pool === "string", `${where}: pool must be a string`);
    need((warmupEventTypes as readonly string[]).includes(e.type), `${where}: unknown type`);
    need(isTime(e.at), `${where}: at must be an integer epoch ms`);
    for (const f of ["node", "pod", "image", "reason"] as const) {
      need(isOptText(e[f]), `${where}: ${f} must be a string`);
    }
    need(e.since === undefined || isTime(e.since), `${where}: since must be an integer epoch ms`);
    for (const f of ["seconds", "saved"] as const) {
      const v = e[f];
      need(v === undefined || (Number.isFinite(v) && v >= 0), `${where}: ${f} must be a number ≥ 0`);
    }
  }
}

export function validateColdStarts(rows: readonly ColdStart[]): void {
  for (const r of rows) {
    const where = `cold start ${r.pod}`;
    need(
      isText(r.clusterId) && isText(r.pool) && isText(r.pod),
      `${where}: cluster, pool and pod are required`,
    );
    need(typeof r.node === "string", `${where}: node must be a string`);
    need(isTime(r.at), `${where}: at must be an integer epoch ms`);
    need(Number.isFinite(r.seconds) && r.seconds >= 0, `${where}: seconds must be a number ≥ 0`);
  }
}

export function validatePolicy(
  clusterId: string,
  kind: PolicyKind,
  key: string,
  value: unknown,
  at: number,
): string {
  need(isText(clusterId), "policy: clusterId is required");
  need((policyKinds as readonly string[]).includes(kind), `policy: unknown kind ${kind}`);
  need(isText(key), "policy: key is required");
  need(isTime(at), "policy: at must be an integer epoch ms");
  const json = value === undefined ? undefined : JSON.stringify(value);
  need(typeof json === "string", `policy ${kind}/${key}: value must be JSON-serialisable`);
  return json;
}

export function validateLease(clusterId: string, holder: string, now: number, ttlMs: number): void {
  need(isText(clusterId) && isText(holder), "lease: clusterId and holder are required");
  need(isTime(now), "lease: now must be an integer epoch ms");
  need(Number.isSafeInteger(ttlMs) && ttlMs > 0, "lease: ttlMs must be a positive integer");
}

export function validateRange(q: TimeRange): void {
  need(isText(q.clusterId), "query: clusterId is required");
  need(isTime(q.from) && isTime(q.to), "query: from and to must be integer epoch ms");
  need(q.to >= q.from, "query: to must not be before from");
}

export function validateWorkloadPods(rows: readonly WorkloadPodsRow[]): void {
  for (const r of rows) {
    const where = `workload pods row ${r.workload}`;
    need(isText(r.clusterId), `${where}: clusterId is required`);
    need(isText(r.workload), `${where}: workload is required`);
    need(isTime(r.ts), `${where}: ts must be an integer epoch ms`);
    need(Number.isSafeInteger(r.stepMs) && r.stepMs > 0, `${where}: stepMs must be a positive integer`);
    need(Number.isSafeInteger(r.pods) && r.pods >= 0, `${where}: pods must be an integer >= 0`);
    need(
      (r.revision === undefined) === (r.revisionPods === undefined),
      `${where}: revision and revisionPods go together`,
    );
    if (r.revision !== undefined) {
      need(isText(r.revision) && r.revision.length <= 253, `${where}: revision must be 1–253 characters`);
      need(
        Number.isSafeInteger(r.revisionPods) &&
          (r.revisionPods ?? -1) >= 0 &&
          (r.revisionPods ?? 0) <= r.pods,
        `${where}: revisionPods must be an integer from 0 to pods`,
      );
    }
  }
}
