// Every console page in Chromium (Debian's chromium via playwright-core) on the embedded
// simulated cluster: each page's figures equal the API's; an admin edits a spot policy and a
// warmup policy in the UI and core (and so the webhook and the warmup controller) follows; a
// viewer sees everything and cannot edit. Screenshots of every page go to $WAVE_SCREENSHOT_DIR
// when set (README: WAVE_SCREENSHOT_DIR=docs/screenshots).
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { chromium, type Browser, type Page } from "playwright-core";
import type {
  DisruptionDto,
  NodeListDto,
  NodePoolDto,
  OverviewDto,
  SpotPolicySetDto,
  SpotViewDto,
  ThrashingDto,
  WarmupPolicyDto,
  WarmupViewDto,
} from "../../src/dashboard/dto.ts";
import { startWave, type Started } from "../../src/cli/start.ts";
import { DEFAULTS } from "../../src/config/config.ts";
import { createLogger } from "../../src/shared/log.ts";
import { num, pct, usd } from "../../ui/src/format.ts";
import { waitFor } from "./harness.ts";

const CHROMIUM = "/usr/bin/chromium";
const ROOT = resolve(import.meta.dirname, "../..");
const SHOTS = process.env["WAVE_SCREENSHOT_DIR"];
const CLUSTER = "default";

let tmp = "";
let w: Started;
let browser: Browser;

function log(msg: string): void {
  process.stderr.write(`# ${msg}\n`);
}

async function api<T>(path: string, token = w.tokens.viewer): Promise<T> {
  const res = await fetch(new URL(`api/v1/${path}`, w.url), {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(res.status, 200, `GET ${path}: ${res.status}`);
  return (await res.json()) as T;
}
const cl = (p: string): string => `clusters/${CLUSTER}/${p}`;

async function open(page: Page, path: string, token: string): Promise<void> {
  await page.goto(`${w.url}#/${path}${path.includes("?") ? "&" : "?"}cluster=${CLUSTER}&token=${token}`);
}

const text = async (page: Page, testId: string): Promise<string> =>
  ((await page.getByTestId(testId).first().textContent()) ?? "").trim();

/** Retries until `check` returns a value (page and API both move with the live cluster). */
const agree = <T>(what: string, check: () => Promise<T | undefined>): Promise<T> =>
  waitFor(what, check, { timeoutMs: 30_000, intervalMs: 250 });

async function shot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(resolve(ROOT, SHOTS), `console-${name}.png`) });
}

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} exists (apt-get install -y chromium)`);
  assert.ok(existsSync(join(ROOT, "ui/dist/index.html")), "the UI is built (npm run build:ui)");
  tmp = mkdtempSync(join(tmpdir(), "wave-e2e-console-"));
  if (SHOTS) mkdirSync(resolve(ROOT, SHOTS), { recursive: true });
  w = await startWave(
    {
      ...DEFAULTS,
      port: 0,
      grpcPort: 0,
      webhookPort: 0,
      dataDir: join(tmp, "sim"),
      logLevel: "error",
      simulate: true,
      clusterId: CLUSTER,
    },
    {},
    { log: createLogger({ level: "error", base: { app: "wave-e2e-console" } }) },
  );
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
  });
});

after(async () => {
  await browser.close();
  await w.stop();
  rmSync(tmp, { recursive: true, force: true });
});

test(
  "console e2e (simulated cluster): every page shows the API's figures",
  { timeout: 240_000 },
  async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.on("pageerror", (err) => log(`page error: ${err.message}`));

    // Overview: cards = /overview.
    await open(page, "overview", w.tokens.viewer);
    const o = await agree("overview cards = API", async () => {
      const x = await api<OverviewDto>(cl("overview"));
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
    log(`overview: ${o.nodes} nodes, ${usd(o.costPerHour)}/h = API`);
    await shot(page, "overview");

    // NodePools: each row = /nodepools.
    await open(page, "nodepools", w.tokens.viewer);
    const pools = await agree("pool rows = API", async () => {
      const ps = await api<NodePoolDto[]>(cl("nodepools"));
      const rows = await page.getByTestId("pool-row").all();
      if (rows.length !== ps.length) return undefined;
      for (const p of ps) {
        const row = page.getByTestId("pool-row").filter({ hasText: p.name }).first();
        const cells = (await row.locator("td").allTextContents()).map((c) => c.trim());
        if (cells[1] !== num(p.nodes) || !cells.includes(usd(p.costPerHour))) return undefined;
      }
      return ps;
    });
    await page.getByTestId("pool-chart-nodes").waitFor({ timeout: 30_000 });
    log(`nodepools: ${pools.length} rows = API, per-pool charts drawn`);
    await shot(page, "nodepools");

    // Nodes: count = /nodes; sort by cost via the header button sets aria-sort.
    await open(page, "nodes", w.tokens.viewer);
    const total = await agree("node table count = API", async () => {
      const t = (await api<NodeListDto>(cl("nodes?limit=1"))).total;
      return (await page.locator("[data-testid=node-table] h2 .count").textContent()) === `(${num(t)})`
        ? t
        : undefined;
    });
    const costHeader = page.getByRole("button", { name: /^\$\/h/ });
    assert.equal(await costHeader.locator("xpath=..").getAttribute("aria-sort"), "descending");
    // The drawer: a node's price and timeline.
    await page.getByTestId("node-row").first().click();
    await page.getByTestId("node-drawer").getByTestId("drawer-price").waitFor({ timeout: 20_000 });
    log(`nodes: ${total} rows = API; drawer opens`);
    await shot(page, "nodes-drawer");
    await page.keyboard.press("Escape");

    // Disruptions: the table's count = /disruptions in the range.
    await open(page, "disruptions?range=1h", w.tokens.viewer);
    const d = await agree("disruption count = API", async () => {
      const rows = await api<DisruptionDto[]>(cl(`disruptions?limit=1000&from=${Date.now() - 3_600_000}`));
      const shown = await page
        .locator("[data-testid=disruption-table] h2 .count")
        .textContent()
        .catch(() => null);
      return shown === `(${num(rows.length)})` ||
        (rows.length === 0 && (await page.getByText("No disruptions in this range").count()) > 0)
        ? rows
        : undefined;
    });
    log(`disruptions: ${d.length} in the last hour = API`);
    await shot(page, "disruptions");

    // Thrashing: each flagged pool with its evidence and a kubectl patch.
    await open(page, "thrashing", w.tokens.viewer);
    const flagged = await agree("thrashing alerts = API", async () => {
      const rs = (await api<ThrashingDto[]>(cl("thrashing"))).filter((r) => r.severity !== "none");
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
    log(`thrashing: ${flagged.length} flagged pool(s) = API, with kubectl patch`);
    await shot(page, "thrashing");

    // Spot placement: per workload target/actual = /spot-placement.
    await open(page, "spot", w.tokens.viewer);
    const sv = await agree("spot rows = API", async () => {
      const v = await api<SpotViewDto>(cl("spot-placement"));
      if ((await page.getByTestId("spot-row").count()) !== v.workloads.length) return undefined;
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
      }
      return v;
    });
    log(`spot: ${sv.workloads.length} workloads = API`);
    await shot(page, "spot");

    // Warmup: per pool state and counters = /warmup.
    await open(page, "warmup", w.tokens.viewer);
    const wv = await agree("warmup pools = API", async () => {
      const v = await api<WarmupViewDto>(
        cl(`warmup?from=${Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000}`),
      );
      if ((await page.getByTestId("warmup-pool").count()) !== v.pools.length) return undefined;
      for (const p of v.pools) {
        const sec = page.locator(`[data-testid=warmup-pool][data-pool="${p.nodePool}"]`);
        if ((await sec.getByTestId("warmup-state").textContent()) !== p.state) return undefined;
        if ((await sec.getByTestId("pool-hits").textContent()) !== num(p.hits)) return undefined;
      }
      return v;
    });
    log(`warmup: ${wv.pools.length} pools = API`);
    await shot(page, "warmup");
    await page.close();
  },
);

test(
  "console e2e (simulated cluster): a viewer cannot edit; an admin edits spot and warmup policies and core follows",
  { timeout: 180_000 },
  async () => {
    const page = await browser.newPage({ viewport: { width: 900, height: 900 } });
    // At 900 px nothing scrolls sideways.
    await open(page, "spot", w.tokens.viewer);
    await page.getByTestId("spot-row").first().waitFor({ timeout: 30_000 });
    assert.equal(
      await page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth"),
      true,
      "no horizontal overflow at 900 px",
    );

    // Viewer: the edit buttons ask for the admin token; no PUT is possible with the viewer token.
    await page.getByRole("button", { name: "New policy (admin)" }).click();
    await page.getByRole("dialog", { name: "sign in as admin" }).waitFor();
    assert.equal(await page.getByRole("form", { name: "spot policy" }).count(), 0);
    const put = await fetch(new URL("api/v1/policies/spot/Deployment/shop/api", w.url), {
      method: "PUT",
      headers: { authorization: `Bearer ${w.tokens.viewer}`, "content-type": "application/json" },
      body: JSON.stringify({ threshold: 1, strategy: "Prefer" }),
    });
    assert.equal(put.status, 403, "the API refuses a viewer's write");
    // Signing in with the admin token in the prompt turns the page into an editor.
    await page.getByLabel("token").fill(w.tokens.admin);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByTestId("role").filter({ hasText: "admin" }).waitFor({ timeout: 10_000 });

    // Admin edits shop/api's spot policy: threshold 5, previewed before saving.
    const before = (await api<SpotViewDto>(cl("spot-placement"))).workloads.find(
      (x) => x.workload.name === "api",
    );
    assert.ok(before, "the simulator runs shop/api");
    await page.getByTestId("spot-row").filter({ hasText: "shop/api" }).click();
    await page
      .getByTestId("spot-detail")
      .getByRole("button", { name: /policy/ })
      .click();
    const form = page.getByRole("form", { name: "spot policy" });
    await form.getByLabel("on-demand base (threshold)").fill("5");
    const preview = (await page.getByTestId("spot-preview").textContent()) ?? "";
    assert.match(
      preview,
      new RegExp(`^Effect: ${Math.min(5, before.pods)} of ${before.pods} pods on-demand`),
    );
    await form.getByRole("button", { name: "Save" }).click();
    const set = await agree(
      "the stored spot policy (what the webhook pulls) to say threshold 5",
      async () => {
        const s = await api<SpotPolicySetDto>("policies/spot");
        return s.policies.find((p) => p.workload.name === "api")?.threshold === 5 ? s : undefined;
      },
    );
    await agree("the spot page to show the new target", async () => {
      const v = await api<SpotViewDto>(cl("spot-placement"));
      const x = v.workloads.find((y) => y.workload.name === "api");
      const shown = await page
        .getByTestId("spot-row")
        .filter({ hasText: "shop/api" })
        .getByTestId("spot-target")
        .textContent();
      return x?.target &&
        x.target.onDemand === Math.min(5, x.pods) &&
        shown === `${num(x.target.onDemand)} / ${num(x.target.spot)}`
        ? x
        : undefined;
    });
    log(`spot policy saved from the UI: revision ${set.revision}; preview "${preview}"`);

    // Admin enables warmup on a pool with a cost cap; preview first.
    await open(page, "warmup", w.tokens.admin);
    const sec = page.locator("[data-testid=warmup-pool]").first();
    const poolName = (await sec.getAttribute("data-pool")) ?? "";
    await sec.getByRole("button", { name: /policy/ }).click();
    const wf = page.getByRole("form", { name: `warmup policy for ${poolName}` });
    await wf.getByLabel("max warm nodes").fill("2");
    assert.match(
      (await page.getByTestId("warmup-preview").textContent()) ?? "",
      /^Effect: up to \d+ warm node/,
    );
    await wf.getByLabel(/^TTL/).fill("10");
    assert.equal(
      await wf.getByRole("button", { name: "Save" }).isDisabled(),
      true,
      "an invalid TTL cannot be saved",
    );
    await wf.getByLabel(/^TTL/).fill("900");
    await wf.getByRole("button", { name: "Save" }).click();
    await agree("the warmup policy stored and shown", async () => {
      const ps = await api<WarmupPolicyDto[]>("policies/warmup");
      const p = ps.find((x) => x.nodePool === poolName);
      const shown = await sec.getByTestId("warmup-policy").textContent();
      return p?.policy.enabled && p.policy.maxWarmNodes === 2 && shown?.startsWith("enabled · max 2 warm")
        ? p
        : undefined;
    });
    log(`warmup policy saved from the UI for pool ${poolName}`);
    await page.close();
  },
);
