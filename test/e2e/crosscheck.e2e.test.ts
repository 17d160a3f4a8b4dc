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
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { chromium, type Browser, type Page } from "playwright-core";
import type { Started } from "../../src/cli/start.ts";
import type {
  DisruptionCountsDto,
  NodeListDto,
  NodePoolDto,
  OverviewDto,
  ThrashingDto,
  WarmupViewDto,
} from "../../src/dashboard/dto.ts";
import { resolvedQueries } from "../../src/metrics/grafana.ts";
import { WARMUP_POOL_LABEL } from "../../src/objects/wave.ts";
import { duration, num, pct, usd } from "../../ui/src/format.ts";
import { disagreements, parseExposition, sourcesOf, sumOf, type Figure, type Sample } from "./crosscheck.ts";
import { api as siteApi, cl, open, text, type Site } from "./console-pages.ts";
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

const CHROMIUM = "/usr/bin/chromium";
const ROOT = resolve(import.meta.dirname, "../..");
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

function log(msg: string): void {
  process.stderr.write(`# ${msg}\n`);
}

const api = <T>(path: string): Promise<T> => siteApi<T>(site, cl(site, path));

// ---- recomputation from the apiserver's objects, independent of Wave's code ----

/** The KWOK provider's price (Karpenter kwok/tools/gen_instance_types.go), from the type's name. */
function kwokPrice(instanceType: string | undefined, capacityType: string): number {
  const m = /^([csm])-(\d+)x-/.exec(instanceType ?? "");
  if (!m?.[1] || !m[2]) return 0; // not launched yet: no type, no price
  const vcpu = Number(m[2]);
  const memoryBytes = vcpu * { c: 2, s: 4, m: 8 }[m[1] as "c" | "s" | "m"] * 2 ** 30;
  const onDemand = 0.025 * vcpu + (0.001 * memoryBytes) / 1e9;
  return capacityType === "spot" ? 0.7 * onDemand : onDemand;
}

interface Machine {
  pool: string;
  capacityType: string;
  instanceType: string | undefined;
  vcpu: number;
}

const labelsOf = (o: KubeObject | undefined): Record<string, string> => o?.metadata.labels ?? {};
const cpuOf = (q: string | undefined): number =>
  q === undefined ? 0 : q.endsWith("m") ? Number(q.slice(0, -1)) / 1000 : Number(q);

/** Every machine the cluster pays for: each NodeClaim with its Node, plus Nodes no NodeClaim owns. */
function machinesOf(nodes: readonly KubeObject[], claims: readonly KubeObject[]): Machine[] {
  const byName = new Map(nodes.map((n) => [n.metadata.name, n]));
  const byProvider = new Map(
    nodes.map((n) => [(n.spec as { providerID?: string } | undefined)?.providerID ?? "", n]),
  );
  const claimed = new Set<string>();
  const of = (nc: KubeObject | undefined, node: KubeObject | undefined): Machine => {
    const lbl = { ...labelsOf(nc), ...labelsOf(node) };
    const res = (o: KubeObject | undefined, k: "capacity" | "allocatable"): number =>
      cpuOf((o?.status as Record<string, Record<string, string>> | undefined)?.[k]?.["cpu"]);
    const src = node ?? nc;
    return {
      pool: lbl[L.pool] ?? "(none)",
      capacityType: lbl[L.ct] ?? "on-demand",
      instanceType: lbl[L.it],
      vcpu: Math.max(res(src, "capacity"), res(src, "allocatable")),
    };
  };
  const out: Machine[] = [];
  for (const nc of claims) {
    const st = nc.status as { nodeName?: string; providerID?: string } | undefined;
    const node = byName.get(st?.nodeName ?? "\u0000") ?? byProvider.get(st?.providerID ?? "\u0000");
    if (node) claimed.add(node.metadata.name);
    out.push(of(nc, node));
  }
  for (const n of nodes) if (!claimed.has(n.metadata.name)) out.push(of(undefined, n));
  return out;
}

interface Recomputed {
  nodes: number;
  cost: number;
  spotSavings: number;
  spotRatio: { nodes: number; vcpu: number; cost: number };
  pool: (p: string) => { nodes: number; cost: number; spotCost: number; spotNodes: number };
}

function recompute(ms: readonly Machine[]): Recomputed {
  const sum = (xs: readonly Machine[], f: (m: Machine) => number): number => xs.reduce((s, m) => s + f(m), 0);
  const cost = (m: Machine): number => kwokPrice(m.instanceType, m.capacityType);
  const spot = ms.filter((m) => m.capacityType === "spot");
  const total = sum(ms, cost);
  const vcpu = sum(ms, (m) => m.vcpu);
  const frac = (a: number, b: number): number => (b === 0 ? 0 : a / b);
  return {
    nodes: ms.length,
    cost: total,
    spotSavings: sum(spot, (m) => kwokPrice(m.instanceType, "on-demand") - cost(m)),
    spotRatio: {
      nodes: frac(spot.length, ms.length),
      vcpu: frac(
        sum(spot, (m) => m.vcpu),
        vcpu,
      ),
      cost: frac(sum(spot, cost), total),
    },
    pool: (p) => {
      const xs = ms.filter((m) => m.pool === p);
      const sp = xs.filter((m) => m.capacityType === "spot");
      return { nodes: xs.length, cost: sum(xs, cost), spotCost: sum(sp, cost), spotNodes: sp.length };
    },
  };
}

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

const at = (cs: readonly Cond[], type: string): number | undefined => {
  const c = cs.find((x) => x.type === type && x.status === "True");
  return c?.lastTransitionTime ? Date.parse(c.lastTransitionTime) : undefined;
};

/** The pool's cold start: median Launched → Initialized of its NodeClaims (all launched in the last hour). */
function coldStart(pool: string): number {
  const xs = [...seenClaims.values()]
    .filter((c) => c.pool === pool)
    .flatMap((c) => {
      const l = at(c.conditions, "Launched");
      const i = at(c.conditions, "Initialized");
      return l !== undefined && i !== undefined && i >= l ? [(i - l) / 1000] : [];
    })
    .sort((a, b) => a - b);
  if (xs.length === 0) return 0;
  const mid = Math.floor(xs.length / 2);
  return xs.length % 2 ? (xs[mid] ?? 0) : ((xs[mid - 1] ?? 0) + (xs[mid] ?? 0)) / 2;
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

// ---- the page: what Chromium shows ----

interface Shown {
  overview: Record<"nodes" | "cost" | "spot" | "saves" | "disruptions" | "warm", string | undefined>;
  pool: Record<"nodes" | "cost" | "spotCost", string | undefined>;
  nodeTotal: string | undefined;
  churnDisruptions: string | undefined;
  thrashingAlerts: number;
  warmup: Record<"hits" | "timeSaved" | "perHit", string | undefined>;
}

const textOrUndefined = async (page: Page, sel: string): Promise<string | undefined> =>
  (
    await page
      .locator(sel)
      .first()
      .textContent({ timeout: 5000 })
      .catch(() => null)
  )?.trim() ?? undefined;

async function readPages(page: Page): Promise<Shown> {
  const v = site.viewer;
  await open(site, page, "overview", v);
  await page.getByTestId("overview-nodes").waitFor({ timeout: 20_000 });
  await page
    .locator("[data-testid=overview-disruptions]")
    .filter({ hasNotText: "…" })
    .waitFor({ timeout: 20_000 });
  const overview = {
    nodes: await text(page, "overview-nodes"),
    cost: await text(page, "overview-cost"),
    spot: await text(page, "overview-spot"),
    saves: await text(page, "overview-spot-saves"),
    disruptions: await text(page, "overview-disruptions"),
    warm: await text(page, "overview-warm"),
  };
  await open(site, page, "nodepools", v);
  const row = page.getByTestId("pool-row").filter({ hasText: warm }).first();
  await row.waitFor({ timeout: 20_000 });
  const heads = (await page.locator("[data-testid=pool-table] th").allTextContents()).map((h) => h.trim());
  const cells = (await row.locator("td").allTextContents()).map((c) => c.trim());
  const col = (label: string): string | undefined => cells[heads.findIndex((h) => h.startsWith(label))];
  const pool = { nodes: col("nodes"), cost: col("$/h"), spotCost: col("spot $/h") };
  await open(site, page, "nodes", v);
  await page.locator("[data-testid=node-table] h2 .count").waitFor({ timeout: 20_000 });
  const nodeTotal = (await textOrUndefined(page, "[data-testid=node-table] h2 .count"))?.replace(
    /^\((.*)\)$/,
    "$1",
  );
  await open(site, page, `disruptions?range=1h&pool=${churn}`, v);
  const counts = page.getByTestId("disruption-counts");
  await counts.waitFor({ timeout: 20_000 });
  const churnRow = page.getByTestId("count-row").filter({ hasText: churn }).first();
  const churnDisruptions = (await churnRow.count())
    ? (await churnRow.locator("td").last().textContent())?.trim()
    : "0";
  await open(site, page, "thrashing", v);
  await page
    .getByTestId("no-thrashing")
    .or(page.getByTestId("thrashing-alert"))
    .first()
    .waitFor({ timeout: 20_000 });
  const thrashingAlerts = await page.getByTestId("thrashing-alert").count();
  await open(site, page, "warmup", v);
  const sec = page.locator(`[data-testid=warmup-pool][data-pool="${warm}"]`);
  await sec.waitFor({ timeout: 20_000 });
  const warmup = {
    hits: (await sec.getByTestId("pool-hits").textContent())?.trim(),
    timeSaved: (await sec.getByTestId("pool-time-saved").textContent())?.trim(),
    perHit: (await sec.getByTestId("pool-saved-per-hit").textContent())?.trim(),
  };
  return { overview, pool, nodeTotal, churnDisruptions, thrashingAlerts, warmup };
}

// ---- one round: every source at one moment ----

interface Api {
  o: OverviewDto;
  pools: NodePoolDto[];
  nodeTotal: number;
  churn: DisruptionCountsDto;
  all: DisruptionCountsDto;
  thrashing: ThrashingDto[];
  warmup: WarmupViewDto;
}

/** The 1 h range the pages ask for: from the minute an hour ago (ui/src/range.ts). */
const hourAgo = (): number => Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000;

async function readApi(): Promise<Api> {
  const from = hourAgo();
  return {
    o: await api<OverviewDto>("overview"),
    pools: await api<NodePoolDto[]>("nodepools"),
    nodeTotal: (await api<NodeListDto>("nodes?limit=1")).total,
    churn: await api<DisruptionCountsDto>(`disruptions/counts?from=${from}&pool=${churn}`),
    all: await api<DisruptionCountsDto>(`disruptions/counts?from=${from}`),
    thrashing: await api<ThrashingDto[]>("thrashing"),
    warmup: await api<WarmupViewDto>(`warmup?from=${from}`),
  };
}

/** Core's /metrics, as Prometheus gets it. */
async function readMetrics(): Promise<Sample[]> {
  assert.ok(wave);
  const res = await fetch(new URL("metrics", wave.url), {
    headers: { authorization: `Bearer ${site.viewer}` },
  });
  assert.equal(res.status, 200);
  return parseExposition(await res.text());
}

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

async function round(page: Page): Promise<{ figures: Figure[]; stable: boolean }> {
  assert.ok(prom);
  const a = await readApi();
  const m = await readMetrics();
  // Prometheus's next scrape after /metrics was read, and the panels evaluated at that moment.
  const readAt = Date.now() / 1000;
  const scrapedAt = await waitFor(
    "a Prometheus scrape after /metrics was read",
    async () => {
      const t = await prom?.scalar(`timestamp(up{job="wave-core"})`);
      return t !== undefined && t > readAt ? t : undefined;
    },
    { timeoutMs: 15_000, intervalMs: 250 },
  );
  const q = (expr: string): Promise<number | undefined> => prom!.scalar(expr, scrapedAt);
  /** The sample of a panel's query whose labels include `match` (a series per basis, capacity type…). */
  const pick = async (expr: string, match: Record<string, string>): Promise<number | undefined> => {
    const hit = (await prom!.query(expr, scrapedAt)).find((s) =>
      Object.entries(match).every(([k, v]) => s.metric[k] === v),
    );
    return hit ? Number(hit.value[1]) : undefined;
  };
  const ratio = (basis: string): Promise<number | undefined> => pick(panel("Spot ratio"), { basis });
  await observeClaims();
  const r = recompute(machinesOf(await list("nodes"), await list("nodeclaims.karpenter.sh")));
  const shown = await readPages(page);
  const a2 = await readApi();
  const stable =
    a2.o.nodes === a.o.nodes &&
    Math.abs(a2.o.costPerHour - a.o.costPerHour) < 1e-9 &&
    a2.all.total === a.all.total &&
    a2.o.warmup.warmNodes === a.o.warmup.warmNodes;

  const c = { cluster: CLUSTER };
  const pw = { cluster: CLUSTER, nodepool: warm };
  const pool = a.pools.find((p) => p.name === warm);
  assert.ok(pool, `the API lists pool ${warm}`);
  const wp = a.warmup.pools.find((p) => p.nodePool === warm);
  assert.ok(wp, `the Warmup view lists pool ${warm}`);
  const rw = r.pool(warm);
  const churnMetric = sumOf(m, "wave_disruptions_total", { cluster: CLUSTER, nodepool: churn });
  const flagged = a.thrashing.filter((t) => t.flagged).length;
  const figures: Figure[] = [
    {
      name: "cluster nodes",
      kind: "count",
      api: a.o.nodes,
      others: {
        metrics: sumOf(m, "wave_nodes", c),
        prometheus: await q(panel("Nodes")),
        recomputed: r.nodes,
      },
      page: { shown: shown.overview.nodes, format: num },
    },
    {
      name: "node table rows",
      kind: "count",
      api: a.nodeTotal,
      others: { recomputed: r.nodes },
      page: { shown: shown.nodeTotal, format: num },
    },
    {
      name: "cluster cost per hour",
      kind: "money",
      api: a.o.costPerHour,
      others: {
        metrics: sumOf(m, "wave_nodepool_cost_per_hour_dollars", c),
        prometheus: await q(panel("Cost per hour")),
        recomputed: r.cost,
      },
      page: { shown: shown.overview.cost, format: usd },
    },
    {
      name: "spot ratio (nodes)",
      kind: "ratio",
      api: a.o.spotRatio.nodes,
      others: {
        metrics: sumOf(m, "wave_spot_ratio", { ...c, basis: "nodes" }),
        prometheus: await ratio("nodes"),
        recomputed: r.spotRatio.nodes,
      },
      page: { shown: shown.overview.spot, format: pct },
    },
    {
      name: "spot ratio (vCPU)",
      kind: "ratio",
      api: a.o.spotRatio.vcpu,
      others: {
        metrics: sumOf(m, "wave_spot_ratio", { ...c, basis: "vcpu" }),
        prometheus: await ratio("vcpu"),
        recomputed: r.spotRatio.vcpu,
      },
    },
    {
      name: "spot ratio (cost)",
      kind: "ratio",
      api: a.o.spotRatio.cost,
      others: {
        metrics: sumOf(m, "wave_spot_ratio", { ...c, basis: "cost" }),
        prometheus: await ratio("cost"),
        recomputed: r.spotRatio.cost,
      },
    },
    {
      name: "spot savings per hour (scope nodes)",
      kind: "money",
      api: a.o.spotSavingsPerHour,
      others: {
        metrics: sumOf(m, "wave_nodepool_spot_savings_per_hour_dollars", c),
        prometheus: await q(panel("Spot savings per hour by pool")),
        recomputed: r.spotSavings,
      },
      page: { shown: shown.overview.saves, format: (n) => `nodes save ${usd(n)}/h` },
    },
    {
      name: `pool ${warm}: nodes`,
      kind: "count",
      api: pool.nodes,
      others: {
        metrics: sumOf(m, "wave_nodes", pw),
        prometheus: await q(panel("Nodes", warm)),
        recomputed: rw.nodes,
      },
      page: { shown: shown.pool.nodes, format: num },
    },
    {
      name: `pool ${warm}: cost per hour`,
      kind: "money",
      api: pool.costPerHour,
      others: {
        metrics: sumOf(m, "wave_nodepool_cost_per_hour_dollars", pw),
        prometheus: await q(panel("Cost per hour", warm)),
        recomputed: rw.cost,
      },
      page: { shown: shown.pool.cost, format: usd },
    },
    {
      name: `pool ${warm}: spot cost per hour`,
      kind: "money",
      api: pool.costByCapacityType.spot ?? 0,
      others: {
        metrics: sumOf(m, "wave_nodepool_cost_per_hour_dollars", { ...pw, capacity_type: "spot" }) ?? 0,
        prometheus: await pick(panel("Cost per hour by pool and capacity type", warm), {
          capacity_type: "spot",
        }),
        recomputed: rw.spotCost,
      },
      page: { shown: shown.pool.spotCost, format: usd },
    },
    {
      name: "disruptions in the last hour (cluster)",
      kind: "count",
      api: a.all.total,
      // Not Prometheus here: another test's pool on the shared rig may be disrupted before core's
      // first scrape of it, so its series starts above 0 and increase() rightly skips that step.
      // The churn pool below is scraped at 0 long before its disruptions.
      others: { metrics: sumOf(m, "wave_disruptions_total", c) },
      page: { shown: shown.overview.disruptions, format: num },
    },
    {
      name: `pool ${churn}: disruptions`,
      kind: "count",
      api: a.churn.total,
      others: {
        metrics: churnMetric,
        prometheus: (await q(panel("Disruptions by reason", churn))) ?? 0,
        recomputed: await disruptionsOf(churn),
      },
      page: { shown: shown.churnDisruptions, format: num },
    },
    {
      name: "thrashing pools flagged",
      kind: "count",
      api: flagged,
      others: {
        metrics: sumOf(m, "wave_nodepool_thrashing", c),
        prometheus: await q(panel("Thrashing pools")),
      },
      page: { shown: String(shown.thrashingAlerts), format: String },
    },
    {
      name: "warm nodes (cluster)",
      kind: "count",
      api: a.o.warmup.warmNodes,
      others: {
        metrics: sumOf(m, "wave_warmup_warm_nodes", c),
        prometheus: await q(panel("Warm nodes")),
      },
      page: { shown: shown.overview.warm, format: num },
    },
    {
      name: `pool ${warm}: warmup hits`,
      kind: "count",
      api: wp.hits,
      others: {
        metrics: sumOf(m, "wave_warmup_hits_total", pw),
        prometheus: await q(panel("Warmup hits, misses and expiries", warm)),
        recomputed: await hitsOf(),
      },
      page: { shown: shown.warmup.hits, format: num },
    },
    {
      name: `pool ${warm}: seconds saved per hit (its cold start)`,
      kind: "seconds",
      api: wp.savedPerHitSeconds,
      others: { recomputed: coldStart(warm) },
      page: {
        shown: /× (\S+ \S+),/.exec(shown.warmup.perHit ?? "")?.[1],
        format: duration,
      },
    },
    {
      name: `pool ${warm}: warmup time saved`,
      kind: "seconds",
      api: wp.timeSavedSeconds,
      others: {
        metrics: sumOf(m, "wave_warmup_time_saved_seconds_total", pw),
        prometheus: await q(panel("Warmup time saved and warm cost", warm)),
        recomputed: (await hitsOf()) * coldStart(warm),
      },
      page: { shown: shown.warmup.timeSaved, format: duration },
    },
  ];
  return { figures, stable };
}

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} exists (apt-get install -y chromium)`);
  assert.ok(existsSync(join(ROOT, "ui/dist/index.html")), "the UI is built (npm run build:ui)");
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
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
  });
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

      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      page.on("pageerror", (err) => log(`page error: ${err.message}`));
      let last: string[] = [];
      const figures = await waitFor(
        "every source to agree on every figure",
        async () => {
          const { figures, stable } = await round(page);
          last = disagreements(figures);
          if (!stable) last = ["the cluster moved during the round", ...last];
          if (last.length) log(`round: ${last.join("; ")}`);
          return last.length === 0 ? figures : undefined;
        },
        { timeoutMs: 240_000, intervalMs: 2000 },
      ).catch((err: unknown) => {
        throw new Error(`${err instanceof Error ? err.message : String(err)}\n${last.join("\n")}`);
      });
      await page.close();
      for (const f of figures)
        log(
          `${f.name} = ${f.api} across ${sourcesOf(f)} sources (${["api", ...Object.keys(f.others), ...(f.page ? ["page"] : [])].join(", ")})`,
        );
      const churnFig = figures.find((f) => f.name === `pool ${churn}: disruptions`);
      assert.equal(churnFig?.api, 2, "Karpenter disrupted the churn pool's two nodes");
      assert.ok((figures.find((f) => f.name === `pool ${warm}: warmup hits`)?.api ?? 0) >= 1, "a warmup hit");
    }),
);
