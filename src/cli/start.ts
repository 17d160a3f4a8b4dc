// The composition root of `wave start`: every component of Wave in one process, wired
// explicitly. Agent → (gRPC over TLS, bearer token) → core (hub, history store, sampler,
// dashboard API + UI) ; warmup controller and spot-placement webhook act on the cluster.
// Without a kubeconfig (or with --simulate) the cluster is the embedded simulated Karpenter.
import { newToken } from "../api/auth.ts";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_DATA_DIR, serverToken, type WaveConfig } from "../config/config.ts";
import { Agent } from "../agent/agent.ts";
import { InformerSource } from "../agent/informer-source.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { IngestCore } from "../core/ingest/core.ts";
import { startIngestServer } from "../core/ingest/server.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { KubeClient } from "../kube/port.ts";
import { startPricing } from "../pricing/setup.ts";
import { realClock, type Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { Registry } from "../shared/metrics.ts";
import { LateAnswerRecorder } from "../webhook/late-events.ts";
import { createSpotMetrics } from "../webhook/metrics.ts";
import { seeded } from "../shared/random.ts";
import { LaggingClock } from "../sim/clock.ts";
import { PodCache } from "../webhook/pod-cache.ts";
import { runEmbeddedCluster, seedLivingPolicies } from "./embedded.ts";
import { embeddedPrehistory } from "./prehistory.ts";
import { mirrorMemoryKube } from "../state/follow.ts";
import { runController } from "../warmup/run.ts";
import { VolatilePolicyMemory } from "../warmup/policy-set.ts";
import { ClusterState } from "../state/cluster.ts";
import { createWarmupActor, toWire } from "./warmup-actor.ts";
import { SlotAllocator } from "../webhook/allocator.ts";
import { generateDevCerts } from "../webhook/certs.ts";
import { InMemoryPolicySource } from "../webhook/policy-source.ts";
import { POLICY_SET_API_VERSION, type SpotPolicy } from "../webhook/policy.ts";
import { startWebhookServer } from "../webhook/server.ts";
import type { CommandContext } from "./commands.ts";
import { version } from "./version.ts";
import { logger } from "./component.ts";
import { ensureNamespaces, registerWebhook } from "./host.ts";
import { removeInstance, writeInstance } from "./instance.ts";
import {
  connectCluster,
  coreWarmup,
  dashboardMetrics,
  poolSamples,
  startApi,
  startHistory,
} from "./parts.ts";

/**
 * How far in the past the embedded simulated cluster begins (fast-forwarded at start): a day, fed
 * to core in process (prehistory.ts) but for the last minutes, which stream through the agent
 * (docs/simulator.md, "History at start").
 */
export const SIMULATED_HISTORY_MS = 24 * 3_600_000;
const SHUTDOWN_STEP_MS = 5000;

/** Something `start` opened and must close on the way out, newest first. */
type Closer = () => Promise<void> | void;

export interface Started {
  url: string;
  apiPort: number;
  grpcPort: number;
  /** The webhook's HTTPS port (the one it bound; 0 on the simulator, which admits in process). */
  webhookPort: number;
  /** On a real cluster: the webhook's URL, its CA and its MutatingWebhookConfiguration. */
  webhook?: { url: string; caFile: string; configFile: string; configName: string; registered: boolean };
  /** Wave's namespaces this start created (a real cluster without them). */
  createdNamespaces: string[];
  hub: ClusterHub;
  store: Store;
  kube: KubeClient;
  simulated: boolean;
  /** On the simulated cluster: resolves once its fast-forwarded history has caught up with now. */
  caughtUp: Promise<void>;
  /** How far the simulated cluster's clock is still behind real time (0 on a real cluster). */
  simulatedLagMs: () => number;
  tokens: { admin: string; viewer: string };
  stop(): Promise<void>;
}

export { poolSamples };

/** Whether this process should run on the embedded simulator. */
export function wantsSimulator(config: WaveConfig, env: NodeJS.ProcessEnv): boolean {
  return config.simulate || (config.kubeconfig === undefined && env.KUBERNETES_SERVICE_HOST === undefined);
}

/** The spot policy set the webhook serves, from the policies stored in core. */
async function loadSpotPolicies(
  store: Store,
  clusterId: string,
  source: InMemoryPolicySource,
  log: Logger,
): Promise<void> {
  const records = await store.listPolicies(clusterId, "spot");
  const policies = records.map((r) => r.value as SpotPolicy);
  try {
    source.set({
      apiVersion: POLICY_SET_API_VERSION,
      kind: "SpotPolicySet",
      revision: String(Date.now()),
      policies,
    });
  } catch (err) {
    log.error("stored spot policies are invalid; keeping the previous set", { err });
  }
}

export async function startWave(
  config: WaveConfig,
  env: NodeJS.ProcessEnv,
  opts: {
    clock?: Clock;
    log?: Logger;
    /** Simulated cluster: how much history to fast-forward through at start (default 24 h). */
    simulatedHistoryMs?: number;
    /** Simulated cluster: the largest fast-forward step (default 5 min). */
    fastForwardMaxStepMs?: number;
    /**
     * Simulated cluster: stream all of the history through the agent, none generated in process
     * (the design before prehistory.ts; bench/startup's baseline).
     */
    streamAllHistory?: boolean;
  } = {},
): Promise<Started> {
  const clock = opts.clock ?? realClock;
  const log = logger(config, undefined, opts);
  const closers: Closer[] = [];
  const ac = new AbortController();
  const stop = async (): Promise<void> => {
    // Loops and streams end first (abort), then what was opened, newest first; a step that
    // hangs is abandoned after a bound so Ctrl-C always ends the process.
    ac.abort();
    for (const close of closers.splice(0).reverse()) {
      try {
        await Promise.race([close(), new Promise((r) => setTimeout(r, SHUTDOWN_STEP_MS).unref())]);
      } catch (err) {
        log.warn("shutdown step failed", { err });
      }
    }
  };
  try {
    mkdirSync(config.dataDir, { recursive: true });
    const simulated = wantsSimulator(config, env);
    const metrics = new Registry();
    const simDb = join(config.dataDir, "wave-sim.db");
    // Without a --data-dir of its own, each simulated run starts from a fresh history rather than
    // mixing today's fast-forwarded day with the last run's.
    if (simulated && !config.databaseUrl && config.dataDir === DEFAULT_DATA_DIR)
      for (const f of [simDb, `${simDb}-wal`, `${simDb}-shm`]) rmSync(f, { force: true });
    const prices = startPricing(config, { clock, log, signal: ac.signal, simulated, metrics }).provider;

    // ---- core: store, hub, ingest over TLS ----
    const store = await openStore(
      config.databaseUrl
        ? { backend: "postgres", url: config.databaseUrl }
        : { backend: "sqlite", path: simulated ? simDb : join(config.dataDir, "wave.db") },
      { log },
    );
    closers.push(() => store.close());
    // Policies stored before they had a cluster were this cluster's.
    await store.adoptPolicies(config.clusterId);
    const hub = new ClusterHub(store, clock);
    const figures = dashboardMetrics({ metrics, hub, prices, store, clock });
    // The webhook's series (fallbacks, late answers, admissions) on the same registry.
    const spotMetrics = createSpotMetrics(metrics);
    closers.push(() => {
      figures.close();
      return Promise.resolve();
    });
    const entry = hub.ensure(config.clusterId, simulated);
    const tlsDir = join(config.dataDir, "tls");
    const certs = existsSync(join(tlsDir, "tls.crt"))
      ? {
          caFile: join(tlsDir, "ca.crt"),
          certFile: join(tlsDir, "tls.crt"),
          keyFile: join(tlsDir, "tls.key"),
        }
      : await generateDevCerts({
          dir: tlsDir,
          hosts: [
            ...new Set(["localhost", "127.0.0.1", ...(config.host === "0.0.0.0" ? [] : [config.host])]),
          ],
        });
    const agentToken = newToken();
    // Warmup events arrive over the agent stream (ADR 0014), stored per cluster as `wave core` does.
    const { relay, totals: warmupTotalsOf } = coreWarmup({
      store,
      clusterId: config.clusterId,
      clock,
      log,
      figures,
    });
    const ingest = new IngestCore({
      sink: hub,
      clock,
      log,
      metrics,
      coreVersion: version(),
      warmup: relay,
    });
    const ingestServer = await startIngestServer({
      core: ingest,
      host: config.host,
      port: config.grpcPort,
      tls: { certFile: certs.certFile, keyFile: certs.keyFile },
      // The agent runs in this process: its random token is bound to this cluster alone.
      credentials: [{ name: "embedded-agent", token: agentToken, clusters: [config.clusterId] }],
      log,
    });
    closers.push(() => ingestServer.close());

    // ---- the cluster: real, or the embedded simulator ----
    // The simulated cluster starts its history's length in the past and fast-forwards to now.
    const simClock = new LaggingClock(
      clock,
      simulated ? (opts.simulatedHistoryMs ?? SIMULATED_HISTORY_MS) : 0,
    );
    const clusterClock = simulated ? simClock : clock;
    let kube: KubeClient;
    let kubernetesVersion = "";
    let createdNamespaces: string[] = [];
    let karpenterVersion = "";
    const spotPolicies = new InMemoryPolicySource();
    if (simulated) {
      const random = seeded(42);
      const memory = new MemoryKube({
        clock: simClock,
        random,
        historyLimit: 50_000,
        bookmarkIntervalMs: 60_000,
      });
      kube = memory;
      kubernetesVersion = "v1.34.0-sim";
      karpenterVersion = "v1.8-sim";
      await seedLivingPolicies(store, config.clusterId, clock.now());
    } else {
      ({ kube, kubernetesVersion } = await connectCluster(config, env, log));
      // The chart creates Wave's namespaces; on the host path they are checked and made here.
      createdNamespaces = await ensureNamespaces(
        kube,
        [
          config.namespace,
          config.warmupNamespace ?? config.namespace,
          config.spotLedgerNamespace ?? config.namespace,
        ],
        log,
      );
    }
    await loadSpotPolicies(store, config.clusterId, spotPolicies, log);
    // On the simulated cluster the ledgers follow its pods (as `wave webhook` does) on its clock.
    const podCache = simulated
      ? new PodCache({ kube, clock: clusterClock, logger: log }).start(ac.signal)
      : undefined;
    const allocator = new SlotAllocator({
      kube,
      namespace: config.namespace,
      clock: clusterClock,
      logger: log,
      ...(podCache ? { pods: podCache } : {}),
    });

    // ---- agent: informers → gRPC → core, and the warmup controller beside it ----
    // The state the agent's informers fill: the warmup controller reads it, as in `wave agent`.
    const agentState = new ClusterState();
    const warmup = createWarmupActor({
      kube,
      view: agentState,
      prices,
      // The cluster's time: on the simulator, warm nodes' TTLs and cooldowns run on its clock.
      clock: clusterClock,
      log,
      namespace: config.namespace,
      podNamespace: config.warmupNamespace,
      // Core runs in this process: it is never away while the controller runs.
      memory: new VolatilePolicyMemory(),
      report: (e) => agent.warmup.push(toWire(e)),
    });
    const source = new InformerSource({ client: kube, clock: clusterClock, log, state: agentState });
    // The agent stamps what it observes (e.g. a NodeClaim's deletion) with the cluster's time.
    const agent = new Agent({
      source,
      onWarmupPolicies: (p) => warmup.setPolicies(p),
      coreUrl: `https://127.0.0.1:${ingestServer.port}`,
      tls: { caFile: certs.caFile, serverName: "localhost" },
      token: agentToken,
      clusterId: config.clusterId,
      kubernetesVersion,
      karpenterVersion,
      agentVersion: version(),
      clock: clusterClock,
      log,
      metrics,
    });
    // On the simulator the agent starts once the prehistory is in core (startCluster). Meanwhile
    // the warmup actor reads a mirror of the in-memory apiserver, with the policies core holds,
    // and acts as it would live; its events wait in the agent's outbox. The agent's informers take
    // the state over when it starts.
    let stopMirror: (() => void) | undefined;
    let markMirrored!: () => void;
    const mirrored = new Promise<void>((r) => (markMirrored = r));
    let agentDone = Promise.resolve();
    const runAgent = (): void => {
      stopMirror?.();
      stopMirror = undefined;
      agentDone = agent.run(ac.signal).catch((err: unknown) => log.error("agent stopped", { err }));
    };
    closers.push(() => agentDone);
    if (!simulated) runAgent();

    let webhookPort = 0;
    let webhookInfo: Started["webhook"];
    // The simulated cluster's loop starts last, once everything that watches it is running.
    let startCluster: (() => Promise<void>) | undefined;
    let caughtUp = Promise.resolve();
    if (simulated && kube instanceof MemoryKube && podCache) {
      const memory = kube;
      startCluster = async () => {
        stopMirror = (await mirrorMemoryKube(memory, agentState)).stop;
        warmup.setPolicies(await relay.policies(config.clusterId));
        markMirrored();
        const prehistory = await embeddedPrehistory({
          kube: memory,
          hub,
          store,
          prices,
          clusterId: config.clusterId,
          clock: simClock,
          log,
          onSavings: (rows) => figures.events.savings(rows),
          startAgent: runAgent,
          streamAll: opts.streamAllHistory ?? false,
        });
        const cluster = await runEmbeddedCluster({
          ...(prehistory ? { prehistory } : {}),
          kube: memory,
          simClock,
          clock,
          prices,
          policies: spotPolicies,
          allocator,
          pods: podCache,
          metrics: spotMetrics,
          log,
          signal: ac.signal,
          // Each fast-forward step waits until core holds all of it (which also bounds its lag in
          // the cluster's time): controllers that read core's view (warmup) act on the cluster as it
          // is, as they would live, and history records no empty minutes.
          drained: () => agent.outbox.buffered === 0,
          live: () => entry.connected && entry.state.version > 0,
          ...(opts.fastForwardMaxStepMs !== undefined ? { maxStepMs: opts.fastForwardMaxStepMs } : {}),
        });
        closers.push(() => cluster.done);
        caughtUp = cluster.caughtUp;
        void caughtUp.then(() => log.info("simulated history caught up with now"));
      };
    } else {
      // A real cluster: serve admission over HTTPS for the MutatingWebhookConfiguration.
      // Late answers become one Event per workload per minute (the agent forwards them to core's
      // spot page), drained once the server has stopped answering (closers run newest first).
      const lateAnswers = new LateAnswerRecorder({
        write: (e) => kube.create("Event", e, { namespace: e.metadata.namespace ?? "" }),
        logger: log,
        instance: "wave-start",
      });
      closers.push(lateAnswers.start(clock));
      const webhook = await startWebhookServer({
        certFile: certs.certFile,
        keyFile: certs.keyFile,
        port: config.webhookPort,
        host: config.host,
        policies: spotPolicies,
        allocator,
        clock,
        logger: log,
        // Core's /metrics serves the webhook's series in this one process.
        metrics: spotMetrics,
        serveMetrics: false,
        lateAnswers,
      });
      webhookPort = webhook.port;
      closers.push(() => webhook.close());
      // Registered (with --register-webhook) or written out for `kubectl apply -f`: the URL is
      // this process's address, so the apiserver must be able to reach it.
      const url = `https://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${webhook.port}/mutate`;
      const registration = await registerWebhook({
        kube,
        caPem: readFileSync(certs.caFile, "utf8"),
        url,
        waveNamespaces: [config.namespace, config.warmupNamespace ?? config.namespace],
        dataDir: config.dataDir,
        register: config.registerWebhook,
        log,
      });
      closers.push(() => registration.unregister());
      webhookInfo = {
        url,
        caFile: certs.caFile,
        configFile: registration.file,
        configName: registration.name,
        registered: registration.registered,
      };
    }

    // ---- history sampler ----
    closers.push(
      await startHistory({
        store,
        hub,
        prices,
        // The simulated cluster's minutes, fast-forwarded ones included, so history starts full.
        clock: clusterClock,
        log,
        signal: ac.signal,
        onSavings: (rows) => figures.events.savings(rows),
      }),
    );

    // ---- warmup controller (beside the agent, on its state) ----
    if (simulated)
      for (const name of new Set([config.namespace, config.warmupNamespace ?? config.namespace]))
        await kube.create("Namespace", { metadata: { name } }).catch(() => undefined);
    // It acts once the agent's informers hold the whole cluster.
    const warming = (simulated ? Promise.race([mirrored, source.synced]) : source.synced)
      .then(() =>
        ac.signal.aborted
          ? undefined
          : runController(warmup.controller, {
              clock: clusterClock,
              signal: ac.signal,
              log,
              triggers: warmup.triggers,
              // A poked pool once per cluster second: on the simulator's fast-forward, once per step.
              pokeIntervalMs: 1000,
            }),
      )
      .catch((err: unknown) => log.error("warmup controller stopped", { err }));
    closers.push(() => warming);

    // ---- API + web UI ----
    const tokens = {
      admin: config.adminToken === undefined ? newToken() : serverToken(config.adminToken, "the admin token"),
      viewer:
        config.viewerToken === undefined ? newToken() : serverToken(config.viewerToken, "the viewer token"),
    };
    // Warmup policies go to the cluster's agent stream; this process's webhook serves its own
    // cluster's spot policies.
    const onPolicyChange = async (kind: "spot" | "warmup", clusterId: string): Promise<void> => {
      relay.changed(kind, clusterId);
      if (kind === "spot" && clusterId === config.clusterId)
        await loadSpotPolicies(store, config.clusterId, spotPolicies, log);
    };
    const api = await startApi({
      config,
      tokens,
      log,
      hub,
      store,
      prices,
      clock,
      metrics,
      warmupTotals: warmupTotalsOf,
      onPolicyChange,
      // Only the embedded simulated cluster: on a real one the console shows the kubectl patch.
      ...(simulated
        ? {
            nodePools: {
              clusterId: config.clusterId,
              patch: async (pool: string, patch: Record<string, unknown>) => {
                await kube.patch("NodePool", pool, patch);
              },
            },
          }
        : {}),
    });
    const address = api.address;
    closers.push(() => api.app.close());
    const apiPort = api.port;
    entry.simulated = simulated;
    await startCluster?.();
    log.info("wave started", { simulated, api: address, grpcPort: ingestServer.port });
    return {
      url: `http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${apiPort}/`,
      apiPort,
      grpcPort: ingestServer.port,
      webhookPort,
      ...(webhookInfo ? { webhook: webhookInfo } : {}),
      createdNamespaces,
      hub,
      store,
      kube,
      simulated,
      caughtUp,
      simulatedLagMs: () => (simulated ? simClock.lag : 0),
      tokens,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The lines `wave start` prints: every address it listens on, and the webhook's next step. */
export function banner(wave: Started, config: WaveConfig, generated: boolean): string[] {
  const host = config.host === "0.0.0.0" ? "127.0.0.1" : config.host;
  const all = config.host === "0.0.0.0" ? " (all interfaces)" : "";
  const lines = [
    `Wave is running${wave.simulated ? " on the embedded simulated Karpenter cluster" : ` on cluster ${config.clusterId}`}.`,
    `Dashboard: ${wave.url}${generated ? `#token=${wave.tokens.viewer}` : ""}`,
    `  API and web UI  http://${host}:${wave.apiPort}/${all}  (metrics: /metrics)`,
    `  agent gRPC      https://${host}:${wave.grpcPort}${all}`,
  ];
  const wh = wave.webhook;
  if (wh) {
    lines.push(`  webhook         ${wh.url}${all}  (CA: ${wh.caFile})`);
    lines.push(
      wh.registered
        ? `Webhook registered: MutatingWebhookConfiguration ${wh.configName} (removed when Wave stops).`
        : `Webhook not registered. To place pods on spot, run: kubectl apply -f ${wh.configFile}` +
            `  (or start with --register-webhook; the API server must reach ${wh.url})`,
    );
  } else lines.push("  webhook         in process (the simulated cluster admits through it directly)");
  if (wave.createdNamespaces.length > 0)
    lines.push(`Created namespace ${wave.createdNamespaces.join(", ")}.`);
  lines.push(
    generated ? `Admin token (changes policies): ${wave.tokens.admin}` : "Tokens: as configured.",
    `wave spot|warmup … run with --data-dir ${config.dataDir} find this instance.`,
    "Press Ctrl-C to stop.",
    "",
  );
  return lines;
}

export async function startCommand(ctx: CommandContext): Promise<number> {
  const wave = await startWave(ctx.config, ctx.io.env);
  const generated = ctx.config.viewerToken === undefined;
  const host = ctx.config.host === "0.0.0.0" ? "127.0.0.1" : ctx.config.host;
  writeInstance(ctx.config.dataDir, {
    pid: process.pid,
    apiUrl: `http://${host}:${wave.apiPort}`,
    grpcAddress: `${host}:${wave.grpcPort}`,
    ...(wave.webhook ? { webhookUrl: wave.webhook.url } : {}),
    clusterId: ctx.config.clusterId,
    ...(ctx.config.adminToken === undefined ? { adminToken: wave.tokens.admin } : {}),
    ...(generated ? { viewerToken: wave.tokens.viewer } : {}),
  });
  ctx.io.out(banner(wave, ctx.config, generated).join("\n"));
  await new Promise<void>((resolve) => {
    if (ctx.io.signal.aborted) resolve();
    ctx.io.signal.addEventListener("abort", () => resolve(), { once: true });
  });
  ctx.io.out("Stopping Wave…\n");
  removeInstance(ctx.config.dataDir, process.pid);
  await wave.stop();
  return 0;
}
