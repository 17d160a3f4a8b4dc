// `wave webhook`: spot-placement admission, policies long-polled from core's API, the pod watch
// the slot ledgers follow, and the leader-elected spot repair (ADR 0006) beside it.
// The environment it gets is the contract in deploy/helm/wave/README.md.
import { hostname } from "node:os";
import type { WaveConfig } from "../config/config.ts";
import { realClock } from "../shared/clock.ts";
import { LeaderElector } from "../kube/leader.ts";
import { SlotAllocator } from "../webhook/allocator.ts";
import { BackingVerifier, SourceLimiter } from "../webhook/backing.ts";
import { LateAnswerRecorder } from "../webhook/late-events.ts";
import { createSpotMetrics } from "../webhook/metrics.ts";
import { PodCache } from "../webhook/pod-cache.ts";
import { PullPolicySource } from "../webhook/policy-source.ts";
import { NodeCapacity, SpotRepair } from "../webhook/repair.ts";
import { startWebhookServer } from "../webhook/server.ts";
import type { CommandContext } from "./commands.ts";
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
  return startWith(log, async (life) => {
    const { kube } = await cluster(config, env, log, opts);
    const metrics = createSpotMetrics();
    const identity = config.podName ?? hostname();
    const ledgerNamespace = config.spotLedgerNamespace ?? config.namespace;
    const policies = PullPolicySource.fromUrl(url, {
      clock,
      logger: log,
      headers: { authorization: `Bearer ${viewer}` },
      watch: config.spotPolicyWatch,
      intervalMs: config.spotPolicyIntervalMs,
      onFetch: (delivery, outcome) => metrics.policyUpdates.inc({ delivery, outcome }),
    });
    // Admit unchanged until the first set loads (core may start after us); never block start-up.
    if (!(await policies.start())) log.warn("no spot policies yet; admitting pods unchanged", { url });
    life.closers.push(() => policies.stop());
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
      backing: new BackingVerifier({ kube, limiter: new SourceLimiter(clock) }),
    });
    if (config.spotRepair) {
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
      const running = elector
        .run(stop.signal, (leading) => repair.run(leading))
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
    const lateAnswers = new LateAnswerRecorder({
      write: (e) => kube.create("Event", e, { namespace: e.metadata.namespace ?? "" }),
      logger: log,
      instance: identity,
    });
    life.closers.push(lateAnswers.start(clock));
    const server = await startWebhookServer({
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
      metrics,
      lateAnswers,
    });
    life.closers.push(() => server.close());
    log.info("wave webhook started", { port: server.port });
    return { port: server.port, policies, failed: life.failed, stop: life.stop };
  });
}

export async function webhookCommand(ctx: CommandContext): Promise<number> {
  return serve(ctx, "webhook", await startWebhookComponent(ctx.config, ctx.io.env));
}
