// `wave webhook`: spot-placement admission, policies pulled from core's API.
// The environment it gets is the contract in deploy/helm/wave/README.md.
import type { WaveConfig } from "../config/config.ts";
import { realClock } from "../shared/clock.ts";
import { SlotAllocator } from "../webhook/allocator.ts";
import { PullPolicySource } from "../webhook/policy-source.ts";
import { startWebhookServer } from "../webhook/server.ts";
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
  });
}

export async function webhookCommand(ctx: CommandContext): Promise<number> {
  return serve(ctx, "webhook", await startWebhookComponent(ctx.config, ctx.io.env));
}
