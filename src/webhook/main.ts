// A standalone webhook process for local runs and the rig's e2e tests (in production the CLI's
// composition root wires the same parts). Prints one JSON line {"port":…,"caFile":…} when ready.
//   node src/webhook/main.ts (--policies FILE|URL | --push-token-file FILE) --namespace wave
//     [--tls-dir DIR] [--hosts localhost,127.0.0.1] [--port 9443] [--kubeconfig PATH] [--context C]
//     [--register https://HOST:PORT/mutate] [--fallback unchanged|spot-preferred] [--deadline-ms 1000]
// Without certificates in --tls-dir (tls.crt, tls.key, ca.crt) a CA and serving cert are made.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { clientFromKubeconfig } from "../kube/clientnode/kubeconfig.ts";
import type { KubeClient } from "../kube/port.ts";
import { isNotFound } from "../kube/port.ts";
import { realClock } from "../shared/clock.ts";
import { createLogger } from "../shared/log.ts";
import { SlotAllocator } from "./allocator.ts";
import { generateDevCerts } from "./certs.ts";
import { InMemoryPolicySource, PullPolicySource, type PolicySource } from "./policy-source.ts";
import type { PolicyPush } from "./handler.ts";
import { startWebhookServer } from "./server.ts";
import { buildWebhookConfiguration } from "./webhook-config.ts";

function fail(message: string): never {
  process.stderr.write(`wave webhook: ${message}\n`);
  process.exit(2);
}

/** Creates or updates the MutatingWebhookConfiguration pointing at this process. */
async function register(kube: KubeClient, url: string, caPem: string, waveNamespace: string): Promise<void> {
  const desired = buildWebhookConfiguration({ url, caPem, waveNamespace });
  const name = desired.metadata.name ?? "";
  try {
    const current = await kube.get("MutatingWebhookConfiguration", name);
    await kube.replace("MutatingWebhookConfiguration", {
      ...desired,
      metadata: { ...desired.metadata, resourceVersion: current.metadata.resourceVersion },
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    await kube.create("MutatingWebhookConfiguration", desired);
  }
}

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        policies: { type: "string" },
        "push-token-file": { type: "string" },
        namespace: { type: "string", default: "wave" },
        "tls-dir": { type: "string", default: ".wave/webhook-tls" },
        hosts: { type: "string", default: "localhost,127.0.0.1" },
        port: { type: "string", default: "9443" },
        host: { type: "string", default: "0.0.0.0" },
        kubeconfig: { type: "string" },
        context: { type: "string" },
        register: { type: "string" },
        fallback: { type: "string", default: "unchanged" },
        "deadline-ms": { type: "string", default: "1000" },
      },
      strict: true,
    }));
  } catch (err) {
    fail((err as Error).message);
  }
  if ((values.policies === undefined) === (values["push-token-file"] === undefined))
    fail(
      "give exactly one of --policies FILE|URL (pull) or --push-token-file FILE (core pushes to PUT /policies)",
    );
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port must be 0–65535, got ${values.port}`);
  const deadlineMs = Number(values["deadline-ms"]);
  if (!Number.isInteger(deadlineMs) || deadlineMs < 50 || deadlineMs > 2500)
    fail(`--deadline-ms must be 50–2500 (below the 3 s webhook timeout), got ${values["deadline-ms"]}`);
  if (values.fallback !== "unchanged" && values.fallback !== "spot-preferred")
    fail(`--fallback must be unchanged or spot-preferred, got ${values.fallback}`);
  const fallback = values.fallback;

  const log = createLogger({ base: { component: "webhook" } });
  const dir = values["tls-dir"];
  const certFile = join(dir, "tls.crt");
  const keyFile = join(dir, "tls.key");
  const caFile = join(dir, "ca.crt");
  if (!existsSync(certFile) || !existsSync(keyFile) || !existsSync(caFile))
    await generateDevCerts({ dir, hosts: values.hosts.split(",").filter((h) => h !== "") });

  let kube: KubeClient;
  try {
    kube = clientFromKubeconfig(values.kubeconfig, values.context);
  } catch (err) {
    fail((err as Error).message);
  }
  let policies: PolicySource;
  let push: PolicyPush | undefined;
  let stopPolicies = (): Promise<void> => Promise.resolve();
  const src = values.policies;
  if (src !== undefined) {
    const pull = /^https?:\/\//.test(src)
      ? PullPolicySource.fromUrl(src, { clock: realClock, logger: log })
      : PullPolicySource.fromFile(src, { clock: realClock, logger: log });
    if (!(await pull.start())) log.warn("no policies yet; admitting pods unchanged until they load", { src });
    policies = pull;
    stopPolicies = () => pull.stop();
  } else {
    const token = readFileSync(values["push-token-file"] ?? "", "utf8").trim();
    if (token.length < 16) fail("the push token must be at least 16 characters");
    const target = new InMemoryPolicySource();
    policies = target;
    push = { token, target };
  }

  const server = await startWebhookServer({
    certFile,
    keyFile,
    port,
    host: values.host,
    policies,
    allocator: new SlotAllocator({ kube, namespace: values.namespace, clock: realClock, logger: log }),
    logger: log,
    fallback,
    deadlineMs,
    push,
  });
  if (values.register) await register(kube, values.register, readFileSync(caFile, "utf8"), values.namespace);
  process.stdout.write(JSON.stringify({ port: server.port, caFile }) + "\n");

  const stop = (): void => {
    void Promise.all([server.close(), stopPolicies()]).then(() => process.exit(0));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

await main();
