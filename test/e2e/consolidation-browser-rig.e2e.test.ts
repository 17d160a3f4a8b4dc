// Issue 34 on the rig, in the browser: a node Karpenter (real, KWOK provider) may not disrupt —
// a PodDisruptionBudget allowing 0 and a karpenter.sh/do-not-disrupt pod on it — is explained on
// the Consolidation page (Chromium via playwright-core) within 60 s of the node being initialized,
// each blocker with its object and its fix, equal to the API; the node drawer keeps Karpenter's own
// DisruptionBlocked Event. The blockers removed, the page stops naming them; the workload gone,
// Karpenter consolidates the empty node and the page shows nothing blocked in the pool.
// Own namespace and NodePool (tainted); `wave start` in this process against the rig.
// Screenshot console-rig-consolidation.png goes to $WAVE_SCREENSHOT_DIR when set.
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { chromium, type Browser } from "playwright-core";
import type { ConsolidationViewDto } from "../../src/dashboard/dto.ts";
import type { Started } from "../../src/cli/start.ts";
import { agree, api, cl, open, shot, type Site } from "./console-pages.ts";
import {
  apply,
  createNamespace,
  list,
  remove,
  requireRig,
  waitFor,
  withRigLogsOnFailure,
} from "./harness.ts";
import { applyTaintedPool, FOUR_VCPU, POOL_LABEL } from "./pools.ts";
import { cleanupTenant, startRigWave } from "./tenant-rig.ts";

const CHROMIUM = "/usr/bin/chromium";
const ROOT = resolve(import.meta.dirname, "../..");
const SHOTS = process.env["WAVE_SCREENSHOT_DIR"];
const CLUSTER = "consolidation-rig";

let ns = "";
let waveNs = "";
let pool = "";
let tmp = "";
let wave: Started | undefined;
let browser: Browser | undefined;
let site: Site;

function log(msg: string): void {
  process.stderr.write(`# ${msg}\n`);
}

const podSpec = (): object => ({
  nodeSelector: { [POOL_LABEL]: pool },
  tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
  terminationGracePeriodSeconds: 0,
  containers: [{ name: "app", image: "pause:3.10", resources: { requests: { cpu: "1", memory: "256Mi" } } }],
});

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} exists (apt-get install -y chromium)`);
  assert.ok(existsSync(join(ROOT, "ui/dist/index.html")), "the UI is built (npm run build:ui)");
  await requireRig();
  ns = await createNamespace("e2e-consol-ui");
  waveNs = await createNamespace("e2e-consol-ui-wave");
  pool = ns;
  await applyTaintedPool(pool, {
    limits: { cpu: "16" },
    requirements: [FOUR_VCPU],
    disruption: {
      consolidationPolicy: "WhenEmptyOrUnderutilized",
      consolidateAfter: "5s",
      budgets: [{ nodes: "100%" }],
    },
  });
  tmp = await mkdtemp(join(tmpdir(), "wave-e2e-consol-ui-"));
  wave = await startRigWave("wave-e2e-consolidation-rig", { clusterId: CLUSTER, namespace: waveNs, tmp });
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
  await cleanupTenant({ configName: "", spawned: [], wave, namespaces: [ns, waveNs], pool, tmp });
});

test(
  "consolidation (rig → UI): a PDB allowing 0 and a do-not-disrupt pod explained in the page within 60 s; removed → resolved",
  { timeout: 420_000 },
  () =>
    withRigLogsOnFailure(async () => {
      assert.ok(wave && browser);
      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      page.on("pageerror", (err) => log(`page error: ${err.message}`));

      await apply({
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "ledger", namespace: ns },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: "ledger" } },
          template: { metadata: { labels: { app: "ledger" } }, spec: podSpec() },
        },
      });
      await apply({
        apiVersion: "policy/v1",
        kind: "PodDisruptionBudget",
        metadata: { name: "ledger", namespace: ns },
        spec: { minAvailable: 1, selector: { matchLabels: { app: "ledger" } } },
      });
      await apply({
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: "migrate",
          namespace: ns,
          labels: { app: "migrate" },
          annotations: { "karpenter.sh/do-not-disrupt": "true" },
        },
        spec: podSpec(),
      });
      // Both pods (2 CPUs) on one 4-vCPU node of the pool, initialized: from here the clock runs.
      const nodeName = await waitFor(
        "both pods Running on one initialized node of the pool",
        async () => {
          const pods = await list("pods", { namespace: ns });
          const nodes = new Set(
            pods
              .filter((p) => (p.status as { phase?: string } | undefined)?.phase === "Running")
              .map((p) => (p.spec as { nodeName?: string }).nodeName),
          );
          if (pods.length !== 2 || nodes.size !== 1) return undefined;
          const [name] = [...nodes];
          const n = (await list("nodes", { selector: `${POOL_LABEL}=${pool}` })).find(
            (x) => x.metadata.name === name,
          );
          return n?.metadata.labels?.["karpenter.sh/initialized"] === "true" ? name : undefined;
        },
        { timeoutMs: 180_000 },
      );
      assert.ok(nodeName);
      const t0 = Date.now();
      log(`node ${nodeName} initialized with the ledger (PDB minAvailable 1) and migrate (do-not-disrupt)`);

      await open(site, page, `consolidation?pool=${encodeURIComponent(pool)}`, site.viewer);
      const row = page.getByTestId("blocked-row").filter({ hasText: nodeName });
      const explained = await agree(
        "the page and the API name both blockers of the node",
        async () => {
          const v = await api<ConsolidationViewDto>(site, cl(site, `consolidation?nodePool=${pool}`));
          const item = v.items.find((n) => n.node === nodeName);
          const reasons = new Set(item?.blockers.filter((b) => b.blocking).map((b) => b.reason));
          if (!reasons.has("pdb") || !reasons.has("do-not-disrupt-pod")) return undefined;
          const shown = (await row.count()) ? ((await row.first().textContent()) ?? "") : "";
          return shown.includes("PDB allows 0") && shown.includes("do-not-disrupt pod") ? item : undefined;
        },
        60_000,
      );
      const seconds = (Date.now() - t0) / 1000;
      log(`explained in the API and the page ${seconds.toFixed(1)} s after the node was initialized`);
      assert.ok(seconds <= 60, `within 60 s (${seconds.toFixed(1)} s)`);
      const pdb = explained.blockers.find((b) => b.reason === "pdb");
      assert.deepEqual(pdb?.object, { kind: "PodDisruptionBudget", namespace: ns, name: "ledger" });
      // Each blocker's fix as a copyable patch on the page.
      const fixes = page.getByTestId("fix");
      await fixes
        .filter({ hasText: `PodDisruptionBudget ${ns}/ledger` })
        .first()
        .waitFor();
      const patches = await page.getByTestId("fix-patch").allTextContents();
      assert.ok(
        patches.some((p) =>
          p.startsWith(`kubectl patch poddisruptionbudget ledger -n ${ns} --type merge -p '`),
        ),
        `a PDB patch among ${patches.join(" | ")}`,
      );
      assert.ok(
        patches.some((p) => p.startsWith(`kubectl patch pod migrate -n ${ns} --type merge -p '`)),
        `an annotation patch among ${patches.join(" | ")}`,
      );
      await shot(site, page, "consolidation");

      // The drawer: Karpenter's own DisruptionBlocked Event about the node, kept by Wave.
      await row.first().click();
      const drawer = page.getByTestId("node-drawer");
      await drawer.getByTestId("drawer-disruption").waitFor({ timeout: 20_000 });
      await agree(
        "Karpenter's DisruptionBlocked Event in the drawer",
        async () => {
          const events = drawer.getByTestId("drawer-karpenter-events");
          if ((await events.count()) === 0) return undefined;
          const t = (await events.textContent()) ?? "";
          return /DisruptionBlocked.*(Pod has "karpenter\.sh\/do-not-disrupt" annotation|Pdb prevents pod evictions)/.test(
            t,
          )
            ? t
            : undefined;
        },
        120_000,
      );
      log("the drawer shows Karpenter's DisruptionBlocked Event");
      await page.keyboard.press("Escape");

      // Blockers removed → the page stops naming them.
      await remove("poddisruptionbudget", "ledger", ns);
      await remove("pod", "migrate", ns);
      const t1 = Date.now();
      await agree(
        "the page no longer names the PDB or the do-not-disrupt pod",
        async () => {
          const v = await api<ConsolidationViewDto>(site, cl(site, `consolidation?nodePool=${pool}`));
          const item = v.items.find((n) => n.node === nodeName);
          if (item?.blockers.some((b) => b.reason === "pdb" || b.reason === "do-not-disrupt-pod"))
            return undefined;
          const shown = (await row.count()) ? ((await row.first().textContent()) ?? "") : "";
          return shown.includes("PDB allows 0") || shown.includes("do-not-disrupt pod") ? undefined : true;
        },
        60_000,
      );
      log(`resolved in the page ${((Date.now() - t1) / 1000).toFixed(1)} s after the blockers were removed`);

      // The workload gone: Karpenter consolidates the empty node; the page shows the pool clear.
      await apply({
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "ledger", namespace: ns },
        spec: {
          replicas: 0,
          selector: { matchLabels: { app: "ledger" } },
          template: { metadata: { labels: { app: "ledger" } }, spec: podSpec() },
        },
      });
      await waitFor(
        `Karpenter to consolidate ${nodeName}`,
        async () => (await list("nodes")).every((n) => n.metadata.name !== nodeName) || undefined,
        { timeoutMs: 180_000, intervalMs: 2000 },
      );
      await agree(
        "the page: nothing blocked in the pool",
        async () =>
          (await page.getByText("No blocked node for these filters.").count()) > 0 ? true : undefined,
        60_000,
      );
      log(`Karpenter consolidated ${nodeName}; the page shows nothing blocked in ${pool}`);
      await page.close();
    }),
);
