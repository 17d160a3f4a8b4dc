// `wave agent`: informers → gRPC (mutual TLS + bearer) → core, and the warmup controller beside
// it on the state those informers fill (ADR 0014), only while holding its Lease.
// The environment it gets is the contract in deploy/helm/wave/README.md. `wave start` builds the
// same agent beside core in its own process (`inProcess`).
import { hostname } from "node:os";
import type { WaveConfig } from "../config/config.ts";
import { initialSyncDone, type AgentTls } from "../agent/agent.ts";
import { runAgent, type RunningAgent } from "../agent/run.ts";
import type { PriceProvider } from "../pricing/types.ts";
import { realClock } from "../shared/clock.ts";
import { startMetricsServer } from "../shared/metrics-server.ts";
import { Registry } from "../shared/metrics.ts";
import { LeaderElector } from "../kube/leader.ts";
import { startPricing } from "../pricing/setup.ts";
import { ClusterState } from "../state/cluster.ts";
import { followPolicies } from "../state/follow.ts";
import { runController } from "../warmup/run.ts";
import { ConfigMapPolicyMemory, type PolicyMemory } from "../warmup/policy-set.ts";
import {
  createWarmupActor,
  policyResources,
  toWire,
  WARMUP_POLICIES_CONFIGMAP,
  type WarmupActor,
} from "./warmup-actor.ts";
import type { CommandContext } from "./types.ts";
import {
  cluster,
  logger,
  required,
  serve,
  startWith,
  tlsFiles,
  type ComponentOptions,
  type Running,
} from "./component.ts";
import { heapBurst, settleHeap } from "./heap.ts";
import { version } from "./version.ts";

/** The agent's metrics: its own leader gauge plus the current term's agent registry. */
class TermRegistry extends Registry {
  current: Registry | undefined;
  override async render(): Promise<string> {
    return (await super.render()) + ((await this.current?.render()) ?? "");
  }
}

export interface RunningAgentComponent extends Running {
  /** The port of its /metrics (0: in process, its series are on core's). */
  metricsPort: number;
  /** Its Lease's elector (none in process). */
  elector: LeaderElector | undefined;
  /** The agent of the current leadership term, if this replica leads. */
  agent(): RunningAgent | undefined;
  /** The warmup controller of the current leadership term, if this replica leads. */
  warmup(): WarmupActor | undefined;
}

export interface AgentComponentOptions extends ComponentOptions {
  /** Where the last warmup policies are remembered (default: the wave-warmup-policies ConfigMap). */
  policyMemory?: PolicyMemory;
  /** Beside core in this process (`wave start`) rather than a process of its own. */
  inProcess?: AgentInProcess;
  /**
   * Where warmup takes its policies: the WarmupPolicy resources once listed (default; a cluster
   * without the CRD never lists them, so core's set stays in force there) or core's set only.
   * In process it is always core's (ADR 0015).
   */
  warmupPoliciesFrom?: "resources" | "core";
}

/**
 * The agent of `wave start`, beside core in one process: its cluster's only agent, so it holds no
 * Lease (one term for the process's life) and its series join core's /metrics.
 */
export interface AgentInProcess {
  /** Core's gRPC address, the token core accepts from it and core's CA. */
  coreUrl: string;
  token: string;
  tls: AgentTls;
  /** Core's registry. */
  registry: Registry;
  /** Core's prices (the warmup controller's price cap). */
  prices: PriceProvider;
  /** What the agent reports (default: the apiserver's version; Karpenter's unknown). */
  kubernetesVersion?: string;
  karpenterVersion?: string;
  /** The state the informers fill, for a caller that fills it before they do (the simulator's mirror). */
  state?: ClusterState;
  /** Stream once this resolves (the simulator: after its prehistory is in core). */
  streamWhen?: Promise<void>;
  /** The warmup controller acts once this resolves, if before the informers' first lists. */
  actWhen?: Promise<void>;
  /** The least time between two passes of a poked pool (runController). */
  pokeIntervalMs?: number;
}

export async function startAgentComponent(
  config: WaveConfig,
  env: NodeJS.ProcessEnv,
  opts: AgentComponentOptions = {},
): Promise<RunningAgentComponent> {
  const clock = opts.clock ?? realClock;
  const log = logger(config, "agent", opts);
  const near = opts.inProcess;
  const coreUrl =
    near?.coreUrl ?? required(config.coreAddress, "the core address (WAVE_CORE_ADDRESS or --core-address)");
  const token =
    near?.token ?? required(config.agentToken, "the agent token (WAVE_AGENT_TOKEN or --agent-token)");
  const files = config.agentTlsDir === undefined ? undefined : tlsFiles(config.agentTlsDir, "agent TLS");
  const tls: AgentTls | undefined =
    near?.tls ??
    (files && {
      certFile: files.certFile,
      keyFile: files.keyFile,
      ...(files.caFile ? { caFile: files.caFile } : {}),
    });
  return startWith(log, async (life) => {
    const connected = await cluster(config, env, log, opts);
    const { kube } = connected;
    const kubernetesVersion = near?.kubernetesVersion ?? connected.kubernetesVersion;
    const registry = near?.registry ?? new TermRegistry();
    if (!near) registry.collectDefaults();
    const leaderGauge = registry.gauge({
      name: "wave_agent_leader",
      help: "1 while this replica holds the agent Lease and streams to core",
    });
    // Serves for the process's whole life: a standby must be Ready, or a rolling update
    // (maxUnavailable 0) would wait forever for the new pod while the old one holds the Lease.
    const metrics = near
      ? undefined
      : await startMetricsServer(registry, { port: config.metricsPort, host: config.host });
    if (metrics) life.closers.push(() => metrics.close());
    // Warmup's price cap: live prices where the agent's credentials allow, else the table.
    const prices = near?.prices ?? startPricing(config, { clock, log, signal: life.ac.signal }).provider;
    const memory =
      opts.policyMemory ?? new ConfigMapPolicyMemory(kube, config.namespace, WARMUP_POLICIES_CONFIGMAP);
    const elector = near
      ? undefined
      : new LeaderElector({
          client: kube,
          clock,
          namespace: config.namespace,
          name: config.agentLease,
          identity: config.podName ?? hostname(),
          log,
        });
    let current: RunningAgent | undefined;
    let warmup: WarmupActor | undefined;
    const lead = async (leading: AbortSignal): Promise<void> => {
      let controlling: Promise<void> | undefined;
      let statusing: Promise<void> | undefined;
      // Ends this term's controller also when the agent stops while the Lease is still held.
      const term = new AbortController();
      const termSignal = AbortSignal.any([leading, term.signal]);
      try {
        // A fresh state per term: the informers of this term fill it.
        const state = near?.state ?? new ClusterState();
        const running: { agent?: RunningAgent } = {};
        // Wave's policy resources into this term's state (issue 31): warmup takes the
        // WarmupPolicies from there. In process (`wave start`) the policies stay core's (ADR 0015).
        const crs =
          near ||
          (opts.warmupPoliciesFrom ?? (config.warmupPolicySource === "core" ? "core" : "resources")) ===
            "core"
            ? undefined
            : followPolicies({ client: kube, state, signal: termSignal, clock, log });
        const actor = createWarmupActor({
          kube,
          view: state,
          prices,
          overlays: () => state.nodeOverlays(),
          clock,
          log,
          namespace: config.namespace,
          // Warmup and pull pods live in a namespace of their own, without Secrets (docs/security.md).
          podNamespace: config.warmupNamespace,
          memory,
          report: (e) => running.agent?.agent.warmup.push(toWire(e)),
          ...(crs ? { resources: policyResources(state, crs.WarmupPolicy.synced, config.namespace) } : {}),
        });
        warmup = actor;
        // What core sent last, in case it is away now; its own set replaces this when it comes.
        await actor.policies.restore();
        // `wave agent` alone: its lists and first snapshot are one burst of allocation (heap.ts),
        // from here to its initial sync; wave start's process holds core too.
        const endBurst = near ? () => undefined : heapBurst({ pinYoung: true });
        current = await runAgent({
          instance: config.namespace,
          state,
          onWarmupPolicies: (p) => actor.setPolicies(p),
          kube,
          coreUrl,
          ...(tls ? { tls } : {}),
          token,
          clusterId: config.clusterId,
          kubernetesVersion,
          karpenterVersion: near?.karpenterVersion ?? "",
          agentVersion: version(),
          log,
          clock,
          ...(near ? { registry: near.registry } : {}),
          ...(near?.streamWhen ? { startWhen: near.streamWhen } : {}),
        }).catch((err: unknown) => {
          endBurst();
          throw err;
        });
        running.agent = current;
        // From its initial sync on it holds a steady projection (heap.ts).
        void current.agent.until(initialSyncDone, termSignal).then(() => {
          endBurst();
          if (!near) settleHeap();
        }, endBurst);
        if (registry instanceof TermRegistry) registry.current = current.registry;
        leaderGauge.set(1);
        const agentRun = current;
        // The controller acts only on a complete picture of the cluster: after the first lists.
        controlling = Promise.race([
          agentRun.synced,
          agentRun.done,
          ...(near?.actWhen ? [near.actWhen] : []),
        ]).then(() =>
          termSignal.aborted || agentRun.agent.status === "stopped"
            ? undefined
            : runController(actor.controller, {
                clock,
                signal: termSignal,
                log,
                triggers: actor.triggers,
                ...(near?.pokeIntervalMs === undefined ? {} : { pokeIntervalMs: near.pokeIntervalMs }),
              }),
        );
        statusing = actor.statuses?.run(termSignal);
        const lost = new Promise<void>((r) => {
          if (leading.aborted) r();
          leading.addEventListener("abort", () => r(), { once: true });
        });
        const ended = current.done.then(() => {
          if (!leading.aborted) throw new Error("the agent stopped streaming");
        });
        const controllerFailed = controlling.then(() => {
          if (!termSignal.aborted) throw new Error("the warmup controller stopped");
        });
        await Promise.race([lost, ended, controllerFailed]);
      } catch (err) {
        // A leader that cannot stream must not keep the Lease: the process exits and restarts.
        life.fail(err);
      } finally {
        term.abort();
        await current?.stop();
        await controlling?.catch(() => undefined);
        await statusing?.catch(() => undefined);
        await warmup?.policies.saved();
        warmup = undefined;
        current = undefined;
        leaderGauge.set(0);
      }
    };
    // In process there is no Lease: one term until the process stops.
    const campaign = elector ? elector.run(life.ac.signal, lead) : lead(life.ac.signal);
    life.closers.push(() => campaign);
    return {
      metricsPort: metrics?.port ?? 0,
      elector,
      agent: () => current,
      warmup: () => warmup,
      failed: life.failed,
      stop: life.stop,
    };
  });
}

export async function agentCommand(ctx: CommandContext): Promise<number> {
  return serve(ctx, "agent", await startAgentComponent(ctx.config, ctx.io.env));
}
