// Shared by the console's Chromium e2e tests (simulated cluster and rig): open every page as a
// viewer and check that what it shows equals what the API answers at the same moment (both move
// with a live cluster, so each check retries until they agree or 30 s pass).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { startWave, type Started } from "../../src/cli/start.ts";
import type {
  ConsolidationViewDto,
  DisruptionCountsDto,
  DisruptionDto,
  NodeListDto,
  NodePoolDto,
  OverviewDto,
  SpotViewDto,
  ThrashingDto,
  WarmupViewDto,
} from "../../src/dashboard/dto.ts";
import type { Clock } from "../../src/shared/clock.ts";
import { createLogger } from "../../src/shared/log.ts";
import { num, pct, usd } from "../../ui/src/format.ts";
import { simulatedConfig } from "../support/wave.ts";
import { waitFor } from "./harness.ts";

const CHROMIUM = "/usr/bin/chromium";
const ROOT = resolve(import.meta.dirname, "../..");

/** Debian's chromium, headless, to read the built console (ui/dist). */
export async function launchChromium(): Promise<Browser> {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} exists (apt-get install -y chromium)`);
  assert.ok(existsSync(join(ROOT, "ui/dist/index.html")), "the UI is built (npm run build:ui)");
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
  });
}

/**
 * `wave start` on the embedded simulated cluster (what `npm start` runs), in process, once its
 * history has been fast-forwarded to now: before that it has its pools and pending pods but no
 * nodes yet, and an overview of 0 nodes equals the API's 0 as well as any other figure would.
 */
export async function startSimulated(
  dataDir: string,
  clusterId: string,
  app: string,
  log: (msg: string) => void,
  clock?: Clock,
): Promise<Started> {
  const w = await startWave(
    simulatedConfig(dataDir, clusterId),
    {},
    {
      log: createLogger({ level: "error", base: { app } }),
      ...(clock ? { clock } : {}),
    },
  );
  const t0 = Date.now();
  await w.caughtUp;
  log(`simulated history caught up with now in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return w;
}

export interface Site {
  /** Core's base URL (ends with "/"). */
  url: string;
  cluster: string;
  viewer: string;
  /** Where screenshots go (<prefix>-<page>.png), or undefined for none. */
  shots?: string | undefined;
  /** Screenshot file prefix (default "console"). */
  prefix?: string;
  log: (msg: string) => void;
}

export async function api<T>(site: Site, path: string, token = site.viewer): Promise<T> {
  const res = await fetch(new URL(`api/v1/${path}`, site.url), {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(res.status, 200, `GET ${path}: ${res.status}`);
  return (await res.json()) as T;
}

/** The cluster's route under /api/v1/clusters/{id}/. */
export const cl = (site: Site, p: string): string => `clusters/${site.cluster}/${p}`;

export async function open(site: Site, page: Page, path: string, token: string): Promise<void> {
  await page.goto(
    `${site.url}#/${path}${path.includes("?") ? "&" : "?"}cluster=${site.cluster}&token=${token}`,
  );
}

export const text = async (page: Page, testId: string): Promise<string> =>
  ((await page.getByTestId(testId).first().textContent()) ?? "").trim();

/** Retries until `check` returns a value (page and API both move with the live cluster). */
export const agree = <T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> =>
  waitFor(what, check, { timeoutMs, intervalMs: 250 });

export async function shot(site: Site, page: Page, name: string): Promise<void> {
  if (!site.shots) return;
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(site.shots, `${site.prefix ?? "console"}-${name}.png`) });
}

/** The start of the current minute minus an hour: the 1 h preset's `from`, as the UI asks. */
const hourAgo = (): number => Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000;

export async function checkOverview(site: Site, page: Page): Promise<OverviewDto> {
  await open(site, page, "overview", site.viewer);
  const o = await agree("overview cards = API", async () => {
    const x = await api<OverviewDto>(site, cl(site, "overview"));
    const shown = [
      await text(page, "overview-nodes"),
      await text(page, "overview-cost"),
      await text(page, "overview-spot"),
      await text(page, "overview-warm"),
    ];
    return shown.join("|") ===
      [num(x.nodes), usd(x.costPerHour), pct(x.spotRatio.nodes), num(x.warmup.warmNodes)].join("|")
      ? x
      : undefined;
  });
  site.log(`overview: ${o.nodes} nodes, ${usd(o.costPerHour)}/h, ${o.warmup.warmNodes} warm = API`);
  await shot(site, page, "overview");
  return o;
}

export async function checkNodePools(site: Site, page: Page): Promise<NodePoolDto[]> {
  await open(site, page, "nodepools", site.viewer);
  const pools = await agree("pool rows = API", async () => {
    const ps = await api<NodePoolDto[]>(site, cl(site, "nodepools"));
    const rows = await page.getByTestId("pool-row").all();
    if (rows.length !== ps.length) return undefined;
    for (const p of ps) {
      const row = page.getByTestId("pool-row").filter({ hasText: p.name }).first();
      const cells = (await row.locator("td").allTextContents()).map((c) => c.trim());
      if (cells[1] !== num(p.nodes) || !cells.includes(usd(p.costPerHour))) return undefined;
    }
    return ps;
  });
  // The per-pool charts, or (a core younger than its first history minute) the reason they are not.
  await page
    .getByTestId("pool-chart-nodes")
    .or(page.getByText("No history in this range yet"))
    .first()
    .waitFor({ timeout: 30_000 });
  const charts = await page.getByTestId("pool-chart-nodes").count();
  site.log(
    `nodepools: ${pools.length} rows = API, ${charts ? "per-pool charts drawn" : "no history yet (said so)"}`,
  );
  await shot(site, page, "nodepools");
  return pools;
}

/**
 * The node table's count = /nodes, and each of the first rows shows the API's price source for
 * its node (the pricing helper's column, ADR 0011). The page is 1440 px wide: the column shows.
 */
export async function checkNodes(site: Site, page: Page): Promise<number> {
  await open(site, page, "nodes", site.viewer);
  const total = await agree("node table count and price sources = API", async () => {
    const list = await api<NodeListDto>(site, cl(site, "nodes?limit=5000"));
    if ((await page.locator("[data-testid=node-table] h2 .count").textContent()) !== `(${num(list.total)})`)
      return undefined;
    const byName = new Map(list.items.map((n) => [n.name, n]));
    const rows = (await page.getByTestId("node-row").all()).slice(0, 5);
    for (const row of rows) {
      const name = (await row.locator("td").first().textContent())?.trim() ?? "";
      // The name cell may carry tags after the name (warm, not ready).
      const n = [...byName.values()].find((x) => name.startsWith(x.name));
      const src = await row.getByTestId("price-source").getAttribute("data-source");
      if (!n || src !== n.priceSource) return undefined;
    }
    return list.total;
  });
  const costHeader = page.getByRole("button", { name: /^\$\/h/ });
  assert.equal(await costHeader.locator("xpath=..").getAttribute("aria-sort"), "descending");
  await shot(site, page, "nodes");
  if (total > 0) {
    // The drawer: a node's price and timeline.
    await page.getByTestId("node-row").first().click();
    await page.getByTestId("node-drawer").getByTestId("drawer-price").waitFor({ timeout: 20_000 });
  }
  site.log(`nodes: ${total} rows = API, price sources = API; drawer opens`);
  await shot(site, page, "nodes-drawer");
  await page.keyboard.press("Escape");
  return total;
}

export async function checkDisruptions(site: Site, page: Page): Promise<DisruptionDto[]> {
  await open(site, page, "disruptions?range=1h", site.viewer);
  const d = await agree("disruption count = API", async () => {
    const rows = await api<DisruptionDto[]>(
      site,
      cl(site, `disruptions?limit=1000&from=${Date.now() - 3_600_000}`),
    );
    const shown = await page
      .locator("[data-testid=disruption-table] h2 .count")
      .textContent({ timeout: 1000 })
      .catch(() => null);
    return shown === `(${num(rows.length)})` ||
      (rows.length === 0 && (await page.getByText("No disruptions in this range").count()) > 0)
      ? rows
      : undefined;
  });
  // The counts are core's exact count (not the list, which stops at 1,000).
  const counted = await agree("disruption counts = API's count", async () => {
    // The page asks from the minute an hour ago (ui/src/range.ts rangeQuery): ask the same.
    const from = Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000;
    const c = await api<DisruptionCountsDto>(site, cl(site, `disruptions/counts?from=${from}`));
    const shown = await page
      .locator("[data-testid=disruption-counts] h2 .count")
      .textContent({ timeout: 1000 })
      .catch(() => null);
    return shown === `(${num(c.total)})` ? c : undefined;
  });
  site.log(`disruptions: ${d.length} listed, ${counted.total} counted in the last hour = API`);
  await shot(site, page, "disruptions");
  return d;
}

export async function checkThrashing(site: Site, page: Page): Promise<ThrashingDto[]> {
  await open(site, page, "thrashing", site.viewer);
  const flagged = await agree("thrashing alerts = API", async () => {
    const rs = (await api<ThrashingDto[]>(site, cl(site, "thrashing"))).filter((r) => r.flagged);
    if (rs.length === 0) return (await page.getByTestId("no-thrashing").count()) > 0 ? rs : undefined;
    const alerts = await page.getByTestId("thrashing-alert").all();
    if (alerts.length !== rs.length) return undefined;
    for (const r of rs) {
      const a = page.locator(`[data-testid=thrashing-alert][data-pool="${r.nodePool}"]`);
      if ((await a.getByTestId("evidence-row").count()) !== r.evidence.length) return undefined;
    }
    return rs;
  });
  if (flagged.length)
    assert.match(await text(page, "kubectl-patch"), /^kubectl patch nodepool \S+ --type merge -p '/);
  site.log(
    `thrashing: ${flagged.length} flagged pool(s) = API${flagged.length ? ", with kubectl patch" : ""}`,
  );
  await shot(site, page, "thrashing");
  return flagged;
}

/** Per workload target, actual, self-heal actions and late answers (over the 1 h range) = /spot-placement. */
export async function checkSpot(site: Site, page: Page, name = "spot"): Promise<SpotViewDto> {
  await open(site, page, "spot", site.viewer);
  const sv = await agree("spot rows = API", () => spotAgrees(site, page));
  site.log(
    `spot: ${sv.workloads.length} workloads, ${sv.totals.repairs} self-heal actions, ${sv.totals.lateAnswers} late answers = API`,
  );
  await shot(site, page, name);
  return sv;
}

/** Whether the open Spot page shows what /spot-placement answers now (undefined: not yet). */
export async function spotAgrees(site: Site, page: Page): Promise<SpotViewDto | undefined> {
  const v = await api<SpotViewDto>(site, cl(site, `spot-placement?from=${hourAgo()}`));
  if ((await page.getByTestId("spot-row").count()) !== v.workloads.length) return undefined;
  if ((await text(page, "spot-total-repairs")) !== num(v.totals.repairs)) return undefined;
  if ((await text(page, "spot-total-late-answers")) !== num(v.totals.lateAnswers)) return undefined;
  for (const x of v.workloads) {
    const row = page
      .getByTestId("spot-row")
      .filter({ hasText: `${x.workload.namespace}/${x.workload.name}` })
      .first();
    const want = x.target ? `${num(x.target.onDemand)} / ${num(x.target.spot)}` : "—";
    if ((await row.getByTestId("spot-target").textContent()) !== want) return undefined;
    if (
      !(await row.getByTestId("spot-actual").textContent())?.startsWith(
        `${num(x.actual.onDemand)} / ${num(x.actual.spot)}`,
      )
    )
      return undefined;
    if ((await row.getByTestId("spot-repairs").textContent()) !== num(x.repairs.total)) return undefined;
    const late = x.lateAnswers > 0 ? num(x.lateAnswers) : "—";
    if ((await row.getByTestId("spot-late-answers").textContent()) !== late) return undefined;
  }
  return v;
}

export async function checkWarmup(site: Site, page: Page): Promise<WarmupViewDto> {
  await open(site, page, "warmup", site.viewer);
  const wv = await agree("warmup pools = API", () => warmupAgrees(site, page));
  site.log(`warmup: ${wv.pools.length} pools = API`);
  await shot(site, page, "warmup");
  return wv;
}

/** Whether the open Warmup page shows each pool's state, hits and warm nodes as /warmup does. */
export async function warmupAgrees(site: Site, page: Page): Promise<WarmupViewDto | undefined> {
  const v = await api<WarmupViewDto>(site, cl(site, `warmup?from=${hourAgo()}`));
  if ((await page.getByTestId("warmup-pool").count()) !== v.pools.length) return undefined;
  for (const p of v.pools) {
    const sec = page.locator(`[data-testid=warmup-pool][data-pool="${p.nodePool}"]`);
    if ((await sec.getByTestId("warmup-state").textContent()) !== p.state) return undefined;
    if ((await sec.getByTestId("pool-hits").textContent()) !== num(p.hits)) return undefined;
    for (const n of p.warmNodes)
      if ((await sec.getByTestId("warm-node-row").filter({ hasText: n.name }).count()) === 0)
        return undefined;
  }
  return v;
}

/**
 * The Consolidation page (issue 34): the blocked-node count, the blocked $/h and the table's rows
 * = /consolidation; then the first blocked node's drawer answers "Can Karpenter disrupt it?".
 */
export async function checkConsolidation(site: Site, page: Page): Promise<ConsolidationViewDto> {
  await open(site, page, "consolidation", site.viewer);
  const v = await agree("consolidation = API", async () => {
    const x = await api<ConsolidationViewDto>(site, cl(site, "consolidation"));
    if ((await text(page, "consolidation-blocked")) !== num(x.blockedNodes)) return undefined;
    if ((await text(page, "consolidation-cost")) !== usd(x.blockedCostPerHour)) return undefined;
    const blocked = x.items.filter((n) => n.blocked);
    if ((await page.getByTestId("blocked-row").count()) !== blocked.length) return undefined;
    return x;
  });
  site.log(
    `consolidation: ${v.blockedNodes} of ${v.nodes} nodes blocked, ${usd(v.blockedCostPerHour)}/h = API (${v.byReason
      .map((r) => `${r.reason} ${r.blockedNodes}`)
      .join(", ")})`,
  );
  await shot(site, page, "consolidation");
  if (v.blockedNodes > 0) {
    await page.getByTestId("blocked-row").first().click();
    const drawer = page.getByTestId("node-drawer");
    await drawer.getByTestId("drawer-disruption").getByTestId("blocker").first().waitFor({ timeout: 20_000 });
    assert.match(await text(page, "drawer-disruptable"), /^no · \d+ blocker/);
    await shot(site, page, "consolidation-drawer");
    await page.keyboard.press("Escape");
  }
  return v;
}

/** Every page, one after the other, in a fresh 1440 px page: each shows the API's figures. */
/** Every page's checks in turn; answers the overview the page showed. */
export async function checkEveryPage(site: Site, browser: Browser): Promise<OverviewDto> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  page.on("pageerror", (err) => site.log(`page error: ${err.message}`));
  const overview = await checkOverview(site, page);
  await checkNodePools(site, page);
  await checkNodes(site, page);
  await checkDisruptions(site, page);
  await checkThrashing(site, page);
  await checkSpot(site, page);
  await checkWarmup(site, page);
  await checkConsolidation(site, page);
  await page.close();
  return overview;
}
