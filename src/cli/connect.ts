// Connecting to the apiserver (kubeconfig or the pod's ServiceAccount), with failures the CLI
// prints as one line. Kept apart from parts.ts so `wave agent` does not load core's API stack.
import type { WaveConfig } from "../config/config.ts";
import { clientFromKubeconfig, loadClusterAuth, ping } from "../kube/clientnode/kubeconfig.ts";
import { ClientNodeKube } from "../kube/clientnode/client.ts";
import type { KubeClient } from "../kube/port.ts";
import type { Logger } from "../shared/log.ts";

/** An error the user must fix (the CLI prints its message and exits 2). */
export function userError(message: string): Error {
  return Object.assign(new Error(message), { userFacing: true });
}

/** A client for the configured kubeconfig (or the pod's ServiceAccount), checked with /version. */
export async function connectCluster(
  config: WaveConfig,
  env: NodeJS.ProcessEnv,
  log: Logger,
): Promise<{ kube: KubeClient; kubernetesVersion: string }> {
  let client: ClientNodeKube;
  try {
    client =
      config.kubeconfig === undefined
        ? new ClientNodeKube({
            auth: loadClusterAuth({ inCluster: env.KUBERNETES_SERVICE_HOST !== undefined }),
          })
        : clientFromKubeconfig(config.kubeconfig, config.context);
  } catch (err) {
    throw userError((err as Error).message);
  }
  try {
    const v = await ping(client);
    // Which cluster and context every write goes to (issue 42: a --context that was ignored).
    log.info(`connected to the Kubernetes apiserver: ${client.target}`, {
      version: v.gitVersion,
      server: client.server,
      context: client.context ?? "in-cluster",
    });
    return { kube: client, kubernetesVersion: v.gitVersion };
  } catch (err) {
    throw userError((err as Error).message);
  }
}
