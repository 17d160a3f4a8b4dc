// `wave webhook`: spot-placement admission, policies from the SpotPolicy resources through its own
// informer (issue 31; or, with --spot-policy-source core, long-polled from core's API), the pod
// watch the slot ledgers follow, and the leader-elected spot repair (ADR 0006) beside it.
// The environment it gets is the contract in deploy/helm/wave/README.md. `wave start` builds the
// same webhook beside core in its own process (`inProcess`).
import { hostname } from "node:os";
import type { WaveConfig } from "../config/config.ts";
import { realClock } from "../shared/clock.ts";
import { LeaderElector } from "../kube/leader.ts";
import { SlotAllocator } from "../webhook/allocator.ts";
import { BackingVerifier, SourceLimiter } from "../webhook/backing.ts";
import { LateAnswerRecorder } from "../webhook/late-events.ts";
import { createSpotMetrics, type SpotMetrics } from "../webhook/metrics.ts";
import { PodCache } from "../webhook/pod-cache.ts";
import { CrdPolicySource } from "../webhook/crd-policy-source.ts";
import { SpotStatusWriter } from "../webhook/policy-status.ts";
import { PullPolicySource, type PolicySource } from "../webhook/policy-source.ts";
import { NodeCapacity, SpotRepair } from "../webhook/repair.ts";
import { startWebhookServer } from "../webhook/server.ts";
import type { CommandContext } from "./types.ts";
import {
  cluster,
  logger,
  required,
  serve,
  SPOT_REPAIR_LEASE,
  startWith,
  tlsFiles,
  type ComponentOptions,
  type Running,
} from "./component.ts";
import { userError } from "./connect.ts";

export interface RunningWebhook extends Running {
  /** Its HTTPS port (0: it serves none, the simulated apiserver admits in process). */
  port: number;
  policies: PolicySource;
  /** What admission and repair act through (the simulated apiserver admits through them). */
  allocator: SlotAllocator;
  pods: PodCache;
  metrics: SpotMetrics;
}

export interface WebhookComponentOptions extends ComponentOptions {
  /** Beside core in this process (`wave start`) rather than a process of its own. */
  inProcess?: WebhookInProcess;
}

/**
 * The webhook of `wave start`: its policies are core's (no pull), its series on core's /metrics.
 * On a real cluster (`tls` given) it runs the spot repair as `wave webhook` does; on the simulator
 * it runs none here (the embedded cluster steps its own, once per simulated step).
 */
export interface WebhookInProcess {
  policies: PolicySource;
  metrics: SpotMetrics;
  /** Serve admission over HTTPS with this pair; without it nothing listens (the simulator admits in process). */
  tls?: { certFile: string; keyFile: string };
}

export async function startWebhookComponent(
  config: WaveConfig,
  env: NodeJS.ProcessEnv,
  opts: WebhookComponentOptions = {},
): Promise<RunningWebhook> {
  const clock = opts.clock ?? realClock;
  const log = logger(config, "webhook", opts);
  const near = opts.inProcess;
  type Source = { given: PolicySource } | { pull: { url: string; viewer: string } } | { crd: true };
  const source: Source = near
    ? { given: near.policies }
    : policySourceOf(config) === "core"
      ? { pull: pullSettings(config) }
      : { crd: true };
  const tls = near
    ? near.tls
    : tlsFiles(
        required(
          config.webhookTlsDir,
          "the webhook TLS directory (WAVE_WEBHOOK_TLS_DIR or --webhook-tls-dir)",
        ),
        "webhook TLS",
      );
  return startWith(log, async (life) => {
    const { kube } = await cluster(config, env, log, opts);
    const metrics = near?.metrics ?? createSpotMetrics();
    const identity = config.podName ?? hostname();
    const ledgerNamespace = config.spotLedgerNamespace ?? config.namespace;
    let policies: PolicySource;
    if ("crd" in source) {
      // The cluster's SpotPolicies, through this replica's own informer: no decision waits on
      // core, and with core stopped the webhook keeps deciding from what it holds.
      const crds = new CrdPolicySource({
        kube,
        clock,
        logger: log,
        onChange: () => metrics.policyUpdates.inc({ delivery: "watch", outcome: "changed" }),
      });
      if (!(await crds.start()))
        log.warn(
          "SpotPolicies not listed yet (is the wave-crds chart installed?); admitting pods unchanged until they are",
        );
      life.closers.push(() => crds.stop());
      policies = crds;
    } else if ("pull" in source) {
      const { pull } = source;
      const pulled = PullPolicySource.fromUrl(pull.url, {
        clock,
        logger: log,
        headers: { authorization: `Bearer ${pull.viewer}` },
        watch: config.spotPolicyWatch,
        intervalMs: config.spotPolicyIntervalMs,
        onFetch: (delivery, outcome) => metrics.policyUpdates.inc({ delivery, outcome }),
      });
      // Admit unchanged until the first set loads (core may start after us); never block start-up.
      if (!(await pulled.start()))
        log.warn("no spot policies yet; admitting pods unchanged", { url: pull.url });
      life.closers.push(() => pulled.stop());
      policies = pulled;
    } else policies = source.given;
    // The ledgers follow pods through this watch; until its first list, admissions list instead.
    const pods = new PodCache({ kube, clock, logger: log }).start();
    life.closers.push(() => pods.stop());
    const allocator = new SlotAllocator({
      kube,
      namespace: ledgerNamespace,
      clock,
      logger: log,
      replicaId: identity,
      pods,
      // Over HTTPS a forged review must not spend on-demand slots; in process nothing can forge one.
      ...(tls ? { backing: new BackingVerifier({ kube, limiter: new SourceLimiter(clock) }) } : {}),
    });
    // The repair (and adoption) wherever Wave admits for a real cluster: the chart's `wave webhook`
    // and `wave start --kubeconfig` alike (issue 28: the latter used to run without it).
    if (config.spotRepair && (!near || near.tls)) {
      const nodes = new NodeCapacity(kube, clock, log).start();
      life.closers.push(() => nodes.stop());
      const repair = new SpotRepair({
        kube,
        pods,
        policies,
        allocator,
        clock,
        logger: log,
        metrics,
        identity,
        nodes,
        dryRun: config.spotRepairDryRun,
        timing: { preferFallbackMs: config.spotPreferFallbackMs },
      });
      const elector = new LeaderElector({
        client: kube,
        clock,
        namespace: ledgerNamespace,
        name: SPOT_REPAIR_LEASE,
        identity,
        log,
      });
      const stop = new AbortController();
      // With the SpotPolicy resources as the source, the repair's leader writes their status.
      const statuses =
        policies instanceof CrdPolicySource
          ? new SpotStatusWriter({
              kube,
              index: policies.index,
              seen: () => repair.status(),
              clock,
              logger: log,
            })
          : undefined;
      const running = elector
        .run(stop.signal, async (leading) => {
          await Promise.all([repair.run(leading), statuses?.run(leading)]);
        })
        .catch((err: unknown) => {
          log.error("spot repair stopped", { err });
        });
      life.closers.push(async () => {
        stop.abort();
        await running;
      });
    }
    // Late answers as one Event per workload per minute, in the pod's namespace (RBAC: events
    // create); drained on shutdown, after the server stopped answering (closers run in reverse).
    // Only a serving webhook answers late (in process, the simulator admits without a deadline).
    let server: Awaited<ReturnType<typeof startWebhookServer>> | undefined;
    if (tls) {
      const lateAnswers = new LateAnswerRecorder({
        write: (e) => kube.create("Event", e, { namespace: e.metadata.namespace ?? "" }),
        logger: log,
        instance: identity,
      });
      life.closers.push(lateAnswers.start(clock));
      server = await startWebhookServer({
        certFile: tls.certFile,
        keyFile: tls.keyFile,
        port: config.webhookPort,
        host: config.host,
        policies,
        allocator,
        clock,
        logger: log,
        fallback: config.webhookFallback,
        deadlineMs: config.webhookDeadlineMs,
        limits: { trustedCidrs: config.webhookControlPlaneCidrs },
        metrics,
        lateAnswers,
        // In process, core's /metrics serves the same registry. Alone, /metrics names every
        // workload with a policy: it needs the viewer token unless --public-metrics (issue 32).
        ...(near ? { serveMetrics: false } : {}),
        ...(!near && !config.publicMetrics && config.viewerToken ? { metricsToken: config.viewerToken } : {}),
      });
    }
    if (server) life.closers.push(() => server.close());
    log.info("wave webhook started", { port: server?.port ?? 0 });
    return {
      port: server?.port ?? 0,
      policies,
      allocator,
      pods,
      metrics,
      failed: life.failed,
      stop: life.stop,
    };
  });
}

/** Where `wave webhook` reads its spot policies: as configured, else core when given its URL. */
export function policySourceOf(config: WaveConfig): "crd" | "core" {
  return config.spotPolicySource ?? (config.spotPoliciesUrl === undefined ? "crd" : "core");
}

/** Where `wave webhook` pulls its spot policies from, and the token it reads them with. */
function pullSettings(config: WaveConfig): { url: string; viewer: string } {
  const url = required(
    config.spotPoliciesUrl,
    "the spot policies URL (WAVE_SPOT_POLICIES_URL or --spot-policies-url)",
  );
  if (!/^https?:\/\//.test(url)) throw userError(`the spot policies URL must be http(s)://…, got ${url}`);
  const viewer = required(config.viewerToken, "the viewer token (WAVE_VIEWER_TOKEN or --viewer-token)");
  return { url, viewer };
}

export async function webhookCommand(ctx: CommandContext): Promise<number> {
  return serve(ctx, "webhook", await startWebhookComponent(ctx.config, ctx.io.env));
}
