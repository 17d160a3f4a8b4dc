// The Overview's pending pods in Chromium on the embedded simulated cluster (issue 43): the card
// and the table show the same count (one read, the API's), each reason names its NodePool — none
// reads "no NodePool" — with its fix, and a reason with a node to launch shows its cost.
// Screenshots at 1440 and 900 px go to $WAVE_SCREENSHOT_DIR when set (README, Screenshots).
// The embedded cluster's pod no NodePool can take (data/indexer) is pending only 30 min every 4 h,
// so Wave and the browser run on a clock set in such a window, whatever the time of day.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { livingDemand } from "../../src/sim/living.ts";
import { GearClock } from "../support/gear-clock.ts";
import type { Browser } from "playwright-core";
import type { PendingViewDto } from "../../src/dashboard/dto.ts";
import type { Started } from "../../src/cli/start.ts";
import {
  agree,
  api,
  cl,
  launchChromium,
  open,
  shot,
  startSimulated,
  text,
  type Site,
} from "./console-pages.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const SHOTS = process.env["WAVE_SCREENSHOT_DIR"];

let tmp = "";
let w: Started;
let site: Site;
let browser: Browser;

const log = (msg: string): void => void process.stderr.write(`# ${msg}\n`);

const MIN = 60_000;

/**
 * The middle of the living cluster's last whole window before `now` in which its indexer is
 * pending: Karpenter has given its reasons and the pod waits well past the test's end. In the
 * past, as all of the simulated history is (the start-up fast-forwards to the clock's now).
 */
function indexerPendingMidpoint(now: number): number {
  const on = (t: number): boolean => (livingDemand(t)["data/indexer"] ?? 0) > 0;
  const stop = now - 2 * 24 * 60 * MIN;
  /** Steps back a minute at a time while the indexer's demand is `pending`. */
  const back = (t: number, pending: boolean): number => {
    for (; on(t) === pending; t -= MIN) assert.ok(t > stop, "the indexer is pending some time each day");
    return t;
  };
  const last = back(back(Math.floor(now / MIN) * MIN, true), false);
  const first = back(last, true) + MIN;
  return first + (last + MIN - first) / 2;
}

const clock = new GearClock(indexerPendingMidpoint(Date.now()));

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "wave-e2e-pending-"));
  if (SHOTS) mkdirSync(resolve(ROOT, SHOTS), { recursive: true });
  log(`the cluster's clock starts at ${new Date(clock.now()).toISOString()}`);
  w = await startSimulated(join(tmp, "sim"), "default", "wave-e2e-pending", log, clock);
  site = {
    url: w.url,
    cluster: "default",
    viewer: w.tokens.viewer,
    shots: SHOTS ? resolve(ROOT, SHOTS) : undefined,
    log,
  };
  browser = await launchChromium();
});

after(async () => {
  await browser.close();
  await w.stop();
  rmSync(tmp, { recursive: true, force: true });
});

for (const width of [1440, 900])
  test(
    `pending pods on the Overview at ${width} px: one count, each reason's pool and fix`,
    { timeout: 240_000 },
    async () => {
      const page = await browser.newPage({ viewport: { width, height: 1000 } });
      // The browser's "now" is the cluster's (the Overview's range is read from it).
      await page.clock.install({ time: clock.now() });
      await open(site, page, "overview", site.viewer);
      const v = await agree(
        "a pending pod with Karpenter's reasons, page = API",
        async () => {
          const x = await api<PendingViewDto>(site, cl(site, "pending"));
          if (!x.pods.some((p) => p.reasons.length > 0)) return undefined;
          const card = await text(page, "overview-pending");
          const rows = await page.getByTestId("pending-row").count();
          return card === `${x.pods.length} pending pods` && rows === x.pods.length ? x : undefined;
        },
        180_000,
      );
      const reasons = v.pods.flatMap((p) => p.reasons);
      log(
        `${width} px: ${v.pods.length} pending, ${reasons.length} reasons: ${reasons.map((r) => `${r.nodePool ?? "?"} ${r.kind}`).join(", ")}`,
      );
      assert.ok(
        reasons.every((r) => r.nodePool !== null),
        "every part attributed to its NodePool",
      );
      assert.ok(
        reasons.every((r) => r.fix !== null),
        "a fix per reason",
      );
      assert.ok(
        reasons.some((r) => r.fix?.kubectl && r.costPerHour !== null),
        "a patch with its node's cost",
      );
      assert.ok((await page.getByTestId("pending-fix-patch").count()) > 0);
      // At this width nothing scrolls sideways.
      assert.equal(
        await page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth"),
        true,
        "the page scrolls sideways",
      );
      await page.getByTestId("pending-pods").scrollIntoViewIfNeeded();
      await shot(site, page, `overview-pending-${width}`);
      await page.close();
    },
  );
