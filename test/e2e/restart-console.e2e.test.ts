// Issue 43, in Chromium on the embedded simulated cluster: a user sets policies and applies the
// Thrashing page's fix, Wave is stopped and started again on the same data dir — the policies, the
// fix and the tokens are intact, the batch pool stays calm, and the dashboard link printed by the
// first start still opens the console. Runs without the rig (Debian's chromium + playwright-core,
// as browser-console.e2e.test.ts). Screenshots of Thrashing (the Apply confirmation open) and Spot
// at 1440 and 900 px go to $WAVE_SCREENSHOT_DIR when set (README: docs/screenshots).
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { startWave, type Started } from "../../src/cli/start.ts";
import type { SpotPolicySetDto, ThrashingDto, WarmupPolicyDto } from "../../src/dashboard/dto.ts";
import { createLogger } from "../../src/shared/log.ts";
import { GearClock } from "../support/gear-clock.ts";
import { simulatedConfig } from "../support/wave.ts";
import { agree, launchChromium } from "./console-pages.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const SHOTS = process.env["WAVE_SCREENSHOT_DIR"];
const CLUSTER = "default";
const MIN = 60_000;
/** The detector's window: after it, no cycle from before the fix is left in the score. */
const WINDOW = 30 * MIN;
const GEAR = 60;

// Starts at the real now: the browser's range picker ("last 1h") reads its own clock, and a
// cluster behind it would answer "to must not be before from". The batch job thrashes all day.
const clock = new GearClock(Date.now());
let tmp = "";
let dataDir = "";
let browser: Browser;

function log(msg: string): void {
  process.stderr.write(`# ${msg}\n`);
}

/** `wave start` on the data dir; `port`: the API's (the second run takes the first's, as a user's fixed --port). */
async function start(port = 0): Promise<Started> {
  const w = await startWave(
    { ...simulatedConfig(dataDir, CLUSTER), port },
    {},
    {
      clock,
      log: createLogger({ level: "error", base: { app: "wave-e2e-restart" } }),
      simulatedHistoryMs: WINDOW,
    },
  );
  await w.caughtUp;
  // Core trails the cluster by the deltas still in flight.
  await new Promise((r) => setTimeout(r, 3000));
  return w;
}

async function call(w: Started, path: string, token: string, body?: unknown): Promise<Response> {
  return fetch(new URL(`api/v1/clusters/${CLUSTER}/${path}`, w.url), {
    method: body === undefined ? "GET" : "PUT",
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function get<T>(w: Started, path: string): Promise<T> {
  const res = await call(w, path, w.tokens.viewer);
  assert.equal(res.status, 200, `${path}: ${res.status}`);
  return (await res.json()) as T;
}

const batchReport = async (w: Started): Promise<ThrashingDto | undefined> =>
  (await get<ThrashingDto[]>(w, "thrashing")).find((t) => t.nodePool === "batch");

async function shot(page: Page, name: string): Promise<void> {
  if (!SHOTS) return;
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(resolve(ROOT, SHOTS), `console-${name}.png`) });
}

/** Opens `page` of the console at `width` px through `link` (the banner's dashboard link). */
async function openAt(p: Page, link: string, route: string): Promise<void> {
  await p.goto(link);
  await p.evaluate(`location.hash = ${JSON.stringify(`#/${route}?cluster=${CLUSTER}`)}`);
}

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "wave-e2e-restart-"));
  dataDir = join(tmp, "data");
  if (SHOTS) mkdirSync(resolve(ROOT, SHOTS), { recursive: true });
  browser = await launchChromium();
});

after(async () => {
  await browser.close();
  rmSync(tmp, { recursive: true, force: true });
});

test(
  "restart on the same data dir (simulated cluster, Chromium): policies, the thrashing fix and the tokens survive; thrashing stays cleared; the old link works",
  { timeout: 600_000 },
  async () => {
    // ---- the first run: policies set, the fix applied in the page ----
    const first = await start();
    const tokens = { ...first.tokens };
    // What `wave start` printed: "Dashboard: <url>#token=<viewer>".
    const link = `${first.url}#token=${tokens.viewer}`;
    const spot = await call(first, "policies/spot/Deployment/shop/web", tokens.admin, {
      threshold: 4,
      strategy: "Prefer",
    });
    assert.equal(spot.status, 200, await spot.text());
    const warm = await call(first, "policies/warmup/batch", tokens.admin, {
      enabled: true,
      maxWarmNodes: 1,
      ttlSeconds: 300,
      cooldownSeconds: 300,
    });
    assert.equal(warm.status, 200, await warm.text());
    const flagged = await batchReport(first);
    assert.ok(flagged?.flagged, `batch thrashes before the fix: ${JSON.stringify(flagged)}`);

    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await openAt(page, link, "thrashing");
    const alert = page.locator('[data-testid="thrashing-alert"][data-pool="batch"]');
    await alert.waitFor({ timeout: 30_000 });
    const raise = alert.locator("li", { hasText: "Raise consolidateAfter" });
    await raise.getByRole("button", { name: "Apply (admin)" }).click();
    await page.getByRole("dialog", { name: "sign in as admin" }).waitFor();
    await page.getByLabel("token").fill(tokens.admin);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    const confirm = page.getByRole("group", { name: "apply the fix to batch" });
    await confirm.waitFor({ timeout: 10_000 });
    // The confirmation is a block under the command, not a column one letter wide.
    const box = await confirm.boundingBox();
    assert.ok(
      box && box.height < 160 && box.width > 600,
      `confirmation box at 1440 px: ${JSON.stringify(box)}`,
    );
    await confirm.scrollIntoViewIfNeeded();
    await shot(page, "thrashing-apply-1440");
    await page.setViewportSize({ width: 900, height: 900 });
    const narrow = await confirm.boundingBox();
    assert.ok(narrow && narrow.height < 220, `confirmation box at 900 px: ${JSON.stringify(narrow)}`);
    await confirm.scrollIntoViewIfNeeded();
    await shot(page, "thrashing-apply-900");
    await confirm.getByRole("button", { name: "Apply patch" }).click();
    await page.getByTestId("fix-applied").waitFor({ timeout: 10_000 });
    const fixed = (await first.kube.get("NodePool", "batch")).spec.disruption?.consolidateAfter;
    assert.equal(fixed, "15m");
    // The page now says when the fix went in and when the score should clear.
    await agree("the page to say the fix is in effect", async () => {
      await page.reload();
      return (await page.getByTestId("fix-in-effect").count()) > 0 ? true : undefined;
    });
    const fixedAt = clock.now();

    // 40 minutes of the cluster's time: the cycles from before the fix leave the window.
    await clock.run(WINDOW + 10 * MIN, GEAR);
    await new Promise((r) => setTimeout(r, 3000));
    const calm = await batchReport(first);
    log(`batch ${(clock.now() - fixedAt) / MIN} min after the fix: ${calm?.severity} (${calm?.score})`);
    assert.equal(calm?.severity, "none", JSON.stringify(calm));
    await page.close();
    await first.stop();

    // ---- the second run, same data dir ----
    const second = await start(first.apiPort);
    try {
      assert.deepEqual(second.tokens, tokens, "the tokens are the data dir's");
      assert.equal((await second.kube.get("NodePool", "batch")).spec.disruption?.consolidateAfter, "15m");
      const policies = await agree("the spot policies back", async () => {
        const s = await get<SpotPolicySetDto>(second, "policies/spot");
        return s.policies.some((p) => p.workload.name === "web") ? s : undefined;
      });
      assert.equal(policies.policies.find((p) => p.workload.name === "web")?.threshold, 4);
      assert.ok(policies.policies.length >= 4, `web and the scenario's: ${policies.policies.length}`);
      const warmups = await get<WarmupPolicyDto[]>(second, "policies/warmup");
      assert.deepEqual(warmups.map((p) => p.nodePool).sort(), ["analytics", "batch", "general"]);

      // The old link, in a fresh browser session: it opens the console, no token rejected.
      const again = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      await openAt(again, link, "thrashing");
      await again.getByTestId("no-thrashing").or(again.getByTestId("thrashing-alert").first()).waitFor();
      assert.equal(await again.getByTestId("token-rejected").count(), 0);
      assert.equal(
        await again.locator('[data-testid="thrashing-alert"][data-pool="batch"]').count(),
        0,
        "batch is not flagged after the restart",
      );
      await openAt(again, link, "spot");
      await again
        .getByTestId("spot-row")
        .filter({ hasText: "deployment/shop/web" })
        .first()
        .waitFor({ timeout: 30_000 })
        .catch(async (err: unknown) => {
          await again.screenshot({
            path: join(tmpdir(), "wave-e2e-restart-spot-failed.png"),
            fullPage: true,
          });
          throw err;
        });
      await shot(again, "spot-1440");
      await again.setViewportSize({ width: 900, height: 900 });
      await again.waitForTimeout(300);
      assert.equal(
        await again.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth"),
        true,
        "no horizontal overflow at 900 px",
      );
      await shot(again, "spot-900");

      // 20 more minutes: the batch pool stays calm on the restored NodePool.
      await clock.run(20 * MIN, GEAR);
      await new Promise((r) => setTimeout(r, 3000));
      const still = await batchReport(second);
      log(`batch 20 min after the restart: ${still?.severity} (${still?.score})`);
      assert.equal(still?.severity, "none", JSON.stringify(still));
      await again.close();
    } finally {
      await second.stop();
    }
  },
);
