// `wave core`: history store, hub, ingest server, API + UI, warmup controller (Lease holder).
// The environment it gets is the contract in deploy/helm/wave/README.md.
import { mkdirSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { serverToken, type WaveConfig } from "../config/config.ts";
import { CredentialError, loadCredentials, type AgentCredential } from "../core/ingest/auth.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { LeaseOwnership, SoleOwnership } from "../core/hub/ownership.ts";
import { IngestCore } from "../core/ingest/core.ts";
import { startIngestServer } from "../core/ingest/server.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import { startPricing } from "../pricing/setup.ts";
import { realClock } from "../shared/clock.ts";
import { Registry } from "../shared/metrics.ts";
import { LeaderElector } from "../kube/leader.ts";
import { runController } from "../warmup/run.ts";
import type { CommandContext } from "./commands.ts";
import { userError } from "./connect.ts";
import {
  cluster,
  logger,
  required,
  serve,
  startWith,
  tlsFiles,
  type ComponentOptions,
  type Running,
  WARMUP_LEASE,
} from "./component.ts";
import { createWarmup, dashboardMetrics, startApi, startHistory } from "./parts.ts";
import { version } from "./version.ts";

/** How often core's warmup leader re-reads warmup policies (another replica's API may change them). */
const POLICY_RELOAD_MS = 30_000;

export interface RunningCore extends Running {
  apiPort: number;
  grpcPort: number;
  hub: ClusterHub;
  store: Store;
  elector: LeaderElector;
}

export async function startCoreComponent(
  config: WaveConfig,
  env: NodeJS.ProcessEnv,
  opts: ComponentOptions = {},
): Promise<RunningCore> {
  const clock = opts.clock ?? realClock;
  const log = logger(config, "core", opts);
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
  const credentials = agentCredentials(config, mtls);
  return startWith(log, async (life) => {
    if (!config.databaseUrl) mkdirSync(config.dataDir, { recursive: true });
    const metrics = new Registry();
    const prices = startPricing(config, { clock, log, signal: life.ac.signal, metrics }).provider;

    const store = await openStore(
      config.databaseUrl
        ? { backend: "postgres", url: config.databaseUrl }
        : { backend: "sqlite", path: join(config.dataDir, "wave.db") },
      { log },
    );
    life.closers.push(() => store.close());
    // Policies stored before they had a cluster were this cluster's (core acted on no other).
    await store.adoptPolicies(config.clusterId);
    // On PostgreSQL several replicas may serve: each cluster is owned by the replica its agent
    // streams to, and read through it by the others (ADR 0012). SQLite: one replica owns all.
    const replica = config.podName ?? hostname();
    const ownership = config.databaseUrl
      ? new LeaseOwnership({
          store,
          clock,
          log,
          replica,
          url:
            config.advertiseUrl ??
            `http://${config.host === "0.0.0.0" ? hostname() : config.host}:${config.port}`,
        })
      : new SoleOwnership(replica);
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
    const own = hub.ensure(config.clusterId);
    const ingest = new IngestCore({ sink: hub, clock, log, metrics, coreVersion: version() });
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

    const { kube } = await cluster(config, env, log, opts);
    life.closers.push(
      await startHistory({
        store,
        hub,
        prices,
        clock,
        log,
        signal: life.ac.signal,
        onSavings: (rows) => figures.events.savings(rows),
      }),
    );

    // Warmup runs only on the holder of the Lease, so several core replicas never race.
    const warmup = await createWarmup({
      kube,
      // The state core keeps from this cluster's agent stream: warmup lists nothing itself.
      view: own.state,
      store,
      prices,
      clock,
      log,
      namespace: config.namespace,
      // Warmup and pull pods live in a namespace of their own, without Secrets (docs/security.md).
      podNamespace: config.warmupNamespace,
      clusterId: config.clusterId,
      signal: life.ac.signal,
      onEvent: (e) => figures.events.warmup(config.clusterId, e),
    });
    life.closers.push(() => warmup.stop());
    const elector = new LeaderElector({
      client: kube,
      clock,
      namespace: config.namespace,
      name: WARMUP_LEASE,
      identity: config.podName ?? hostname(),
      log,
    });
    const campaign = elector.run(life.ac.signal, async (leading) => {
      await warmup.reloadPolicies();
      const reload = setInterval(
        () =>
          void warmup
            .reloadPolicies()
            .catch((err: unknown) => log.warn("reloading warmup policies failed", { err })),
        POLICY_RELOAD_MS,
      );
      try {
        await runController(warmup.controller, { clock, signal: leading, log, triggers: warmup.triggers });
      } finally {
        clearInterval(reload);
      }
    });
    life.closers.push(() => campaign);

    const api = await startApi({
      config,
      tokens,
      log,
      hub,
      store,
      prices,
      clock,
      metrics,
      warmupTotals: (id) => warmup.totals(id),
      // Spot policies reach the webhooks by their pull; warmup policies are ours to reload.
      onPolicyChange: async (kind, clusterId) => {
        if (kind === "warmup" && clusterId === config.clusterId) await warmup.reloadPolicies();
      },
    });
    life.closers.push(() => api.app.close());
    log.info("wave core started", { api: api.address, grpcPort: ingestServer.port });
    return {
      apiPort: api.port,
      grpcPort: ingestServer.port,
      hub,
      store,
      elector,
      failed: life.failed,
      stop: life.stop,
    };
  });
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
