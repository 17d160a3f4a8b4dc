// What the per-component processes (`wave agent|core|webhook|cleanup`) share: options, the
// shutdown lifecycle, required settings, the apiserver connection and TLS files. Each component
// lives in its own module, which the CLI imports only when that command runs: a process loads
// its own dependencies and no other component's (bench/pipeline/README.md: the memory this saves).
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { WaveConfig } from "../config/config.ts";
import type { KubeClient } from "../kube/port.ts";
import type { Clock } from "../shared/clock.ts";
import { createLogger, type Logger } from "../shared/log.ts";
import type { CommandContext } from "./types.ts";
import { connectCluster, userError } from "./connect.ts";

const SHUTDOWN_STEP_MS = 5000;
/** The warmup controller's leader Lease in Wave's namespace (core holds it; RBAC pins this name). */
export const WARMUP_LEASE = "wave-warmup";
/** The webhook's spot-repair leader Lease, beside the slot ledgers (one webhook replica repairs). */
export const SPOT_REPAIR_LEASE = "wave-spot-repair";

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

export type Closer = () => Promise<void> | void;

export interface Lifecycle {
  ac: AbortController;
  closers: Closer[];
  fail: (err: unknown) => void;
  failed: Promise<Error>;
  stop: () => Promise<void>;
}

/** Shutdown in reverse order of start, each step bounded so SIGTERM always ends the process. */
export function lifecycle(log: Logger): Lifecycle {
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

/**
 * Starts a component with a fresh lifecycle: whatever `start` registered is stopped again if it
 * throws, so a half-started process leaves no server or timer behind.
 */
export async function startWith<T>(log: Logger, start: (life: Lifecycle) => Promise<T>): Promise<T> {
  const life = lifecycle(log);
  try {
    return await start(life);
  } catch (err) {
    await life.stop();
    throw err;
  }
}

export function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw userError(`${what} is required`);
  return value;
}

/**
 * The one logger default of every Wave process: the caller's, or pino at the configured level and
 * format (--log-format; pretty in a terminal, JSON otherwise),
 * tagged with the component (`wave start`, which runs them all, leaves the tag out).
 */
export function logger(config: WaveConfig, component: string | undefined, opts: ComponentOptions): Logger {
  return (
    opts.log ??
    createLogger({
      level: config.logLevel,
      ...(config.logFormat ? { format: config.logFormat } : {}),
      base: { app: "wave", ...(component ? { component } : {}) },
    })
  );
}

export async function cluster(
  config: WaveConfig,
  env: NodeJS.ProcessEnv,
  log: Logger,
  opts: ComponentOptions,
): Promise<{ kube: KubeClient; kubernetesVersion: string }> {
  return opts.kube ? { kube: opts.kube, kubernetesVersion: "" } : connectCluster(config, env, log);
}

/** tls.crt + tls.key (+ ca.crt) of a cert-manager Secret mounted as a directory. */
export function tlsFiles(
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

/** Runs until SIGTERM/SIGINT (exit 0) or until the component fails on its own (exit 1). */
export async function serve(ctx: CommandContext, name: string, running: Running): Promise<number> {
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
