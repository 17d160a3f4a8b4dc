// One truth per figure, on the embedded simulated cluster (issue 27's Must show; the rig's run is
// crosscheck.e2e.test.ts): `wave start` on the simulated cluster, as `npm start` runs it, and every
// figure of the Overview, NodePools, Nodes, Disruptions, Thrashing, Warmup and Spot pages read
// four ways — the page in Chromium (Debian's chromium via playwright-core), the API, core's
// /metrics, and a recomputation by hand from the simulator's apiserver objects (its MemoryKube,
// read in process, not core's state), priced from the shipped EC2 table directly (spot: the
// documented estimate, 0.35 × on-demand). Counts exact, money and ratios to 1e-6
// (test/e2e/crosscheck.ts). The living cluster moves every few seconds: each page is judged at a
// moment the API answered the same before and after it was read (test/e2e/crosscheck-figures.ts).
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import type { Browser } from "playwright-core";
import type { Started } from "../../src/cli/start.ts";
import type { KindName } from "../../src/kube/kinds.ts";
import type { DisruptionCountsDto, WarmupViewDto } from "../../src/dashboard/dto.ts";
import { api as siteApi, cl, launchChromium, startSimulated, type Site } from "./console-pages.ts";
import { disagreements, sumOf, type Figure } from "./crosscheck.ts";
import {
  checked,
  crossCheckPages,
  disruptionsPage,
  nodesPage,
  overviewPage,
  poolsPage,
  readMetrics,
  spotPage,
  consolidationPage,
  thrashingPage,
  warmupPage,
  type PriceOf,
  type World,
} from "./crosscheck-figures.ts";
import { waitFor, type KubeObject } from "./harness.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const CLUSTER = "default";

let tmp = "";
let w: Started | undefined;
let browser: Browser | undefined;
let world: World;
let pools: string[] = [];

function log(msg: string): void {
  process.stderr.write(`# ${msg}\n`);
}

/** The shipped EC2 on-demand table read directly; spot at the documented estimate (docs/pricing.md). */
function tablePrices(): PriceOf {
  const table = JSON.parse(readFileSync(join(ROOT, "src/pricing/data/ec2-on-demand.json"), "utf8")) as {
    regions: Record<string, { onDemand: Record<string, number> }>;
  };
  return (type, capacityType, zone) => {
    const region = zone?.replace(/[a-z]$/, "");
    const od = region === undefined ? undefined : table.regions[region]?.onDemand[type];
    if (od === undefined) return undefined;
    return capacityType === "spot" ? 0.35 * od : od;
  };
}

async function listOf(kind: KindName): Promise<KubeObject[]> {
  assert.ok(w);
  return (await w.kube.list(kind)).items as unknown as KubeObject[];
}

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "wave-e2e-crosscheck-sim-"));
  w = await startSimulated(join(tmp, "sim"), CLUSTER, "wave-e2e-crosscheck-sim", log);
  const site: Site = { url: w.url, cluster: CLUSTER, viewer: w.tokens.viewer, log };
  world = {
    site,
    price: tablePrices(),
    countersCoverRange: false,
    objects: async () => ({
      nodes: await listOf("Node"),
      nodeClaims: await listOf("NodeClaim"),
      pods: await listOf("Pod"),
      replicaSets: await listOf("ReplicaSet"),
      spotPolicies: await listOf("SpotPolicy"),
      events: await listOf("Event"),
    }),
  };
  pools = (await listOf("NodePool")).map((p) => p.metadata.name).sort();
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await w?.stop();
  if (tmp !== "") rmSync(tmp, { recursive: true, force: true });
});

test(
  "one truth per figure (simulated cluster): every page's figures = API = /metrics = recomputed from the simulator's apiserver objects",
  { timeout: 600_000 },
  async () => {
    assert.ok(browser);
    const all = await crossCheckPages(world, browser, [
      checked(overviewPage),
      checked(poolsPage(() => pools)),
      checked(nodesPage),
      checked(disruptionsPage),
      checked(thrashingPage),
      checked(warmupPage(() => pools)),
      checked(spotPage),
      checked(consolidationPage),
    ]);
    const get = (name: string): Figure | undefined => all.find((f) => f.name === name);
    assert.ok((get("cluster nodes")?.api ?? 0) > 0, "the simulated cluster has nodes");
    assert.ok((get("spot: managed pods")?.api ?? 0) > 0, "the simulated cluster's spot policies place pods");
    assert.ok((get("disruption counts, last hour (Disruptions page)")?.api ?? 0) > 0, "it disrupts");
    assert.equal(pools.length, all.filter((f) => /^pool .*: nodes$/.test(f.name)).length);
  },
);

test(
  "one truth per figure (simulated cluster): /metrics' counters = the API's counts since core started",
  { timeout: 120_000 },
  async () => {
    // The counters count from core's start (the generated day included); so does the API from 0.
    const api = <T>(p: string): Promise<T> => siteApi<T>(world.site, cl(world.site, p));
    let last: string[] = [];
    const figures = await waitFor(
      "the counters to equal the API's counts at a stable moment",
      async () => {
        const before = await api<DisruptionCountsDto>("disruptions/counts?from=0");
        const wv = await api<WarmupViewDto>("warmup?from=0");
        const m = await readMetrics(world.site);
        const after = await api<DisruptionCountsDto>("disruptions/counts?from=0");
        const c = { cluster: CLUSTER };
        const fs: Figure[] = [
          {
            name: "disruptions since core started",
            kind: "count",
            api: before.total,
            others: { metrics: sumOf(m, "wave_disruptions_total", c) },
          },
          ...wv.pools.map((p): Figure => ({
            name: `pool ${p.nodePool}: warmup hits since core started`,
            kind: "count",
            api: p.hits,
            others: { metrics: sumOf(m, "wave_warmup_hits_total", { ...c, nodepool: p.nodePool }) ?? 0 },
          })),
        ];
        last = disagreements(fs);
        if (after.total !== before.total) last = ["the cluster moved", ...last];
        if (last.length) log(`counters: ${last.join("; ")}`);
        return last.length ? undefined : fs;
      },
      { timeoutMs: 90_000, intervalMs: 1000 },
    ).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${last.join("\n")}`);
    });
    for (const f of figures) log(`${f.name} = ${f.api} (api, metrics)`);
  },
);
