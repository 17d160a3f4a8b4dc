// The console in Chromium at scale: 5,000 nodes / 150,000 pods (bench/dashboard's generator) in
// a ClusterHub served by the real routes and the built UI (ui/dist).
//   npm run bench:ui            (add -- --strict to exit 1 when a goal is missed,
//                                -- --profile for each Wave load's requests and server times)
// Measured, each against a baseline page of the same size served by the same process in the
// same run — plain DOM code (no React, no Wave components) that fetches the overview's answers
// and the whole node list (GET /nodes?limit=5000, sorted in the page), and renders the same cards
// and an un-virtualized table of every node; Wave's node table asks core for the rows in view:
//  - first full overview: navigation start → the cards show the API's node count and the
//    history chart is drawn (baseline: cards filled);
//  - node table to interactive: navigation start → rows shown AND a sort click answered;
//  - JS heap (CDP JSHeapUsedSize after a GC) with the node table open;
//  - shipped JS, gzipped (ui/dist/assets/*.js).
// Goals: overview ≤ 1.5 s, node table ≤ 1 s to interactive, heap ≤ 150 MiB, JS ≤ 300 kB gz.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import fastifyStatic from "@fastify/static";
import { chromium, type Page } from "playwright-core";
import { build } from "../../src/api/app.ts";
import { consoleRoutes } from "../../src/api/routes/console.ts";
import { dashboardRoutes } from "../../src/api/routes/dashboard.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { openStore } from "../../src/core/store/open.ts";
import { createPricing } from "../../src/pricing/setup.ts";
import { realClock } from "../../src/shared/clock.ts";
import { createLogger } from "../../src/shared/log.ts";
import { machine, NODES, pod, pool, PODS_PER_NODE, POOLS } from "../dashboard/state.ts";

const STRICT = process.argv.includes("--strict");
const PROFILE = process.argv.includes("--profile");
const ROOT = resolve(import.meta.dirname, "../..");
const DIST = join(ROOT, "ui/dist");
const CHROMIUM = "/usr/bin/chromium";
const ROUNDS = 3;
const CLUSTER = "bench";
const TOKEN = "bench-viewer-token";
const log = createLogger({ level: "error" });

/** The baseline: the same data and the same visible result, in plain DOM code. */
const BASELINE = `<!doctype html><html><head><meta charset="utf-8"><title>baseline</title></head><body>
<div id="cards"></div><table id="t"><thead><tr><th id="sort">node</th><th>pool</th><th>type</th><th>capacity</th><th>zone</th><th>cpu</th><th>pods</th><th>$/h</th></tr></thead><tbody></tbody></table>
<script>
const H = { authorization: "Bearer ${TOKEN}" };
const j = (p) => fetch("api/v1/clusters/${CLUSTER}/" + p, { headers: H }).then((r) => r.json());
const page = location.hash.slice(1);
if (page === "overview") {
  Promise.all([j("overview"), j("nodepools"), j("series?window=3600")]).then(([o, pools]) => {
    document.getElementById("cards").innerHTML = "<div data-testid=nodes>" + o.nodes.toLocaleString("en-US") + "</div><div>$" + o.costPerHour.toFixed(2) + "</div>" +
      pools.map((p) => "<div>" + p.name + " " + p.nodes + "</div>").join("");
  });
} else {
  j("nodes?limit=5000").then((d) => {
    let rows = d.items;
    const draw = () => { document.querySelector("tbody").innerHTML = rows.map((n) => "<tr data-testid=node-row><td>" + n.name + "</td><td>" + n.nodePool + "</td><td>" + n.instanceType + "</td><td>" + n.capacityType + "</td><td>" + n.zone + "</td><td>" + n.cpu.requested + "/" + n.cpu.allocatable + "</td><td>" + n.pods + "</td><td>" + n.costPerHour.toFixed(3) + "</td></tr>").join(""); };
    draw();
    document.getElementById("sort").onclick = () => { rows = [...rows].sort((a, b) => b.costPerHour - a.costPerHour); draw(); document.body.dataset.sorted = "1"; };
  });
}
</script></body></html>`;

async function heapMiB(page: Page): Promise<number> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("HeapProfiler.collectGarbage");
  await cdp.send("Performance.enable");
  const { metrics } = await cdp.send("Performance.getMetrics");
  await cdp.detach();
  return (metrics.find((m) => m.name === "JSHeapUsedSize")?.value ?? 0) / 2 ** 20;
}

/** --profile: when each request of the page started and ended, its size, and the first paints. */
async function timeline(page: Page, what: string, done: number): Promise<void> {
  if (!PROFILE) return;
  const entries = await page.evaluate<{ name: string; start: number; end: number; size: number }[]>(
    `[...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource"), ...performance.getEntriesByType("paint")].map((e) => ({ name: e.name.replace(location.origin, ""), start: e.startTime, end: e.responseEnd ?? e.startTime, size: e.encodedBodySize ?? 0 }))`,
  );
  console.log(`${what}: done at ${done.toFixed(0)} ms`);
  for (const e of entries.sort((a, b) => a.start - b.start))
    console.log(
      `  ${e.start.toFixed(0).padStart(5)} → ${e.end.toFixed(0).padStart(5)} ms  ${(e.size / 1024).toFixed(1).padStart(8)} kB  ${e.name.slice(0, 90)}`,
    );
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<number> {
  if (!existsSync(join(DIST, "index.html")))
    throw new Error("ui/dist is missing: run npm run build:ui first");
  const dir = await mkdtemp(join(tmpdir(), "wave-bench-ui-"));
  const store = await openStore({ backend: "sqlite", path: join(dir, "bench.db") }, { log });
  const hub = new ClusterHub(store, realClock);
  const entry = hub.ensure(CLUSTER);
  const machines = Array.from({ length: NODES }, (_, i) => machine(i));
  entry.state.batch(() => {
    for (let i = 0; i < POOLS; i++) entry.state.apply("NodePool", "add", pool(i));
    for (const m of machines) {
      entry.state.apply("Node", "add", m.node);
      entry.state.apply("NodeClaim", "add", m.claim);
    }
    let p = 0;
    for (const m of machines)
      for (let k = 0; k < PODS_PER_NODE; k++)
        entry.state.apply("Pod", "add", pod(p++, m.node.metadata.name ?? ""));
  });
  const prices = createPricing({ clock: realClock, log }).provider;
  const app = await build({
    tokens: { admin: "bench-admin-token", viewer: TOKEN },
    plugins: [
      dashboardRoutes({ hub, prices, now: () => Date.now() }),
      consoleRoutes({ hub, prices, now: () => Date.now() }),
      (s) => {
        s.get("/baseline", async (_req, reply) => reply.type("text/html").send(BASELINE));
      },
      async (s) => {
        await s.register(fastifyStatic, { root: DIST });
      },
    ],
  });
  if (PROFILE)
    // Request in → answer written, as the server sees it (the stream: until its first snapshot).
    app.server.prependListener("request", (req, res) => {
      const t = performance.now();
      const done = (): void =>
        console.log(
          `  server ${(performance.now() - t).toFixed(0).padStart(5)} ms  ${req.url?.slice(0, 80)}`,
        );
      if (!req.url?.endsWith("/stream")) {
        res.once("finish", done);
        return;
      }
      const write = res.write.bind(res) as (chunk: unknown) => boolean;
      res.write = ((chunk: unknown) => {
        if (String(chunk).startsWith("id:")) {
          res.write = write as typeof res.write;
          done();
        }
        return write(chunk);
      }) as typeof res.write;
    });
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  const c = entry.state.counts();
  console.log(
    `state: ${c.nodes.toLocaleString("en-US")} nodes, ${c.pods.toLocaleString("en-US")} pods, ${POOLS} pools · ` +
      `machine: ${availableParallelism()} cores, load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`,
  );

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu"],
  });
  // waitForFunction compiles its predicate in the page, which core's Content-Security-Policy
  // (script-src 'self', no eval) refuses; the policy does not change what is timed.
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 }, bypassCSP: true });
  const res = {
    wave: { overview: [] as number[], table: [] as number[], heap: [] as number[] },
    base: { overview: [] as number[], table: [] as number[], heap: [] as number[] },
  };
  const nodes = NODES.toLocaleString("en-US");
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // Wave: overview (cards with the API's count and the chart drawn).
      let page = await ctx.newPage();
      await page.goto(`${url}/#/overview?cluster=${CLUSTER}&token=${TOKEN}`);
      await page.waitForFunction(
        `document.querySelector("[data-testid=overview-nodes]")?.textContent === ${JSON.stringify(nodes)} && !!document.querySelector(".chart canvas, [data-testid=history-chart], .empty")`,
        undefined,
        { timeout: 60_000, polling: 10 },
      );
      res.wave.overview.push(await page.evaluate<number>("performance.now()"));
      await timeline(page, "wave overview", res.wave.overview.at(-1) ?? 0);
      await page.close();
      // Wave: node table to interactive (rows, then a sort click answered).
      page = await ctx.newPage();
      await page.goto(`${url}/#/nodes?cluster=${CLUSTER}&token=${TOKEN}`);
      await page.getByTestId("node-row").first().waitFor({ timeout: 60_000 });
      const rowsAt = PROFILE ? await page.evaluate<number>("performance.now()") : 0;
      const before = await page.getByTestId("node-row").first().textContent();
      await page.getByRole("button", { name: /^node/ }).click();
      if (PROFILE)
        console.log(
          `wave node table: rows seen at ${rowsAt.toFixed(0)} ms, sort clicked by ${(await page.evaluate<number>("performance.now()")).toFixed(0)} ms`,
        );
      await page.waitForFunction(
        `document.querySelector("[data-testid=node-row]")?.textContent !== ${JSON.stringify(before)}`,
        undefined,
        { timeout: 30_000, polling: 10 },
      );
      res.wave.table.push(await page.evaluate<number>("performance.now()"));
      await timeline(page, "wave node table", res.wave.table.at(-1) ?? 0);
      res.wave.heap.push(await heapMiB(page));
      await page.close();

      // Baseline, same data, same server.
      page = await ctx.newPage();
      await page.goto(`${url}/baseline#overview`);
      await page.waitForFunction(
        `document.querySelector("[data-testid=nodes]")?.textContent === ${JSON.stringify(nodes)}`,
        undefined,
        { timeout: 60_000, polling: 10 },
      );
      res.base.overview.push(await page.evaluate<number>("performance.now()"));
      await page.close();
      page = await ctx.newPage();
      await page.goto(`${url}/baseline#nodes`);
      await page.getByTestId("node-row").first().waitFor({ timeout: 60_000 });
      await page.click("#sort");
      await page.waitForFunction(`document.body.dataset.sorted === "1"`, undefined, {
        timeout: 30_000,
        polling: 10,
      });
      res.base.table.push(await page.evaluate<number>("performance.now()"));
      res.base.heap.push(await heapMiB(page));
      await page.close();
    }
  } finally {
    await browser.close();
    await app.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }

  const js = readdirSync(join(DIST, "assets"))
    .filter((f) => f.endsWith(".js"))
    .reduce((a, f) => a + gzipSync(readFileSync(join(DIST, "assets", f))).length, 0);
  const row = (
    what: string,
    w: number,
    b: number,
    goal: number,
    unit: string,
    fmt: (v: number) => string,
  ): boolean => {
    const ok = w <= goal;
    console.log(
      `${what.padEnd(28)} wave ${fmt(w).padStart(9)}  baseline ${fmt(b).padStart(9)}  ratio ${(w / b).toFixed(2)}  goal ≤ ${fmt(goal)} ${unit}: ${ok ? "met" : "MISSED"}`,
    );
    return ok;
  };
  const ms = (v: number): string => `${v.toFixed(0)} ms`;
  const mb = (v: number): string => `${v.toFixed(1)} MiB`;
  console.log(`medians of ${ROUNDS} rounds (fresh page each):`);
  const ok = [
    row("first full overview", median(res.wave.overview), median(res.base.overview), 1500, "", ms),
    row("node table to interactive", median(res.wave.table), median(res.base.table), 1000, "", ms),
    row("JS heap (node table open)", median(res.wave.heap), median(res.base.heap), 150, "", mb),
  ].every(Boolean);
  const jsOk = js <= 300 * 1024;
  console.log(
    `shipped JS (gzipped)         ${(js / 1024).toFixed(1)} kB  goal ≤ 300 kB: ${jsOk ? "met" : "MISSED"}`,
  );
  return STRICT && !(ok && jsOk) ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
