// Issue 31 on the rig, in the browser (Chromium via playwright-core): the console's spot policy
// editor writes the SpotPolicy CR. A viewer opens a running Deployment on the Spot page, signs in
// with the admin token when asked, sets the threshold and strategy and saves → the CR on the rig
// holds them, applied by field manager wave-console, and names token:admin in wave.sh/changed-by;
// the Audit page lists the change with that identity. Then Argo CD (field manager
// argocd-controller) takes spec.threshold over with a server-side apply: the next threshold edit in
// the console shows "managed by argocd-controller: change it in Git" and the CR is untouched.
// `wave start` in this process against the rig (core, agent, policy sync); own namespace, NodePool
// and names. Screenshots policy-ui-*.png go to $WAVE_SCREENSHOT_DIR when set.
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { chromium, type Browser } from "playwright-core";
import type { Started } from "../../src/cli/start.ts";
import { clientFromKubeconfig } from "../../src/kube/clientnode/kubeconfig.ts";
import {
  CHANGED_BY_ANNOTATION,
  CHANGED_VIA_ANNOTATION,
  type SpotPolicyResource,
} from "../../src/objects/policy-crds.ts";
import { workloadKey, workloadName } from "../../src/policy/spot.ts";
import { agree, open, shot, type Site } from "./console-pages.ts";
import {
  apply,
  createNamespace,
  kubeconfigPath,
  kubectl,
  list,
  requireRig,
  waitFor,
  withRigLogsOnFailure,
} from "./harness.ts";
import { applyTaintedPool, POOL_LABEL } from "./pools.ts";
import { cleanupTenant, startRigWave } from "./tenant-rig.ts";

const CHROMIUM = "/usr/bin/chromium";
const ROOT = resolve(import.meta.dirname, "../..");
const SHOTS = process.env["WAVE_SCREENSHOT_DIR"];
const REPLICAS = 3;

const kube = clientFromKubeconfig(kubeconfigPath);
let ns = "";
let waveNs = "";
let pool = "";
let tmp = "";
let cluster = "";
let app = "";
let wave: Started | undefined;
let browser: Browser | undefined;
let site: Site;

function log(msg: string): void {
  process.stderr.write(`# ${msg}\n`);
}

/** The CR's managers of its spec (the status writer's subresource entries left out). */
const managers = (cr: SpotPolicyResource): string[] =>
  (cr.metadata.managedFields ?? []).filter((m) => !m.subresource).map((m) => `${m.manager}/${m.operation}`);

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} exists (apt-get install -y chromium)`);
  assert.ok(existsSync(join(ROOT, "ui/dist/index.html")), "the UI is built (npm run build:ui)");
  await requireRig();
  ns = await createNamespace("e2e-policy-ui");
  waveNs = await createNamespace("e2e-policy-ui-wave");
  const suffix = ns.slice(-6);
  pool = ns;
  app = `web-${suffix}`;
  cluster = `policy-ui-${suffix}`;
  await applyTaintedPool(pool, { limits: { cpu: "8" } });
  tmp = await mkdtemp(join(tmpdir(), "wave-e2e-policy-ui-"));
  wave = await startRigWave("wave-e2e-policy-ui", { clusterId: cluster, namespace: waveNs, tmp });
  const shots = SHOTS ? resolve(ROOT, SHOTS) : undefined;
  if (shots) mkdirSync(shots, { recursive: true });
  site = { url: wave.url, cluster, viewer: wave.tokens.viewer, shots, prefix: "policy-ui", log };
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
  "a console edit writes the SpotPolicy CR as wave-console with the admin's identity, audited; a field Argo CD owns → the conflict shown, the CR unchanged",
  { timeout: 420_000 },
  () =>
    withRigLogsOnFailure(async () => {
      assert.ok(wave && browser);
      const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
      page.on("pageerror", (err) => log(`page error: ${err.message}`));

      // 1. A running Deployment of 3 pause pods on the test's pool.
      await apply({
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: app, namespace: ns },
        spec: {
          replicas: REPLICAS,
          selector: { matchLabels: { app } },
          template: {
            metadata: { labels: { app } },
            spec: {
              nodeSelector: { [POOL_LABEL]: pool },
              tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
              terminationGracePeriodSeconds: 0,
              containers: [
                { name: "app", image: "pause:3.10", resources: { requests: { cpu: "10m", memory: "16Mi" } } },
              ],
            },
          },
        },
      });
      await waitFor(
        `${REPLICAS} pods of ${app} Running`,
        async () =>
          (await list("pods", { namespace: ns, selector: `app=${app}` })).filter(
            (p) => (p.status as { phase?: string } | undefined)?.phase === "Running",
          ).length === REPLICAS || undefined,
        { timeoutMs: 180_000, intervalMs: 2000 },
      );
      log(`${ns}/${app}: ${REPLICAS} pods Running`);

      // 2. The Spot page as a viewer, the workload open; its editor asks for the admin token.
      // The URL selects the workload by its key; the console writes it as the CLI does
      // (deployment/<namespace>/<name>): in the table and as the detail's heading.
      const key = workloadKey({ namespace: ns, kind: "Deployment", name: app });
      const written = workloadName({ namespace: ns, kind: "Deployment", name: app });
      const row = page.getByTestId("spot-row").filter({ hasText: written });
      await open(site, page, `spot?workload=${encodeURIComponent(key)}`, site.viewer);
      const detail = page.getByTestId("spot-detail");
      await agree(
        "the workload's detail with its pods",
        async () => ((await detail.getByRole("heading", { name: written }).count()) > 0 ? true : undefined),
        60_000,
      );
      await detail.getByRole("button", { name: "Edit (admin)" }).click();
      const signIn = page.getByRole("dialog", { name: "sign in as admin" });
      await signIn.getByText("To edit spot policies, sign in with the admin token.").waitFor();
      await signIn.getByLabel("token").fill(wave.tokens.admin);
      await signIn.getByLabel("token").press("Enter");
      await page.getByTestId("role").filter({ hasText: "admin" }).waitFor();
      const form = page.getByRole("form", { name: "spot policy" });
      await form.getByLabel("on-demand base (threshold)").fill("2");
      await form.getByLabel("strategy").selectOption("Require");
      await form.getByLabel("% on-demand above base").fill("25");
      await shot(site, page, "editor");
      const t0 = Date.now();
      await form.getByRole("button", { name: "Save", exact: true }).click();
      await form.waitFor({ state: "detached", timeout: 30_000 });
      log(`saved in the console in ${Date.now() - t0} ms`);

      // 3. The CR on the rig: the values entered, wave-console's Apply, the admin's identity.
      const cr = await kube.get("SpotPolicy", app, ns);
      assert.deepEqual(
        [
          cr.spec.targetRef.kind,
          cr.spec.targetRef.name,
          cr.spec.threshold,
          cr.spec.strategy,
          cr.spec.percentAboveBase,
        ],
        ["Deployment", app, 2, "Require", 25],
      );
      assert.deepEqual(managers(cr), ["wave-console/Apply"]);
      assert.equal(cr.metadata.annotations?.[CHANGED_BY_ANNOTATION], "token:admin");
      assert.equal(cr.metadata.annotations[CHANGED_VIA_ANNOTATION], "ui");
      log(
        `CR ${ns}/${app}: threshold 2, Require, 25 % above; managers ${managers(cr).join(", ")}; changed-by token:admin`,
      );

      // The page shows the policy (core's copy, streamed back by the agent).
      await agree("the Spot page shows the policy", async () =>
        ((await row.textContent()) ?? "").includes("base 2 · Require · 25% above") ? true : undefined,
      );

      // The Audit page: the change, by token:admin, from the ui.
      await open(site, page, "audit", wave.tokens.admin);
      const auditRow = page
        .getByTestId("audit-row")
        .filter({ hasText: new RegExp(`${ns}.*${app}|${app}.*${ns}`) });
      await agree("the audit lists the change", async () =>
        (await auditRow.count()) > 0 ? true : undefined,
      );
      assert.equal(await auditRow.count(), 1, "one change audited");
      assert.equal(((await auditRow.getByTestId("audit-who").textContent()) ?? "").trim(), "token:admin");
      const auditText = (await auditRow.textContent()) ?? "";
      assert.match(auditText, /spot-policy\.put/, auditText);
      assert.match(auditText, /"threshold":2,"strategy":"Require","percentAboveBase":25/, auditText);
      assert.match(auditText, /ui · /, auditText);
      log(`audit: ${auditText}`);
      await shot(site, page, "audit");

      // 4. Argo CD takes spec.threshold over (server-side apply, forced).
      await kubectl(
        ["apply", "--server-side", "--field-manager=argocd-controller", "--force-conflicts", "-f", "-"],
        JSON.stringify({
          apiVersion: "wave.sh/v1alpha1",
          kind: "SpotPolicy",
          metadata: { name: app, namespace: ns },
          spec: { threshold: 1 },
        }),
      );
      const owned = await kube.get("SpotPolicy", app, ns);
      assert.equal(owned.spec.threshold, 1);
      assert.ok(managers(owned).includes("argocd-controller/Apply"), managers(owned).join(", "));
      // Core's copy carries Argo CD's threshold before the console edits it again.
      await open(site, page, `spot?workload=${encodeURIComponent(key)}`, wave.tokens.admin);
      await agree(
        "the Spot page shows Argo CD's threshold",
        async () => (((await row.textContent()) ?? "").includes("base 1 · Require") ? true : undefined),
        60_000,
      );

      await detail.getByRole("button", { name: "Edit policy" }).click();
      await form.getByLabel("on-demand base (threshold)").fill("4");
      await form.getByRole("button", { name: "Save", exact: true }).click();
      const alert = form.getByRole("alert");
      await alert.waitFor({ timeout: 30_000 });
      const shown = ((await alert.textContent()) ?? "").trim();
      assert.equal(
        shown,
        ".spec.threshold managed by argocd-controller: change it in Git (or force the edit to take the field over)",
      );
      assert.equal(await form.getByRole("button", { name: "Force (take the field over)" }).count(), 1);
      log(`the console shows: ${shown}`);
      await shot(site, page, "conflict");

      const unchanged = await kube.get("SpotPolicy", app, ns);
      assert.equal(unchanged.metadata.resourceVersion, owned.metadata.resourceVersion);
      assert.equal(unchanged.spec.threshold, 1);
      assert.deepEqual(managers(unchanged), managers(owned));
      log(`CR unchanged: resourceVersion ${unchanged.metadata.resourceVersion}, threshold 1`);

      // The audit: still the one change made through Wave (the refused edit changed nothing);
      // Argo CD's write listed among the changes made elsewhere, by its field manager.
      await open(site, page, "audit", wave.tokens.admin);
      const foreign = page.getByTestId("foreign-row").filter({ hasText: app });
      await agree("the audit lists Argo CD's change by its manager", async () =>
        (await foreign.getByTestId("foreign-manager").allTextContents()).includes("argocd-controller")
          ? true
          : undefined,
      );
      assert.equal(await auditRow.count(), 1, "the refused edit is not audited as a change");
      await shot(site, page, "audit-elsewhere");
      await page.close();
    }),
);
