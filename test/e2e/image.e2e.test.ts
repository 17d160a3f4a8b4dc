// Wave from its own container image, in-cluster, on the rig (issue 18). `npm run image:build` made
// the image; the chart is rendered with `helm template` under a release of this test's own, and
// agent, core and webhook each run as a container of that image (podman, host networking) with
// exactly the rendered Deployment's args, env, volumes and security context — read-only root
// filesystem, uid 65532, capabilities dropped — and the component's ServiceAccount token and the
// rig's CA at /var/run/secrets/kubernetes.io/serviceaccount with KUBERNETES_SERVICE_HOST/PORT set:
// Wave's in-cluster client path, no kubeconfig. What differs from a pod, and only that:
//   - ports: host networking on a shared machine, so each component's port variables get free
//     ports (the override must name a variable the chart sets)
//   - Service names: there is no Service network, so `<release>-core.<ns>.svc` resolves to
//     127.0.0.1 (--add-host); the URLs keep the chart's names, so gRPC TLS verifies them
//   - cert-manager: its Certificates (names, usages, DNS names from the render) are issued by a
//     CA this test generates; its cainjector's job (the webhook's caBundle) is done here
//   - the chart's MutatingWebhookConfiguration points at a Service; the apiserver here reaches the
//     webhook by URL instead, and it selects only this test's workload namespace (shared rig)
// Then: the rig's nodes and their cost reach core's API through the containerised agent; a spot
// policy places pods through the containerised webhook; warmup creates and protects a warm node;
// core is `podman stop`ped and a new container on the same data volume keeps its history; every
// container's RSS is reported; all exit 0 on stop and none logged a Forbidden.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { freePorts, repoRoot } from "../../hack/rig/lib.ts";
import { makePki } from "../support/pki.ts";
import {
  containerRss,
  field,
  objs,
  ownTree,
  podman,
  podmanSkipReason,
  RUN_FLAGS,
  runArgs,
  strings,
  type VolumeSources,
} from "../support/podman.ts";
import { chartEnv, coreApi, poolDeployment, protectedWarmup } from "./chart-run.ts";
import { applyTaintedPool, FOUR_VCPU } from "./pools.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  get,
  kubeconfigPath,
  kubectl,
  kubectlRaw,
  list,
  markE2eWebhookConfig,
  remove,
  requireRig,
  sweepStaleWebhookConfigs,
  waitFor,
  withRigLogsOnFailure,
} from "./harness.ts";
import { ASSIGNMENT_LABEL, LEDGER_LABEL } from "../../src/objects/wave.ts";

const run = promisify(execFile);
const HELM = join(repoRoot, ".rig", "bin", "helm");
const CHART = join(repoRoot, "deploy", "helm", "wave");
const VERSION = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string })
  .version;
const IMAGE = process.env["WAVE_E2E_IMAGE"] ?? `wave:${VERSION}`;
const UID = 65532;
const POOL_LABEL = "wave.dev/e2e-pool";
const OWNER = "image-e2e";

const skip = !existsSync(HELM)
  ? `helm not built (${HELM}): run npm run helm:build`
  : await podmanSkipReason(IMAGE);

type Obj = Record<string, unknown>;
const suffix = randomBytes(3).toString("hex");
const release = `wave-img-${suffix}`;
const pool = `img-${suffix}`;
const clusterId = `img-${suffix}`;
const tokens = {
  "admin-token": randomBytes(20).toString("hex"),
  "viewer-token": randomBytes(20).toString("hex"),
  "agent-token": randomBytes(20).toString("hex"),
};
const containers = new Set<string>();
let ns = "";
let warmupNs = "";
let ledgerNs = ""; // the chart's spot ledger namespace (the webhook's Leases)
let appNs = "";
let work = "";
let rendered: Obj[] = [];
let createdPriorityClass = false;

const nameOf = (o: Obj): string => String(field(o, "metadata", "name"));
function renderedOne(kind: string, name: string): Obj {
  const found = rendered.find((d) => d.kind === kind && nameOf(d) === name);
  assert.ok(found, `the chart renders no ${kind} ${name}`);
  return found;
}
const podSpecOf = (component: string): Obj => {
  const spec = field(renderedOne("Deployment", `${release}-${component}`), "spec", "template", "spec");
  assert.ok(typeof spec === "object" && spec !== null);
  return spec as Obj;
};

/** The container's environment as a pod of this release resolves it (see chartEnv). */
const envOf = (podSpec: Obj, podName: string, overrides: Record<string, string>): Record<string, string> =>
  chartEnv(
    objs(field(podSpec, "containers"))[0] ?? {},
    { namespace: ns, name: podName, secrets: tokens },
    overrides,
  );

/** A URL of the chart's with only its port changed (host networking). */
const withPort = (url: string, port: number): string => {
  const u = new URL(url);
  u.port = String(port);
  return u.toString().replace(/\/$/, url.endsWith("/") ? "/" : "");
};

/** The Secrets cert-manager would fill, from the rendered Certificates, signed by one CA. */
function issueCertificates(): { dirs: Record<string, string>; caPem: string } {
  const usage: Record<string, string> = { "server auth": "serverAuth", "client auth": "clientAuth" };
  const leaves = rendered
    .filter((d) => d.kind === "Certificate" && field(d, "spec", "isCA") !== true)
    .map((d) => {
      const secret = String(field(d, "spec", "secretName"));
      const dns = strings(field(d, "spec", "dnsNames"));
      const eku = strings(field(d, "spec", "usages"))
        .map((u) => usage[u])
        .filter((u) => u !== undefined);
      // The webhook is called by URL (127.0.0.1) here, by its Service name in a cluster.
      const sans = [...dns.map((n) => `DNS:${n}`), ...(eku.includes("serverAuth") ? ["IP:127.0.0.1"] : [])];
      const ext =
        (sans.length ? `subjectAltName=${sans.join(",")}\n` : "") +
        (eku.length ? `extendedKeyUsage=${eku.join(",")}\n` : "");
      return { dir: secret, cn: strings([field(d, "spec", "commonName")])[0] ?? secret, ext };
    });
  assert.ok(leaves.length >= 3, `the chart's Certificates: ${leaves.map((l) => l.dir).join(", ")}`);
  const root = join(work, "secrets");
  const caPem = makePki(root, leaves);
  const dirs = Object.fromEntries(leaves.map((l) => [l.dir, join(root, l.dir)]));
  for (const d of Object.values(dirs)) {
    for (const f of ["ext.cnf", "tls.csr"]) rmSync(join(d, f), { force: true });
    ownTree(d, UID);
  }
  return { dirs, caPem };
}

/** The pod's ServiceAccount mount: a token of `sa`, the rig's CA and the namespace. */
async function serviceAccountDir(sa: string, caPem: string): Promise<string> {
  const dir = join(work, "sa", sa);
  mkdirSync(dir, { recursive: true });
  const token = (await kubectl(["create", "token", sa, "-n", ns, "--duration=1h"])).trim();
  writeFileSync(join(dir, "token"), token);
  writeFileSync(join(dir, "ca.crt"), caPem);
  writeFileSync(join(dir, "namespace"), ns);
  ownTree(dir, UID);
  return dir;
}

async function rigApiServer(): Promise<{ host: string; port: string; caPem: string }> {
  const cfg = JSON.parse(await kubectl(["config", "view", "--raw", "--minify", "-o", "json"])) as Obj;
  const cluster = field(objs(cfg.clusters)[0], "cluster");
  const server = new URL(String(field(cluster, "server")));
  const caData = String(field(cluster, "certificate-authority-data"));
  return {
    host: server.hostname,
    port: server.port || "443",
    caPem: Buffer.from(caData, "base64").toString("utf8"),
  };
}

async function startContainer(name: string, args: string[]): Promise<string> {
  const cname = `${release}-${name}`;
  assert.equal(args[args.indexOf("--name") + 1], cname);
  await podman(["rm", "-f", "--ignore", cname]);
  containers.add(cname);
  await podman(args);
  return cname;
}

const logsOf = async (c: string): Promise<string> => {
  try {
    const { stdout, stderr } = await run("podman", ["logs", c], { maxBuffer: 32 * 1024 * 1024 });
    return stdout + stderr;
  } catch (e) {
    return `(no logs: ${(e as Error).message})`;
  }
};

/** `podman stop` (SIGTERM, then SIGKILL after 60 s) and the exit code. */
async function stopContainer(c: string): Promise<number> {
  await podman(["stop", "--time", "60", c], 90_000);
  return Number((await podman(["inspect", "--format", "{{.State.ExitCode}}", c])).trim());
}

const api = coreApi;
const deployment = (
  name: string,
  replicas: number,
  cpu: string,
  nodeSelector: Record<string, string>,
): object => poolDeployment({ name, namespace: appNs, replicas, cpu, nodeSelector, pool, label: POOL_LABEL });

interface SeriesPoint {
  t: number;
  nodes: number;
  costPerHour: number;
}

// ---------------------------------------------------------------------------------------------

before(async () => {
  if (skip) return;
  await requireRig();
  await sweepStaleWebhookConfigs(OWNER);
  ns = await createNamespace("img");
  appNs = await createNamespace("img-app");
  work = mkdtempSync(join(tmpdir(), "wave-image-e2e-"));
  rendered = parseAllDocuments(
    (
      await run(
        HELM,
        [
          "template",
          release,
          CHART,
          "--namespace",
          ns,
          "--kube-version",
          "1.34.0",
          "--api-versions",
          "karpenter.sh/v1/NodePool",
          "--api-versions",
          "cert-manager.io/v1/Certificate",
          "--set",
          `clusterId=${clusterId}`,
          "--set",
          `image.repository=${IMAGE.split(":")[0] ?? "wave"}`,
          // The rig's 2 cores are shared: the webhook's own deadline at the top of its range.
          "--set",
          "webhook.deadlineMs=2500",
        ],
        { maxBuffer: 16 * 1024 * 1024, env: { ...process.env, KUBECONFIG: kubeconfigPath } },
      )
    ).stdout,
  )
    .map((d) => d.toJSON() as unknown)
    .filter((d): d is Obj => typeof d === "object" && d !== null);
  // The warmup controller runs beside the agent (ADR 0014): the agent names its namespace.
  warmupNs = envOf(podSpecOf("agent"), "agent-0", {})["WAVE_WARMUP_NAMESPACE"] ?? "";
  ledgerNs = envOf(podSpecOf("webhook"), "webhook-0", {})["WAVE_SPOT_LEDGER_NAMESPACE"] ?? ns;
  assert.ok(warmupNs !== "", "the chart names the warmup namespace");
  // The chart's RBAC (and its warmup Namespace with Pod Security labels), created for real.
  const rbacKinds = new Set([
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
  ]);
  await kubectl(
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      // …and the ConfigMap the agent remembers core's last warmup policies in (get/update only).
      items: rendered.filter(
        (d) =>
          rbacKinds.has(String(d.kind)) || (d.kind === "ConfigMap" && nameOf(d) === "wave-warmup-policies"),
      ),
    }),
  );
  if ((await get("priorityclass", "wave-warmup")) === undefined) {
    await kubectl(["create", "-f", "-"], JSON.stringify(renderedOne("PriorityClass", "wave-warmup")));
    createdPriorityClass = true;
  }
  // 4-vCPU nodes only: the "big" pod (3 CPUs) then fills its node and warmup is due.
  await applyTaintedPool(pool, { label: POOL_LABEL, requirements: [FOUR_VCPU] });
});

after(async () => {
  if (skip) return;
  for (const c of containers) await podman(["rm", "-f", "--ignore", c]).catch(() => undefined);
  const steps: [string, () => Promise<unknown>][] = [
    ["webhook configuration", () => remove("mutatingwebhookconfiguration", `${release}-webhook`)],
    ["workloads", () => kubectlRaw(["delete", "deployments", "--all", "-n", appNs, "--wait=false"])],
    [
      "ClusterRoles and bindings",
      () =>
        kubectlRaw([
          "delete",
          "clusterrolebinding,clusterrole",
          "-l",
          `app.kubernetes.io/instance=${release}`,
          "--ignore-not-found",
          "--wait=false",
        ]),
    ],
    [
      "namespaces",
      () =>
        Promise.all(
          [...new Set([ns, appNs, warmupNs, ledgerNs])]
            .filter((n) => n !== "")
            .map((n) => deleteNamespace(n)),
        ),
    ],
    ["NodePool", () => remove("nodepools.karpenter.sh", pool)],
    [
      "PriorityClass",
      async () => {
        const pc = await get("priorityclass", "wave-warmup");
        if (createdPriorityClass && pc?.metadata.labels?.["app.kubernetes.io/instance"] === release)
          await remove("priorityclass", "wave-warmup");
      },
    ],
  ];
  for (const [what, step] of steps) {
    try {
      await step();
    } catch (err) {
      process.stderr.write(`cleanup of ${what} failed: ${(err as Error).message}\n`);
    }
  }
  if (work !== "") rmSync(work, { recursive: true, force: true });
});

test(
  "image: agent, core and webhook run in-cluster from Wave's image with the chart's args, env and RBAC",
  { skip, timeout: 420_000 },
  async () => {
    try {
      await withRigLogsOnFailure(async () => {
        const inspect = JSON.parse(await podman(["image", "inspect", IMAGE])) as Obj[];
        const cfg = field(inspect[0], "Config");
        assert.equal(field(cfg, "User"), `${UID}:${UID}`, "the image runs as 65532");
        assert.deepEqual(field(cfg, "Entrypoint"), ["node", "bin/wave.ts"]);
        // What a user runs first: the image answers `version` with Wave's and its Node's.
        const printed = await podman(["run", "--rm", ...RUN_FLAGS, "--read-only", IMAGE, "version"]);
        assert.match(printed, new RegExp(`^wave ${VERSION.replaceAll(".", "\\.")} \\(node v24\\.`), printed);

        const apiServer = await rigApiServer();
        const { dirs, caPem } = issueCertificates();
        const dataDir = join(work, "core-data");
        mkdirSync(dataDir);
        ownTree(dataDir, UID);
        const cm = renderedOne("ConfigMap", `${release}-config`);
        const volumes: VolumeSources = {
          configMaps: { [nameOf(cm)]: field(cm, "data") as Record<string, string> },
          secrets: dirs,
          claims: { [`${release}-core-data`]: dataDir },
        };
        const [apiPort = 0, grpcPort = 0, webhookPort = 0, metricsPort = 0] = await freePorts(4);
        const svc = (s: string): string => `${release}-${s}.${ns}.svc`;
        const hosts = { [svc("core")]: "127.0.0.1", [svc("webhook")]: "127.0.0.1" };
        const runOf = async (
          component: string,
          overrides: Record<string, string>,
          podName = `${component}-0`,
        ) => {
          const podSpec = podSpecOf(component);
          assert.equal(field(podSpec, "securityContext", "runAsUser"), UID);
          const [c] = objs(field(podSpec, "containers"));
          assert.equal(field(c, "securityContext", "readOnlyRootFilesystem"), true);
          return runArgs({
            name: `${release}-${component}`,
            image: IMAGE,
            podSpec,
            env: envOf(podSpec, podName, overrides),
            volumes,
            serviceAccountDir: await serviceAccountDir(String(podSpec.serviceAccountName), apiServer.caPem),
            apiServer,
            hosts,
            work,
            uid: UID,
          });
        };

        // core ----------------------------------------------------------------------------------
        const coreArgs = await runOf("core", {
          WAVE_PORT: String(apiPort),
          WAVE_GRPC_PORT: String(grpcPort),
        });
        assert.ok(coreArgs.includes("--read-only"), "core's root filesystem is read-only");
        let core = await startContainer("core", coreArgs);
        const coreUp = (): Promise<boolean> =>
          waitFor("core's API", async () => (await fetch(`http://127.0.0.1:${apiPort}/healthz`)).ok, {
            timeoutMs: 60_000,
            intervalMs: 500,
          });
        await coreUp();
        const uidLine = /Uid:\s+(\d+)/.exec(
          readFileSync(
            `/proc/${(await podman(["inspect", "--format", "{{.State.Pid}}", core])).trim()}/status`,
            "utf8",
          ),
        )?.[1];
        assert.equal(uidLine, String(UID), "core's process runs as uid 65532");
        const admin = tokens["admin-token"];
        const viewer = tokens["viewer-token"];
        // webhook and agent ---------------------------------------------------------------------
        const whPolicies = envOf(podSpecOf("webhook"), "x", {})["WAVE_SPOT_POLICIES_URL"] ?? "";
        const webhook = await startContainer(
          "webhook",
          await runOf("webhook", {
            WAVE_WEBHOOK_PORT: String(webhookPort),
            WAVE_SPOT_POLICIES_URL: withPort(whPolicies, apiPort),
            // The chart's default: the webhook reads the SpotPolicy resources through its own
            // informer (the policy set through core's API is one, applied by the agent).
          }),
        );
        const coreAddress = envOf(podSpecOf("agent"), "x", {})["WAVE_CORE_ADDRESS"] ?? "";
        const agent = await startContainer(
          "agent",
          await runOf("agent", {
            WAVE_CORE_ADDRESS: withPort(coreAddress, grpcPort),
            WAVE_METRICS_PORT: String(metricsPort),
            WAVE_WARMUP_POLICY_SOURCE: "core",
          }),
        );
        // Policies are SpotPolicy resources the agent applies for core (issue 31): set once it is
        // connected (503 until then).
        const spot = await waitFor(
          "the spot policy set through core once the agent is connected",
          async () => {
            const r = await api(
              apiPort,
              "PUT",
              `/api/v1/clusters/${clusterId}/policies/spot/Deployment/${appNs}/spotty`,
              admin,
              { threshold: 1, strategy: "Prefer" },
            );
            return r.status === 503 ? undefined : r;
          },
          // The agent connects after its informers listed and its stream opened (a retry after a
          // refused stream backs off): minutes under load, seconds alone.
          { timeoutMs: 180_000, intervalMs: 1_000 },
        );
        assert.equal(spot.status, 200, JSON.stringify(spot.json));

        // The chart's MutatingWebhookConfiguration, with what cert-manager's cainjector adds (the
        // CA) and the two rig differences (URL instead of Service; only this test's namespace).
        const whConfig = structuredClone(
          renderedOne("MutatingWebhookConfiguration", `${release}-webhook`),
        ) as Obj & {
          metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
          webhooks: Obj[];
        };
        for (const hook of whConfig.webhooks) {
          hook.clientConfig = {
            url: `https://127.0.0.1:${webhookPort}/mutate`,
            caBundle: Buffer.from(caPem).toString("base64"),
          };
          const sel = (hook.namespaceSelector ?? {}) as { matchExpressions?: object[] };
          hook.namespaceSelector = {
            ...sel,
            matchExpressions: [
              ...(sel.matchExpressions ?? []),
              { key: "kubernetes.io/metadata.name", operator: "In", values: [appNs] },
            ],
          };
        }
        markE2eWebhookConfig(whConfig, OWNER, [appNs]);
        await waitFor(
          "the webhook container's /healthz (TLS, the chart's certificate)",
          async () => {
            const r = await run("curl", [
              "-sf",
              "--cacert",
              join(work, "secrets", "ca", "ca.crt"),
              `https://127.0.0.1:${webhookPort}/healthz`,
            ]);
            return r.stdout.length >= 0;
          },
          { timeoutMs: 60_000, intervalMs: 500 },
        );
        await kubectl(["create", "-f", "-"], JSON.stringify(whConfig));

        // pipeline: the node Karpenter launches for this test's pool, with its cost, in core's API.
        await apply(deployment("big", 1, "3", { [POOL_LABEL]: pool }));
        const bigNode = await waitFor(
          "the big pod Running on a node of the test's pool",
          async () => {
            const [p] = await list("pods", { namespace: appNs, selector: "app=big" });
            const n = p?.spec?.["nodeName"];
            return p?.status?.phase === "Running" && typeof n === "string" ? n : undefined;
          },
          { timeoutMs: 120_000 },
        );
        const shown = await waitFor(
          `node ${bigNode} Ready and priced in core's API (cluster ${clusterId})`,
          async () => {
            const r = await api(apiPort, "GET", `/api/v1/clusters/${clusterId}/nodes?pool=${pool}`, viewer);
            return objs(field(r.json, "items")).find(
              (n) =>
                n.name === bigNode &&
                n.ready === true &&
                typeof n.costPerHour === "number" &&
                n.costPerHour > 0,
            );
          },
          { timeoutMs: 90_000 },
        );
        // Other lanes launch and delete nodes meanwhile: the rig's count is read on every poll, and
        // a poll counts only when it did not change across core's answer.
        let lastSeen = "";
        const overview = await waitFor(
          "core's overview counts every node of the rig",
          async () => {
            const before = (await list("nodes")).length;
            const o = (await api(apiPort, "GET", `/api/v1/clusters/${clusterId}/overview`, viewer))
              .json as Obj;
            const after = (await list("nodes")).length;
            lastSeen = `rig ${before}→${after}, core ${String(o.nodes)}`;
            return before === after && o.nodes === after && Number(o.costPerHour) > 0 ? o : undefined;
          },
          { timeoutMs: 90_000, intervalMs: 1_000, describe: () => lastSeen },
        );
        process.stderr.write(
          `[pipeline] ${String(overview.nodes)} nodes, $${Number(overview.costPerHour).toFixed(3)}/h; ${bigNode} $${Number(shown.costPerHour).toFixed(3)}/h (${String(shown.priceSource)})\n`,
        );

        // webhook: the spot policy places the first pod on on-demand, the second on spot.
        await apply(deployment("spotty", 2, "100m", { "wave.dev/e2e-unschedulable": suffix }));
        const placed = await waitFor(
          "both spotty pods admitted with a capacity assignment",
          async () => {
            const pods = await list("pods", { namespace: appNs, selector: "app=spotty" });
            const a = pods.map((p) => p.metadata.labels?.[ASSIGNMENT_LABEL]).filter((x) => x !== undefined);
            return a.length === 2 ? a.sort() : undefined;
          },
          { timeoutMs: 60_000 },
        );
        assert.deepEqual(placed, ["on-demand", "spot"]);
        assert.equal(
          (await list("leases", { namespace: ledgerNs, selector: LEDGER_LABEL })).length,
          1,
          "one slot ledger",
        );

        // warmup, switched on once the big pod runs: it fits no other node of the pool → a new
        // node is launched for a warmup pod and protected.
        const warmPolicy = {
          enabled: true,
          maxWarmNodes: 1,
          ttlSeconds: 600,
          cooldownSeconds: 0,
          prePull: false,
        };
        assert.equal(
          (
            await api(
              apiPort,
              "PUT",
              `/api/v1/clusters/${clusterId}/policies/warmup/${pool}`,
              admin,
              warmPolicy,
            )
          ).status,
          200,
        );

        const warm = await waitFor(
          "a Running warmup pod with Wave's do-not-disrupt on its node",
          () => protectedWarmup(pool, warmupNs, ns),
          {
            timeoutMs: 150_000,
            intervalMs: 2000,
          },
        );
        assert.notEqual(warm.node.metadata.name, bigNode, "the warm node is a new node");
        process.stderr.write(`[warmup] ${warm.pod.metadata.name} on ${warm.node.metadata.name}, protected\n`);

        // history: a point of the pool with its nodes and cost (written at the next step boundary).
        const series = async (): Promise<SeriesPoint[]> =>
          objs(
            field(
              (
                await api(
                  apiPort,
                  "GET",
                  `/api/v1/clusters/${clusterId}/series?window=1800&pool=${pool}`,
                  viewer,
                )
              ).json,
              "points",
            ),
          ) as unknown as SeriesPoint[];
        const before = await waitFor(
          "a history point of the pool with nodes and cost",
          async () => {
            const pts = await series();
            return pts.some((p) => p.nodes > 0 && p.costPerHour > 0) ? pts : undefined;
          },
          { timeoutMs: 90_000, intervalMs: 2000 },
        );

        // RSS of each container's process, with everything running.
        const rss: Record<string, number> = {};
        for (const [n, c] of [
          ["agent", agent],
          ["core", core],
          ["webhook", webhook],
        ] as const)
          rss[n] = await containerRss(c);
        process.stderr.write(
          `[rss] ${Object.entries(rss)
            .map(([n, b]) => `${n} ${(b / 2 ** 20).toFixed(0)} MiB`)
            .join(", ")}\n`,
        );

        // core: podman stop, a new container on the same data volume; history kept.
        assert.equal(await stopContainer(core), 0, "core exits 0 on podman stop");
        core = await startContainer(
          "core",
          await runOf("core", { WAVE_PORT: String(apiPort), WAVE_GRPC_PORT: String(grpcPort) }, "core-1"),
        );
        await coreUp();
        const afterPts = await series();
        const kept = before
          .filter((p) => p.nodes > 0)
          .every((p) => afterPts.some((q) => q.t === p.t && q.nodes === p.nodes));
        assert.ok(
          kept,
          `history kept across core's restart: before ${JSON.stringify(before)} after ${JSON.stringify(afterPts)}`,
        );
        // The agent reconnects to the new core (its buffered stream resumes).
        await waitFor(
          "the agent streams to the restarted core",
          async () => {
            const r = await api(apiPort, "GET", `/api/v1/clusters/${clusterId}/nodes?pool=${pool}`, viewer);
            return objs(field(r.json, "items")).some((n) => n.name === bigNode);
          },
          { timeoutMs: 90_000 },
        );

        // Everything stops cleanly, and nothing was refused by the apiserver.
        for (const c of [agent, webhook, core])
          assert.equal(await stopContainer(c), 0, `${c} exits 0 on podman stop`);
        for (const c of [agent, webhook, core]) {
          const logs = await logsOf(c);
          assert.deepEqual(
            logs.split("\n").filter((l) => /forbidden|EROFS|read-only file system/i.test(l)),
            [],
            `${c} logged no Forbidden and no write to the read-only root`,
          );
        }
      });
    } catch (err) {
      for (const c of containers)
        process.stderr.write(
          `\n----- ${c} (last 40 lines) -----\n${(await logsOf(c)).split("\n").slice(-40).join("\n")}\n`,
        );
      throw err;
    }
  },
);
