// `wave core`: history store, hub, ingest server, API + UI, warmup controller (Lease holder).
// The environment it gets is the contract in deploy/helm/wave/README.md.
import { mkdirSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { WaveConfig } from "../config/config.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { IngestCore } from "../core/ingest/core.ts";
import { startIngestServer } from "../core/ingest/server.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import { createPricing } from "../pricing/setup.ts";
import { realClock } from "../shared/clock.ts";
import { Registry } from "../shared/metrics.ts";
import { LeaderElector } from "../kube/leader.ts";
import { runController } from "../warmup/run.ts";
import type { CommandContext } from "./commands.ts";
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
import { createWarmup, startApi, startHistory } from "./parts.ts";
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
  const agentToken = required(config.agentToken, "the agent token (WAVE_AGENT_TOKEN or --agent-token)");
  const tokens = {
    admin: required(config.adminToken, "the admin token (WAVE_ADMIN_TOKEN or --admin-token)"),
    viewer: required(config.viewerToken, "the viewer token (WAVE_VIEWER_TOKEN or --viewer-token)"),
  };
  const grpcTls = tlsFiles(
    required(config.grpcTlsDir, "the gRPC TLS directory (WAVE_GRPC_TLS_DIR or --grpc-tls-dir)"),
    "core gRPC TLS",
  );
  return startWith(log, async (life) => {
    if (!config.databaseUrl) mkdirSync(config.dataDir, { recursive: true });
    const metrics = new Registry();
    const pricing = createPricing({ clock, log });
    void pricing.run(life.ac.signal).catch((err: unknown) => log.warn("live pricing stopped", { err }));
    const prices = pricing.provider;

    const store = await openStore(
      config.databaseUrl
        ? { backend: "postgres", url: config.databaseUrl }
        : { backend: "sqlite", path: join(config.dataDir, "wave.db") },
      { log },
    );
    life.closers.push(() => store.close());
    const hub = new ClusterHub(store, clock);
    hub.ensure(config.clusterId);
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
      tokens: [agentToken],
      log,
    });
    life.closers.push(() => ingestServer.close());

    const { kube } = await cluster(config, env, log, opts);
    life.closers.push(
      await startHistory({
        store,
        hub,
        clusterId: config.clusterId,
        prices,
        clock,
        log,
        signal: life.ac.signal,
      }),
    );

    // Warmup runs only on the holder of the Lease, so several core replicas never race.
    const warmup = await createWarmup({
      kube,
      store,
      prices,
      clock,
      log,
      namespace: config.namespace,
      clusterId: config.clusterId,
      signal: life.ac.signal,
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
        await runController(warmup.controller, { clock, signal: leading, log });
      } finally {
        clearInterval(reload);
      }
    });
    life.closers.push(() => campaign);

    const api = await startApi({
      config,
      tokens,
      hub,
      store,
      prices,
      clock,
      metrics,
      warmupTotals: (id) => warmup.totals(id),
      // Spot policies reach the webhooks by their pull; warmup policies are ours to reload.
      onPolicyChange: async (kind) => {
        if (kind === "warmup") await warmup.reloadPolicies();
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

export async function coreCommand(ctx: CommandContext): Promise<number> {
  return serve(ctx, "core", await startCoreComponent(ctx.config, ctx.io.env));
}
