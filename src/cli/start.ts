// The composition root of `wave start`: every component of Wave in one process, each built by
// the builder its own process uses — core (core-component.ts), the agent with the warmup
// controller beside it (agent-component.ts) and the spot-placement webhook (webhook-component.ts)
// — given what one process shares: generated tokens and TLS material, core's /metrics registry and
// prices, and the cluster. Without a kubeconfig (or with --simulate) the cluster is the embedded
// simulated Karpenter, whose day of history (prehistory.ts) is fed to core before the agent streams.
import { batchTouches } from "../core/ingest/sink.ts";
import { newToken } from "../api/auth.ts";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_DATA_DIR, type WaveConfig } from "../config/config.ts";
import type { ClusterEntry, ClusterHub } from "../core/hub/hub.ts";
import { SoleOwnership } from "../core/hub/ownership.ts";
import type { Store } from "../core/store/store.ts";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { KubeClient } from "../kube/port.ts";
import { realClock, type Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { seeded } from "../shared/random.ts";
import { shellCommand } from "../shared/shell.ts";
import { LaggingClock } from "../sim/clock.ts";
import { mirrorMemoryKube } from "../state/follow.ts";
import { ClusterState } from "../state/cluster.ts";
import { VolatilePolicyMemory } from "../warmup/policy-set.ts";
import { generateDevCerts } from "../webhook/certs.ts";
import { createSpotMetrics } from "../webhook/metrics.ts";
import { InMemoryPolicySource } from "../webhook/policy-source.ts";
import { POLICY_SET_API_VERSION, type SpotPolicy } from "../policy/spot.ts";
import type { SpotPolicyResource } from "../objects/policy-crds.ts";
import { startAgentComponent, type RunningAgentComponent } from "./agent-component.ts";
import type { CommandContext } from "./types.ts";
import { logger, startWith } from "./component.ts";
import { startCoreComponent, type RunningCore } from "./core-component.ts";
import {
  clusterFile,
  forgetSavedCluster,
  readSavedCluster,
  restoreCluster,
  saveClusterOnChange,
} from "./durable-cluster.ts";
import { startTokens, tokensFile } from "./tokens.ts";
import { putScenarioSpotPolicy, runEmbeddedCluster, seedLivingPolicies } from "./embedded.ts";
import { spotPoliciesOf, spotPolicyName, spotPolicyResource } from "../console/policy-crs.ts";
import { ensureNamespaces, registerWebhook } from "./host.ts";
import { makeDataDir, removeInstance, writeInstance } from "./instance.ts";
import { connectCluster, poolSamples } from "./parts.ts";
import { embeddedPrehistory } from "./prehistory.ts";
import { startWebhookComponent, type RunningWebhook } from "./webhook-component.ts";

/**
 * How far in the past the embedded simulated cluster begins (fast-forwarded at start): a day, fed
 * to core in process (prehistory.ts) but for the last minutes, which stream through the agent
 * (docs/simulator.md, "History at start").
 */
export const SIMULATED_HISTORY_MS = 24 * 3_600_000;

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
  /** The components as their builders returned them (`stop` stops each, the agent before the webhook and core). */
  components: { core: RunningCore; agent: RunningAgentComponent; webhook: RunningWebhook };
  stop(): Promise<void>;
}

export { poolSamples };

/** Whether this process should run on the embedded simulator. */
export function wantsSimulator(config: WaveConfig, env: NodeJS.ProcessEnv): boolean {
  return config.simulate || (config.kubeconfig === undefined && env.KUBERNETES_SERVICE_HOST === undefined);
}

/**
 * The spot policy set the webhook serves: the cluster's SpotPolicy resources as core holds them
 * (streamed by the agent, issue 31) once its stored policies became resources (the one-time
 * migration), before that the policies stored in core. Set only when it changed.
 */
export async function loadSpotPolicies(
  core: Pick<RunningCore, "store" | "hub">,
  clusterId: string,
  source: InMemoryPolicySource,
  log: Logger,
  last: {
    json: string;
    migrated: boolean;
    /** A restored simulated cluster's SpotPolicies: what the webhook admits with until core has them. */
    restored?: () => readonly SpotPolicyResource[];
  },
): Promise<void> {
  // The migration happens once; after it, no store read per applied batch. Core's state of the
  // cluster counts once the agent streamed it (an entry resumed from the store is empty).
  const streamed = (core.hub.get(clusterId)?.state.version ?? 0) > 0;
  last.migrated ||= streamed && (await core.store.policyMigration(clusterId)) !== undefined;
  // Restarted on its data dir, the simulated cluster's pods are created again before the agent
  // streams its policies to core: admitted with the restored ones, not the store's old rows.
  const early = !last.migrated && !streamed ? last.restored?.() : undefined;
  let policies: SpotPolicy[];
  if (last.migrated || early) {
    const crs = spotPoliciesOf(early ?? core.hub.state(clusterId).spotPolicies());
    for (const p of crs.problems)
      log.warn("skipping an invalid SpotPolicy", { policy: p.name, errors: p.errors });
    for (const c of crs.conflicts) log.warn("SpotPolicy not in force", { policy: c.key, why: c.message });
    policies = crs.policies;
  } else {
    policies = (await core.store.listPolicies(clusterId, "spot")).map((r) => r.value as SpotPolicy);
  }
  const json = JSON.stringify(policies);
  if (json === last.json) return;
  try {
    source.set({
      apiVersion: POLICY_SET_API_VERSION,
      kind: "SpotPolicySet",
      revision: String(Date.now()),
      policies,
    });
    last.json = json;
  } catch (err) {
    log.error("spot policies are invalid; keeping the previous set", { err });
  }
}

/**
 * The living scenario's user applies a SpotPolicy to a running workload (the in-memory
 * apiserver's resource, as `kubectl apply` would), unless the workload already has one.
 */
async function applyScenarioSpotPolicy(memory: MemoryKube, policy: SpotPolicy, now: number): Promise<void> {
  const existing = memory.peek("SpotPolicy", policy.workload.namespace);
  if (
    existing.some(
      (cr) =>
        cr.spec.targetRef.kind === policy.workload.kind && cr.spec.targetRef.name === policy.workload.name,
    )
  )
    return;
  const name = spotPolicyName(policy.workload, existing);
  await memory.create(
    "SpotPolicy",
    spotPolicyResource(policy, name, { subject: "scenario", via: "api", at: now }),
  );
}

/** Core's gRPC TLS pair (and the webhook's): the data directory's, else generated there. */
async function devCerts(config: WaveConfig): Promise<{ caFile: string; certFile: string; keyFile: string }> {
  const tlsDir = join(config.dataDir, "tls");
  if (existsSync(join(tlsDir, "tls.crt")))
    return {
      caFile: join(tlsDir, "ca.crt"),
      certFile: join(tlsDir, "tls.crt"),
      keyFile: join(tlsDir, "tls.key"),
    };
  return generateDevCerts({
    dir: tlsDir,
    hosts: [...new Set(["localhost", "127.0.0.1", ...(config.host === "0.0.0.0" ? [] : [config.host])])],
  });
}

export async function startWave(
  config: WaveConfig,
  env: NodeJS.ProcessEnv,
  opts: {
    clock?: Clock;
    log?: Logger;
    /** Simulated cluster: how much history to fast-forward through at start (default 24 h). */
    simulatedHistoryMs?: number;
    /** Simulated cluster: the largest fast-forward step (default: the fast-forward's own). */
    fastForwardMaxStepMs?: number;
    /**
     * Simulated cluster: stream all of the history through the agent, none generated in process
     * (the design before prehistory.ts; bench/startup's baseline).
     */
    streamAllHistory?: boolean;
    /** New API tokens instead of the data dir's (`wave start --rotate-tokens`). */
    rotateTokens?: boolean;
  } = {},
): Promise<Started> {
  const clock = opts.clock ?? realClock;
  const log = logger(config, undefined, opts);
  // What it opened is closed newest first: the simulated cluster, the agent, the webhook, core.
  return startWith(log, async (life) => {
    makeDataDir(config.dataDir);
    const simulated = wantsSimulator(config, env);
    const simDb = join(config.dataDir, "wave-sim.db");
    // Without a --data-dir of its own, each simulated run starts from a fresh history rather than
    // mixing today's fast-forwarded day with the last run's.
    if (simulated && !config.databaseUrl && config.dataDir === DEFAULT_DATA_DIR) {
      for (const f of [simDb, `${simDb}-wal`, `${simDb}-shm`]) rmSync(f, { force: true });
      forgetSavedCluster(config.dataDir);
    }

    // ---- the cluster: real, or the embedded simulator ----
    // The simulated cluster starts its history's length in the past and fast-forwards to now.
    const simClock = new LaggingClock(
      clock,
      simulated ? (opts.simulatedHistoryMs ?? SIMULATED_HISTORY_MS) : 0,
    );
    const clusterClock = simulated ? simClock : clock;
    const memory = simulated
      ? new MemoryKube({
          clock: simClock,
          random: seeded(42),
          historyLimit: 50_000,
          bookmarkIntervalMs: 60_000,
          // As a real apiserver: a day of the living cluster is ~9,000 Events, which the agent
          // would otherwise list and stream at every start, and keep for as long as it runs.
          eventTtlMs: 3_600_000,
        })
      : undefined;
    const { kube, kubernetesVersion } = memory
      ? { kube: memory, kubernetesVersion: "v1.34.0-sim" }
      : await connectCluster(config, env, log);
    const karpenterVersion = memory ? "v1.8-sim" : "";
    // The simulated cluster's objects a user or Wave wrote come back from the data dir, and are
    // saved there as they change (durable-cluster.ts); a real cluster keeps its own.
    const saved = memory ? readSavedCluster(clusterFile(config.dataDir), log) : undefined;
    const restored = memory && saved ? restoreCluster(memory, saved) : 0;
    if (restored > 0)
      log.info("simulated cluster's objects restored from the data dir", { objects: restored });
    if (memory) {
      const saver = saveClusterOnChange(memory, clusterFile(config.dataDir), {
        clock,
        clusterClock: simClock,
        log,
      });
      life.closers.push(() => saver.stop());
    }
    const waveNamespaces = [config.namespace, config.warmupNamespace ?? config.namespace];
    // The chart creates Wave's namespaces; on the host path they are checked and made here.
    const createdNamespaces = memory
      ? []
      : await ensureNamespaces(
          kube,
          [...waveNamespaces, config.spotLedgerNamespace ?? config.namespace],
          log,
        );
    if (memory)
      for (const name of new Set(waveNamespaces))
        if (!memory.peek("Namespace").some((n) => n.metadata.name === name))
          await memory.create("Namespace", { metadata: { name } });

    // ---- core: store, hub, ingest over TLS, history, API + web UI ----
    const certs = await devCerts(config);
    const tokens = startTokens(config, opts.rotateTokens ?? false);
    // The agent's token never leaves this process: a new one each start.
    const agentToken = newToken();
    // The spot policies this process's webhook serves: its own cluster's, read from core's store.
    const spotPolicies = new InMemoryPolicySource();
    const lastSpot = {
      json: "",
      migrated: false,
      ...(memory && restored > 0 ? { restored: () => memory.peek("SpotPolicy") } : {}),
    };
    const reloadSpot = (): Promise<void> =>
      loadSpotPolicies(core, config.clusterId, spotPolicies, log, lastSpot);
    const core: RunningCore = await startCoreComponent(config, env, {
      clock,
      log,
      inProcess: {
        tokens,
        grpcTls: { certFile: certs.certFile, keyFile: certs.keyFile },
        // The agent runs in this process: its random token is bound to this cluster alone.
        credentials: [{ name: "embedded-agent", token: agentToken, clusters: [config.clusterId] }],
        ...(simulated ? { sqlitePath: simDb } : {}),
        // The only core: no lease rows, whatever the store.
        ownership: new SoleOwnership(),
        simulated,
        // The simulated cluster's minutes, fast-forwarded ones included, so history starts full.
        historyClock: clusterClock,
        onPolicyChange: async (kind, clusterId) => {
          if (kind === "spot" && clusterId === config.clusterId) await reloadSpot();
        },
        // Only the embedded simulated cluster: on a real one the console shows the kubectl patch.
        ...(memory
          ? {
              nodePools: {
                clusterId: config.clusterId,
                patch: async (pool: string, patch: Record<string, unknown>) => {
                  await memory.patch("NodePool", pool, patch);
                },
              },
            }
          : {}),
      },
    });
    life.closers.push(() => core.stop());
    if (memory) await seedLivingPolicies(core.store, config.clusterId, clock.now());
    await reloadSpot();
    // The cluster's SpotPolicy resources reach core through the agent's stream: each change to
    // them (an edit through Wave, kubectl, GitOps) reloads the webhook's set.
    let reloading = Promise.resolve();
    life.closers.push(
      core.hub.onBatch((b) => {
        if (b.clusterId === config.clusterId && batchTouches(b, "SpotPolicy"))
          reloading = reloading
            .then(reloadSpot)
            .catch((err: unknown) => log.error("spot policies reload failed", { err }));
      }),
    );

    // ---- the webhook: over HTTPS on a real cluster; on the simulator, admission in process ----
    const webhook = await startWebhookComponent(config, env, {
      clock: clusterClock,
      log,
      kube,
      inProcess: {
        policies: spotPolicies,
        // The webhook's series (fallbacks, late answers, admissions) on core's /metrics.
        metrics: createSpotMetrics(core.metrics),
        ...(memory ? {} : { tls: certs }),
      },
    });
    life.closers.push(() => webhook.stop());
    let webhookInfo: Started["webhook"];
    if (!memory) {
      // Registered (with --register-webhook) or written out for `kubectl apply -f`: the URL is
      // this process's address, so the apiserver must be able to reach it.
      const url = `https://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${webhook.port}/mutate`;
      const registration = await registerWebhook({
        kube,
        caPem: readFileSync(certs.caFile, "utf8"),
        url,
        waveNamespaces,
        dataDir: config.dataDir,
        register: config.registerWebhook,
        log,
      });
      life.closers.push(() => registration.unregister());
      webhookInfo = {
        url,
        caFile: certs.caFile,
        configFile: registration.file,
        configName: registration.name,
        registered: registration.registered,
      };
    }

    // ---- the agent: informers → gRPC → core, the warmup controller beside it on its state ----
    // On the simulator the agent streams once the prehistory is in core. Meanwhile the warmup
    // controller reads a mirror of the in-memory apiserver, with the policies core holds, and acts
    // as it would live; its events wait in the agent's outbox. The agent's informers take the
    // state over when it starts.
    const agentState = new ClusterState();
    let markMirrored!: () => void;
    const mirrored = new Promise<void>((r) => (markMirrored = r));
    let markStreaming!: () => void;
    const streaming = new Promise<void>((r) => (markStreaming = r));
    const agent = await startAgentComponent(config, env, {
      // The cluster's time: the agent stamps what it observes with it, and on the simulator warm
      // nodes' TTLs and cooldowns run on it.
      clock: clusterClock,
      log,
      kube,
      // Core runs in this process: it is never away while the controller runs.
      policyMemory: new VolatilePolicyMemory(),
      inProcess: {
        coreUrl: `https://127.0.0.1:${core.grpcPort}`,
        token: agentToken,
        tls: { caFile: certs.caFile, serverName: "localhost" },
        registry: core.metrics,
        prices: core.prices,
        kubernetesVersion,
        karpenterVersion,
        state: agentState,
        ...(memory ? { streamWhen: streaming, actWhen: mirrored } : {}),
        // A poked pool once per cluster second: on the simulator's fast-forward, once per step.
        pokeIntervalMs: 1000,
      },
    });
    life.closers.push(() => agent.stop());

    // ---- the simulated cluster's loop: last, once everything that watches it runs ----
    let caughtUp = Promise.resolve();
    if (memory) {
      const stopMirror = (await mirrorMemoryKube(memory, agentState)).stop;
      // Core's set when it holds the cluster's resources already; else its stream sends them once
      // the agent's snapshot lands (until then the agent keeps what it remembered).
      const initial = await core.relay.policies(config.clusterId);
      if (initial) agent.warmup()?.setPolicies(initial);
      markMirrored();
      const prehistory = await embeddedPrehistory({
        kube: memory,
        hub: core.hub,
        store: core.store,
        prices: core.prices,
        clusterId: config.clusterId,
        clock: simClock,
        log,
        onSavings: (rows) => core.figures.events.savings(rows),
        startAgent: () => {
          stopMirror();
          markStreaming();
        },
        streamAll: opts.streamAllHistory ?? false,
      });
      const cluster = await runEmbeddedCluster({
        ...(prehistory ? { prehistory } : {}),
        kube: memory,
        simClock,
        clock,
        prices: core.prices,
        policies: webhook.policies,
        allocator: webhook.allocator,
        pods: webhook.pods,
        metrics: webhook.metrics,
        // A restored cluster had its day: the scenario's user does not set again a policy the
        // real user may have changed or deleted since.
        ...(restored > 0
          ? {}
          : {
              setSpotPolicy: async (policy: SpotPolicy) => {
                // Once the stored policies became resources, the scenario's user applies one;
                // before, it is stored in core (and becomes a resource with the others).
                if (await core.store.policyMigration(config.clusterId))
                  await applyScenarioSpotPolicy(memory, policy, clusterClock.now());
                else
                  await putScenarioSpotPolicy(
                    core.store,
                    config.clusterId,
                    policy,
                    clusterClock.now(),
                    reloadSpot,
                  );
              },
            }),
        log,
        signal: life.ac.signal,
        // Each fast-forward step waits until core holds all of it (which also bounds its lag in
        // the cluster's time): controllers that read core's view (warmup) act on the cluster as it
        // is, as they would live, and history records no empty minutes.
        drained: () => (agent.agent()?.agent.outbox.buffered ?? 0) === 0,
        live: () => {
          const entry = core.hub.get(config.clusterId);
          return entry !== undefined && entry.connected && entry.state.version > 0;
        },
        ...(opts.fastForwardMaxStepMs !== undefined ? { maxStepMs: opts.fastForwardMaxStepMs } : {}),
      });
      life.closers.push(() => cluster.done);
      caughtUp = cluster.caughtUp;
      void caughtUp.then(() => log.info("simulated history caught up with now"));
    }
    log.info("wave started", { simulated, api: core.address, grpcPort: core.grpcPort });
    return {
      url: `http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${core.apiPort}/`,
      apiPort: core.apiPort,
      grpcPort: core.grpcPort,
      webhookPort: webhook.port,
      ...(webhookInfo ? { webhook: webhookInfo } : {}),
      createdNamespaces,
      hub: core.hub,
      store: core.store,
      kube,
      simulated,
      caughtUp,
      simulatedLagMs: () => (simulated ? simClock.lag : 0),
      tokens,
      components: { core, agent, webhook },
      stop: life.stop,
    };
  });
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
        : `Webhook not registered. To place pods on spot, run: ${shellCommand(["kubectl", "apply", "-f", wh.configFile])}` +
            `  (or start with --register-webhook; the API server must reach ${wh.url})`,
    );
  } else lines.push("  webhook         in process (the simulated cluster admits through it directly)");
  if (wave.createdNamespaces.length > 0)
    lines.push(`Created namespace ${wave.createdNamespaces.join(", ")}.`);
  lines.push(
    generated ? `Admin token (changes policies): ${wave.tokens.admin}` : "Tokens: as configured.",
    ...(generated
      ? [`Tokens are kept in ${tokensFile(config.dataDir)} across restarts (--rotate-tokens draws new ones).`]
      : []),
    `wave spot|warmup … run with --data-dir ${config.dataDir} find this instance.`,
    "Press Ctrl-C to stop.",
    "",
  );
  return lines;
}

/** How often `wave start` in a terminal prints its status line. */
export const STATUS_EVERY_MS = 60_000;

/** The status line `wave start` prints in a terminal: `[12:01:00] cluster default: 14 nodes …`. */
export function statusLine(now: number, clusters: readonly ClusterEntry[], lagMs: number): string {
  const parts = clusters.map((c) => {
    const nodes = c.state.nodes().length;
    const pods = c.state.pods().length;
    const pools = c.state.nodePools().length;
    const link = c.connected ? "streaming" : "agent disconnected";
    return `cluster ${c.id}: ${nodes} nodes, ${pods} pods, ${pools} NodePools, ${link}`;
  });
  const behind = lagMs >= 1000 ? `; simulated history ${Math.round(lagMs / 60_000)} min behind` : "";
  return `[${new Date(now).toISOString().slice(11, 19)}] ${parts.join("; ") || "no cluster yet"}${behind}`;
}

/**
 * `wave start` in a terminal is quiet: its components log warnings and errors only (unless
 * --log-level or WAVE_LOG_LEVEL says otherwise) and a status line a minute says it is alive.
 */
export function quietInTerminal(ctx: CommandContext): boolean {
  return ctx.io.tty === true && ctx.given?.has("logLevel") !== true;
}

export async function startCommand(ctx: CommandContext): Promise<number> {
  const quiet = quietInTerminal(ctx);
  const wave = await startWave(quiet ? { ...ctx.config, logLevel: "warn" } : ctx.config, ctx.io.env, {
    rotateTokens: ctx.flags["rotate-tokens"] === true,
  });
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
  if (quiet)
    ctx.io.out("Logging warnings and errors only (--log-level info for more); a status line a minute:\n");
  const status = quiet
    ? setInterval(
        () => ctx.io.out(statusLine(Date.now(), wave.hub.clusters(), wave.simulatedLagMs()) + "\n"),
        STATUS_EVERY_MS,
      )
    : undefined;
  await new Promise<void>((resolve) => {
    if (ctx.io.signal.aborted) resolve();
    ctx.io.signal.addEventListener("abort", () => resolve(), { once: true });
  });
  clearInterval(status);
  ctx.io.out("Stopping Wave…\n");
  removeInstance(ctx.config.dataDir, process.pid);
  await wave.stop();
  return 0;
}
