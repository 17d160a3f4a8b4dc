// The per-component processes the Helm chart runs, each with its own ServiceAccount:
//   wave agent   — informers → gRPC (mutual TLS + bearer) → core, only while holding its Lease
//   wave core    — history store, hub, ingest server, API + UI, warmup controller (Lease holder)
//   wave webhook — spot-placement admission, policies pulled from core's API
//   wave cleanup — removes what Wave wrote into the cluster (the chart's post-delete hook)
// Same seams as `wave start` (start.ts), built from the same parts (parts.ts). The environment
// each process gets is the contract in deploy/helm/wave/README.md.
import { existsSync, mkdirSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { WaveConfig } from "../config/config.ts";
import { runAgent, type RunningAgent } from "../agent/run.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { IngestCore } from "../core/ingest/core.ts";
import { startIngestServer } from "../core/ingest/server.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import type { Lease, Pod } from "../kube/objects.ts";
import { isConflict, isNotFound, type KubeClient } from "../kube/port.ts";
import { K } from "../karpenter/types.ts";
import { createPricing } from "../pricing/setup.ts";
import { realClock, type Clock } from "../shared/clock.ts";
import { createLogger, type Logger } from "../shared/log.ts";
import { startMetricsServer } from "../shared/metrics-server.ts";
import { Registry } from "../shared/metrics.ts";
import { W } from "../warmup/labels.ts";
import { LeaderElector } from "../warmup/leader.ts";
import { runController } from "../warmup/run.ts";
import { SlotAllocator } from "../webhook/allocator.ts";
import { LEDGER_LABEL } from "../webhook/constants.ts";
import { PullPolicySource } from "../webhook/policy-source.ts";
import { startWebhookServer } from "../webhook/server.ts";
import type { CommandContext } from "./commands.ts";
import { version } from "./main.ts";
import { connectCluster, createWarmup, startApi, startHistory, userError } from "./parts.ts";

/** The warmup controller's leader Lease in Wave's namespace (RBAC pins this name). */
export const WARMUP_LEASE = "wave-warmup";
/** How often core's warmup leader re-reads warmup policies (another replica's API may change them). */
const POLICY_RELOAD_MS = 30_000;
const SHUTDOWN_STEP_MS = 5000;
/** Annotation on Nodes for pre-pulled images (removed with Wave's do-not-disrupt). */
const PREPULLED = "wave.sh/prepulled";

export interface ComponentOptions {
  clock?: Clock;
  log?: Logger;
  /** Use this client instead of connecting with the kubeconfig / ServiceAccount (tests). */
  kube?: KubeClient;
}

/** A running component: `failed` resolves (never rejects) if it stops on its own. */
export interface Running {
  stop(): Promise<void>;
  failed: Promise<Error>;
}

type Closer = () => Promise<void> | void;

/** Shutdown in reverse order of start, each step bounded so SIGTERM always ends the process. */
function lifecycle(log: Logger): {
  ac: AbortController;
  closers: Closer[];
  fail: (err: unknown) => void;
  failed: Promise<Error>;
  stop: () => Promise<void>;
} {
  const ac = new AbortController();
  const closers: Closer[] = [];
  let fail: (err: unknown) => void = () => undefined;
  const failed = new Promise<Error>((resolve) => {
    fail = (err) => resolve(err instanceof Error ? err : new Error(String(err)));
  });
  const stop = async (): Promise<void> => {
    ac.abort();
    for (const close of closers.splice(0).reverse()) {
      try {
        await Promise.race([close(), new Promise((r) => setTimeout(r, SHUTDOWN_STEP_MS).unref())]);
      } catch (err) {
        log.warn("shutdown step failed", { err });
      }
    }
  };
  return { ac, closers, fail, failed, stop };
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw userError(`${what} is required`);
  return value;
}

function logger(config: WaveConfig, component: string, opts: ComponentOptions): Logger {
  return opts.log ?? createLogger({ level: config.logLevel, base: { app: "wave", component } });
}

async function cluster(
  config: WaveConfig,
  env: NodeJS.ProcessEnv,
  log: Logger,
  opts: ComponentOptions,
): Promise<{ kube: KubeClient; kubernetesVersion: string }> {
  return opts.kube ? { kube: opts.kube, kubernetesVersion: "" } : connectCluster(config, env, log);
}

/** tls.crt + tls.key (+ ca.crt) of a cert-manager Secret mounted as a directory. */
function tlsFiles(
  dir: string,
  what: string,
): { certFile: string; keyFile: string; caFile: string | undefined } {
  const certFile = join(dir, "tls.crt");
  const keyFile = join(dir, "tls.key");
  const caFile = join(dir, "ca.crt");
  for (const f of [certFile, keyFile])
    if (!existsSync(f)) throw userError(`${what}: ${f} is missing (is the certificate issued?)`);
  return { certFile, keyFile, caFile: existsSync(caFile) ? caFile : undefined };
}

// ---------------------------------------------------------------------------------------------
// agent

/** The agent's metrics: its own leader gauge plus the current term's agent registry. */
class TermRegistry extends Registry {
  current: Registry | undefined;
  override render(): string {
    return super.render() + (this.current?.render() ?? "");
  }
}

export interface RunningAgentComponent extends Running {
  metricsPort: number;
  elector: LeaderElector;
  /** The agent of the current leadership term, if this replica leads. */
  agent(): RunningAgent | undefined;
}

export async function startAgentComponent(
  config: WaveConfig,
  env: NodeJS.ProcessEnv,
  opts: ComponentOptions = {},
): Promise<RunningAgentComponent> {
  const clock = opts.clock ?? realClock;
  const log = logger(config, "agent", opts);
  const coreUrl = required(config.coreAddress, "the core address (WAVE_CORE_ADDRESS or --core-address)");
  const token = required(config.agentToken, "the agent token (WAVE_AGENT_TOKEN or --agent-token)");
  const tls = config.agentTlsDir === undefined ? undefined : tlsFiles(config.agentTlsDir, "agent TLS");
  const life = lifecycle(log);
  try {
    const { kube, kubernetesVersion } = await cluster(config, env, log, opts);
    const registry = new TermRegistry();
    const leaderGauge = registry.gauge({
      name: "wave_agent_leader",
      help: "1 while this replica holds the agent Lease and streams to core",
    });
    // Serves for the process's whole life: a standby must be Ready, or a rolling update
    // (maxUnavailable 0) would wait forever for the new pod while the old one holds the Lease.
    const metrics = await startMetricsServer(registry, { port: config.metricsPort, host: config.host });
    life.closers.push(() => metrics.close());
    const elector = new LeaderElector({
      client: kube,
      clock,
      namespace: config.namespace,
      name: config.agentLease,
      identity: config.podName ?? hostname(),
      log,
    });
    let current: RunningAgent | undefined;
    const campaign = elector.run(life.ac.signal, async (leading) => {
      try {
        current = await runAgent({
          kube,
          coreUrl,
          ...(tls
            ? {
                tls: {
                  certFile: tls.certFile,
                  keyFile: tls.keyFile,
                  ...(tls.caFile ? { caFile: tls.caFile } : {}),
                },
              }
            : {}),
          token,
          clusterId: config.clusterId,
          kubernetesVersion,
          karpenterVersion: "",
          agentVersion: version(),
          log,
          clock,
        });
        registry.current = current.registry;
        leaderGauge.set(1);
        const lost = new Promise<void>((r) => {
          if (leading.aborted) r();
          leading.addEventListener("abort", () => r(), { once: true });
        });
        const ended = current.done.then(() => {
          if (!leading.aborted) throw new Error("the agent stopped streaming");
        });
        await Promise.race([lost, ended]);
      } catch (err) {
        // A leader that cannot stream must not keep the Lease: the process exits and restarts.
        life.fail(err);
      } finally {
        await current?.stop();
        current = undefined;
        leaderGauge.set(0);
      }
    });
    life.closers.push(() => campaign);
    return {
      metricsPort: metrics.port,
      elector,
      agent: () => current,
      failed: life.failed,
      stop: life.stop,
    };
  } catch (err) {
    await life.stop();
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// core

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
  const life = lifecycle(log);
  try {
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
    const warmup = await createWarmup({ kube, store, prices, clock, log, namespace: config.namespace });
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
      warmupTotals: () => warmup.totals(),
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
  } catch (err) {
    await life.stop();
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// webhook

export interface RunningWebhook extends Running {
  port: number;
  policies: PullPolicySource;
}

export async function startWebhookComponent(
  config: WaveConfig,
  env: NodeJS.ProcessEnv,
  opts: ComponentOptions = {},
): Promise<RunningWebhook> {
  const clock = opts.clock ?? realClock;
  const log = logger(config, "webhook", opts);
  const url = required(
    config.spotPoliciesUrl,
    "the spot policies URL (WAVE_SPOT_POLICIES_URL or --spot-policies-url)",
  );
  if (!/^https?:\/\//.test(url)) throw userError(`the spot policies URL must be http(s)://…, got ${url}`);
  const viewer = required(config.viewerToken, "the viewer token (WAVE_VIEWER_TOKEN or --viewer-token)");
  const tls = tlsFiles(
    required(config.webhookTlsDir, "the webhook TLS directory (WAVE_WEBHOOK_TLS_DIR or --webhook-tls-dir)"),
    "webhook TLS",
  );
  const life = lifecycle(log);
  try {
    const { kube } = await cluster(config, env, log, opts);
    const policies = PullPolicySource.fromUrl(url, {
      clock,
      logger: log,
      headers: { authorization: `Bearer ${viewer}` },
    });
    // Admit unchanged until the first set loads (core may start after us); never block start-up.
    if (!(await policies.start())) log.warn("no spot policies yet; admitting pods unchanged", { url });
    life.closers.push(() => policies.stop());
    const server = await startWebhookServer({
      certFile: tls.certFile,
      keyFile: tls.keyFile,
      port: config.webhookPort,
      host: config.host,
      policies,
      allocator: new SlotAllocator({ kube, namespace: config.namespace, clock, logger: log }),
      clock,
      logger: log,
      fallback: config.webhookFallback,
      deadlineMs: config.webhookDeadlineMs,
    });
    life.closers.push(() => server.close());
    log.info("wave webhook started", { port: server.port });
    return { port: server.port, policies, failed: life.failed, stop: life.stop };
  } catch (err) {
    await life.stop();
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// cleanup

export interface CleanupOptions {
  namespace: string;
  /** Label selector of pods (in `namespace`) that must be gone first: core's. */
  waitForPods?: string;
  /** The agent's leader Lease name. */
  agentLease?: string;
  clock?: Clock;
  log?: Logger;
  signal?: AbortSignal;
  pollMs?: number;
}

export interface CleanupReport {
  pods: string[];
  nodes: string[];
  nodeClaims: string[];
  nodePools: string[];
  leases: string[];
  /** One line per object that could not be cleaned (the run then exits non-zero). */
  errors: string[];
}

const CONFLICT_RETRIES = 5;

async function listAll(kube: KubeClient, kind: "Node" | "NodeClaim" | "NodePool"): Promise<Annotated[]> {
  const out: Annotated[] = [];
  let cont: string | undefined;
  do {
    const page = await kube.list(kind, cont === undefined ? { limit: 500 } : { limit: 500, continue: cont });
    out.push(...page.items);
    cont = page.continue;
  } while (cont !== undefined && cont !== "");
  return out;
}

type Annotated = {
  metadata: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
};

/**
 * Merge-patches away the annotations `remove` picks from the current ones, with a
 * resourceVersion precondition; on conflict re-reads and recomputes. False when nothing to do.
 */
async function stripAnnotations(
  kube: KubeClient,
  kind: "Node" | "NodeClaim" | "NodePool",
  obj: Annotated,
  remove: (a: Record<string, string>) => string[],
): Promise<boolean> {
  const name = obj.metadata.name ?? "";
  let cur = obj;
  for (let attempt = 0; ; attempt++) {
    const keys = remove(cur.metadata.annotations ?? {});
    if (keys.length === 0) return false;
    try {
      await kube.patch(kind, name, {
        metadata: {
          resourceVersion: cur.metadata.resourceVersion,
          annotations: Object.fromEntries(keys.map((k) => [k, null])),
        },
      });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (!isConflict(err) || attempt >= CONFLICT_RETRIES) throw err;
      try {
        cur = await kube.get(kind, name);
      } catch (e) {
        if (isNotFound(e)) return false;
        throw e;
      }
    }
  }
}

/**
 * Wave's warm-node marks, only where this install owns the do-not-disrupt: a user's stays, and so
 * does another Wave install's (its owner namespace differs; a mark without one predates it).
 */
export function waveProtection(
  kind: "Node" | "NodeClaim",
  namespace: string,
): (a: Record<string, string>) => string[] {
  return (a) => {
    if (a[W.doNotDisruptOwner] !== W.doNotDisruptOwnerValue) return [];
    const owner = a[W.doNotDisruptNamespace];
    if (owner !== undefined && owner !== namespace) return [];
    const keys: string[] = [
      K.doNotDisrupt,
      W.doNotDisruptOwner,
      W.doNotDisruptNamespace,
      W.deadline,
      W.createdAt,
    ];
    if (kind === "Node") keys.push(PREPULLED);
    return keys.filter((k) => k in a);
  };
}

/** The NodePool's warmup cooldown mark, unless another Wave install (namespace) wrote it last. */
export function cooldownMark(namespace: string): (a: Record<string, string>) => string[] {
  return (a) => {
    const owner = a[W.lastWarmupNamespace];
    if (owner !== undefined && owner !== namespace) return [];
    return [W.lastWarmupAt, W.lastWarmupNamespace].filter((k) => k in a);
  };
}

/** Removes what Wave wrote into the cluster at run time (docs/install-eks.md, "Uninstall"). */
export async function cleanup(kube: KubeClient, o: CleanupOptions): Promise<CleanupReport> {
  const clock = o.clock ?? realClock;
  const log = o.log ?? createLogger({ base: { app: "wave", component: "cleanup" } });
  const ns = o.namespace;
  const report: CleanupReport = {
    pods: [],
    nodes: [],
    nodeClaims: [],
    nodePools: [],
    leases: [],
    errors: [],
  };
  const attempt = async (what: string, fn: () => Promise<void>): Promise<void> => {
    try {
      await fn();
    } catch (err) {
      report.errors.push(`${what}: ${(err as Error).message}`);
      log.error("cleanup step failed", { what, err });
    }
  };

  // 1. Core must be gone, or it could start a warmup behind our back.
  if (o.waitForPods !== undefined) {
    const selector = o.waitForPods;
    for (;;) {
      const left = (await kube.list("Pod", { namespace: ns, labelSelector: selector })).items;
      if (left.length === 0) break;
      log.info("waiting for pods to be gone", { selector, left: left.map((p) => p.metadata.name) });
      await clock.sleep(o.pollMs ?? 2000, o.signal);
    }
  }

  // 2. Warmup and pull pods.
  const pods: Pod[] = [];
  await attempt("list warmup and pull pods", async () => {
    for (const label of [W.warmupLabel, W.prepullLabel])
      pods.push(...(await kube.list("Pod", { namespace: ns, labelSelector: `${label}=true` })).items);
  });
  for (const p of pods) {
    const name = p.metadata.name ?? "";
    await attempt(`pod ${ns}/${name}`, async () => {
      try {
        await kube.delete("Pod", name, {
          namespace: ns,
          gracePeriodSeconds: 0,
          ...(p.metadata.uid === undefined ? {} : { uid: p.metadata.uid }),
        });
        report.pods.push(name);
      } catch (err) {
        // Gone already, or a different pod now holds the name: either way ours is done.
        if (!isNotFound(err) && !isConflict(err)) throw err;
      }
    });
  }

  // 3. Warm nodes: Wave-owned do-not-disrupt on Nodes and NodeClaims.
  for (const [kind, into] of [
    ["Node", report.nodes],
    ["NodeClaim", report.nodeClaims],
  ] as const) {
    let objs: Annotated[] = [];
    await attempt(`list ${kind}s`, async () => {
      objs = await listAll(kube, kind);
    });
    for (const obj of objs) {
      const name = obj.metadata.name ?? "";
      await attempt(`${kind} ${name}`, async () => {
        if (await stripAnnotations(kube, kind, obj, waveProtection(kind, ns))) into.push(name);
      });
    }
  }

  // 4. NodePools: the warmup cooldown mark.
  let pools: Annotated[] = [];
  await attempt("list NodePools", async () => {
    pools = await listAll(kube, "NodePool");
  });
  for (const pool of pools) {
    const name = pool.metadata.name ?? "";
    await attempt(`NodePool ${name}`, async () => {
      if (await stripAnnotations(kube, "NodePool", pool, cooldownMark(ns))) report.nodePools.push(name);
    });
  }

  // 5. Leases: leader elections and spot slot ledgers.
  const leaders = new Set([WARMUP_LEASE, o.agentLease ?? "wave-agent"]);
  let leases: Lease[] = [];
  await attempt("list Leases", async () => {
    leases = (await kube.list("Lease", { namespace: ns })).items;
  });
  for (const l of leases) {
    const name = l.metadata.name ?? "";
    const labels = l.metadata.labels ?? {};
    const ledger = labels[W.managedByLabel] === W.managedByValue && labels[LEDGER_LABEL] !== undefined;
    if (!leaders.has(name) && !ledger) continue;
    await attempt(`Lease ${ns}/${name}`, async () => {
      try {
        await kube.delete("Lease", name, {
          namespace: ns,
          ...(l.metadata.uid === undefined ? {} : { uid: l.metadata.uid }),
        });
        report.leases.push(name);
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) throw err;
      }
    });
  }
  return report;
}

// ---------------------------------------------------------------------------------------------
// CLI commands

/** Runs until SIGTERM/SIGINT (exit 0) or until the component fails on its own (exit 1). */
async function serve(ctx: CommandContext, name: string, running: Running): Promise<number> {
  const signalled = new Promise<undefined>((resolve) => {
    if (ctx.io.signal.aborted) resolve(undefined);
    ctx.io.signal.addEventListener("abort", () => resolve(undefined), { once: true });
  });
  const failure = await Promise.race([signalled, running.failed]);
  await running.stop();
  if (failure === undefined) return 0;
  ctx.io.err(`wave ${name}: ${failure.message}\n`);
  return 1;
}

export async function agentCommand(ctx: CommandContext): Promise<number> {
  return serve(ctx, "agent", await startAgentComponent(ctx.config, ctx.io.env));
}

export async function coreCommand(ctx: CommandContext): Promise<number> {
  return serve(ctx, "core", await startCoreComponent(ctx.config, ctx.io.env));
}

export async function webhookCommand(ctx: CommandContext): Promise<number> {
  return serve(ctx, "webhook", await startWebhookComponent(ctx.config, ctx.io.env));
}

export async function cleanupCommand(ctx: CommandContext, opts: ComponentOptions = {}): Promise<number> {
  const log = logger(ctx.config, "cleanup", opts);
  const { kube } = await cluster(ctx.config, ctx.io.env, log, opts);
  const wait = ctx.flags["wait-for-pods"];
  const report = await cleanup(kube, {
    namespace: ctx.config.namespace,
    agentLease: ctx.config.agentLease,
    ...(typeof wait === "string" ? { waitForPods: wait } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
    log,
    signal: ctx.io.signal,
  });
  const counts = (["pods", "nodes", "nodeClaims", "nodePools", "leases"] as const)
    .map((k) => `${report[k].length} ${k}`)
    .join(", ");
  ctx.io.out(`cleaned up in namespace ${ctx.config.namespace}: ${counts}\n`);
  for (const e of report.errors) ctx.io.err(`wave cleanup: ${e}\n`);
  return report.errors.length === 0 ? 0 : 1;
}
