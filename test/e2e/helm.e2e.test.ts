// Helm chart acceptance on the real rig (issue 9). The chart is rendered with the helm built from
// Go modules (`npm run helm:build`) under a release name of this test's own, in a namespace of its
// own, and then:
//   checks    `helm template --validate` against the rig fails clearly while cert-manager is
//             missing (the rig serves Karpenter's API, not cert-manager's), passes once it is
//   dry-run   every rendered object (default values and the PostgreSQL values, ServiceMonitor on)
//             is accepted by the apiserver with `kubectl apply --dry-run=server` (strict field
//             validation). The rig has no cert-manager or Prometheus Operator: their CRDs are
//             installed as schema-less stubs for the dry run only (so the Certificate, Issuer and
//             ServiceMonitor bodies are not validated) and deleted afterwards
//   rbac      the chart's ServiceAccounts, (Cluster)Roles and bindings are created for real, and
//             `kubectl auth can-i --list --as=system:serviceaccount:NS:SA` per ServiceAccount, in
//             the release namespace, the warmup and spot ledger namespaces and another one, equals
//             RBAC.md exactly (minus what every ServiceAccount may do, taken from the namespace's
//             `default` one); the webhook may not update core's or the agent's leader Lease
//   run       `wave core`, `wave agent` and `wave webhook` run as child processes the way the
//             chart runs them (args, env and config file taken from the rendered Deployments and
//             ConfigMap; TLS directories laid out like cert-manager's Secrets) with a kubeconfig
//             holding a token of the component's ServiceAccount (`kubectl create token`): the agent
//             streams this test's NodePool's node to core; core's warmup controller creates a
//             warmup pod, protects its node, and deletes it again when the policy is switched off;
//             the webhook (behind a MutatingWebhookConfiguration of this test that selects only
//             this test's workload namespace) places pods with its Lease ledger, kept in the spot
//             ledger namespace; nothing logs a Forbidden
//   cleanup   with a warmup live, core and the others stop, and `wave cleanup` under the cleanup
//             ServiceAccount (args from the rendered hook Job) removes the warmup pod, Wave's
//             do-not-disrupt on the Node and NodeClaim, and the Leases; rendered with a ledger
//             namespace the chart does not create, it empties that one too. The chart's own
//             MutatingWebhookConfiguration is removed by `helm uninstall` (a chart object), not by
//             `wave cleanup`, whose ServiceAccount may not touch webhook configurations.
// Cluster-scoped objects (ClusterRoles/Bindings named after the release, CRD stubs, the NodePool,
// this test's webhook configuration, the PriorityClass if this test made it) are deleted in
// after(), also on failure.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { freePorts, repoRoot } from "../../hack/rig/lib.ts";
import { CLIENT_EXT, makePki, SERVER_EXT } from "../support/pki.ts";
import { spawnWave, stopWave, type WaveProcess } from "../support/wave-process.ts";
import { DO_NOT_DISRUPT_ANNOTATION } from "../../src/objects/karpenter.ts";
import {
  ASSIGNMENT_LABEL,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  LAST_WARMUP_AT_ANNOTATION,
  LAST_WARMUP_NAMESPACE_ANNOTATION,
  LEDGER_LABEL,
  WARMUP_LABEL,
  WARMUP_POOL_LABEL,
} from "../../src/objects/wave.ts";
import { buildWebhookConfiguration } from "../../src/webhook/webhook-config.ts";
import { documentedPermissions, effectiveIn, minus, parseCanIList } from "../unit/helm-rbac.ts";
import {
  annotations,
  chartEnv,
  coreApi,
  poolDeployment,
  protectedBy,
  protectedWarmup as sharedProtectedWarmup,
} from "./chart-run.ts";
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
  remove,
  requireRig,
  waitFor,
  withRigLogsOnFailure,
  type KubeObject,
} from "./harness.ts";

const run = promisify(execFile);
const HELM = join(repoRoot, ".rig", "bin", "helm");
const CHART = join(repoRoot, "deploy", "helm", "wave");
const skip = existsSync(HELM) ? false : `helm not built (${HELM}): run npm run helm:build`;
const POOL_LABEL = "wave.dev/e2e-pool";
const COMPONENTS = ["agent", "core", "webhook", "cleanup"] as const;
const TIMEOUT_MS = 120_000;
/** On the CRD stubs; stubs a killed run left behind are removed before the dry run. */
const STUB_LABEL = "wave.dev/e2e-helm-stub";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const field = (o: unknown, ...path: string[]): unknown => {
  let cur = o;
  for (const k of path) cur = isObj(cur) ? cur[k] : undefined;
  return cur;
};
const objs = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x) => typeof x === "string") : []);

const suffix = randomBytes(3).toString("hex");
// The fullname is the release name when it contains "wave": ServiceAccounts wave-e2e-<hex>-agent…
const release = `wave-e2e-${suffix}`;
const pool = `helm-${suffix}`;
const clusterId = `helm-${suffix}`;
const webhookConfigName = `${release}-e2e`;
const tokens = {
  "admin-token": randomBytes(20).toString("hex"),
  "viewer-token": randomBytes(20).toString("hex"),
  "agent-token": randomBytes(20).toString("hex"),
};

let ns = ""; // the release namespace: Wave's processes, warmup pods, Leases
let warmupNs = ""; // the chart's warmup namespace (warmup and pull pods; no Secrets)
let ledgerNs = ""; // the chart's spot ledger namespace (the webhook's Leases only)
let appNs = ""; // workloads (the webhook's configuration selects only this namespace)
let work = "";
let rendered: Obj[] = [];
const createdCrds: string[] = [];
let createdPriorityClass = false;

// ---------------------------------------------------------------------------------------------
// helm

async function helmTemplate(args: string[]): Promise<string> {
  const { stdout } = await run(
    HELM,
    ["template", release, CHART, "--namespace", ns, "--kube-version", "1.34.0", ...args],
    { maxBuffer: 16 * 1024 * 1024, env: { ...process.env, KUBECONFIG: kubeconfigPath } },
  );
  return stdout;
}

const APIS = [
  "--api-versions",
  "karpenter.sh/v1/NodePool",
  "--api-versions",
  "cert-manager.io/v1/Certificate",
  "--api-versions",
  "monitoring.coreos.com/v1/ServiceMonitor",
];

function parseDocs(yaml: string): Obj[] {
  return parseAllDocuments(yaml)
    .map((d) => d.toJSON() as unknown)
    .filter(isObj);
}

const nameOf = (o: Obj): string => String(field(o, "metadata", "name"));
function renderedOne(kind: string, name: string): Obj {
  const found = rendered.find((d) => d.kind === kind && nameOf(d) === name);
  assert.ok(found, `the chart renders no ${kind} ${name}`);
  return found;
}

function stubCrd(group: string, kind: string, plural: string): object {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}`, labels: { [STUB_LABEL]: suffix } },
    spec: {
      group,
      scope: "Namespaced",
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
        },
      ],
    },
  };
}

// ---------------------------------------------------------------------------------------------
// credentials: a token per ServiceAccount, TLS laid out like cert-manager's Secrets

async function kubeconfigFor(sa: string): Promise<string> {
  const token = (await kubectl(["create", "token", sa, "-n", ns, "--duration=1h"])).trim();
  const admin = JSON.parse(await kubectl(["config", "view", "--raw", "--minify", "-o", "json"])) as Obj;
  const cluster = field(objs(admin.clusters)[0], "cluster");
  assert.ok(isObj(cluster), "the rig's kubeconfig has a cluster");
  const file = join(work, `${sa}.kubeconfig`);
  // JSON is YAML: client-node and kubectl read it as a kubeconfig.
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: "rig",
          cluster: {
            server: cluster.server,
            "certificate-authority-data": cluster["certificate-authority-data"],
          },
        },
      ],
      users: [{ name: sa, user: { token } }],
      contexts: [{ name: sa, context: { cluster: "rig", user: sa, namespace: ns } }],
      "current-context": sa,
    }),
    { mode: 0o600 },
  );
  return file;
}

/** work/{grpc,agent,webhook}/{tls.crt,tls.key,ca.crt} signed by one CA: what cert-manager mounts. */
function makeChartPki(): string {
  return makePki(work, [
    { dir: "grpc", cn: `${release}-core`, ext: SERVER_EXT },
    { dir: "agent", cn: "wave-agent", ext: CLIENT_EXT },
    { dir: "webhook", cn: `${release}-webhook`, ext: SERVER_EXT },
  ]);
}

// ---------------------------------------------------------------------------------------------
// Wave's processes, run the way the chart runs them

const procs: WaveProcess[] = [];

/** The container of a rendered Deployment or Job. */
function containerOf(kind: string, name: string): Obj {
  const [c] = objs(field(renderedOne(kind, name), "spec", "template", "spec", "containers"));
  assert.ok(c, `${kind} ${name} has a container`);
  return c;
}

/** The environment the chart gives a container (see chartEnv), as a pod of this release resolves it. */
const envOf = (container: Obj, podName: string, overrides: Record<string, string>): Record<string, string> =>
  chartEnv(container, { namespace: ns, name: podName, secrets: tokens }, overrides);

/** The chart's config file (from the rendered ConfigMap) with a local host and data directory. */
function configFile(): string {
  const cm = renderedOne("ConfigMap", `${release}-config`);
  const text = field(cm, "data", "config.yaml");
  assert.equal(typeof text, "string");
  const [doc] = parseDocs(String(text));
  const file = join(work, "config.yaml");
  writeFileSync(file, JSON.stringify({ ...doc, host: "127.0.0.1", dataDir: join(work, "data") }));
  return file;
}

function startWave(
  name: string,
  args: string[],
  env: Record<string, string>,
  kubeconfig: string,
): WaveProcess {
  const cfg = configFile();
  const argv = args.map((a) => (a === "/etc/wave/config.yaml" ? cfg : a));
  const p = spawnWave(name, argv, { env: { ...env, KUBECONFIG: kubeconfig }, home: work });
  procs.push(p);
  return p;
}

async function stop(p: WaveProcess): Promise<number | null> {
  const code = await stopWave(p, 60_000);
  if (code === "hung") assert.fail(`wave ${p.name} did not stop within 60 s of SIGTERM`);
  return code;
}

const forbidden = (p: WaveProcess): string[] => p.output.filter((l) => /forbidden/i.test(l));

function dumpProcs(): void {
  for (const p of procs)
    process.stderr.write(`\n----- wave ${p.name} (last 40 lines) -----\n${p.output.slice(-40).join("\n")}\n`);
}

const api = coreApi;

function httpsStatus(port: number, path: string, ca: string): Promise<number> {
  return new Promise((ok, fail) => {
    const req = httpsRequest({ host: "127.0.0.1", port, path, ca, timeout: 5000 }, (res) => {
      res.resume();
      ok(res.statusCode ?? 0);
    });
    req.on("error", fail);
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.end();
  });
}

// ---------------------------------------------------------------------------------------------
// workloads

// 4-vCPU nodes only: the "big" pod (3 CPUs) then fills its node and warmup is due (the cheapest
// spot offering is sometimes an 8-vCPU node, with room for another).
const applyPool = (): Promise<void> =>
  applyTaintedPool(pool, { label: POOL_LABEL, requirements: [FOUR_VCPU] });

const deployment = (
  name: string,
  replicas: number,
  cpu: string,
  nodeSelector: Record<string, string>,
): object => poolDeployment({ name, namespace: appNs, replicas, cpu, nodeSelector, pool, label: POOL_LABEL });

/** Wave's do-not-disrupt, set by the install in this test's namespace. */
const protectedByUs = (o: KubeObject | undefined): boolean => protectedBy(o, ns);

async function warmupPods(): Promise<KubeObject[]> {
  return list("pods", { namespace: warmupNs, selector: `${WARMUP_LABEL}=true,${WARMUP_POOL_LABEL}=${pool}` });
}

/** A Running warmup pod whose Node and NodeClaim carry our do-not-disrupt. */
const protectedWarmup = (): ReturnType<typeof sharedProtectedWarmup> =>
  sharedProtectedWarmup(pool, warmupNs, ns);

// ---------------------------------------------------------------------------------------------

before(async () => {
  if (skip) return;
  await requireRig();
  ns = await createNamespace("helm");
  appNs = await createNamespace("helm-app");
  // The chart's default warmup namespace, made now so the server-side dry run can place its Roles.
  warmupNs = `${ns}-warmup`;
  ledgerNs = `${ns}-spot-ledgers`;
  for (const name of [warmupNs, ledgerNs])
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name, labels: { "wave.dev/e2e": "true" } },
      }),
    );
  work = mkdtempSync(join(tmpdir(), "wave-helm-e2e-"));
  await applyPool();
});

after(async () => {
  if (skip) return;
  for (const p of procs)
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  const steps: [string, () => Promise<unknown>][] = [
    ["webhook configuration", () => remove("mutatingwebhookconfiguration", webhookConfigName)],
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
        Promise.all([ns, appNs, warmupNs, ledgerNs].filter((n) => n !== "").map((n) => deleteNamespace(n))),
    ],
    ["NodePool", () => remove("nodepools.karpenter.sh", pool)],
    ...createdCrds.map((c): [string, () => Promise<unknown>] => [`CRD ${c}`, () => remove("crd", c)]),
    [
      "PriorityClass",
      async () => {
        // Only ours: someone else's controller may have (re)made it in the meantime.
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
  "helm chart: clear failure without cert-manager; server-side dry run of every object",
  { skip, timeout: TIMEOUT_MS },
  async () => {
    await withRigLogsOnFailure(async () => {
      await kubectl(["delete", "crd", "-l", STUB_LABEL, "--ignore-not-found"]);
      const certManagerServed = (await get("crd", "certificates.cert-manager.io")) !== undefined;
      if (!certManagerServed) {
        // Capabilities from the rig itself: Karpenter's API is there, cert-manager's is not.
        const err = await helmTemplate(["--validate"]).then(
          () => undefined,
          (e: unknown) => String((e as { stderr?: unknown }).stderr),
        );
        assert.match(err ?? "(rendered)", /Wave needs cert-manager/);
      }

      for (const [group, kind, plural] of [
        ["cert-manager.io", "Certificate", "certificates"],
        ["cert-manager.io", "Issuer", "issuers"],
        ["monitoring.coreos.com", "ServiceMonitor", "servicemonitors"],
      ] as const) {
        const name = `${plural}.${group}`;
        if ((await get("crd", name)) !== undefined) continue;
        await apply(stubCrd(group, kind, plural));
        createdCrds.push(name);
      }
      for (const c of createdCrds)
        await kubectl(["wait", "--for=condition=Established", `crd/${c}`, "--timeout=60s"]);
      // With every required API served, the same check passes against the rig. A wave-warmup
      // PriorityClass Helm does not own (made by a Wave process) is the documented create=false case;
      // so is the warmup namespace, which before() made for the dry run (--validate refuses to
      // adopt an existing object Helm does not own).
      const pc = await get("priorityclass", "wave-warmup");
      await helmTemplate([
        "--validate",
        "--set",
        "serviceMonitor.enabled=true",
        "--set",
        "warmup.createNamespace=false",
        "--set",
        "webhook.createLedgerNamespace=false",
        ...(pc && pc.metadata.labels?.["app.kubernetes.io/managed-by"] !== "Helm"
          ? ["--set", "warmup.priorityClass.create=false"]
          : []),
      ]);

      for (const values of [[], ["-f", join(CHART, "ci", "postgres-values.yaml")]]) {
        const yaml = await helmTemplate([...APIS, "--set", "serviceMonitor.enabled=true", ...values]);
        const docs = parseDocs(yaml);
        const r = await kubectlRaw(["apply", "--dry-run=server", "-f", "-"], yaml);
        assert.equal(
          r.code,
          0,
          `server-side dry run failed (${values.join(" ") || "default values"}): ${r.stderr}`,
        );
        const accepted = r.stdout.split("\n").filter((l) => /\(server dry run\)$/.test(l));
        assert.equal(
          accepted.length,
          docs.length,
          `every rendered object accepted (${values.join(" ") || "default values"}):\n${r.stdout}`,
        );
        for (const kind of [
          "Deployment",
          "MutatingWebhookConfiguration",
          "Certificate",
          "ServiceMonitor",
          "Job",
        ])
          assert.ok(
            docs.some((d) => d.kind === kind),
            `rendered a ${kind}`,
          );
        process.stderr.write(
          `[helm] ${values.length ? "postgres" : "default"} values: ${docs.length} objects accepted\n`,
        );
      }
    });
  },
);

test(
  "helm chart: each ServiceAccount can do exactly what RBAC.md documents (kubectl auth can-i --list)",
  { skip, timeout: TIMEOUT_MS },
  async () => {
    await withRigLogsOnFailure(async () => {
      // The processes' contract comes from this render: this test's cluster id, and the webhook's
      // own deadline at the top of its range (the rig's 2 cores are shared; the default 1 s could
      // let a slow Lease write fall back to admitting unchanged).
      rendered = parseDocs(
        await helmTemplate([...APIS, "--set", `clusterId=${clusterId}`, "--set", "webhook.deadlineMs=2500"]),
      );
      const rbacKinds = new Set([
        // The warmup Namespace with its Pod Security labels, so warmup pods meet `restricted`.
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
      ]);
      const rbac = rendered.filter((d) => rbacKinds.has(String(d.kind)));
      for (const d of rbac)
        if (d.kind === "ClusterRole" || d.kind === "ClusterRoleBinding")
          assert.ok(
            nameOf(d).startsWith(release),
            `cluster-scoped ${d.kind} ${nameOf(d)} is named after the release`,
          );
      await kubectl(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: rbac }));
      // The agent's memory of core's last warmup policies: the chart creates it, the agent only
      // gets and updates it (ADR 0014).
      await kubectl(["apply", "-f", "-"], JSON.stringify(renderedOne("ConfigMap", "wave-warmup-policies")));
      if ((await get("priorityclass", "wave-warmup")) === undefined) {
        await kubectl(["create", "-f", "-"], JSON.stringify(renderedOne("PriorityClass", "wave-warmup")));
        createdPriorityClass = true;
      }

      const canI = async (sa: string, namespace: string): Promise<Set<string>> =>
        parseCanIList(
          await kubectl([
            "auth",
            "can-i",
            "--list",
            `--as=system:serviceaccount:${ns}:${sa}`,
            "-n",
            namespace,
          ]),
        );
      // What any ServiceAccount may do (discovery, self reviews): not the chart's doing.
      const baseline = await canI("default", ns);
      const documented = documentedPermissions(readFileSync(join(CHART, "RBAC.md"), "utf8"));
      // Core's table is empty (it talks to no apiserver, ADR 0014): checked below as no rules.
      assert.deepEqual([...documented.keys()].sort(), COMPONENTS.filter((c) => c !== "core").sort());
      const problems: string[] = [];
      for (const component of COMPONENTS) {
        const sa = `${release}-${component}`;
        const doc = documented.get(component) ?? new Set<string>();
        for (const [where, namespace] of [
          ["release namespace", ns],
          ["warmup namespace", warmupNs],
          ["spot ledger namespace", ledgerNs],
          ["another namespace", appNs],
        ] as const) {
          const actual = new Set(minus(await canI(sa, namespace), baseline));
          const expected = effectiveIn(
            doc,
            namespace === ns
              ? "release"
              : namespace === warmupNs
                ? "warmup"
                : namespace === ledgerNs
                  ? "ledger"
                  : "other",
          );
          const extra = minus(actual, expected);
          const missing = minus(expected, actual);
          if (extra.length) problems.push(`${sa} in the ${where} may also: ${extra.join(", ")}`);
          if (missing.length) problems.push(`${sa} in the ${where} lacks: ${missing.join(", ")}`);
          process.stderr.write(
            `[rbac] ${sa} (${where}): ${actual.size} permissions, RBAC.md ${expected.size}, extra ${extra.length}, missing ${missing.length}\n`,
          );
        }
      }
      assert.deepEqual(problems, [], "kubectl auth can-i --list differs from RBAC.md");
      // Issue 16: the webhook's Lease writes (ledger names cannot be pinned) stay out of the
      // release namespace, where core's and the agent's leader Leases are.
      for (const lease of ["wave-warmup", "wave-agent", "wave-spot-repair"]) {
        const r = await kubectlRaw([
          "auth",
          "can-i",
          "update",
          `leases.coordination.k8s.io/${lease}`,
          `--as=system:serviceaccount:${ns}:${release}-webhook`,
          "-n",
          ns,
        ]);
        assert.equal(r.stdout.trim(), "no", `the webhook may not update Lease ${ns}/${lease}`);
      }
      const own = await kubectlRaw([
        "auth",
        "can-i",
        "update",
        "leases.coordination.k8s.io/wave-spot-repair",
        `--as=system:serviceaccount:${ns}:${release}-webhook`,
        "-n",
        ledgerNs,
      ]);
      assert.equal(own.stdout.trim(), "yes", "the webhook may update its Leases in the ledger namespace");
    });
  },
);

test(
  "helm chart: wave core, agent and webhook work under their ServiceAccounts; wave cleanup removes Wave's marks",
  { skip, timeout: 240_000 },
  async () => {
    assert.ok(rendered.length > 0, "the RBAC test rendered the chart and created the ServiceAccounts");
    try {
      await withRigLogsOnFailure(async () => {
        const caPem = makeChartPki();
        const [apiPort = 0, grpcPort = 0, webhookPort = 0, metricsPort = 0] = await freePorts(4);
        const kc = Object.fromEntries(
          await Promise.all(
            COMPONENTS.map(async (c) => [c, await kubeconfigFor(`${release}-${c}`)] as const),
          ),
        ) as Record<(typeof COMPONENTS)[number], string>;

        // core ----------------------------------------------------------------------------------
        const coreContainer = containerOf("Deployment", `${release}-core`);
        const coreEnv = envOf(coreContainer, "core-0", {
          WAVE_PORT: String(apiPort),
          WAVE_GRPC_PORT: String(grpcPort),
          WAVE_GRPC_TLS_DIR: join(work, "grpc"),
        });
        let core = startWave("core", strings(coreContainer.args), coreEnv, kc.core);
        const coreUp = (): Promise<boolean> =>
          waitFor("core's API", async () => (await fetch(`http://127.0.0.1:${apiPort}/healthz`)).ok, {
            timeoutMs: 60_000,
            intervalMs: 500,
          });
        await coreUp();
        const admin = tokens["admin-token"];
        const viewer = tokens["viewer-token"];
        const policy = {
          enabled: true,
          maxWarmNodes: 1,
          ttlSeconds: 600,
          cooldownSeconds: 0,
          prePull: false,
        };

        // webhook -------------------------------------------------------------------------------
        const whContainer = containerOf("Deployment", `${release}-webhook`);
        const webhook = startWave(
          "webhook",
          strings(whContainer.args),
          envOf(whContainer, "webhook-0", {
            WAVE_WEBHOOK_PORT: String(webhookPort),
            WAVE_WEBHOOK_TLS_DIR: join(work, "webhook"),
            WAVE_SPOT_POLICIES_URL: `http://127.0.0.1:${apiPort}/api/v1/policies/spot`,
            // This test sets its policies through core's API (the SpotPolicy path: policy-crds.e2e).
            WAVE_SPOT_POLICY_SOURCE: "core",
          }),
          kc.webhook,
        );
        await waitFor(
          "the webhook's /healthz over TLS",
          async () => (await httpsStatus(webhookPort, "/healthz", caPem)) === 200,
          {
            timeoutMs: 60_000,
            intervalMs: 500,
          },
        );

        // agent ---------------------------------------------------------------------------------
        const agentContainer = containerOf("Deployment", `${release}-agent`);
        const agent = startWave(
          "agent",
          strings(agentContainer.args),
          envOf(agentContainer, "agent-0", {
            WAVE_CORE_ADDRESS: `https://127.0.0.1:${grpcPort}`,
            WAVE_AGENT_TLS_DIR: join(work, "agent"),
            WAVE_METRICS_PORT: String(metricsPort),
            // Warmup policies set through core's API here (WarmupPolicy resources: policy-crds.e2e).
            WAVE_WARMUP_POLICY_SOURCE: "core",
          }),
          kc.agent,
        );
        // Policies are SpotPolicy resources the agent applies for core (issue 31): set once it is
        // connected (503 until then).
        const spot = await waitFor(
          "the spot policy set through core once the agent is connected",
          async () => {
            const r = await api(apiPort, "PUT", `/api/v1/policies/spot/Deployment/${appNs}/spotty`, admin, {
              threshold: 1,
              strategy: "Prefer",
            });
            return r.status === 503 ? undefined : r;
          },
          // The agent connects after its informers listed and its stream opened (a retry after a
          // refused stream backs off): minutes under load, seconds alone.
          { timeoutMs: 180_000, intervalMs: 1_000 },
        );
        assert.equal(spot.status, 200, JSON.stringify(spot.json));

        // The webhook admits this test's workload namespace only (the rig is shared).
        const whConfig = buildWebhookConfiguration({
          name: webhookConfigName,
          caPem,
          waveNamespace: ns,
          url: `https://127.0.0.1:${webhookPort}/mutate`,
        });
        const [hook] = whConfig.webhooks ?? [];
        assert.ok(hook);
        hook.namespaceSelector = {
          matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: [appNs] }],
        };
        await kubectl(["create", "-f", "-"], JSON.stringify(whConfig));

        // agent → core: the node Karpenter launches for this test's pool reaches core's API.
        await apply(deployment("big", 1, "3", { [POOL_LABEL]: pool }));
        const bigNode = await waitFor(
          "the big pod Running on a node of the test's pool",
          async () => {
            const [p] = await list("pods", { namespace: appNs, selector: "app=big" });
            const n = p?.spec?.["nodeName"];
            return p?.status?.phase === "Running" && typeof n === "string" ? n : undefined;
          },
          { timeoutMs: 90_000 },
        );
        await waitFor(
          `node ${bigNode} Ready in core's API (cluster ${clusterId}, pool ${pool})`,
          async () => {
            const r = await api(apiPort, "GET", `/api/v1/clusters/${clusterId}/nodes?pool=${pool}`, viewer);
            const items = objs(field(r.json, "items"));
            const found = items.find((n) => n.name === bigNode && n.nodePool === pool && n.ready === true);
            if (found) return found;
            throw new Error(
              `core lists ${r.status}: ${JSON.stringify(items.map((n) => [n.name, n.nodePool, n.ready]))}`,
            );
          },
          { timeoutMs: 90_000 },
        );

        // Warmup on once the big pod runs (switched on earlier, the warmup pod and the pending big
        // pod raced for the same new node and the warmup ended as a hit at once).
        assert.equal(
          (await api(apiPort, "PUT", `/api/v1/policies/warmup/${pool}`, admin, policy)).status,
          200,
        );

        // webhook: the spot policy (pulled from core) places the first pod on on-demand. The pods
        // select a label no node has: admission is what counts here, not scheduling.
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
        const ledgers = await list("leases", { namespace: ledgerNs, selector: LEDGER_LABEL });
        assert.equal(ledgers.length, 1, "one slot ledger Lease in the spot ledger namespace");
        assert.deepEqual(await list("leases", { namespace: ns, selector: LEDGER_LABEL }), []);

        // warmup: the big pod fits no other node of the pool → a warmup pod, its node protected.
        const warm = async (): Promise<{ pod: KubeObject; node: KubeObject; claim: KubeObject }> =>
          waitFor(
            "a Running warmup pod with Wave's do-not-disrupt on its Node and NodeClaim",
            protectedWarmup,
            {
              timeoutMs: 120_000,
              intervalMs: 2000,
            },
          );
        const first = await warm();
        process.stderr.write(
          `[warmup] ${first.pod.metadata.name} on ${first.node.metadata.name}, protected\n`,
        );

        // Switched off: the policy reaches the agent over its stream; the warmup controller beside
        // the agent deletes its warmup pod and releases the node.
        const off = { ...policy, enabled: false };
        assert.equal((await api(apiPort, "PUT", `/api/v1/policies/warmup/${pool}`, admin, off)).status, 200);
        await waitFor(
          "the agent's warmup deletes the warmup pod and releases its node",
          async () => {
            if ((await warmupPods()).length > 0) return false;
            const node = await get("node", first.node.metadata.name);
            return node === undefined || !protectedByUs(node);
          },
          { timeoutMs: 60_000 },
        );

        // On again with two warm slots and core restarted: the agent's warmup, on the policies it
        // was sent (and remembered), warms again. The released node is empty room, one slot: no
        // warmup pod while it is there (one would be bound to it and removed at once, issue 38,
        // over and over, so Karpenter never found it empty); Karpenter consolidates it
        // (consolidateAfter 10 s) and Wave then launches new warm nodes.
        const on = { ...policy, maxWarmNodes: 2 };
        assert.equal((await api(apiPort, "PUT", `/api/v1/policies/warmup/${pool}`, admin, on)).status, 200);
        assert.equal(await stop(core), 0, "core exits 0 on SIGTERM");
        core = startWave(
          "core",
          strings(coreContainer.args),
          { ...coreEnv, WAVE_POD_NAME: "core-1" },
          kc.core,
        );
        await coreUp();
        const second = await warm();
        process.stderr.write(
          `[warmup] ${second.pod.metadata.name} on ${second.node.metadata.name}, protected\n`,
        );
        assert.notEqual(second.node.metadata.name, first.node.metadata.name, "a new warm node");
        const churn = agent.output.filter((l) => l.includes("warmup pod on an existing node removed"));
        assert.deepEqual(churn, [], "no warmup pod was made for the released node's room");
        const cooldown = annotations(await get("nodepools.karpenter.sh", pool));
        assert.ok(
          cooldown[LAST_WARMUP_AT_ANNOTATION],
          "the agent's warmup marked the pool's warmup cooldown",
        );
        const remembered = await get("configmap", "wave-warmup-policies", ns);
        assert.match(
          String(field(remembered, "data", "policies.json")),
          /"maxWarmNodes":2/,
          "the agent remembered core's last warmup policies",
        );
        assert.equal(cooldown[LAST_WARMUP_NAMESPACE_ANNOTATION], ns);
        const leases = (await list("leases", { namespace: ns })).map((l) => l.metadata.name);
        assert.ok(
          leases.includes("wave-agent") && !leases.includes("wave-warmup"),
          `leader Leases: ${leases.join(", ")}`,
        );
        assert.ok(!leases.includes("wave-spot-repair"), "the repair's Lease is not in Wave's namespace");
        await waitFor(
          "the webhook's repair Lease in the ledger namespace",
          async () => (await get("lease", "wave-spot-repair", ledgerNs)) !== undefined,
          { timeoutMs: 30_000 },
        );

        // Everything stops cleanly, and nothing was refused by the apiserver.
        for (const p of [agent, webhook, core])
          assert.equal(await stop(p), 0, `wave ${p.name} exits 0 on SIGTERM`);
        for (const p of procs) assert.deepEqual(forbidden(p), [], `wave ${p.name} logged no Forbidden`);

        // cleanup: the hook Job's args, under the cleanup ServiceAccount.
        const job = containerOf("Job", `${release}-cleanup`);
        const cleanup = startWave("cleanup", strings(job.args), envOf(job, "cleanup-0", {}), kc.cleanup);
        assert.equal(await cleanup.exited, 0, `wave cleanup exits 0:\n${cleanup.output.join("\n")}`);
        assert.deepEqual(forbidden(cleanup), []);
        const summary = cleanup.output.find((l) => l.startsWith("cleaned up in namespace"));
        process.stderr.write(`[cleanup] ${summary ?? "(no summary)"}\n`);
        // The warmup namespace the chart created goes with the release (its pods with it), so the
        // hook leaves its pods alone; `helm uninstall` deleting the namespace is not part of this run.
        assert.equal(
          await warmupPods().then((ps) => ps.length > 0),
          true,
          "the hook does not reach into the chart's own warmup namespace",
        );
        assert.equal(
          annotations(await get("nodepools.karpenter.sh", pool))[LAST_WARMUP_AT_ANNOTATION],
          undefined,
          "the pool's cooldown mark removed",
        );
        const node = await get("node", second.node.metadata.name);
        const claim = await get("nodeclaim", second.claim.metadata.name);
        for (const o of [node, claim]) {
          const a = annotations(o);
          assert.ok(
            o === undefined ||
              (a[DO_NOT_DISRUPT_ANNOTATION] === undefined &&
                a[DO_NOT_DISRUPT_OWNER_ANNOTATION] === undefined),
            `Wave's do-not-disrupt removed from ${o?.kind ?? ""} ${o?.metadata.name ?? ""}`,
          );
        }
        assert.deepEqual(
          (await list("leases", { namespace: ns })).map((l) => l.metadata.name),
          [],
          "Leases removed",
        );
        // The chart's ledger namespace goes with the release (its Leases with it): untouched.
        const kept = (await list("leases", { namespace: ledgerNs })).map((l) => l.metadata.name);
        assert.ok(
          kept.includes("wave-spot-repair") && kept.length === 2,
          `ledger Leases: ${kept.join(", ")}`,
        );

        // A ledger namespace the chart did not create (webhook.createLedgerNamespace=false): the
        // hook gets a Role there and `wave cleanup` empties it.
        const userLedgers = parseDocs(
          await helmTemplate([
            ...APIS,
            "--set",
            `clusterId=${clusterId}`,
            "--set",
            "webhook.createLedgerNamespace=false",
          ]),
        );
        const hookRbac = userLedgers.filter(
          (d) =>
            (d.kind === "Role" || d.kind === "RoleBinding") &&
            field(d, "metadata", "namespace") === ledgerNs &&
            nameOf(d) === `${release}-cleanup`,
        );
        assert.equal(hookRbac.length, 2, "the cleanup hook's Role and RoleBinding in the ledger namespace");
        await kubectl(
          ["apply", "-f", "-"],
          JSON.stringify({ apiVersion: "v1", kind: "List", items: hookRbac }),
        );
        const [hookJob] = objs(
          field(
            userLedgers.find((d) => d.kind === "Job" && nameOf(d) === `${release}-cleanup`),
            "spec",
            "template",
            "spec",
            "containers",
          ),
        );
        assert.ok(hookJob, "the cleanup hook Job");
        const env = envOf(hookJob, "cleanup-1", {});
        assert.equal(env["WAVE_SPOT_LEDGER_NAMESPACE"], ledgerNs);
        const again = startWave("cleanup", strings(hookJob.args), env, kc.cleanup);
        assert.equal(await again.exited, 0, `wave cleanup exits 0:\n${again.output.join("\n")}`);
        assert.deepEqual(forbidden(again), []);
        process.stderr.write(
          `[cleanup] ${again.output.find((l) => l.startsWith("cleaned up in namespace")) ?? "(no summary)"}\n`,
        );
        assert.deepEqual(
          (await list("leases", { namespace: ledgerNs })).map((l) => l.metadata.name),
          [],
          "the ledger and the repair Lease removed from the ledger namespace",
        );
      });
    } catch (err) {
      dumpProcs();
      throw err;
    }
  },
);
