// The MutatingWebhookConfiguration that registers the webhook with the apiserver. Every setting
// leans toward never getting in the way of pod creation.
import type { MutatingWebhookConfiguration } from "../objects/kube.ts";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, OPT_OUT_LABEL, OPT_OUT_VALUE } from "../objects/wave.ts";
import { MUTATE_PATH } from "./handler.ts";

export interface WebhookConfigOptions {
  /** Object name; also the webhook name's prefix. Default "wave-spot-placement". */
  name?: string;
  /** PEM of the CA that signed the serving certificate. */
  caPem: string;
  /** Wave's namespace (excluded, with kube-system, so Wave can always start). */
  waveNamespace: string;
  /** Exactly one of url (outside the cluster, e.g. the local rig) or service. */
  url?: string;
  service?: { namespace: string; name: string; port?: number; path?: string };
  /** ≤ 3 s: the apiserver waits this long at most before ignoring the webhook. Default 3. */
  timeoutSeconds?: number;
  /** More namespaces to exclude. */
  excludeNamespaces?: string[];
}

export function buildWebhookConfiguration(opts: WebhookConfigOptions): MutatingWebhookConfiguration {
  const name = opts.name ?? "wave-spot-placement";
  const timeoutSeconds = opts.timeoutSeconds ?? 3;
  if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1 || timeoutSeconds > 3)
    throw new Error(`timeoutSeconds must be an integer from 1 to 3, got ${timeoutSeconds}`);
  if ((opts.url === undefined) === (opts.service === undefined))
    throw new Error("exactly one of url or service must be set");
  if (opts.url !== undefined && !opts.url.startsWith("https://"))
    throw new Error(`url must be https://, got ${opts.url}`);
  if (!opts.caPem.includes("-----BEGIN CERTIFICATE-----")) throw new Error("caPem must be a PEM certificate");
  const clientConfig: Record<string, unknown> = { caBundle: Buffer.from(opts.caPem).toString("base64") };
  if (opts.url !== undefined) clientConfig.url = opts.url;
  else if (opts.service)
    clientConfig.service = {
      namespace: opts.service.namespace,
      name: opts.service.name,
      path: opts.service.path ?? MUTATE_PATH,
      port: opts.service.port ?? 443,
    };
  const excluded = [...new Set(["kube-system", opts.waveNamespace, ...(opts.excludeNamespaces ?? [])])];
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "MutatingWebhookConfiguration",
    metadata: { name, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
    webhooks: [
      {
        name: `${name}.wave.sh`,
        admissionReviewVersions: ["v1"],
        clientConfig,
        rules: [
          {
            operations: ["CREATE"],
            apiGroups: [""],
            apiVersions: ["v1"],
            resources: ["pods"],
            scope: "Namespaced",
          },
        ],
        failurePolicy: "Ignore",
        matchPolicy: "Equivalent",
        // The ledger Leases are written on real admissions only; dry-run ones write nothing.
        sideEffects: "NoneOnDryRun",
        timeoutSeconds,
        reinvocationPolicy: "IfNeeded",
        namespaceSelector: {
          matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "NotIn", values: excluded }],
        },
        objectSelector: {
          matchExpressions: [{ key: OPT_OUT_LABEL, operator: "NotIn", values: [OPT_OUT_VALUE] }],
        },
      },
    ],
  };
}
