// Every console page in Chromium (Debian's chromium via playwright-core) on the embedded
// simulated cluster: each page's figures equal the API's; an admin edits a spot policy and a
// warmup policy in the UI and core (and so the webhook and the warmup controller) follows; a
// viewer sees everything and cannot edit. Screenshots of every page go to $WAVE_SCREENSHOT_DIR
// when set (README: WAVE_SCREENSHOT_DIR=docs/screenshots).
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import type { Browser } from "playwright-core";
import type { SpotPolicySetDto, SpotViewDto, WarmupPolicyDto } from "../../src/dashboard/dto.ts";
import type { Started } from "../../src/cli/start.ts";
import { num } from "../../ui/src/format.ts";
import {
  agree,
  checkEveryPage,
  launchChromium,
  startSimulated,
  api as siteApi,
  cl as siteCl,
  open as siteOpen,
  type Site,
} from "./console-pages.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const SHOTS = process.env["WAVE_SCREENSHOT_DIR"];
const CLUSTER = "default";

let tmp = "";
let w: Started;
let site: Site;
let browser: Browser;

function log(msg: string): void {
  process.stderr.write(`# ${msg}\n`);
}

const api = <T>(path: string, token?: string): Promise<T> => siteApi<T>(site, path, token);
const cl = (p: string): string => siteCl(site, p);
const open = (page: Parameters<typeof siteOpen>[1], path: string, token: string): Promise<void> =>
  siteOpen(site, page, path, token);

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "wave-e2e-console-"));
  if (SHOTS) mkdirSync(resolve(ROOT, SHOTS), { recursive: true });
  w = await startSimulated(join(tmp, "sim"), CLUSTER, "wave-e2e-console", log);
  site = {
    url: w.url,
    cluster: CLUSTER,
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

test(
  "console e2e (simulated cluster): every page shows the API's figures",
  { timeout: 240_000 },
  async () => {
    const o = await checkEveryPage(site, browser);
    assert.ok(o.nodes > 0, "the simulated cluster's nodes are on the overview");
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
    // The living cluster scales shop/api as time goes by: the preview is judged against the pod
    // count of the view it was computed from (the page's own row), not an API read a moment earlier.
    const shownPods = Number(
      (
        await page
          .getByTestId("spot-row")
          .filter({ hasText: "shop/api" })
          .getByTestId("spot-pods")
          .textContent()
      )?.replace(/,/g, "") ?? NaN,
    );
    assert.ok(Math.abs(shownPods - before.pods) <= 3, `page ${shownPods} pods vs API ${before.pods}`);
    assert.match(preview, new RegExp(`^Effect: ${Math.min(5, shownPods)} of ${shownPods} pods on-demand`));
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

test(
  "console e2e (simulated cluster): dark mode follows prefers-color-scheme: dark background and light text, and the reverse",
  { timeout: 60_000 },
  async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await open(page, "overview", w.tokens.viewer);
    await page.getByTestId("overview-nodes").waitFor({ timeout: 30_000 });
    /** What the user sees: the body's text colour and the first opaque background behind it. */
    // A string: this file is typechecked without the DOM's types.
    const colours = (): Promise<{ background: string; text: string }> =>
      page.evaluate(`(() => {
        let el = document.body;
        let background = "";
        while (el && !background) {
          const bg = getComputedStyle(el).backgroundColor;
          if (bg !== "transparent" && !/rgba\\(.*,\\s*0\\)$/.test(bg)) background = bg;
          el = el.parentElement;
        }
        return { background, text: getComputedStyle(document.body).color };
      })()`);
    /** Relative luminance (WCAG) of a computed rgb()/rgba() colour, 0 (black) … 1 (white). */
    const luminance = (css: string): number => {
      const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(css);
      assert.ok(m, `a computed colour: ${css}`);
      const [r = 0, g = 0, b = 0] = m.slice(1, 4).map((x) => {
        const c = Number(x) / 255;
        return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    await page.emulateMedia({ colorScheme: "dark" });
    const dark = await colours();
    assert.ok(luminance(dark.background) < 0.1, `dark: a dark background (${dark.background})`);
    assert.ok(luminance(dark.text) > 0.6, `dark: light text (${dark.text})`);
    await page.emulateMedia({ colorScheme: "light" });
    const light = await colours();
    assert.ok(luminance(light.background) > 0.8, `light: a light background (${light.background})`);
    assert.ok(luminance(light.text) < 0.1, `light: dark text (${light.text})`);
    log(`colours: dark ${dark.background} / ${dark.text}; light ${light.background} / ${light.text}`);
    await page.close();
  },
);
