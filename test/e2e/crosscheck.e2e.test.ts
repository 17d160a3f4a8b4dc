// One truth per figure, on the rig (issue 27's Must show): every figure the console shows is read
// five ways at one moment and must be the same number —
//   page        Chromium (Debian's chromium via playwright-core) reading the Overview, NodePools,
//               Nodes, Disruptions, Thrashing and Warmup pages, compared as the page formats it;
//   API         core's /api/v1/clusters/{id}/…;
//   /metrics    core's exposition, parsed here;
//   Prometheus  the Grafana dashboard's own panel query (src/metrics/grafana.ts resolvedQueries)
//               evaluated by a real Prometheus scraping core, at the moment of its latest scrape
//               (counters' increase() over a range that holds the series' first sample, 0, is then
//               exact: no extrapolation on either side);
//   recomputed  by hand here from the apiserver's objects (kubectl): NodeClaims joined to Nodes,
//               priced with the KWOK provider's formula; disruptions from Karpenter's
//               DisruptionTerminating Events; warmup hits from the pods on the nodes warmup pods
//               held; the pool's cold start from its NodeClaims' Launched/Initialized conditions.
// Counts must be exact, money, ratios and seconds equal to 1e-6 (test/e2e/crosscheck.ts; its unit
// test shows the judge fails when one source is perturbed). The rig is shared: cluster-wide figures
// move with other tests, so a round counts only when the API answered the same before and after it.
//
// The scenario, on two NodePools of the test's own (4-vCPU nodes; one 3-CPU pod fills a node):
//   warm   spot or on-demand, nodes kept: `web` runs 1 pod; an admin enables warmup (1 node, no
//          pre-pull, an hour's cooldown) → a warm node; `web` scales to 2 → its pod lands on it: a hit;
//   churn  on-demand, consolidateAfter 0s: 2 pods on 2 nodes, scaled to 0 → Karpenter disrupts the
//          two empty nodes (2 disruptions, reason Empty).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { Browser } from "playwright-core";
import type { Started } from "../../src/cli/start.ts";
import type {
  DisruptionCountsDto,
  NodeListDto,
  SpotViewDto,
  WarmupViewDto,
} from "../../src/dashboard/dto.ts";
import { resolvedQueries } from "../../src/metrics/grafana.ts";
import { WARMUP_POOL_LABEL } from "../../src/objects/wave.ts";
import { num } from "../../ui/src/format.ts";
import { sumOf } from "./crosscheck.ts";
import { api as siteApi, cl, launchChromium, type Site } from "./console-pages.ts";
import {
  checked,
  crossCheckPages,
  disruptionsPage,
  hourAgo,
  nodesPage,
  overviewPage,
  poolsPage,
  shows,
  spotPage,
  consolidationPage,
  thrashingPage,
  warmupPage,
  type PageCheck,
  type Panels,
  type PriceOf,
  type World,
} from "./crosscheck-figures.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  kubectl,
  list,
  remove,
  requireRig,
  waitFor,
  withRigLogsOnFailure,
  type KubeObject,
} from "./harness.ts";
import { applyTaintedPool, FOUR_VCPU } from "./pools.ts";
import { startPrometheus, type Prometheus } from "./prometheus-server.ts";
import { startRigWave, webDeployment } from "./tenant-rig.ts";
import { installWaveCrds } from "./wave-crds.ts";

const CLUSTER = "e2e-crosscheck";
const L = {
  pool: "karpenter.sh/nodepool",
  ct: "karpenter.sh/capacity-type",
  it: "node.kubernetes.io/instance-type",
} as const;

let ns = "";
let waveNs = "";
let warm = "";
let churn = "";
let tmp = "";
let wave: Started | undefined;
let prom: Prometheus | undefined;
let browser: Browser | undefined;
let site: Site;
let world: World;

function log(msg: string): void {
  process.stderr.write(`# ${msg}\n`);
}

const api = <T>(path: string): Promise<T> => siteApi<T>(site, cl(site, path));

/** The KWOK provider's price (Karpenter kwok/tools/gen_instance_types.go), from the type's name. */
const kwokPrice: PriceOf = (instanceType, capacityType) => {
  const m = /^([csm])-(\d+)x-/.exec(instanceType);
  if (!m?.[1] || !m[2]) return undefined;
  const vcpu = Number(m[2]);
  const memoryBytes = vcpu * { c: 2, s: 4, m: 8 }[m[1] as "c" | "s" | "m"] * 2 ** 30;
  const onDemand = 0.025 * vcpu + (0.001 * memoryBytes) / 1e9;
  return capacityType === "spot" ? 0.7 * onDemand : onDemand;
};

/** What the test saw of its own pools while it ran (NodeClaims are gone once disrupted). */
const seenClaims = new Map<string, { pool: string; node: string | undefined; conditions: Cond[] }>();
/** Nodes a warmup pod of the warm pool was bound to. */
const warmNodes = new Set<string>();
interface Cond {
  type: string;
  status: string;
  lastTransitionTime?: string;
}

async function observeClaims(): Promise<void> {
  for (const p of [warm, churn])
    for (const nc of await list("nodeclaims.karpenter.sh", { selector: `${L.pool}=${p}` })) {
      const st = nc.status as { nodeName?: string; conditions?: Cond[] } | undefined;
      const before = seenClaims.get(nc.metadata.name);
      seenClaims.set(nc.metadata.name, {
        pool: p,
        node: st?.nodeName ?? before?.node,
        conditions: st?.conditions ?? before?.conditions ?? [],
      });
    }
}

/** The churn pool's disruptions: its NodeClaims named (or whose Node is named) by a DisruptionTerminating Event. */
async function disruptionsOf(pool: string): Promise<number> {
  const named = new Set<string>();
  for (const e of await list("events")) {
    const ev = e as KubeObject & { reason?: string; involvedObject?: { kind?: string; name?: string } };
    if (ev.reason === "DisruptionTerminating")
      named.add(`${ev.involvedObject?.kind}/${ev.involvedObject?.name}`);
  }
  let n = 0;
  for (const [name, c] of seenClaims)
    if (c.pool === pool && (named.has(`NodeClaim/${name}`) || named.has(`Node/${c.node ?? ""}`))) n++;
  return n;
}

/** Warmup hits of the warm pool: `web` pods running on a node a warmup pod held. */
async function hitsOf(): Promise<number> {
  const pods = await list("pods", { namespace: ns, selector: "app=web" });
  return pods.filter((p) => warmNodes.has((p.spec as { nodeName?: string } | undefined)?.nodeName ?? ""))
    .length;
}

/** The churn pool's row on the Disruptions page (filtered to it): its count, and the Grafana panel's. */
const churnPage = (): PageCheck<string | undefined> => ({
  path: `disruptions?range=1h&pool=${churn}`,
  ready: shows('[data-testid="disruption-counts"]'),
  async read(page) {
    const row = page.getByTestId("count-row").filter({ hasText: churn }).first();
    return (await row.count()) ? (await row.locator("td").last().textContent())?.trim() : "0";
  },
  async figures(x, shown) {
    const counts = await siteApi<DisruptionCountsDto>(
      site,
      cl(site, `disruptions/counts?from=${hourAgo()}&pool=${churn}`),
    );
    return [
      {
        name: `pool ${churn}: disruptions`,
        kind: "count",
        api: counts.total,
        others: {
          metrics: sumOf(x.m, "wave_disruptions_total", { cluster: CLUSTER, nodepool: churn }),
          prometheus: (await x.panels?.value("Disruptions by reason", churn)) ?? 0,
          recomputed: await disruptionsOf(churn),
        },
        page: { shown, format: num },
      },
    ];
  },
});

/** The named panel's only query, with Grafana's variables set as a user picking this cluster (and pool). */
function panel(title: string, nodepool?: string): string {
  const p = resolvedQueries({ cluster: CLUSTER, nodepool, rateInterval: "1h", range: "1h" }).find(
    (x) => x.panel === title,
  );
  assert.ok(p, `a Grafana panel "${title}"`);
  const q = p.queries[0];
  assert.ok(q, `panel "${title}" has a query`);
  return q;
}

/** Prometheus's next scrape after /metrics was read, and the panels evaluated at that moment. */
async function panelsNow(): Promise<Panels> {
  const p = prom;
  assert.ok(p);
  const readAt = Date.now() / 1000;
  const scrapedAt = await waitFor(
    "a Prometheus scrape after /metrics was read",
    async () => {
      const t = await p.scalar(`timestamp(up{job="wave-core"})`);
      return t !== undefined && t > readAt ? t : undefined;
    },
    { timeoutMs: 15_000, intervalMs: 250 },
  );
  return {
    value: (title, nodepool) => p.scalar(panel(title, nodepool), scrapedAt),
    async pick(title, match, nodepool) {
      const hit = (await p.query(panel(title, nodepool), scrapedAt)).find((s) =>
        Object.entries(match).every(([k, v]) => s.metric[k] === v),
      );
      return hit ? Number(hit.value[1]) : undefined;
    },
  };
}

before(async () => {
  browser = await launchChromium();
  await requireRig();
  ns = await createNamespace("e2e-xcheck");
  waveNs = await createNamespace("e2e-xcheck-wave");
  warm = ns;
  churn = `${ns}-churn`;
  tmp = mkdtempSync(join(tmpdir(), "wave-e2e-crosscheck-"));
  wave = await startRigWave("wave-e2e-crosscheck", { clusterId: CLUSTER, namespace: waveNs, tmp });
  // Prometheus from before the test's pools exist: each pool's counters are scraped from 0.
  prom = await startPrometheus({
    dir: tmp,
    target: `127.0.0.1:${wave.apiPort}`,
    token: wave.tokens.viewer,
    job: "wave-core",
  });
  site = { url: wave.url, cluster: CLUSTER, viewer: wave.tokens.viewer, log };
  world = {
    site,
    price: kwokPrice,
    panels: panelsNow,
    // This test's own core started minutes ago: its counters since then are the hour's counts.
    countersCoverRange: true,
    objects: async () => ({
      nodes: await list("nodes"),
      nodeClaims: await list("nodeclaims.karpenter.sh"),
      pods: await list("pods"),
      replicaSets: await list("replicasets"),
      spotPolicies: await list("spotpolicies.wave.sh"),
    }),
  };
});

after(async () => {
  await browser?.close();
  await prom?.stop();
  await wave?.stop();
  for (const n of [ns, waveNs]) if (n !== "") await deleteNamespace(n);
  for (const p of [warm, churn]) if (p !== "") await remove("nodepools.karpenter.sh", p);
  if (tmp !== "") rmSync(tmp, { recursive: true, force: true });
});

async function scale(name: string, replicas: number): Promise<void> {
  await kubectl(["scale", `deployment/${name}`, "-n", ns, `--replicas=${replicas}`]);
}

async function running(app: string, want: number): Promise<void> {
  await waitFor(
    `${want} Running pods of ${app}`,
    async () =>
      (await list("pods", { namespace: ns, selector: `app=${app}` })).filter(
        (p) => p.status?.phase === "Running" && p.metadata.deletionTimestamp === undefined,
      ).length === want,
    { timeoutMs: 150_000, intervalMs: 1000 },
  );
}

test(
  "one truth per figure (rig): every page's figures = API = /metrics = Grafana panel on Prometheus = recomputed from the apiserver",
  { timeout: 900_000 },
  () =>
    withRigLogsOnFailure(async () => {
      assert.ok(wave && browser && prom);
      const keep = {
        consolidationPolicy: "WhenEmpty",
        consolidateAfter: "10m",
        budgets: [{ nodes: "100%" }],
      };
      await applyTaintedPool(warm, {
        capacityTypes: ["spot", "on-demand"],
        requirements: [FOUR_VCPU],
        disruption: keep,
      });
      await applyTaintedPool(churn, {
        capacityTypes: ["on-demand"],
        requirements: [FOUR_VCPU],
        disruption: {
          consolidationPolicy: "WhenEmpty",
          consolidateAfter: "0s",
          budgets: [{ nodes: "100%" }],
        },
      });
      await apply(webDeployment(ns, warm, 1, "example.test/crosscheck/web:1.0"));
      const churnDeployment = webDeployment(ns, churn, 2, "example.test/crosscheck/churn:1.0") as {
        metadata: { name: string };
        spec: {
          selector: { matchLabels: Record<string, string> };
          template: { metadata: { labels: Record<string, string> } };
        };
      };
      churnDeployment.metadata.name = "churn";
      churnDeployment.spec.selector.matchLabels = { app: "churn" };
      churnDeployment.spec.template.metadata.labels = { app: "churn" };
      await apply(churnDeployment);
      await running("web", 1);
      await running("churn", 2);
      await observeClaims();
      log(`web 1 pod on ${warm}, churn 2 pods on ${churn}`);

      // Warmup for the warm pool: one node, no pre-pull, no second warmup within the test.
      const put = await fetch(new URL(`api/v1/clusters/${CLUSTER}/policies/warmup/${warm}`, wave.url), {
        method: "PUT",
        headers: { authorization: `Bearer ${wave.tokens.admin}`, "content-type": "application/json" },
        body: JSON.stringify({
          enabled: true,
          maxWarmNodes: 1,
          ttlSeconds: 1800,
          cooldownSeconds: 3600,
          prePull: false,
        }),
      });
      assert.equal(put.status, 200, `PUT warmup policy: ${await put.text()}`);
      const warmNode = await waitFor(
        "a warmup pod of the warm pool Running on its node",
        async () => {
          const p = (await list("pods", { namespace: waveNs })).find(
            (x) => x.metadata.labels?.[WARMUP_POOL_LABEL] === warm && x.status?.phase === "Running",
          );
          return (p?.spec as { nodeName?: string } | undefined)?.nodeName;
        },
        { timeoutMs: 180_000, intervalMs: 1000 },
      );
      warmNodes.add(warmNode);
      await waitFor(
        "core's API to report the node warm",
        async () =>
          (await api<NodeListDto>("nodes?limit=5000")).items.some((n) => n.name === warmNode && n.warm),
        { timeoutMs: 60_000, intervalMs: 1000 },
      );
      await observeClaims();
      log(`warm node ${warmNode}`);
      await scale("web", 2);
      await running("web", 2);
      await waitFor(
        "the API to count the warmup hit",
        async () =>
          (await api<WarmupViewDto>(`warmup?from=${hourAgo()}`)).pools.find((p) => p.nodePool === warm)!
            .hits >= 1,
        { timeoutMs: 60_000, intervalMs: 1000 },
      );
      log(`hit: a web pod on ${warmNode}`);

      // The churn pool empties: Karpenter disrupts its two nodes.
      await observeClaims();
      await scale("churn", 0);
      await waitFor(
        "the churn pool's NodeClaims gone",
        async () => (await list("nodeclaims.karpenter.sh", { selector: `${L.pool}=${churn}` })).length === 0,
        { timeoutMs: 180_000, intervalMs: 1000 },
      );
      log(`churn: ${[...seenClaims.values()].filter((c) => c.pool === churn).length} NodeClaims disrupted`);

      // A spot policy on `web` (after its pods run: repair off, so it moves none) gives the Spot
      // page managed pods, their split and the workloads' savings to cross-check.
      await installWaveCrds();
      await apply({
        apiVersion: "wave.sh/v1alpha1",
        kind: "SpotPolicy",
        metadata: { name: "web", namespace: ns },
        spec: {
          targetRef: { kind: "Deployment", name: "web" },
          threshold: 1,
          strategy: "Prefer",
          repair: "Off",
        },
      });
      await waitFor(
        "the Spot page's API to count web's 2 pods under its policy",
        async () => (await api<SpotViewDto>(`spot-placement?from=${hourAgo()}`)).totals.pods === 2,
        { timeoutMs: 60_000, intervalMs: 1000 },
      );

      await observeClaims();
      const figures = await crossCheckPages(world, browser, [
        checked(overviewPage),
        checked(poolsPage(() => [warm])),
        checked(nodesPage),
        checked(disruptionsPage),
        checked(churnPage()),
        checked(thrashingPage),
        checked(warmupPage(() => [warm], { hits: hitsOf, warmCost: true })),
        checked(spotPage),
        checked(consolidationPage),
      ]);
      const churnFig = figures.find((f) => f.name === `pool ${churn}: disruptions`);
      assert.equal(churnFig?.api, 2, "Karpenter disrupted the churn pool's two nodes");
      assert.ok((figures.find((f) => f.name === `pool ${warm}: warmup hits`)?.api ?? 0) >= 1, "a warmup hit");
      assert.equal(
        figures.find((f) => f.name === "spot: managed pods")?.api,
        2,
        "web's pods under its policy",
      );
    }),
);
