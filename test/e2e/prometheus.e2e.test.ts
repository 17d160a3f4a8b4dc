// Every figure in Prometheus, proven on a real one: Prometheus built from Go modules
// (hack/prometheus/build.sh) scrapes Wave (startWave: agent + core + API, in this process) watching
// the rig's real Karpenter. A workload with a spot policy runs on the rig; then every panel of the
// generated Grafana dashboard has its PromQL evaluated through Prometheus's HTTP API and must
// return data, and the key figures must equal the API's: node counts exactly, cost per hour and
// spot ratio to 1e-6.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { ConsolidationViewDto, OverviewDto } from "../../src/dashboard/dto.ts";
import { startWave, type Started } from "../../src/cli/start.ts";
import { DEFAULTS } from "../../src/config/config.ts";
import { resolvedQueries, WEBHOOK_FALLBACKS, WEBHOOK_LATE_ANSWERS } from "../../src/metrics/grafana.ts";
import { createLogger } from "../../src/shared/log.ts";
import { buildWebhookConfiguration } from "../../src/webhook/webhook-config.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  kubeconfigPath,
  list,
  markE2eWebhookConfig,
  remove,
  requireRig,
  sweepStaleWebhookConfigs,
  waitFor,
  waitForWebhookPlacement,
} from "./harness.ts";

const CLUSTER = "e2e-prometheus";
const E2E_OWNER = "prometheus";
const root = new URL("../../", import.meta.url).pathname;
const PROMETHEUS = join(root, ".rig/bin/prometheus");

let ns = "";
/** Wave's own namespace: never the workload's (no spot policy may target Wave's namespaces). */
let waveNs = "";
let wave: Started | undefined;
let dataDir = "";
let prom: ChildProcess | undefined;
let promUrl = "";
let webhookConfig = "";

function log(msg: string): void {
  process.stderr.write(`# ${msg}\n`);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

/** An instant query through Prometheus's HTTP API (GET /api/v1/query). */
async function query(q: string): Promise<Sample[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = (await res.json()) as {
    status: string;
    error?: string;
    data?: { resultType: string; result: Sample[] | [number, string] };
  };
  assert.equal(body.status, "success", `query ${q}: ${body.error ?? res.status}`);
  const r = body.data?.result;
  if (body.data?.resultType === "scalar") return [{ metric: {}, value: r as [number, string] }];
  return r as Sample[];
}

const scalar = async (q: string): Promise<number | undefined> => {
  const r = await query(q);
  return r[0] ? Number(r[0].value[1]) : undefined;
};

async function api<T>(path: string, init?: RequestInit & { admin?: boolean }): Promise<T> {
  assert.ok(wave);
  const token = init?.admin ? wave.tokens.admin : wave.tokens.viewer;
  const res = await fetch(new URL(path, wave.url), {
    ...init,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  });
  assert.equal(
    res.status,
    200,
    `${init?.method ?? "GET"} ${path}: ${res.status} ${await res.clone().text()}`,
  );
  return (await res.json()) as T;
}

before(async () => {
  await requireRig();
  assert.ok(existsSync(PROMETHEUS), `Prometheus not built at ${PROMETHEUS}: run npm run prometheus:build`);
  ns = await createNamespace("e2e-prom");
  waveNs = await createNamespace("e2e-prom-wave");
  dataDir = mkdtempSync(join(tmpdir(), "wave-e2e-prom-"));
  wave = await startWave(
    {
      ...DEFAULTS,
      kubeconfig: kubeconfigPath,
      clusterId: CLUSTER,
      namespace: waveNs,
      port: 0,
      grpcPort: 0,
      webhookPort: 0,
      dataDir,
      logLevel: "warn",
    },
    {},
    { log: createLogger({ level: "warn", base: { app: "wave-e2e" } }) },
  );
  // Wave's webhook (in this process) places this test's pods: the apiserver calls it for this
  // namespace only, so its series (admissions, fallbacks, late answers) reach core's /metrics.
  await sweepStaleWebhookConfigs(E2E_OWNER);
  webhookConfig = `wave-spot-${ns}`;
  const config0 = buildWebhookConfiguration({
    name: webhookConfig,
    caPem: readFileSync(join(dataDir, "tls", "ca.crt"), "utf8"),
    waveNamespace: waveNs,
    url: `https://127.0.0.1:${wave.webhookPort}/mutate`,
  });
  const hook = config0.webhooks?.[0];
  assert.ok(hook, "the configuration has a webhook");
  hook["namespaceSelector"] = {
    matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: [ns] }],
  };
  markE2eWebhookConfig(config0, E2E_OWNER, [ns]);
  await apply(config0);

  // Prometheus, scraping core's /metrics every 2 s.
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  const config = join(dataDir, "prometheus.yml");
  writeFileSync(
    config,
    [
      "global:",
      "  scrape_interval: 2s",
      "  scrape_timeout: 2s",
      "  evaluation_interval: 2s",
      "scrape_configs:",
      "  - job_name: wave-core",
      "    metrics_path: /metrics",
      // Core's /metrics needs the viewer token (as the chart's ServiceMonitor sends it).
      "    authorization:",
      "      type: Bearer",
      `      credentials: ${wave.tokens.viewer}`,
      "    static_configs:",
      `      - targets: ["127.0.0.1:${wave.apiPort}"]`,
      "",
    ].join("\n"),
  );
  prom = spawn(
    PROMETHEUS,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dataDir, "tsdb")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let promLog = "";
  prom.stderr?.on("data", (d: Buffer) => (promLog = (promLog + d.toString()).slice(-4000)));
  await waitFor(
    "Prometheus ready",
    async () => {
      if (prom?.exitCode !== null) assert.fail(`Prometheus exited: ${promLog}`);
      return (await fetch(`${promUrl}/-/ready`).catch(() => undefined))?.status === 200;
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
  // Its scrape of core succeeds (a refused token would show as up == 0 and every figure empty).
  await waitFor(
    "Prometheus scrapes core (up == 1)",
    async () => (await scalar(`max(up{job="wave-core"})`)) === 1,
    { timeoutMs: 30_000, intervalMs: 500 },
  );
});

after(async () => {
  if (prom && prom.exitCode === null) {
    prom.kill("SIGTERM");
    await new Promise((r) => prom?.once("exit", r));
  }
  if (webhookConfig !== "")
    await remove("mutatingwebhookconfiguration", webhookConfig).catch(() => undefined);
  await wave?.stop();
  if (dataDir !== "") rmSync(dataDir, { recursive: true, force: true });
  if (ns !== "") await deleteNamespace(ns);
  if (waveNs !== "") await deleteNamespace(waveNs);
});

test("a real Prometheus scrapes Wave on the rig: every dashboard panel returns data and the key figures equal the API's", async () => {
  // A workload with a spot policy (first pod on-demand, the rest spot): nodes launch, pods land,
  // the policy's target and actual show per workload, savings accrue per pool and per workload.
  await api(`api/v1/policies/spot/Deployment/${ns}/web`, {
    method: "PUT",
    admin: true,
    body: JSON.stringify({ threshold: 1, strategy: "Prefer" }),
  });
  // The apiserver picks the webhook configuration up asynchronously: wait until a dry-run pod of
  // web's (a ReplicaSet revision by name and pod-template-hash) comes back placed.
  await waitForWebhookPlacement(
    ns,
    "web",
    "the apiserver to call Wave's webhook (a dry-run pod of web comes back placed)",
  );
  await apply({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: ns },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          terminationGracePeriodSeconds: 0,
          containers: [
            { name: "app", image: "pause:3.10", resources: { requests: { cpu: "1", memory: "128Mi" } } },
          ],
        },
      },
    },
  });
  const t0 = Date.now();
  await waitFor(
    "3 Running pods of web",
    async () =>
      (await list("pods", { namespace: ns, selector: "app=web" })).filter(
        (p) => p.status?.phase === "Running",
      ).length === 3,
    { timeoutMs: 120_000, intervalMs: 1_000 },
  );
  log(`web: 3 pods Running after ${((Date.now() - t0) / 1000).toFixed(1)}s`);

  // Realized savings are recorded once per history step (1 min): wait for the first workload row,
  // scraped at least twice (increase() needs two samples).
  await waitFor(
    "realized savings recorded for the workload",
    async () =>
      ((await scalar(`sum(wave_workload_realized_savings_dollars_total{cluster="${CLUSTER}"})`)) ?? 0) > 0 &&
      ((await scalar(
        `min(count_over_time(wave_workload_realized_savings_dollars_total{cluster="${CLUSTER}"}[10m]))`,
      )) ?? 0) >= 2,
    { timeoutMs: 180_000, intervalMs: 2_000 },
  );

  // Every panel's PromQL, with Grafana's variables as a user selecting this cluster would.
  const panels = resolvedQueries({ cluster: CLUSTER, rateInterval: "1m", range: "10m" });
  const empty: string[] = [];
  for (const p of panels) {
    for (const q of p.queries) {
      const r = await query(q);
      if (r.length === 0) empty.push(`${p.panel}: ${q}`);
    }
  }
  // The blocked-consolidation panels have no series while nothing in the cluster is blocked (the
  // rig's state left by other tests decides): empty is right then, if the API says 0 blocked and
  // core exposes the metric family (a misspelled metric would still be caught).
  const blocked = await api<ConsolidationViewDto>(`api/v1/clusters/${CLUSTER}/consolidation`);
  const metricsText = await (
    await fetch(new URL("metrics", wave?.url), {
      headers: { authorization: `Bearer ${wave?.tokens.viewer}` },
    })
  ).text();
  const unexplained = empty.filter((e) => {
    const family = /wave_consolidation_blocked_\w+/.exec(e)?.[0];
    if (family === undefined || blocked.blockedNodes !== 0) return true;
    return !metricsText.includes(`# TYPE ${family} `);
  });
  if (unexplained.length < empty.length)
    log(
      `empty while the API reports 0 blocked nodes: ${empty.filter((e) => !unexplained.includes(e)).join("; ")}`,
    );
  assert.deepEqual(unexplained, [], "every panel query returns data");

  // Key figures: Prometheus's latest scrape against the API, on a settled cluster.
  await waitFor(
    "Prometheus's figures equal the API's",
    async () => {
      const o = await api<OverviewDto>(`api/v1/clusters/${CLUSTER}/overview`);
      const nodes = await scalar(`sum(wave_nodes{cluster="${CLUSTER}"})`);
      const cost = await scalar(`sum(wave_nodepool_cost_per_hour_dollars{cluster="${CLUSTER}"})`);
      const ratio: Record<string, number> = {};
      for (const s of await query(`wave_spot_ratio{cluster="${CLUSTER}"}`))
        ratio[s.metric["basis"] ?? ""] = Number(s.value[1]);
      const o2 = await api<OverviewDto>(`api/v1/clusters/${CLUSTER}/overview`);
      if (o2.nodes !== o.nodes || Math.abs(o2.costPerHour - o.costPerHour) > 1e-9) return false; // moving
      const ok =
        nodes === o.nodes &&
        cost !== undefined &&
        Math.abs(cost - o.costPerHour) <= 1e-6 &&
        ["nodes", "vcpu", "cost"].every(
          (b) => Math.abs((ratio[b] ?? NaN) - o.spotRatio[b as "nodes" | "vcpu" | "cost"]) <= 1e-6,
        );
      if (!ok)
        log(
          `api nodes=${o.nodes} cost=${o.costPerHour} ratio=${JSON.stringify(o.spotRatio)}; prometheus nodes=${nodes} cost=${cost} ratio=${JSON.stringify(ratio)}`,
        );
      return ok;
    },
    { timeoutMs: 60_000, intervalMs: 2_500 },
  );
  // The workload's spot placement as Prometheus sees it: 3 live pods, policy target 1 on-demand.
  const target = await scalar(
    `sum(wave_spot_placement_target_on_demand_pods{cluster="${CLUSTER}", namespace="${ns}", workload="web"})`,
  );
  const live = await scalar(
    `sum(wave_spot_placement_pods{cluster="${CLUSTER}", namespace="${ns}", workload="web"})`,
  );
  assert.equal(target, 1);
  assert.equal(live, 3);
  // The webhook's own series, scraped through core: it placed the 3 pods (1 on-demand, 2 spot),
  // and its fallback and late-answer series are there at 0 for the workload.
  const admitted: Record<string, number> = {};
  for (const s of await query(
    `sum by (assignment) (wave_spot_admissions_total{workload="${ns}/Deployment/web"})`,
  ))
    admitted[s.metric["assignment"] ?? ""] = Number(s.value[1]);
  assert.deepEqual(admitted, { "on-demand": 1, spot: 2 }, "the webhook's admissions in Prometheus");
  for (const m of [WEBHOOK_FALLBACKS, WEBHOOK_LATE_ANSWERS])
    assert.equal(await scalar(`sum(${m}{workload="${ns}/Deployment/web"})`), 0, `${m} scraped, at 0`);
  // And the API's realized savings answer for the same workload.
  const savings = await api<{ workloads: { name: string; savedUsd: number }[] }>(
    `api/v1/clusters/${CLUSTER}/savings`,
  );
  const web = savings.workloads.find((w) => w.name === `${ns}/Deployment/web`);
  assert.ok(web && web.savedUsd > 0, `the API reports savings for ${ns}/Deployment/web`);
});
