// Composition for the agent process: informers → Agent → core, plus /metrics and /healthz.
// The CLI (`wave agent`) builds the options from configuration and calls this.
import { applyPolicyEdit } from "./policy-apply.ts";
import type { KubeClient } from "../kube/port.ts";
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";
import { startMetricsServer } from "../shared/metrics-server.ts";
import { Registry } from "../shared/metrics.ts";
import { Agent } from "./agent.ts";
import type { AgentOptions } from "./agent.ts";
import { InformerSource } from "./informer-source.ts";
import type { ClusterState } from "../state/cluster.ts";

export interface RunAgentOptions extends Omit<AgentOptions, "source" | "metrics" | "log" | "clock"> {
  kube: KubeClient;
  /** This install's namespace: stamped on the WarmupPolicies the agent applies for core. */
  instance?: string;
  /** Port for /metrics and /healthz (0 = any free port; undefined = no server). */
  metricsPort?: number;
  metricsHost?: string;
  log: Logger;
  clock?: Clock;
  /** A state the agent's informers also fill (the warmup controller beside it reads it). */
  state?: ClusterState;
  /** Register the agent's series here (core's /metrics in `wave start`) rather than in a registry of its own. */
  registry?: Registry;
  /**
   * Stream only once this resolves (`wave start`'s simulated cluster: after its prehistory). The
   * agent exists at once, so warmup events reported meanwhile wait in its outbox.
   */
  startWhen?: Promise<void>;
}

export interface RunningAgent {
  agent: Agent;
  registry: Registry;
  /** Resolves once the informers' first lists are in (and in `state`). */
  synced: Promise<void>;
  metricsPort: number | undefined;
  /** Stops streaming, the informers and the metrics server. */
  stop(): Promise<void>;
  /** Resolves when the agent ends (after stop, or if it fails to start). */
  done: Promise<void>;
}

export async function runAgent(opts: RunAgentOptions): Promise<RunningAgent> {
  const {
    kube,
    metricsPort,
    metricsHost,
    log,
    clock,
    state,
    startWhen,
    registry: shared,
    ...agentOpts
  } = opts;
  const registry = shared ?? new Registry();
  const ac = new AbortController();
  const source = new InformerSource({
    client: kube,
    log,
    ...(clock ? { clock } : {}),
    ...(state ? { state } : {}),
  });
  const agent = new Agent({
    // Policy edits from core are server-side applied with the agent's own client (ADR 0018).
    onPolicyEdit: (e) => applyPolicyEdit(kube, e, opts.instance),
    ...agentOpts,
    source,
    metrics: registry,
    log,
    ...(clock ? { clock } : {}),
  });
  const metrics =
    metricsPort === undefined
      ? undefined
      : await startMetricsServer(registry, {
          port: metricsPort,
          ...(metricsHost ? { host: metricsHost } : {}),
          // Healthy while it runs; a disconnected stream shows in metrics, not as a restart loop.
          healthy: () => agent.status !== "stopped",
        });
  const aborted = new Promise<void>((r) => ac.signal.addEventListener("abort", () => r(), { once: true }));
  const running = startWhen
    ? Promise.race([startWhen, aborted]).then(() => (ac.signal.aborted ? undefined : agent.run(ac.signal)))
    : agent.run(ac.signal);
  const done = running.catch((err: unknown) => {
    log.error("agent stopped", { error: err as Error });
    throw err;
  });
  // The caller decides what a failed agent means (usually: exit); it must not be an unhandled rejection.
  done.catch(() => undefined);
  return {
    agent,
    registry,
    synced: source.synced,
    metricsPort: metrics?.port,
    done,
    stop: async () => {
      ac.abort();
      await done.catch(() => undefined);
      await metrics?.close();
    },
  };
}
