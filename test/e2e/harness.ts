// E2E harness: helpers over the local rig (hack/rig). Talks to the cluster through the rig's own
// kubectl (.rig/bin/kubectl + .rig/kubeconfig), so it needs no npm packages.
import { randomBytes } from "node:crypto";
import {
  dumpRigLogs,
  kubeconfigPath,
  kubectl,
  kubectlRaw,
  rigHealthy,
  sleep,
  type KubectlResult,
} from "../../hack/rig/lib.ts";

export { dumpRigLogs, kubeconfigPath, kubectl, kubectlRaw, rigHealthy, sleep, type KubectlResult };

/** Minimal shape of a Kubernetes object as returned by kubectl -o json. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    [k: string]: unknown;
  };
  spec?: Record<string, unknown>;
  status?: {
    phase?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

export interface KubeList {
  items: KubeObject[];
}

/** Throws unless the rig is up (run `npm run cluster:up` or use `npm run test:e2e`). */
export async function requireRig(): Promise<void> {
  if (!(await rigHealthy())) {
    throw new Error(
      "the local rig is not running: start it with `npm run cluster:up` (or run `npm run test:e2e`)",
    );
  }
}

/** `kubectl apply` one object (server-side apply; returns the applied object). */
export async function apply(obj: object): Promise<KubeObject> {
  const out = await kubectl(
    ["apply", "--server-side", "--force-conflicts", "--field-manager=wave-e2e", "-o", "json", "-f", "-"],
    JSON.stringify(obj),
  );
  return JSON.parse(out) as KubeObject;
}

/** Get one object, or undefined when it does not exist. */
export async function get(kind: string, name: string, namespace?: string): Promise<KubeObject | undefined> {
  const args = ["get", kind, name, "-o", "json", ...(namespace === undefined ? [] : ["-n", namespace])];
  const r = await kubectlRaw(args);
  if (r.code !== 0) {
    if (r.stderr.includes("NotFound") || r.stderr.includes("not found")) return undefined;
    throw new Error(`kubectl ${args.join(" ")}: ${r.stderr.trim()}`);
  }
  return JSON.parse(r.stdout) as KubeObject;
}

/** List objects of a kind (all namespaces when namespace is undefined), optionally by label selector. */
export async function list(
  kind: string,
  opts: { namespace?: string; selector?: string } = {},
): Promise<KubeObject[]> {
  const args = [
    "get",
    kind,
    "-o",
    "json",
    ...(opts.namespace === undefined ? ["--all-namespaces"] : ["-n", opts.namespace]),
    ...(opts.selector === undefined ? [] : ["-l", opts.selector]),
  ];
  return (JSON.parse(await kubectl(args)) as KubeList).items;
}

export async function remove(kind: string, name: string, namespace?: string, wait = false): Promise<void> {
  await kubectl([
    "delete",
    kind,
    name,
    "--ignore-not-found",
    `--wait=${wait}`,
    ...(namespace === undefined ? [] : ["-n", namespace]),
  ]);
}

/**
 * Create a fresh namespace `<prefix>-<random>` and wait until its default ServiceAccount exists
 * (pods are rejected before that).
 */
export async function createNamespace(prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString("hex")}`;
  await apply({
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name, labels: { "wave.dev/e2e": "true" } },
  });
  await waitFor(
    `serviceaccount default in ${name}`,
    async () => (await get("serviceaccount", "default", name)) !== undefined,
    {
      timeoutMs: 30_000,
    },
  );
  return name;
}

export async function deleteNamespace(name: string): Promise<void> {
  await remove("namespace", name);
}

export function condition(obj: KubeObject | undefined, type: string): string | undefined {
  return obj?.status?.conditions?.find((c) => c.type === type)?.status;
}

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** What the last poll saw, for the timeout's message when the result alone says nothing. */
  describe?: () => string;
}

/**
 * Poll `check` until it returns a value other than undefined/false, or fail after the deadline with
 * the description and the last error/value seen.
 */
export async function waitFor<T>(
  description: string,
  check: () => Promise<T | undefined | false>,
  { timeoutMs = 60_000, intervalMs = 1_000, describe }: WaitOptions = {},
): Promise<T> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  let last: string;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
      last = `last result: ${describe ? describe() : String(v)}`;
    } catch (e) {
      last = `last error: ${e instanceof Error ? e.message : String(e)}`;
    }
    if (Date.now() >= deadline) {
      throw new Error(
        `timed out after ${Math.round((Date.now() - started) / 1000)}s waiting for ${description} (${last})`,
      );
    }
    await sleep(intervalMs);
  }
}

/** Wait until `kind/name` has condition `type` with `status` (default "True"). */
export async function waitForCondition(
  kind: string,
  name: string,
  type: string,
  opts: WaitOptions & { namespace?: string; status?: string } = {},
): Promise<KubeObject> {
  const want = opts.status ?? "True";
  return waitFor(
    `${kind}/${name} condition ${type}=${want}`,
    async () => {
      const obj = await get(kind, name, opts.namespace);
      return condition(obj, type) === want ? obj : undefined;
    },
    opts,
  );
}

/**
 * Run `fn`; if it throws, print the tail of every rig log (apiserver, Karpenter, KWOK, ...) to
 * stderr and rethrow. Wrap test bodies with it so failures are diagnosable from CI output.
 */
export async function withRigLogsOnFailure<T>(fn: () => Promise<T>, lines = 60): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    process.stderr.write(
      `\n----- rig logs (test failed) -----\n${dumpRigLogs(lines)}\n----- end of rig logs -----\n`,
    );
    throw e;
  }
}

/** withRigLogsOnFailure, plus the test's own state (`dump`, e.g. its pods and events) under `title`. */
export async function withStateOnFailure<T>(
  title: string,
  dump: () => Promise<string>,
  fn: () => Promise<T>,
): Promise<T> {
  return withRigLogsOnFailure(async () => {
    try {
      return await fn();
    } catch (e) {
      process.stderr.write(`\n----- ${title} -----\n${await dump()}\n`);
      throw e;
    }
  });
}

const E2E_LABEL = "wave.dev/e2e";
const SCOPE_ANNOTATION = "wave.dev/e2e-namespaces";

/**
 * Marks a cluster-scoped webhook configuration as test `owner`'s, scoped to `namespaces`, so
 * `sweepStaleWebhookConfigs` can find it if the run is killed before its after hook.
 */
export function markE2eWebhookConfig(
  config: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } },
  owner: string,
  namespaces: readonly string[],
): void {
  config.metadata.labels = { ...config.metadata.labels, [E2E_LABEL]: owner };
  config.metadata.annotations = { ...config.metadata.annotations, [SCOPE_ANNOTATION]: namespaces.join(",") };
}

/**
 * Deletes `owner`'s MutatingWebhookConfigurations left by a killed run: those whose namespaces
 * no longer exist (a concurrent run's namespaces still do).
 */
export async function sweepStaleWebhookConfigs(owner: string): Promise<void> {
  const configs = await list("mutatingwebhookconfigurations", { selector: `${E2E_LABEL}=${owner}` });
  if (configs.length === 0) return;
  const live = new Set((await list("namespaces")).map((n) => n.metadata.name));
  for (const c of configs) {
    const scope = (c.metadata.annotations?.[SCOPE_ANNOTATION] ?? "").split(",").filter((n) => n !== "");
    if (scope.some((n) => live.has(n))) continue;
    process.stderr.write(`# deleting stale MutatingWebhookConfiguration ${c.metadata.name}\n`);
    await remove("mutatingwebhookconfiguration", c.metadata.name);
  }
}

/**
 * Waits until the apiserver calls Wave's webhook for `ns` with a spot policy for Deployment `app`
 * in force: a dry-run pod of one of its ReplicaSet revisions (by name and pod-template-hash) comes
 * back with a capacity-type constraint. Dry runs take no slot.
 */
export async function waitForWebhookPlacement(ns: string, app: string, what: string): Promise<void> {
  const hash = "5d9f7c8b6d";
  const probe = JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      generateName: `${app}-${hash}-`,
      namespace: ns,
      labels: { app, "pod-template-hash": hash },
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          kind: "ReplicaSet",
          name: `${app}-${hash}`,
          uid: "00000000-0000-4000-8000-000000000001",
          controller: true,
        },
      ],
    },
    spec: { containers: [{ name: "app", image: "pause:3.10" }] },
  });
  await waitFor(
    what,
    async () =>
      (await kubectl(["create", "--dry-run=server", "-o", "json", "-f", "-"], probe)).includes(
        "karpenter.sh/capacity-type",
      ),
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}
