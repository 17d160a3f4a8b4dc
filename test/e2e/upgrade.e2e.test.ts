// The production install path across releases (issue 33): `helm install` of the chart and image of
// 23cd1c2 (the previous state, 0.1.0 before expand/contract) → `helm upgrade` to this build's chart
// and image → `helm rollback` to revision 1, on the rig, under a release and namespaces of this
// test's own. Helm's releases are real (history, stored manifests, the tokens Secret kept by the
// chart's lookup); a post-renderer (upgrade-post-render.ts) leaves out cert-manager's objects, the
// cluster-wide webhook registration and the fixed-name PriorityClass, and sets 0 replicas: the
// rig's nodes are KWOK's and run no containers. After each step core, agent and webhook run in
// podman from the Deployments as Helm left them in the cluster (image, args, env, volumes, security
// context; test/support/podman.ts), core on one data directory that stands for its PVC. Checked at
// every revision: the Deployments name the expected image, every component serves (core's /healthz
// and API, the agent streaming this test's node to core, the webhook's /healthz over TLS), the
// policies and the history written under 23cd1c2 are there, and every container exits 0 on stop.
//   WAVE_E2E_OLD_IMAGE  the 23cd1c2 image (default wave:23cd1c2): `git worktree add --detach
//                       <dir> 23cd1c2 && cd <dir> && WAVE_IMAGE=wave:23cd1c2 npm run image:build`
//   WAVE_E2E_IMAGE      this build's image (default wave:<package version>, `npm run image:build`)
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { freePorts, repoRoot } from "../../hack/rig/lib.ts";
import { makePki } from "../support/pki.ts";
import { field, objs, ownTree, podman, podmanSkipReason, runArgs, strings } from "../support/podman.ts";
import { chartEnv, coreApi as api, poolDeployment } from "./chart-run.ts";
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
} from "./harness.ts";

const run = promisify(execFile);
const HELM = join(repoRoot, ".rig", "bin", "helm");
const OLD_COMMIT = "23cd1c2";
const VERSION = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string })
  .version;
const NEW_IMAGE = process.env["WAVE_E2E_IMAGE"] ?? `wave:${VERSION}`;
const OLD_IMAGE = process.env["WAVE_E2E_OLD_IMAGE"] ?? `wave:${OLD_COMMIT}`;
const UID = 65532;
const POOL_LABEL = "wave.dev/e2e-pool";
const COMPONENTS = ["core", "agent", "webhook"] as const;

const skip = !existsSync(HELM)
  ? `helm not built (${HELM}): run npm run helm:build`
  : (await podmanSkipReason(NEW_IMAGE)) || (await podmanSkipReason(OLD_IMAGE));

type Obj = Record<string, unknown>;
const suffix = randomBytes(3).toString("hex");
const release = `wave-upg-${suffix}`;
const pool = `upg-${suffix}`;
const clusterId = `upg-${suffix}`;
const containers = new Set<string>();
let ns = "";
let appNs = "";
let work = "";
let oldChart = "";
let postRenderer = "";
let installed = false;

const helm = async (args: string[]): Promise<string> =>
  (
    await run(HELM, [...args, "--namespace", ns], {
      maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, KUBECONFIG: kubeconfigPath },
    })
  ).stdout;

/** Values both charts take; the image is the release's. */
const values = (image: string): string[] => {
  const [repository = "wave", tag = "latest"] = image.split(":");
  return [
    "--set",
    `clusterId=${clusterId}`,
    "--set",
    `image.repository=${repository}`,
    "--set",
    `image.tag=${tag}`,
    "--set",
    "checks.crds=false",
    "--set",
    "webhook.deadlineMs=2500",
  ];
};

/** The chart's Certificates (from `helm template`), issued once by one CA: cert-manager's Secrets. */
function issueCertificates(rendered: Obj[]): Record<string, string> {
  const usage: Record<string, string> = { "server auth": "serverAuth", "client auth": "clientAuth" };
  const leaves = new Map<string, { dir: string; cn: string; ext: string }>();
  for (const d of rendered) {
    if (d.kind !== "Certificate" || field(d, "spec", "isCA") === true) continue;
    const secret = String(field(d, "spec", "secretName"));
    if (leaves.has(secret)) continue;
    const dns = strings(field(d, "spec", "dnsNames"));
    const eku = strings(field(d, "spec", "usages"))
      .map((u) => usage[u])
      .filter((u) => u !== undefined);
    const sans = [...dns.map((n) => `DNS:${n}`), ...(eku.includes("serverAuth") ? ["IP:127.0.0.1"] : [])];
    const ext =
      (sans.length ? `subjectAltName=${sans.join(",")}\n` : "") +
      (eku.length ? `extendedKeyUsage=${eku.join(",")}\n` : "");
    leaves.set(secret, { dir: secret, cn: strings([field(d, "spec", "commonName")])[0] ?? secret, ext });
  }
  const root = join(work, "secrets");
  makePki(root, [...leaves.values()]);
  const dirs = Object.fromEntries([...leaves.keys()].map((s) => [s, join(root, s)]));
  for (const d of Object.values(dirs)) {
    for (const f of ["ext.cnf", "tls.csr"]) rmSync(join(d, f), { force: true });
    ownTree(d, UID);
  }
  return dirs;
}

async function rendered(chart: string, image: string): Promise<Obj[]> {
  const out = await helm([
    "template",
    release,
    chart,
    "--kube-version",
    "1.34.0",
    "--api-versions",
    "karpenter.sh/v1/NodePool",
    "--api-versions",
    "cert-manager.io/v1/Certificate",
    ...values(image),
  ]);
  return parseAllDocuments(out)
    .map((d) => d.toJSON() as unknown)
    .filter((d): d is Obj => typeof d === "object" && d !== null);
}

async function rigApiServer(): Promise<{ host: string; port: string; caPem: string }> {
  const cfg = JSON.parse(await kubectl(["config", "view", "--raw", "--minify", "-o", "json"])) as Obj;
  const cluster = field(objs(cfg.clusters)[0], "cluster");
  const server = new URL(String(field(cluster, "server")));
  return {
    host: server.hostname,
    port: server.port || "443",
    caPem: Buffer.from(String(field(cluster, "certificate-authority-data")), "base64").toString("utf8"),
  };
}

const withPort = (url: string, port: number): string => {
  const u = new URL(url);
  u.port = String(port);
  return u.toString().replace(/\/$/, url.endsWith("/") ? "/" : "");
};

async function stopAll(): Promise<Record<string, number>> {
  const codes: Record<string, number> = {};
  for (const c of containers) {
    await podman(["stop", "--time", "60", c], 90_000);
    codes[c] = Number((await podman(["inspect", "--format", "{{.State.ExitCode}}", c])).trim());
    await podman(["rm", "-f", "--ignore", c]);
  }
  containers.clear();
  return codes;
}

const logsOf = async (c: string): Promise<string> => {
  try {
    const { stdout, stderr } = await run("podman", ["logs", c], { maxBuffer: 32 * 1024 * 1024 });
    return stdout + stderr;
  } catch (e) {
    return `(no logs: ${(e as Error).message})`;
  }
};

interface Running {
  apiPort: number;
  admin: string;
  viewer: string;
  logs: () => Promise<Record<string, string>>;
}

/**
 * Starts core, agent and webhook of the revision Helm deployed: each from its Deployment as stored
 * in the cluster, the ConfigMap and tokens Secret Helm made, the certificates `certDirs` and core's
 * data directory `dataDir`.
 */
async function runDeployed(
  label: string,
  image: string,
  certDirs: Record<string, string>,
  dataDir: string,
): Promise<Running> {
  const apiServer = await rigApiServer();
  const deployments = Object.fromEntries(
    await Promise.all(
      COMPONENTS.map(async (c) => {
        const d = await get("deployment", `${release}-${c}`, ns);
        assert.ok(d, `Helm deployed no Deployment ${release}-${c}`);
        return [c, d] as const;
      }),
    ),
  );
  for (const c of COMPONENTS) {
    const spec = field(deployments[c], "spec", "template", "spec") as Obj;
    assert.equal(field(objs(spec.containers)[0], "image"), image, `${label}: ${c}'s image`);
  }
  const secret = await get("secret", `${release}-tokens`, ns);
  const tokens = Object.fromEntries(
    Object.entries((secret?.["data"] ?? {}) as Record<string, string>).map(([k, v]) => [
      k,
      Buffer.from(v, "base64").toString("utf8"),
    ]),
  );
  const admin = tokens["admin-token"] ?? "";
  const viewer = tokens["viewer-token"] ?? "";
  assert.ok(admin !== "" && viewer !== "", `${label}: the tokens Secret holds the admin and viewer tokens`);
  const cm = await get("configmap", `${release}-config`, ns);
  const volumes = {
    configMaps: { [`${release}-config`]: (cm?.["data"] ?? {}) as Record<string, string> },
    secrets: certDirs,
    claims: { [`${release}-core-data`]: dataDir },
  };
  const [apiPort = 0, grpcPort = 0, webhookPort = 0, metricsPort = 0] = await freePorts(4);
  const svc = (s: string): string => `${release}-${s}.${ns}.svc`;
  const hosts = { [svc("core")]: "127.0.0.1", [svc("webhook")]: "127.0.0.1" };
  const dir = join(work, label);
  mkdirSync(dir, { recursive: true });
  const start = async (component: (typeof COMPONENTS)[number], overrides: Record<string, string>) => {
    const podSpec = field(deployments[component], "spec", "template", "spec") as Obj;
    const sa = String(podSpec.serviceAccountName);
    const saDir = join(dir, "sa", sa);
    mkdirSync(saDir, { recursive: true });
    writeFileSync(
      join(saDir, "token"),
      (await kubectl(["create", "token", sa, "-n", ns, "--duration=1h"])).trim(),
    );
    writeFileSync(join(saDir, "ca.crt"), apiServer.caPem);
    writeFileSync(join(saDir, "namespace"), ns);
    ownTree(saDir, UID);
    const name = `${release}-${component}`;
    const env = chartEnv(
      objs(field(podSpec, "containers"))[0] ?? {},
      { namespace: ns, name: `${component}-${label}`, secrets: tokens },
      overrides,
    );
    await podman(["rm", "-f", "--ignore", name]);
    containers.add(name);
    await podman(
      runArgs({
        name,
        image,
        podSpec,
        env,
        volumes,
        serviceAccountDir: saDir,
        apiServer,
        hosts,
        work: dir,
        uid: UID,
      }),
    );
  };
  const envOf = (c: (typeof COMPONENTS)[number]): Record<string, string> =>
    chartEnv(
      objs(field(field(deployments[c], "spec", "template", "spec"), "containers"))[0] ?? {},
      { namespace: ns, name: c, secrets: tokens },
      {},
    );
  await start("core", { WAVE_PORT: String(apiPort), WAVE_GRPC_PORT: String(grpcPort) });
  try {
    await waitFor(
      `${label}: core's /healthz`,
      async () => (await fetch(`http://127.0.0.1:${apiPort}/healthz`)).ok,
      { timeoutMs: 90_000, intervalMs: 500 },
    );
  } catch (err) {
    // e.g. an older core refusing the schema: its last lines say why.
    const tail = (await logsOf(`${release}-core`)).trim().split("\n").slice(-5).join("\n");
    throw new Error(`${(err as Error).message}\ncore's log:\n${tail}`, { cause: err });
  }
  await start("webhook", {
    WAVE_WEBHOOK_PORT: String(webhookPort),
    WAVE_SPOT_POLICIES_URL: withPort(envOf("webhook")["WAVE_SPOT_POLICIES_URL"] ?? "", apiPort),
  });
  const agentEnv = envOf("agent");
  await start("agent", {
    WAVE_CORE_ADDRESS: withPort(agentEnv["WAVE_CORE_ADDRESS"] ?? "", grpcPort),
    ...("WAVE_METRICS_PORT" in agentEnv ? { WAVE_METRICS_PORT: String(metricsPort) } : {}),
  });
  await waitFor(
    `${label}: the webhook's /healthz over TLS (the chart's certificate)`,
    async () => {
      await run("curl", [
        "-sf",
        "--cacert",
        join(work, "secrets", "ca", "ca.crt"),
        `https://127.0.0.1:${webhookPort}/healthz`,
      ]);
      return true;
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
  return {
    apiPort,
    admin,
    viewer,
    logs: async () =>
      Object.fromEntries(await Promise.all([...containers].map(async (c) => [c, await logsOf(c)] as const))),
  };
}

before(async () => {
  if (skip) return;
  await requireRig();
  ns = await createNamespace("upg");
  appNs = await createNamespace("upg-app");
  work = mkdtempSync(join(tmpdir(), "wave-upgrade-e2e-"));
  // 23cd1c2's chart, from git: what a user of that release installed.
  oldChart = join(work, "chart-23cd1c2");
  mkdirSync(oldChart);
  const { stdout: tar } = await run("git", ["-C", repoRoot, "archive", OLD_COMMIT, "deploy/helm/wave"], {
    encoding: "buffer",
    maxBuffer: 64 * 1024 * 1024,
  });
  writeFileSync(join(work, "chart.tar"), tar);
  await run("tar", ["-xf", join(work, "chart.tar"), "-C", oldChart]);
  oldChart = join(oldChart, "deploy", "helm", "wave");
  postRenderer = join(work, "post-render.sh");
  writeFileSync(
    postRenderer,
    `#!/bin/sh\nexec "${process.execPath}" "${join(repoRoot, "test", "e2e", "upgrade-post-render.ts")}"\n`,
  );
  chmodSync(postRenderer, 0o755);
  await applyTaintedPool(pool, { label: POOL_LABEL, requirements: [FOUR_VCPU] });
});

after(async () => {
  if (skip) return;
  for (const c of containers) await podman(["rm", "-f", "--ignore", c]).catch(() => undefined);
  const steps: [string, () => Promise<unknown>][] = [
    ["helm release", () => (installed ? helm(["uninstall", release, "--no-hooks"]) : Promise.resolve(""))],
    ["workloads", () => kubectlRaw(["delete", "deployments", "--all", "-n", appNs, "--wait=false"])],
    [
      "cluster-scoped objects",
      () =>
        kubectlRaw([
          "delete",
          "clusterrolebinding,clusterrole,validatingadmissionpolicy,validatingadmissionpolicybinding",
          "-l",
          `app.kubernetes.io/instance=${release}`,
          "--ignore-not-found",
          "--wait=false",
        ]),
    ],
    [
      "namespaces",
      async () => {
        const owned = (await list("namespaces")).filter(
          (n) => n.metadata.labels?.["app.kubernetes.io/instance"] === release,
        );
        await Promise.all(
          [...new Set([ns, appNs, ...owned.map((n) => n.metadata.name)])].map((n) => deleteNamespace(n)),
        );
      },
    ],
    ["NodePool", () => remove("nodepools.karpenter.sh", pool)],
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
  `upgrade: helm install of ${OLD_COMMIT}'s chart and image → helm upgrade to this build → helm rollback; data kept, every component serving`,
  { skip, timeout: 600_000 },
  async () => {
    await withRigLogsOnFailure(async () => {
      const newChart = join(repoRoot, "deploy", "helm", "wave");
      // One CA and one set of certificates for all revisions: cert-manager's Secrets outlive upgrades.
      const certDirs = issueCertificates([
        ...(await rendered(newChart, NEW_IMAGE)),
        ...(await rendered(oldChart, OLD_IMAGE)),
      ]);
      const dataDir = join(work, "core-data"); // core's PVC: the same volume under every revision
      mkdirSync(dataDir);
      ownTree(dataDir, UID);
      const deploy = async (verb: "install" | "upgrade", chart: string, image: string) => {
        await helm([verb, release, chart, "--post-renderer", postRenderer, ...values(image)]);
        installed = true;
      };
      const policyPath = `/api/v1/clusters/${clusterId}/policies/spot/Deployment/${appNs}/spotty`;
      const policy = { threshold: 1, strategy: "Prefer" };
      const series = async (r: Running): Promise<{ t: number; nodes: number }[]> =>
        objs(
          field(
            (
              await api(
                r.apiPort,
                "GET",
                `/api/v1/clusters/${clusterId}/series?window=3600&pool=${pool}`,
                r.viewer,
              )
            ).json,
            "points",
          ),
        ) as unknown as { t: number; nodes: number }[];
      const nodeName = async (): Promise<string> =>
        waitFor(
          "the test's pod Running on a node of its pool",
          async () => {
            const [p] = await list("pods", { namespace: appNs, selector: "app=hold" });
            const n = p?.spec?.["nodeName"];
            return p?.status?.phase === "Running" && typeof n === "string" ? n : undefined;
          },
          { timeoutMs: 120_000 },
        );
      const streams = (r: Running, node: string, label: string) =>
        waitFor(
          `${label}: the agent streams node ${node} to core`,
          async () => {
            const res = await api(
              r.apiPort,
              "GET",
              `/api/v1/clusters/${clusterId}/nodes?pool=${pool}`,
              r.viewer,
            );
            return objs(field(res.json, "items")).some((n) => n.name === node);
          },
          { timeoutMs: 90_000 },
        );
      /** What every revision must show: the 23cd1c2 policy and history points, all components up. */
      const intact = async (
        r: Running,
        node: string,
        history: { t: number; nodes: number }[],
        label: string,
      ) => {
        await streams(r, node, label);
        const got = await api(r.apiPort, "GET", `/api/v1/clusters/${clusterId}/policies/spot`, r.viewer);
        assert.equal(got.status, 200, `${label}: the spot policy set`);
        const set = JSON.stringify(got.json);
        assert.ok(
          set.includes(`${appNs}/spotty`) || (set.includes(appNs) && set.includes("spotty")),
          `${label}: the policy written under ${OLD_COMMIT}: ${set}`,
        );
        const pts = await series(r);
        const kept = history.every((p) => pts.some((q) => q.t === p.t && q.nodes === p.nodes));
        assert.ok(
          kept,
          `${label}: history kept: before ${JSON.stringify(history)} now ${JSON.stringify(pts)}`,
        );
      };
      /** core's "history store open" line of a revision (schema version, migrations applied), for the log. */
      const storeOpened = (label: string, logs: string): void => {
        for (const line of logs.split("\n").filter((l) => l.includes("history store open")))
          process.stderr.write(`[${label}] ${line.trim()}\n`);
      };
      const stopped = async (label: string) => {
        const codes = await stopAll();
        for (const [c, code] of Object.entries(codes))
          assert.equal(code, 0, `${label}: ${c} exits 0 on stop`);
      };

      // 1. install 23cd1c2 --------------------------------------------------------------------------
      await deploy("install", oldChart, OLD_IMAGE);
      let r = await runDeployed("rev1", OLD_IMAGE, certDirs, dataDir);
      assert.equal((await api(r.apiPort, "PUT", policyPath, r.admin, policy)).status, 200);
      await apply(
        poolDeployment({
          name: "hold",
          namespace: appNs,
          replicas: 1,
          cpu: "3",
          nodeSelector: { [POOL_LABEL]: pool },
          pool,
          label: POOL_LABEL,
        }),
      );
      const node = await nodeName();
      await streams(r, node, "rev1");
      const history = await waitFor(
        "rev1: a history point of the pool with its node",
        async () => {
          const pts = (await series(r)).filter((p) => p.nodes > 0);
          return pts.length > 0 ? pts : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 2000 },
      );
      storeOpened("rev1", Object.values(await r.logs()).join("\n"));
      await stopped("rev1");

      // 2. upgrade to this build --------------------------------------------------------------------
      await deploy("upgrade", newChart, NEW_IMAGE);
      r = await runDeployed("rev2", NEW_IMAGE, certDirs, dataDir);
      await intact(r, node, history, "rev2 (upgraded)");
      const rev2Logs = Object.values(await r.logs()).join("\n");
      assert.match(rev2Logs, /history store open/, "core opened its store");
      storeOpened("rev2", rev2Logs);
      await stopped("rev2");

      // 3. helm rollback to 23cd1c2 -----------------------------------------------------------------
      await helm(["rollback", release, "1"]);
      r = await runDeployed("rev3", OLD_IMAGE, certDirs, dataDir);
      await intact(r, node, history, "rev3 (rolled back)");
      const rev3Logs = Object.values(await r.logs()).join("\n");
      storeOpened("rev3", rev3Logs);
      assert.doesNotMatch(rev3Logs, /newer than this build knows/);
      await stopped("rev3");

      const hist = JSON.parse(await helm(["history", release, "-o", "json"])) as {
        revision: number;
        status: string;
        chart: string;
        app_version: string;
        description: string;
      }[];
      process.stderr.write(
        `[helm history] ${hist.map((h) => `${h.revision} ${h.status} ${h.chart} ${h.description}`).join("; ")}\n`,
      );
      assert.deepEqual(
        hist.map((h) => [h.revision, h.status]),
        [
          [1, "superseded"],
          [2, "superseded"],
          [3, "deployed"],
        ],
      );
      assert.match(hist[2]?.description ?? "", /Rollback to 1/);
    });
  },
);
