// Building a client from a kubeconfig (file, default locations, or in-cluster service account)
// and checking the apiserver answers, with errors a CLI can print as one clear line. Common
// configurations authenticate natively; the rest through client-node, loaded only then (auth.ts).
import type { KubeConfig } from "@kubernetes/client-node";
import { clientNode, kubeConfigAuth, nativeAuth, type ClusterAuth } from "./auth.ts";
import { ClientNodeKube, KubeTransportError, type VersionInfo } from "./client.ts";
import { KubeApiError } from "../port.ts";

export interface KubeConfigSource {
  /** A kubeconfig file; unset: $KUBECONFIG, ~/.kube/config, then the in-cluster service account. */
  path?: string;
  /** A context in that kubeconfig; unset: its current-context. */
  context?: string;
  /** Use the pod's service account (KUBERNETES_SERVICE_HOST/PORT and the mounted token). */
  inCluster?: boolean;
}

/** A problem with the kubeconfig itself (missing file, unknown context, no cluster). */
export class KubeConfigError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "KubeConfigError";
  }
}

/** client-node's KubeConfig for a source (loads client-node; prefer loadClusterAuth). */
export function loadKubeConfig(src: KubeConfigSource = {}): KubeConfig {
  const kc = new (clientNode().KubeConfig)();
  try {
    if (src.inCluster === true) {
      if (!process.env.KUBERNETES_SERVICE_HOST) {
        throw new KubeConfigError(
          "in-cluster config requested but KUBERNETES_SERVICE_HOST is not set (not running in a pod?)",
        );
      }
      kc.loadFromCluster();
    } else if (src.path !== undefined && src.path !== "") {
      kc.loadFromFile(src.path);
    } else {
      kc.loadFromDefault();
      // With nothing to load, client-node falls back to an unauthenticated http://localhost:8080.
      if (
        kc.getCurrentContext() === "loaded-context" &&
        kc.getCurrentCluster()?.server === "http://localhost:8080"
      ) {
        throw new KubeConfigError(
          "no kubeconfig found ($KUBECONFIG, ~/.kube/config) and not running in a cluster; pass a kubeconfig path",
        );
      }
    }
  } catch (err) {
    if (err instanceof KubeConfigError) throw err;
    const where = src.inCluster === true ? "in-cluster config" : `kubeconfig ${src.path ?? "(default)"}`;
    throw new KubeConfigError(`cannot load ${where}: ${(err as Error).message}`, err);
  }
  if (src.context !== undefined && src.context !== "") {
    if (kc.getContextObject(src.context) === null) {
      const have = kc.getContexts().map((c) => c.name);
      throw new KubeConfigError(
        `context "${src.context}" not found in the kubeconfig (contexts: ${have.length > 0 ? have.join(", ") : "none"})`,
      );
    }
    kc.setCurrentContext(src.context);
  }
  const cluster = kc.getCurrentCluster();
  if (cluster === null || !cluster.server) {
    throw new KubeConfigError(
      `the kubeconfig's context "${kc.getCurrentContext()}" has no cluster with a server URL`,
    );
  }
  return kc;
}

/**
 * How to authenticate for a source: natively when the configuration allows (in-cluster, client
 * certificates, bearer tokens), else through client-node's KubeConfig — with its errors.
 */
export function loadClusterAuth(src: KubeConfigSource = {}): ClusterAuth {
  if (src.inCluster === true && !process.env.KUBERNETES_SERVICE_HOST) {
    throw new KubeConfigError(
      "in-cluster config requested but KUBERNETES_SERVICE_HOST is not set (not running in a pod?)",
    );
  }
  return nativeAuth(src) ?? kubeConfigAuth(loadKubeConfig(src));
}

/** A KubeClient for a kubeconfig file (or the default locations) and context. */
export function clientFromKubeconfig(path?: string, context?: string): ClientNodeKube {
  const src: KubeConfigSource = {};
  if (path !== undefined) src.path = path;
  if (context !== undefined) src.context = context;
  return new ClientNodeKube({ auth: loadClusterAuth(src) });
}

/** The apiserver is unreachable or refuses us; the message names the server and why. */
export class ApiserverUnreachableError extends Error {
  readonly server: string;
  constructor(server: string, why: string, cause: unknown) {
    super(`cannot reach the Kubernetes apiserver at ${server}: ${why}`, { cause });
    this.name = "ApiserverUnreachableError";
    this.server = server;
  }
}

/** GET /version with a short deadline; throws ApiserverUnreachableError with a one-line reason. */
export async function ping(client: ClientNodeKube, timeoutMs = 5000): Promise<VersionInfo> {
  try {
    return await client.version(AbortSignal.timeout(timeoutMs));
  } catch (err) {
    let why: string;
    if (err instanceof KubeApiError) {
      why =
        err.code === 401
          ? "401 Unauthorized (credentials rejected)"
          : err.code === 403
            ? "403 Forbidden (credentials lack access to /version)"
            : `HTTP ${err.code} ${err.reason}: ${err.message}`;
    } else if (err instanceof KubeTransportError) {
      const code = err.code ?? "";
      why =
        code === "ECONNREFUSED"
          ? "connection refused"
          : code === "ENOTFOUND"
            ? "host not found"
            : code === "ABORT_ERR" || /aborted|timed out/.test(err.message)
              ? `no answer within ${timeoutMs} ms`
              : err.message.replace(/^\S+ \S+: /, "");
    } else {
      why = (err as Error).message;
    }
    throw new ApiserverUnreachableError(client.server, why, err);
  }
}
