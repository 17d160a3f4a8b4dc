// `wave start --kubeconfig`: what the host path needs from the cluster that the chart provides
// in-cluster — Wave's namespaces (the chart creates them; here they are checked and created) and
// the webhook's registration (the chart's MutatingWebhookConfiguration with cert-manager's CA;
// here one pointing at this process's webhook URL with the CA of its generated certificate).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { KubeApiError, type KubeClient } from "../kube/port.ts";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from "../objects/wave.ts";
import type { Logger } from "../shared/log.ts";
import { buildWebhookConfiguration } from "../webhook/webhook-config.ts";

/** Checks each namespace and creates the missing ones; returns those it created. */
export async function ensureNamespaces(
  kube: KubeClient,
  names: readonly string[],
  log: Logger,
): Promise<string[]> {
  const created: string[] = [];
  for (const name of new Set(names)) {
    try {
      await kube.get("Namespace", name);
      continue;
    } catch (err) {
      if (!KubeApiError.is(err, 404)) {
        // Without read access to namespaces Wave can still run; the first write there will say more.
        log.warn("cannot check namespace", { namespace: name, err });
        continue;
      }
    }
    try {
      await kube.create("Namespace", {
        metadata: { name, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
      });
      created.push(name);
      log.info("created namespace", { namespace: name });
    } catch (err) {
      if (KubeApiError.is(err, 409)) continue;
      throw new Error(
        `namespace ${name} does not exist and cannot be created (${(err as Error).message}): create it, or set --namespace`,
        { cause: err },
      );
    }
  }
  return created;
}

export interface WebhookRegistration {
  /** The MutatingWebhookConfiguration as YAML, for `kubectl apply -f`. */
  file: string;
  name: string;
  /** Whether this process created it (and removes it on the way out). */
  registered: boolean;
  unregister(): Promise<void>;
}

/**
 * Writes the webhook's MutatingWebhookConfiguration to <dataDir>/webhook-configuration.yaml and,
 * with `register`, creates (or replaces) it in the cluster until `unregister`.
 */
export async function registerWebhook(opts: {
  kube: KubeClient;
  caPem: string;
  url: string;
  waveNamespaces: readonly string[];
  dataDir: string;
  register: boolean;
  log: Logger;
}): Promise<WebhookRegistration> {
  const [waveNamespace = "wave-system", ...others] = [...new Set(opts.waveNamespaces)];
  const config = buildWebhookConfiguration({
    caPem: opts.caPem,
    url: opts.url,
    waveNamespace,
    excludeNamespaces: others,
  });
  const name = config.metadata.name ?? "wave-spot-placement";
  const file = join(opts.dataDir, "webhook-configuration.yaml");
  writeFileSync(file, stringify(config));
  const none = { file, name, registered: false, unregister: () => Promise.resolve() };
  if (!opts.register) return none;
  try {
    await opts.kube.create("MutatingWebhookConfiguration", config);
  } catch (err) {
    if (!KubeApiError.is(err, 409)) throw err;
    const current = await opts.kube.get("MutatingWebhookConfiguration", name);
    await opts.kube.replace("MutatingWebhookConfiguration", {
      ...config,
      metadata: { ...config.metadata, resourceVersion: current.metadata.resourceVersion },
    });
  }
  opts.log.info("registered the webhook", { name, url: opts.url });
  return {
    file,
    name,
    registered: true,
    unregister: async () => {
      try {
        await opts.kube.delete("MutatingWebhookConfiguration", name);
      } catch (err) {
        if (!KubeApiError.is(err, 404))
          opts.log.warn("cannot remove the webhook's registration", { name, err });
      }
    },
  };
}
