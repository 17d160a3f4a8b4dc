// `wave core`: history store, hub, ingest server, API + UI for N clusters. Each cluster's warmup
// controller runs beside its agent: core sends it the cluster's policies over the agent stream
// and stores the events it reports (ADR 0014). Core does not talk to any apiserver.
// The environment it gets is the contract in deploy/helm/wave/README.md. `wave start` builds the
// same core for its one process (`inProcess`).
import { batchTouches, snapshotCompletes } from "../core/ingest/sink.ts";
import { makeDataDir } from "./instance.ts";
import { hostname } from "node:os";
import { join } from "node:path";
import { serverToken, type WaveConfig } from "../config/config.ts";
import { CredentialError, loadCredentials, type AgentCredential } from "../core/ingest/auth.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { LeaseOwnership, SoleOwnership, type Ownership } from "../core/hub/ownership.ts";
import { IngestCore } from "../core/ingest/core.ts";
import { startIngestServer } from "../core/ingest/server.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import type { WarmupRelay } from "../core/warmup/relay.ts";
import { warmupPoliciesOf } from "../console/policy-crs.ts";
import { ownWarmupPolicy } from "../objects/policy-crds.ts";
import type { NodePoolPatcher } from "../api/routes/console.ts";
import type { DashboardMetrics } from "../metrics/collector.ts";
import { startPricing } from "../pricing/setup.ts";
import type { PriceProvider } from "../pricing/types.ts";
import { realClock, type Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { Registry } from "../shared/metrics.ts";
import type { CommandContext } from "./types.ts";
import { userError } from "./connect.ts";
import {
  logger,
  required,
  serve,
  startWith,
  tlsFiles,
  type ComponentOptions,
  type Running,
} from "./component.ts";
import {
  coreWarmup,
  dashboardMetrics,
  policyCrAccess,
  startApi,
  startHistory,
  startPolicySync,
} from "./parts.ts";
import { version } from "./version.ts";

export interface RunningCore extends Running {
  apiPort: number;
  /** The API's address as it listens. */
  address: string;
  grpcPort: number;
  hub: ClusterHub;
  store: Store;
  /** Its /metrics registry, its prices and its dashboard figures (what `wave start` shares). */
  metrics: Registry;
  prices: PriceProvider;
  figures: DashboardMetrics;
  /** Warmup policies to the agents, their events to the store. */
  relay: WarmupRelay;
}

export interface CoreComponentOptions extends ComponentOptions {
  /** The one core of `wave start`, beside its agent and webhook, rather than a process of its own. */
  inProcess?: CoreInProcess;
}

/** What `wave start` gives its core in place of the settings `wave core` requires. */
export interface CoreInProcess {
  /** The admin and viewer tokens (generated unless configured). */
  tokens: { admin: string; viewer: string };
  /** The agent in this process: core's gRPC TLS pair (generated) and the agent's one credential. */
  grpcTls: { certFile: string; keyFile: string };
  credentials: AgentCredential[];
  /** The SQLite file, when not the data directory's wave.db. */
  sqlitePath?: string;
  /** Who owns the clusters (default: as `wave core`, a lease row per cluster on PostgreSQL). */
  ownership?: Ownership;
  /** The embedded simulated cluster: prices keep to the table, its entry says so. */
  simulated?: boolean;
  /** The history samplers' clock (the simulated cluster's, whose fast-forwarded minutes count). */
  historyClock?: Clock;
  /** The simulated cluster's NodePools, which the console may patch. */
  nodePools?: NodePoolPatcher;
  /** Besides sending warmup policies down the agent stream: what else follows a policy change. */
  onPolicyChange?: (kind: "spot" | "warmup", clusterId: string) => Promise<void>;
}

export async function startCoreComponent(
  config: WaveConfig,
  env: NodeJS.ProcessEnv,
  opts: CoreComponentOptions = {},
): Promise<RunningCore> {
  const clock = opts.clock ?? realClock;
  const log = logger(config, "core", opts);
  const near = opts.inProcess;
  // In process, the agent is known by the token start generated for it (no client certificate).
  const { tokens, grpcTls, credentials } = near
    ? { tokens: near.tokens, grpcTls: { ...near.grpcTls, caFile: undefined }, credentials: near.credentials }
    : configured(config, log);
  return startWith(log, async (life) => {
    if (!config.databaseUrl) makeDataDir(config.dataDir);
    const metrics = new Registry();
    const prices = startPricing(config, {
      clock,
      log,
      signal: life.ac.signal,
      metrics,
      ...(near?.simulated ? { simulated: true } : {}),
    }).provider;

    const store = await openStore(
      config.databaseUrl
        ? { backend: "postgres", url: config.databaseUrl }
        : { backend: "sqlite", path: near?.sqlitePath ?? join(config.dataDir, "wave.db") },
      { log },
    );
    life.closers.push(() => store.close());
    // Policies stored before they had a cluster were this cluster's (core acted on no other).
    await store.adoptPolicies(config.clusterId);
    // On PostgreSQL several replicas may serve: each cluster is owned by the replica its agent
    // streams to, and read through it by the others (ADR 0012). SQLite: one replica owns all.
    const replica = config.podName ?? hostname();
    const ownership =
      near?.ownership ??
      (config.databaseUrl
        ? new LeaseOwnership({
            store,
            clock,
            log,
            replica,
            url:
              config.advertiseUrl ??
              `http://${config.host === "0.0.0.0" ? hostname() : config.host}:${config.port}`,
          })
        : new SoleOwnership(replica));
    // Stops after everything opened later (it releases the leases before the store closes).
    const owning = ownership.run(life.ac.signal);
    life.closers.push(() => owning);
    const hub = new ClusterHub(store, clock, { ownership });
    metrics.gauge({
      name: "wave_core_owned_clusters",
      help: "Clusters whose live state this core replica owns (its agent streams here), ADR 0012.",
      collect: (g) => g.set(hub.clusters().filter((c) => hub.owns(c.id)).length),
    });
    const figures = dashboardMetrics({ metrics, hub, prices, store, clock });
    life.closers.push(() => {
      figures.close();
      return Promise.resolve();
    });
    hub.ensure(config.clusterId, near?.simulated);
    // Warmup policies reach agents from the WarmupPolicy resources core holds (issue 31) once the
    // cluster's stored policies became resources; each change to them re-sends the set. Not before
    // the agent's snapshot landed since this core started: its state is empty until then, and an
    // empty set would switch off the warmups the agent runs from its remembered policies.
    const synced = new Set<string>();
    const { relay, totals } = coreWarmup({
      store,
      hub,
      clusterId: config.clusterId,
      clock,
      log,
      figures,
      prices,
      resources: async (id) =>
        hub.get(id) && (await store.policyMigration(id))
          ? !synced.has(id)
            ? null
            : warmupPoliciesOf(
                hub
                  .state(id)
                  .warmupPolicies()
                  .filter((cr) => ownWarmupPolicy(cr, config.namespace)),
              ).policies.map((p) => ({
                pool: p.nodePool,
                value: p.policy,
              }))
          : undefined,
    });
    hub.onBatch((b) => {
      const first = snapshotCompletes(b) && !synced.has(b.clusterId);
      if (first) synced.add(b.clusterId);
      if (first || batchTouches(b, "WarmupPolicy")) relay.changed("warmup", b.clusterId);
    });
    const ingest = new IngestCore({
      sink: hub,
      clock,
      log,
      metrics,
      coreVersion: version(),
      warmup: relay,
    });
    const policyCrs = policyCrAccess(hub, ingest.edits);
    const ingestServer = await startIngestServer({
      core: ingest,
      host: config.host,
      port: config.grpcPort,
      // With ca.crt, agents must present a client certificate it signed (mutual TLS).
      tls: {
        certFile: grpcTls.certFile,
        keyFile: grpcTls.keyFile,
        ...(grpcTls.caFile ? { clientCaFile: grpcTls.caFile } : {}),
      },
      credentials,
      log,
    });
    life.closers.push(() => ingestServer.close());

    life.closers.push(
      await startHistory({
        store,
        hub,
        prices,
        clock: near?.historyClock ?? clock,
        log,
        signal: life.ac.signal,
        onSavings: (rows) => figures.events.savings(rows),
      }),
    );

    const api = await startApi({
      config,
      tokens,
      log,
      hub,
      store,
      prices,
      clock,
      metrics,
      warmupTotals: totals,
      // Spot policies reach the webhooks by their pull; warmup policies go down the cluster's
      // agent stream now (another replica's change arrives with the stream's next poll).
      onPolicyChange: async (kind, clusterId) => {
        relay.changed(kind, clusterId);
        await near?.onPolicyChange?.(kind, clusterId);
      },
      ...(near?.nodePools ? { nodePools: near.nodePools } : {}),
      policyCrs,
    });
    life.closers.push(() => api.app.close());
    life.closers.push(startPolicySync({ store, hub, edits: ingest.edits, crs: policyCrs, clock, log }));
    log.info("wave core started", { api: api.address, grpcPort: ingestServer.port });
    return {
      apiPort: api.port,
      address: api.address,
      grpcPort: ingestServer.port,
      hub,
      store,
      metrics,
      prices,
      figures,
      relay,
      failed: life.failed,
      stop: life.stop,
    };
  });
}

/** `wave core`'s tokens, gRPC TLS and agent credentials, from its configuration (each required). */
function configured(
  config: WaveConfig,
  log: Logger,
): {
  tokens: { admin: string; viewer: string };
  grpcTls: { certFile: string; keyFile: string; caFile: string | undefined };
  credentials: AgentCredential[];
} {
  if (!config.agentCredentials) {
    required(config.agentToken, "the agent token (WAVE_AGENT_TOKEN or --agent-token) or --agent-credentials");
  }
  const tokens = {
    admin: serverToken(
      required(config.adminToken, "the admin token (WAVE_ADMIN_TOKEN or --admin-token)"),
      "the admin token",
    ),
    viewer: serverToken(
      required(config.viewerToken, "the viewer token (WAVE_VIEWER_TOKEN or --viewer-token)"),
      "the viewer token",
    ),
  };
  const grpcTlsDir = required(
    config.grpcTlsDir,
    "the gRPC TLS directory (WAVE_GRPC_TLS_DIR or --grpc-tls-dir)",
  );
  const grpcTls = tlsFiles(grpcTlsDir, "core gRPC TLS");
  // Mutual TLS unless explicitly waived: ca.crt beside core's pair verifies agents' certificates.
  if (!grpcTls.caFile && !config.grpcAllowNoClientCert) {
    throw userError(
      `core gRPC TLS: ${grpcTlsDir}/ca.crt is missing, so agents could not be required to present client ` +
        "certificates; add it, or accept agents on their token alone with --grpc-allow-no-client-cert",
    );
  }
  const mtls = grpcTls.caFile !== undefined;
  if (!mtls) log.warn("mutual TLS is off: agents are authenticated by their bearer token alone");
  return { tokens, grpcTls, credentials: agentCredentials(config, mtls) };
}

/**
 * Who may stream which cluster: the credentials file, or the one agent of `clusterId` (its token,
 * and with mutual TLS the certificate identity `agentIdentity`).
 */
export function agentCredentials(config: WaveConfig, mtls: boolean): AgentCredential[] {
  try {
    if (config.agentCredentials) return loadCredentials(config.agentCredentials);
  } catch (err) {
    if (err instanceof CredentialError) throw userError(err.message);
    throw err;
  }
  const token = serverToken(
    required(config.agentToken, "the agent token (WAVE_AGENT_TOKEN or --agent-token) or --agent-credentials"),
    "the agent token",
  );
  return [
    {
      name: "agent",
      token,
      clusters: [config.clusterId],
      ...(mtls ? { identity: config.agentIdentity } : {}),
    },
  ];
}

export async function coreCommand(ctx: CommandContext): Promise<number> {
  return serve(ctx, "core", await startCoreComponent(ctx.config, ctx.io.env));
}
