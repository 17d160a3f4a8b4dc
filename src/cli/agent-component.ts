// `wave agent`: informers → gRPC (mutual TLS + bearer) → core, only while holding its Lease.
// The environment it gets is the contract in deploy/helm/wave/README.md.
import { hostname } from "node:os";
import type { WaveConfig } from "../config/config.ts";
import { runAgent, type RunningAgent } from "../agent/run.ts";
import { realClock } from "../shared/clock.ts";
import { startMetricsServer } from "../shared/metrics-server.ts";
import { Registry } from "../shared/metrics.ts";
import { LeaderElector } from "../kube/leader.ts";
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
} from "./component.ts";
import { version } from "./version.ts";

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
  return startWith(log, async (life) => {
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
  });
}

export async function agentCommand(ctx: CommandContext): Promise<number> {
  return serve(ctx, "agent", await startAgentComponent(ctx.config, ctx.io.env));
}
