// Core's building blocks (core-component.ts, which `wave start` composes too): its history
// samplers, its /metrics figures, its side of warmup and the API + web UI.
// Connecting to the apiserver is in connect.ts (re-exported here), which the agent uses alone.
import { batchTouches } from "../core/ingest/sink.ts";
import { migrateStoredPolicies, policyRevisionOf } from "../console/policy-migration.ts";
import type { PolicyEdits } from "../core/ingest/policy-edits.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance } from "fastify";
import { DEFAULTS, type WaveConfig } from "../config/config.ts";
import { build, type ApiPlugin } from "../api/app.ts";
import { dashboardRoutes } from "../api/routes/dashboard.ts";
import { policyRoutes, type PolicyDeps } from "../api/routes/policies.ts";
import { readThrough, type ReadThroughOptions } from "../api/routes/read-through.ts";
import { savingsRoutes } from "../api/routes/clusters/savings.ts";
import { auditRoutes } from "../api/routes/audit.ts";
import { CONSOLE_FIELD_MANAGER, STATUS_FIELD_MANAGER } from "../objects/policy-crds.ts";
import { storeAudit } from "../api/audit.ts";
import { exposedTo } from "../api/metrics-filter.ts";
import { mayReadCluster } from "../api/identity.ts";
import { consoleIdentity, type IdentityConfig } from "./identity.ts";
import { SoleOwnership } from "../core/hub/ownership.ts";
import { consoleRoutes, type NodePoolPatcher } from "../api/routes/console.ts";
import { whatifRoutes, type WhatifDeps } from "../api/routes/whatif.ts";
import type { WhatifPool } from "../sim/whatif-pool.ts";
import type { ClusterHub } from "../core/hub/hub.ts";
import { runClusterSampler } from "../core/history/sampler.ts";
import { runSavingsSampler } from "../dashboard/savings-sampler.ts";
import { runBucketSampler } from "../dashboard/bucket-sampler.ts";
import { workloadPodCounts, workloadPodsRows } from "../dashboard/figures/workload-pods.ts";
import type { PoolSample } from "../core/history/series.ts";
import type { SavingsRow, Store } from "../core/store/store.ts";
import { savingsRates } from "../dashboard/figures/savings.ts";
import { warmCostReader } from "../metrics/warm-cost-reader.ts";
import { registerDashboardMetrics, storedSpotPolicies, type DashboardMetrics } from "../metrics/collector.ts";
import { poolSamplesOf } from "../dashboard/views.ts";
import type { PriceProvider } from "../pricing/types.ts";
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { CONTENT_TYPE, type Registry } from "../shared/metrics.ts";
import { warmupCounts, type WarmupTotals } from "../warmup/stats.ts";
import { ColdStartRecorder } from "../core/warmup/cold-starts.ts";
import type { ClusterState } from "../state/cluster.ts";

/**
 * A cluster's warmup hits, misses, time saved (priced at its measured cold starts) and warm cost
 * over core's window [from, to).
 */
export type WarmupTotalsOf = (
  clusterId: string,
) => WarmupTotals & Partial<{ warmCostUsd: number; from: number; to: number }>;
import { DurableWarmupStats } from "../core/warmup/stats-store.ts";
import { WarmupRelay, type PolicyRow } from "../core/warmup/relay.ts";
import { spotPoliciesOf } from "../console/policy-crs.ts";

export { connectCluster, userError } from "./connect.ts";

/** Pool samples (per capacity type) for the history recorder: the overview's figures (views.ts). */
export function poolSamples(
  hub: ClusterHub,
  clusterId: string,
  prices: PriceProvider,
): PoolSample[] | undefined {
  const entry = hub.get(clusterId);
  // No agent yet, or its stream is gone (the state is frozen): the recorder marks a gap rather
  // than repeating the last known state as if it were measured.
  if (!entry?.info || !entry.connected) return undefined;
  return poolSamplesOf(entry.state, prices);
}

/**
 * Every dashboard figure in core's /metrics (src/metrics), with prom-client's process and
 * event-loop metrics; feed its `events` the savings rows and warmup events.
 */
export function dashboardMetrics(o: {
  metrics: Registry;
  hub: ClusterHub;
  prices: PriceProvider;
  store: Store;
  clock: Clock;
}): DashboardMetrics {
  o.metrics.collectDefaults();
  return registerDashboardMetrics(o.metrics, {
    hub: o.hub,
    prices: o.prices,
    now: () => o.clock.now(),
    // The policies the API shows (routes/policies.ts): a cluster's SpotPolicy resources once core
    // holds it (issue 31), else those stored in core.
    spotPolicies: async (clusterId) =>
      o.hub.get(clusterId)
        ? spotPoliciesOf(o.hub.state(clusterId).spotPolicies()).policies
        : storedSpotPolicies(o.store, clusterId),
  });
}

/**
 * Core's history: the per-minute samplers (series and realized savings) of every cluster this core
 * owns (until `signal` aborts) and periodic compaction.
 */
export function startHistory(o: {
  store: Store;
  hub: ClusterHub;
  prices: PriceProvider;
  clock: Clock;
  log: Logger;
  signal: AbortSignal;
  /** Realized savings rows once written (Prometheus's counters). */
  onSavings?: (rows: readonly SavingsRow[]) => void;
}): Promise<() => Promise<void>> {
  const { store, clock, hub } = o;
  const owned = (): string[] => hub.clusters().flatMap((c) => (hub.owns(c.id) ? [c.id] : []));
  const sampling = runClusterSampler({
    stepMs: store.retention.tiers[0]?.stepMs ?? 60_000,
    clock,
    log: o.log,
    signal: o.signal,
    // Each cluster's series is written by the replica that owns it (ADR 0012): another replica's
    // frozen or empty copy of it must not write zeros or gaps into it.
    clusters: owned,
    snapshot: (id) => poolSamples(hub, id, o.prices),
    latest: (id) => store.latestSeries(id),
    write: async (rows) => {
      await store.write({ series: rows });
    },
  });
  const savings = runSavingsSampler({
    clusters: owned,
    stepMs: store.retention.tiers[0]?.stepMs ?? 60_000,
    clock,
    log: o.log,
    signal: o.signal,
    rates: (id) => {
      const entry = o.hub.get(id);
      return entry?.info && entry.connected ? savingsRates(entry.state, o.prices) : undefined;
    },
    write: async (rows) => {
      await store.writeSavings(rows);
    },
    ...(o.onSavings ? { onWritten: o.onSavings } : {}),
  });
  // Pods per workload, the demand `wave whatif` replays (src/sim/cluster-whatif.ts).
  const podCounts = runBucketSampler({
    what: "workload pods",
    clusters: owned,
    stepMs: store.retention.tiers[0]?.stepMs ?? 60_000,
    clock,
    log: o.log,
    signal: o.signal,
    rows: (id, ts) => {
      const entry = o.hub.get(id);
      if (!entry?.info || !entry.connected) return undefined;
      const stepMs = store.retention.tiers[0]?.stepMs ?? 60_000;
      return workloadPodsRows(workloadPodCounts(entry.state.pods()), { clusterId: id, ts, stepMs });
    },
    write: async (rows) => {
      await store.writeWorkloadPods(rows);
    },
  });
  const compaction = setInterval(() => void store.compact(clock.now()).catch(() => undefined), 10 * 60_000);
  compaction.unref();
  // The sampler ends when `signal` aborts; waiting for it keeps its last write off a closed store.
  return Promise.resolve(async () => {
    clearInterval(compaction);
    await Promise.all([sampling, savings, podCounts]);
  });
}

/**
 * Core's side of the warmup controllers beside the agents (ADR 0014): the relay the ingest core
 * sends policies and stores events through, and each cluster's counters for the dashboard.
 */
export function coreWarmup(o: {
  store: Store;
  /** Whose clusters' states show the cold starts a hit is measured against. */
  hub: {
    clusters(): readonly { id: string; state: ClusterState }[];
    state(clusterId: string): ClusterState;
    onChange(fn: (clusterId: string) => void): () => void;
  };
  /** The cluster the old, cluster-less routes mean (core's --cluster-id). */
  clusterId: string;
  clock: Clock;
  log: Logger;
  figures: DashboardMetrics;
  /** Warm nodes' prices (the window's warm cost); without them, no warm cost is read. */
  prices?: PriceProvider;
  /** The cluster's WarmupPolicy resources as the stream's policies, once they are the truth. */
  resources?: (clusterId: string) => Promise<PolicyRow[] | undefined | null>;
}): { relay: WarmupRelay; totals: WarmupTotalsOf; coldStarts: ColdStartRecorder } {
  // Hits, misses, time saved and warm cost per cluster over one window of the stored events
  // (what every replica shows): the Overview's and /metrics' warm cost is the Warmup page's.
  const stats = new DurableWarmupStats({
    store: o.store,
    clusterId: o.clusterId,
    clock: o.clock,
    log: o.log,
    ...(o.prices
      ? { warmCost: warmCostReader({ store: o.store, state: (id) => o.hub.state(id), prices: o.prices }) }
      : {}),
  });
  o.figures.warmCost = (clusterId) => stats.window(clusterId).warmCost;
  // Cold starts from every cluster's state, as its pods become Ready (what a hit saves against).
  const coldStarts = new ColdStartRecorder({ store: o.store, log: o.log });
  for (const c of o.hub.clusters()) coldStarts.attach(c.id, c.state);
  o.hub.onChange((id) => coldStarts.attach(id, o.hub.state(id)));
  const relay = new WarmupRelay({
    store: o.store,
    coldStarts,
    ...(o.resources ? { resources: o.resources } : {}),
    onStored: (clusterId, events) => {
      stats.stored(clusterId);
      // Each hit counts what core stored that it saved (warmup/time-saved.ts): the same number
      // the Overview and the Warmup page add.
      for (const e of events) o.figures.events.warmup(clusterId, e, e.type === "hit" ? (e.saved ?? 0) : 0);
    },
  });
  const totals: WarmupTotalsOf = (clusterId) => {
    const w = stats.window(clusterId);
    const warmCostUsd = Object.values(w.warmCost).reduce((a, b) => a + b, 0);
    return { ...warmupCounts(w.counters), warmCostUsd, from: w.from, to: w.to };
  };
  return { relay, coldStarts, totals };
}

/** What the API's routes need (startApi's, and the fuzzer's app built the same way). */
export interface ApiRoutesDeps {
  hub: ClusterHub;
  store: Store;
  prices: PriceProvider;
  clock: Clock;
  log?: Logger;
  /** The cluster the routes without a cluster in their path act on (core's --cluster-id). */
  clusterId: string;
  warmupTotals?: WarmupTotalsOf;
  onPolicyChange?: (kind: "spot" | "warmup", clusterId: string) => Promise<void>;
  nodePools?: NodePoolPatcher;
  readThrough?: ReadThroughOptions;
  /** Who runs what-if replays (core: its worker pool); default: in this thread, loaded lazily. */
  whatif?: Pick<WhatifDeps, "run" | "busy">;
  /** The policy CRs and their edits down the agent streams (ADR 0018); without it, the store. */
  policyCrs?: PolicyCrAccess;
  /** Wave's own namespaces (no spot policy may target them). */
  waveNamespaces?: readonly string[];
}

/** Every /api route plugin of core, in the order startApi mounts them. */
export function apiRoutes(o: ApiRoutesDeps): ApiPlugin[] {
  const { clock } = o;
  const onPolicyChange = o.onPolicyChange;
  const audit = storeAudit(o.store, () => clock.now());
  // What the read routes (dashboard, console) are built over.
  const reads = { hub: o.hub, prices: o.prices, now: () => clock.now() };
  return [
    dashboardRoutes({
      ...reads,
      clock,
      ...(o.warmupTotals ? { warmupStats: o.warmupTotals } : {}),
      ...(o.log ? { log: o.log } : {}),
      ...(o.readThrough ? { readThrough: o.readThrough } : {}),
    }),
    policyRoutes({
      store: o.store,
      defaultClusterId: o.clusterId,
      now: () => clock.now(),
      audit,
      ...(onPolicyChange ? { onChange: (kind, _key, clusterId) => onPolicyChange(kind, clusterId) } : {}),
      ...(o.policyCrs ? { crs: o.policyCrs } : {}),
      ...(o.waveNamespaces ? { waveNamespaces: o.waveNamespaces } : {}),
    }),
    auditRoutes({ store: o.store, waveManagers: [CONSOLE_FIELD_MANAGER, STATUS_FIELD_MANAGER] }),
    savingsRoutes({ hub: o.hub, now: () => clock.now() }),
    consoleRoutes({
      ...reads,
      audit,
      ...(o.nodePools ? { nodePools: o.nodePools } : {}),
      ...(o.policyCrs ? { policySource: "crs" as const } : {}),
    }),
    // The simulator loads with the first what-if, not with core.
    whatifRoutes({
      hub: o.hub,
      now: () => clock.now(),
      ...(o.policyCrs ? { policySource: "crs" as const } : {}),
      ...(o.whatif ?? {
        run: async (input) => (await import("../sim/cluster-whatif.ts")).clusterWhatif(input),
      }),
    }),
  ];
}

/** The options of core's API (coreApi, startApi). */
export interface CoreApiOptions {
  config: Pick<WaveConfig, "clusterId" | "publicMetrics" | "serveSourceMaps"> &
    Partial<IdentityConfig> &
    Partial<Pick<WaveConfig, "namespace" | "warmupNamespace" | "spotLedgerNamespace">>;
  tokens: { admin: string; viewer: string };
  hub: ClusterHub;
  store: Store;
  prices: PriceProvider;
  clock: Clock;
  log?: Logger;
  metrics: Registry;
  warmupTotals: WarmupTotalsOf;
  onPolicyChange: (kind: "spot" | "warmup", clusterId: string) => Promise<void>;
  /** The embedded simulated cluster's NodePools, which the console may patch (thrashing fixes). */
  nodePools?: NodePoolPatcher;
  /** The policy CRs and their edits down the agent streams (ADR 0018); without it, the store. */
  policyCrs?: PolicyCrAccess;
}

/** The policy CRs core holds (streamed by each cluster's agent) and edits down those streams. */
type PolicyCrAccess = NonNullable<PolicyDeps["crs"]>;

export function policyCrAccess(hub: ClusterHub, edits: PolicyEdits): PolicyCrAccess {
  return {
    onSpotChange: (fn) =>
      hub.onBatch((b) => {
        if (batchTouches(b, "SpotPolicy")) fn(b.clusterId);
      }),
    spot: (id) => (hub.get(id) ? hub.state(id).spotPolicies() : undefined),
    warmup: (id) => (hub.get(id) ? hub.state(id).warmupPolicies() : undefined),
    edit: (id, e) => edits.edit(id, e),
  };
}

/** Core's API (dashboard, policies, /metrics) and the built web UI, listening on config.port. */
export async function startApi(
  o: CoreApiOptions & { config: Pick<WaveConfig, "host" | "port"> },
): Promise<{ app: FastifyInstance; port: number; address: string }> {
  const app = await coreApi(o);
  const address = await app.listen({ host: o.config.host, port: o.config.port });
  return { app, port: Number(new URL(address).port), address };
}

/** What-ifs waiting for a replay (or gathering their input) at most; beyond, 429 before any work. */
const WHATIF_MAX_QUEUED = 4;

const definedOf = <T extends object>(o: T): Partial<T> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

/** Core's API as an app that has not listened yet (tests inject requests into it). */
export async function coreApi(o: CoreApiOptions): Promise<FastifyInstance> {
  const { clock, metrics } = o;
  const uiDir = new URL("../../ui/dist/", import.meta.url).pathname;
  // Several core replicas: a cluster another replica owns is read through it (ADR 0012).
  const ownership = o.hub.ownership;
  const rt = ownership instanceof SoleOwnership ? undefined : { ownership };
  // What-if replays run in worker threads, never on this loop; the pool (and src/sim with it) loads
  // with the first what-if, so a core nobody asks for one never loads the simulator.
  let whatifs: WhatifPool | undefined;
  let loading: Promise<WhatifPool> | undefined;
  const pool = (): Promise<WhatifPool> =>
    (loading ??= import("../sim/whatif-pool.ts").then(
      (m) => (whatifs = new m.WhatifPool({ maxQueued: WHATIF_MAX_QUEUED })),
    ));
  // Console sign-in (OIDC, auth proxy) besides the static tokens, when configured (docs/auth.md).
  // Sessions in the store and cookies signed with a key derived from the admin token: every
  // replica knows every sign-in, and a restart keeps them.
  const identity = consoleIdentity({ ...DEFAULTS, ...definedOf(o.config) }, clock, o.log, {
    sessions: o.store,
    sharedSecret: o.tokens.admin,
  });
  return build({
    tokens: o.tokens,
    authenticators: identity.authenticators,
    replica: ownership.replica,
    ...(rt ? { forward: readThrough(rt) } : {}),
    log: o.log,
    clock,
    publicMetrics: o.config.publicMetrics,
    serveSourceMaps: o.config.serveSourceMaps,
    plugins: [
      ...identity.plugins,
      ...apiRoutes({
        hub: o.hub,
        store: o.store,
        prices: o.prices,
        clock,
        ...(o.log ? { log: o.log } : {}),
        clusterId: o.config.clusterId,
        waveNamespaces: [o.config.namespace, o.config.warmupNamespace, o.config.spotLedgerNamespace].filter(
          (n): n is string => n !== undefined && n !== "",
        ),
        warmupTotals: o.warmupTotals,
        onPolicyChange: o.onPolicyChange,
        ...(o.nodePools ? { nodePools: o.nodePools } : {}),
        ...(o.policyCrs ? { policyCrs: o.policyCrs } : {}),
        ...(rt ? { readThrough: rt } : {}),
        whatif: {
          run: async (input, job) => (await pool()).run(input, job),
          // Before the pool is loaded (the first what-if), the same bound on what is admitted.
          busy: (pending) => (whatifs ? whatifs.busy(pending) : pending >= WHATIF_MAX_QUEUED ? 1 : undefined),
        },
      }),
      // Closing core stops the what-if workers (a running replay answers 503).
      (s) => {
        s.addHook("onClose", async () => whatifs?.close());
      },
      (s) => {
        s.get("/metrics", { schema: { hide: true } }, async (req, reply) => {
          // Each caller sees the clusters it has a role in (public metrics: every cluster).
          const text = await metrics.render();
          const id = req.identity;
          await reply
            .type(CONTENT_TYPE)
            .send(id === undefined ? text : exposedTo(text, (c) => mayReadCluster(id, c)));
        });
      },
      async (s) => {
        if (existsSync(join(uiDir, "index.html"))) await s.register(fastifyStatic, { root: uiDir });
        else
          s.get("/", { schema: { hide: true } }, () => ({
            message: "web UI not built: run npm run build:ui",
          }));
      },
    ],
  });
}

/**
 * Core's side of the policy CRs beyond the API (issue 31, ADR 0018): each CR version a cluster's
 * agent streams is kept in the store (its history), and when a cluster's agent stream can take
 * edits its stored policies become CRs once (the migration). Returns the stopper.
 */
export function startPolicySync(o: {
  store: Store;
  hub: ClusterHub;
  edits: PolicyEdits;
  crs: PolicyCrAccess;
  clock: Clock;
  log: Logger;
}): () => Promise<void> {
  const { store, log } = o;
  const keep = (clusterId: string, kind: string, object: unknown, at: number, deleted: boolean): void => {
    const r = policyRevisionOf(clusterId, kind, object, at, deleted);
    if (r)
      void store
        .recordPolicyRevision(r)
        .catch((err: unknown) => log.warn("storing a policy revision failed", { cluster: clusterId, err }));
  };
  const offBatch = o.hub.onBatch((b) => {
    for (const w of b.snapshot ?? []) keep(b.clusterId, w.kind, w.object, b.receivedAt, false);
    for (const c of b.changes) keep(b.clusterId, c.kind, c.object, b.receivedAt, c.op === "delete");
  });
  const running = new Map<string, Promise<void>>();
  const offAttach = o.edits.onAttach((clusterId) => {
    if (running.has(clusterId)) return;
    const run = migrateStoredPolicies({ store, clusterId, crs: o.crs, now: () => o.clock.now() })
      .then((r) => {
        if (r.status === "migrated")
          log.info("stored policies became CRs", {
            cluster: clusterId,
            created: r.created,
            existed: r.existed,
            skipped: r.skipped.length,
          });
        for (const s of r.skipped)
          log.warn("a stored policy no longer validates: not migrated", { cluster: clusterId, ...s });
      })
      .catch((err: unknown) =>
        log.warn("migrating stored policies to CRs failed; retried on the agent's next connection", {
          cluster: clusterId,
          err,
        }),
      )
      .finally(() => running.delete(clusterId));
    running.set(clusterId, run);
  });
  return async () => {
    offBatch();
    offAttach();
    await Promise.all(running.values());
  };
}
