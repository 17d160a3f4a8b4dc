// The What-if page in Chromium on the embedded simulated cluster (issues 38 and 43): a user picks
// a workload and a candidate threshold, replays the last 24 h and reads the result beside the
// current policy — cost/h and pod start p95 as the API's report says, the model check, the
// side-by-side table — at 1440 and 900 px, nothing scrolling sideways. Screenshots go to
// $WAVE_SCREENSHOT_DIR when set (README, Screenshots). Runs without the rig.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import type { Browser } from "playwright-core";
import type { Started } from "../../src/cli/start.ts";
import type { SpotViewDto } from "../../src/dashboard/dto.ts";
import { workloadKey, workloadName } from "../../src/policy/spot.ts";
import { agree, api, cl, launchChromium, open, shot, startSimulated, type Site } from "./console-pages.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const SHOTS = process.env["WAVE_SCREENSHOT_DIR"];

let tmp = "";
let w: Started;
let site: Site;
let browser: Browser;

const log = (msg: string): void => void process.stderr.write(`# ${msg}\n`);

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "wave-e2e-whatif-"));
  if (SHOTS) mkdirSync(resolve(ROOT, SHOTS), { recursive: true });
  w = await startSimulated(join(tmp, "data"), "default", "wave-e2e-whatif", log);
  site = {
    url: w.url,
    cluster: "default",
    viewer: w.tokens.viewer,
    shots: SHOTS && resolve(ROOT, SHOTS),
    log,
  };
  browser = await launchChromium();
});

after(async () => {
  await browser.close();
  await w.stop();
  if (tmp !== "") rmSync(tmp, { recursive: true, force: true });
});

test("What-if at 1440 and 900 px: a spot candidate replayed, its cost and pod start beside the current policy", async () => {
  // The demo's workload with a spot policy, as the Spot page lists it.
  const spot = await api<SpotViewDto>(site, cl(site, "spot-placement"));
  const target = spot.workloads.find((x) => x.policy !== null) ?? spot.workloads[0];
  assert.ok(target, "the demo has a workload to replay");
  const name = workloadName(target.workload);
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  page.on("pageerror", (err) => log(`page error: ${err.message}`));
  await open(site, page, "whatif", site.viewer);
  const select = page.getByRole("combobox", { name: "workload or NodePool" });
  await agree("the workload among the What-if's choices", async () =>
    (await select.locator("option", { hasText: name }).count()) > 0 ? true : undefined,
  );
  await select.selectOption(`workload:${workloadKey(target.workload)}`);
  await page.getByRole("spinbutton", { name: "on-demand base (threshold)" }).fill("1");
  await page.getByRole("button", { name: "Replay the last 24 h" }).click();
  const result = page.getByTestId("whatif-result");
  await agree("the replay's result", async () => ((await result.count()) > 0 ? true : undefined), 180_000);
  const headline = (await result.locator("p").first().textContent()) ?? "";
  log(headline);
  // The headline: cost/h now → with the candidate, pod start p95 on both sides.
  assert.match(
    headline,
    /cost\/h \$[\d.,]+k? now → \$[\d.,]+k? with the candidate; pod start p95 \d+ s → \d+ s/,
  );
  assert.match(
    (await page.getByTestId("whatif-model-check").textContent()) ?? "",
    /Model check: the current policy replayed at .* recorded .*Pod start replayed p50/,
    "the model check of cost and pod start against what core recorded",
  );
  const rows = await result.locator("table tbody th").allTextContents();
  for (const want of ["cost/h (average)", "spot share", "pod start p50", "pod start p95"])
    assert.ok(rows.includes(want), `the table's ${want} row, current beside candidate`);
  // One replay, seen at both widths: the result re-lays out, nothing scrolls sideways.
  for (const width of [1440, 900]) {
    await page.setViewportSize({ width, height: 1000 });
    assert.equal(
      await page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth"),
      true,
      `nothing scrolls sideways at ${width} px`,
    );
    await shot({ ...site, prefix: "console" }, page, `whatif-${width}`);
  }
  await page.close();
});
