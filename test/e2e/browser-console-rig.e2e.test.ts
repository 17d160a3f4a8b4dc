// The console in Chromium (Debian's chromium via playwright-core) against Wave on the rig (real
// kube-apiserver + Karpenter's KWOK provider): the issue-13 Must-show lines that say "on the rig".
// Wave runs as in production, split in two: `wave start` in this process (agent → gRPC → core →
// API + UI, and the warmup controller on core's policies) and a `wave webhook` process (spot
// placement and its repair) that long-polls its spot policies from core's API, registered with
// the apiserver for this test's namespace only. On a NodePool of the test's own (spot and
// on-demand, tainted), a Deployment of pods that each fill most of a node:
//   spot      a viewer cannot edit (token prompt, 403 from the API); an admin creates a spot
//             policy in the UI (threshold 1) → the pods are placed 1 on-demand / 2 spot by node;
//             raises it to 2 in the UI → the repair moves one pod (a WaveSpotRepair Event) → 2 / 1;
//             the Spot page shows the split and the self-heal action, equal to the API's
//   warmup    an admin enables warmup for the pool in the UI → a warmup pod appears, Karpenter
//             launches a node for it → while the warmup is live the API reports the node warm
//             AND the UI shows it (Nodes page tag, Warmup page warm node, Overview card)
//   pages     every page's figures equal the API's on the rig
// Screenshots (console-rig-*.png) go to $WAVE_SCREENSHOT_DIR when set.
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { chromium, type Browser } from "playwright-core";
import type { NodeListDto, OverviewDto, SpotPolicySetDto, WarmupViewDto } from "../../src/dashboard/dto.ts";
import type { Started } from "../../src/cli/start.ts";
import { WARMUP_LABEL, WARMUP_POOL_LABEL } from "../../src/objects/wave.ts";
import { num } from "../../ui/src/format.ts";
import {
  agree,
  checkEveryPage,
  api,
  cl,
  open,
  shot,
  spotAgrees,
  text,
  warmupAgrees,
  type Site,
} from "./console-pages.ts";
import {
  apply,
  createNamespace,
  list,
  remove,
  requireRig,
  sweepStaleWebhookConfigs,
  waitFor,
  waitForWebhookPlacement,
  withRigLogsOnFailure,
  type KubeObject,
} from "./harness.ts";
import { applyTaintedPool, FOUR_VCPU } from "./pools.ts";
import {
  cleanupTenant,
  startRigWave,
  startTenantWebhook,
  webDeployment,
  webPlacement,
} from "./tenant-rig.ts";

const CHROMIUM = "/usr/bin/chromium";
const ROOT = resolve(import.meta.dirname, "../..");
const SHOTS = process.env["WAVE_SCREENSHOT_DIR"];
const CLUSTER = "console-rig";
const E2E_OWNER = "browser-console-rig";
const REPLICAS = 3;

let ns = "";
let waveNs = "";
let pool = "";
let tmp = "";
let configName = "";
let wave: Started | undefined;
const spawned: ChildProcess[] = [];
let browser: Browser | undefined;
let site: Site;

function log(msg: string): void {
  process.stderr.write(`# ${msg}\n`);
}

const deployment = (replicas: number): object =>
  webDeployment(ns, pool, replicas, "example.test/console-e2e/web:1.0");
const placement = (): Promise<{ od: number; spot: number } | undefined> => webPlacement(ns, REPLICAS);

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} exists (apt-get install -y chromium)`);
  assert.ok(existsSync(join(ROOT, "ui/dist/index.html")), "the UI is built (npm run build:ui)");
  await requireRig();
  await sweepStaleWebhookConfigs(E2E_OWNER);
  ns = await createNamespace("e2e-console");
  waveNs = await createNamespace("e2e-console-wave");
  pool = ns;
  await applyTaintedPool(pool, {
    limits: { cpu: "64" },
    capacityTypes: ["spot", "on-demand"],
    // 4-vCPU nodes only: a web pod (3 CPUs) fills its node, so no node has room for another and
    // warmup is due. On a larger node (the cheapest spot offering is sometimes 8 vCPUs) the next
    // pod fits and warmup rightly waits — the flake of a CI run.
    requirements: [FOUR_VCPU],
    // Nodes stay while the test runs: only empty ones go, after 10 minutes.
    disruption: { consolidationPolicy: "WhenEmpty", consolidateAfter: "10m", budgets: [{ nodes: "100%" }] },
  });

  tmp = await mkdtemp(join(tmpdir(), "wave-e2e-console-rig-"));
  wave = await startRigWave("wave-e2e-console-rig", { clusterId: CLUSTER, namespace: waveNs, tmp });
  // The webhook as the chart runs it: its own process, spot policies long-polled from core.
  ({ configName } = await startTenantWebhook({
    wave,
    cluster: CLUSTER,
    name: "console-webhook-0",
    ns,
    waveNs,
    tmp,
    owner: E2E_OWNER,
    spawned,
  }));

  const shots = SHOTS ? resolve(ROOT, SHOTS) : undefined;
  if (shots) mkdirSync(shots, { recursive: true });
  site = { url: wave.url, cluster: CLUSTER, viewer: wave.tokens.viewer, shots, prefix: "console-rig", log };
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
  });
});

after(async () => {
  await browser?.close();
  await cleanupTenant({ configName, spawned, wave, namespaces: [ns, waveNs], pool, tmp });
});

test(
  "console e2e (rig): a viewer cannot edit; an admin sets a spot policy in the UI and the pods follow, the repair's action shows",
  { timeout: 420_000 },
  () =>
    withRigLogsOnFailure(async () => {
      assert.ok(wave && browser);
      const w = wave;
      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      page.on("pageerror", (err) => log(`page error: ${err.message}`));

      // Viewer: the edit button asks for the admin token; the API refuses a viewer's write.
      await open(site, page, "spot", w.tokens.viewer);
      await page.getByRole("button", { name: "New policy (admin)" }).click();
      await page.getByRole("dialog", { name: "sign in as admin" }).waitFor();
      assert.equal(await page.getByRole("form", { name: "spot policy" }).count(), 0);
      const put = await fetch(
        new URL(`api/v1/clusters/${CLUSTER}/policies/spot/Deployment/${ns}/web`, w.url),
        {
          method: "PUT",
          headers: { authorization: `Bearer ${w.tokens.viewer}`, "content-type": "application/json" },
          body: JSON.stringify({ threshold: 1, strategy: "Prefer" }),
        },
      );
      assert.equal(put.status, 403, "the API refuses a viewer's write");
      await page.getByLabel("token").fill(w.tokens.admin);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.getByTestId("role").filter({ hasText: "admin" }).waitFor({ timeout: 10_000 });

      // Admin creates the policy for a workload that does not run yet: threshold 1, Prefer.
      await page.getByRole("button", { name: "New policy", exact: true }).click();
      const form = page.getByRole("form", { name: "spot policy" });
      await form.getByLabel("namespace").fill(ns);
      await form.getByLabel("name", { exact: true }).fill("web");
      await form.getByLabel("on-demand base (threshold)").fill("1");
      await form.getByRole("button", { name: "Save" }).click();
      await agree("core to store the policy (what the webhook pulls)", async () => {
        const s = await api<SpotPolicySetDto>(site, cl(site, "policies/spot"));
        return s.policies.find((p) => p.workload.namespace === ns)?.threshold === 1 ? s : undefined;
      });
      // The apiserver calls the webhook and the webhook has pulled the policy from core: a
      // dry-run pod of web's (a ReplicaSet revision by name and pod-template-hash) comes back placed.
      await waitForWebhookPlacement(
        ns,
        "web",
        "the apiserver to call Wave's webhook with the UI's policy (a dry-run pod of web comes back placed)",
      );
      // The Spot page warns: a policy for a workload that does not exist (yet).
      await agree("the workload-not-found warning", async () =>
        (await page
          .getByTestId("spot-row")
          .filter({ hasText: `${ns}/web` })
          .getByText("workload-not-found")
          .count()) > 0
          ? true
          : undefined,
      );
      await shot(site, page, "spot-policy-no-workload");

      // The pods follow: 1 on-demand, 2 spot, by the nodes they run on.
      await apply(deployment(REPLICAS));
      const t0 = Date.now();
      const first = await waitFor(
        "3 Running pods of web placed 1 on-demand / 2 spot",
        async () => {
          const p = await placement();
          return p?.od === 1 && p.spot === 2 ? p : undefined;
        },
        { timeoutMs: 150_000, intervalMs: 1000 },
      );
      log(
        `threshold 1: ${first.od} on-demand / ${first.spot} spot after ${((Date.now() - t0) / 1000).toFixed(0)} s`,
      );
      await agree(
        "the Spot page's split = API (1 / 2)",
        async () => {
          const v = await spotAgrees(site, page);
          const x = v?.workloads.find((y) => y.workload.namespace === ns);
          return x?.actual.onDemand === 1 && x.actual.spot === 2 ? v : undefined;
        },
        60_000,
      );

      // Admin raises the threshold to 2 in the UI: the repair evicts one spot pod, its
      // replacement goes on-demand, and the action (a WaveSpotRepair Event) reaches the page.
      await page
        .getByTestId("spot-row")
        .filter({ hasText: `${ns}/web` })
        .click();
      await page
        .getByTestId("spot-detail")
        .getByRole("button", { name: /policy/ })
        .click();
      const edit = page.getByRole("form", { name: "spot policy" });
      await edit.getByLabel("on-demand base (threshold)").fill("2");
      assert.match(
        (await page.getByTestId("spot-preview").textContent()) ?? "",
        /^Effect: 2 of 3 pods on-demand/,
      );
      await edit.getByRole("button", { name: "Save" }).click();
      const t1 = Date.now();
      const second = await waitFor(
        "the repair to move one pod: 2 on-demand / 1 spot",
        async () => {
          const p = await placement();
          return p?.od === 2 && p.spot === 1 ? p : undefined;
        },
        { timeoutMs: 150_000, intervalMs: 1000 },
      );
      log(
        `threshold 2: ${second.od} on-demand / ${second.spot} spot after ${((Date.now() - t1) / 1000).toFixed(0)} s`,
      );
      const events = await list("events", { namespace: ns });
      assert.ok(
        events.some((e: KubeObject & { reason?: string }) => e.reason === "WaveSpotRepair"),
        "the repair recorded its action as an Event",
      );
      const v = await agree(
        "the Spot page's split and self-heal actions = API",
        async () => {
          const sv = await spotAgrees(site, page);
          const x = sv?.workloads.find((y) => y.workload.namespace === ns);
          return x && x.actual.onDemand === 2 && x.repairs.total >= 1 && x.repairs.byAction["Evict"]
            ? sv
            : undefined;
        },
        60_000,
      );
      const x = v.workloads.find((y) => y.workload.namespace === ns);
      assert.ok(x);
      // The open workload lists the repair: what it did, to which pod, and why.
      const rows = page.getByTestId("spot-detail").getByTestId("spot-repair-row");
      await agree("the repair listed in the workload's detail", async () =>
        (await rows.count()) === x.repairs.recent.length ? true : undefined,
      );
      assert.match((await rows.first().textContent()) ?? "", new RegExp(`Evict.*${ns}/web-`));
      assert.equal(await text(page, "spot-repair-total"), num(x.repairs.total));
      log(`spot page: ${x.repairs.total} self-heal action(s) (${JSON.stringify(x.repairs.byAction)}) = API`);
      await shot(site, page, "spot-repairs");
      await page.close();
    }),
);

test(
  "console e2e (rig): an admin enables warmup in the UI → a warmup pod appears, and while it is live the API and the UI show the node warm",
  { timeout: 300_000 },
  () =>
    withRigLogsOnFailure(async () => {
      assert.ok(wave && browser);
      const w = wave;
      // The spot test's repair moved a pod to a new on-demand node and left its old node empty
      // (the pool keeps empty nodes 10 minutes): the largest pod fits there, so warmup would
      // rightly wait. The premise of this test is a pool with no room: remove the empty nodes.
      // Removed again while waiting for the warmup pod: the repair may still empty a node then.
      const removeEmptyNodes = async (): Promise<void> => {
        // Only pods that hold room count, as for the controller: an evicted pod still
        // terminating (or Failed) on its old node leaves that node empty for warmup.
        type PodLike = KubeObject & { spec?: { nodeName?: string }; status?: { phase?: string } };
        const podsByNode = new Set(
          (await list("pods", { namespace: ns, selector: "app=web" }))
            .map((p) => p as PodLike)
            .filter(
              (p) =>
                p.metadata.deletionTimestamp === undefined &&
                p.status?.phase !== "Succeeded" &&
                p.status?.phase !== "Failed",
            )
            .map((p) => p.spec?.nodeName ?? ""),
        );
        const claims = await list("nodeclaims.karpenter.sh", { selector: `karpenter.sh/nodepool=${pool}` });
        const empty = claims.filter(
          (c) =>
            c.metadata.deletionTimestamp === undefined &&
            !podsByNode.has((c as KubeObject & { status?: { nodeName?: string } }).status?.nodeName ?? ""),
        );
        for (const c of empty) await remove("nodeclaims.karpenter.sh", c.metadata.name);
        if (empty.length === 0) return;
        log(`removed ${empty.length} empty node(s) of the pool left by the spot test`);
        const removed = new Set(empty.map((c) => c.metadata.name));
        await waitFor(
          "the pool's empty nodes gone",
          async () =>
            !(await list("nodeclaims.karpenter.sh", { selector: `karpenter.sh/nodepool=${pool}` })).some(
              (c) => removed.has(c.metadata.name),
            ),
          { timeoutMs: 90_000, intervalMs: 1000 },
        );
      };
      await removeEmptyNodes();
      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      page.on("pageerror", (err) => log(`page error: ${err.message}`));
      await open(site, page, "warmup", w.tokens.admin);
      const sec = page.locator(`[data-testid=warmup-pool][data-pool="${pool}"]`);
      await sec.waitFor({ timeout: 30_000 });
      await sec.getByRole("button", { name: /policy/ }).click();
      const wf = page.getByRole("form", { name: `warmup policy for ${pool}` });
      await wf.getByLabel("max warm nodes").fill("1");
      await wf.getByLabel(/^TTL/).fill("900");
      assert.match(
        (await page.getByTestId("warmup-preview").textContent()) ?? "",
        /^Effect: up to 1 warm node/,
      );
      await wf.getByRole("button", { name: "Save" }).click();

      let sweptAt = Date.now();
      const warmupPod = await waitFor(
        "a warmup pod for the pool",
        async () => {
          const found = (await list("pods", { namespace: waveNs, selector: `${WARMUP_LABEL}=true` })).find(
            (p) => p.metadata.labels?.[WARMUP_POOL_LABEL] === pool,
          );
          if (found || Date.now() - sweptAt < 10_000) return found;
          sweptAt = Date.now();
          await removeEmptyNodes();
          return undefined;
        },
        { timeoutMs: 90_000, intervalMs: 500 },
      );
      log(`warmup pod ${warmupPod.metadata.name} created after the policy was saved in the UI`);
      const warmNode = await waitFor(
        "core's API to report the warmup's node warm",
        async () => {
          const nodes = await api<NodeListDto>(site, cl(site, "nodes?limit=5000"));
          return nodes.items.find((n) => n.nodePool === pool && n.warm)?.name;
        },
        { timeoutMs: 150_000, intervalMs: 1000 },
      );
      log(`node ${warmNode} warm in the API`);
      // While the warmup is live, the UI shows it on each page that reads it.
      await agree(
        "the Warmup page to list the warm node = API",
        async () => {
          const v = await warmupAgrees(site, page);
          return v?.pools.find((p) => p.nodePool === pool)?.warmNodes.some((n) => n.name === warmNode)
            ? v
            : undefined;
        },
        60_000,
      );
      await shot(site, page, "warmup-live");
      await open(site, page, `nodes?pool=${pool}`, w.tokens.viewer);
      await agree("the Nodes page to tag the node warm", async () => {
        const row = page.getByTestId("node-row").filter({ hasText: warmNode });
        return (await row.locator(".tag.warm").count()) === 1 ? true : undefined;
      });
      await open(site, page, "overview", w.tokens.viewer);
      const o = await agree("the Overview's warm-nodes card = API (≥ 1)", async () => {
        const x = await api<OverviewDto>(site, cl(site, "overview"));
        return x.warmup.warmNodes >= 1 && (await text(page, "overview-warm")) === num(x.warmup.warmNodes)
          ? x
          : undefined;
      });
      const view = await api<WarmupViewDto>(site, cl(site, "warmup"));
      assert.ok(
        view.pools.find((p) => p.nodePool === pool)?.warmNodes.some((n) => n.name === warmNode),
        "still warm (the warmup was live while the UI was checked)",
      );
      log(
        `warm node ${warmNode}: API, Warmup page, Nodes page and Overview (${o.warmup.warmNodes} warm) agree`,
      );
      await page.close();
    }),
);

test("console e2e (rig): every page's figures equal the API's", { timeout: 300_000 }, () =>
  withRigLogsOnFailure(async () => {
    assert.ok(browser);
    await checkEveryPage(site, browser);
  }),
);
