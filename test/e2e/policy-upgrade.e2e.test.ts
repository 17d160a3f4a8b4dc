// Issue 31, Must show: "policies stored by main 23cd1c2's core become CRDs after the upgrade, none
// lost". Main 23cd1c2's core (its own git worktree, today's node_modules) runs on a SQLite data
// dir; spot and warmup policies are created through its API; it stops. Today's core opens the
// same data dir (store migrations 9 and 10) with today's agent streaming the rig: every stored
// policy must become a CR with the same fields, annotated wave.sh/migrated-from, and the new API
// must list them all.
//
// The old checkout: WAVE_OLD_CORE_DIR if set, else a detached worktree of 23cd1c2 made (and
// removed) by this test.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clientFromKubeconfig } from "../../src/kube/clientnode/kubeconfig.ts";
import { generateDevCerts } from "../../src/webhook/certs.ts";
import { createNamespace, deleteNamespace, kubeconfigPath, requireRig, waitFor } from "./harness.ts";
import { ADMIN_TOKEN, ensurePolicyCrds, startCoreAndAgent } from "./policy-crs.ts";

const OLD = "23cd1c2";
const REPO = new URL("../../", import.meta.url).pathname;
const OLD_ADMIN = "old-admin-token-0123456789";
const kube = clientFromKubeconfig(kubeconfigPath);

let work = "";
let oldDir = "";
let madeWorktree = false;
let oldCore: ChildProcess | undefined;
let ns = "";
let clusterId = "";
const pools: string[] = [];

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => resolve(typeof a === "object" && a ? a.port : 0));
    });
  });
}

before(async () => {
  await requireRig();
  await ensurePolicyCrds();
  work = mkdtempSync(join(tmpdir(), "wave-upgrade-"));
  oldDir = process.env["WAVE_OLD_CORE_DIR"] ?? join(work, "old");
  if (!existsSync(join(oldDir, "bin", "wave.ts"))) {
    execFileSync("git", ["-C", REPO, "worktree", "add", "--detach", oldDir, OLD], { stdio: "ignore" });
    madeWorktree = true;
  }
  if (!existsSync(join(oldDir, "node_modules")))
    symlinkSync(join(REPO, "node_modules"), join(oldDir, "node_modules"));
  ns = await createNamespace("crdsync-up");
  clusterId = `up-${ns.slice(-6)}`;
  pools.push(`${ns}-general`, `${ns}-batch`);
});

after(async () => {
  oldCore?.kill("SIGKILL");
  for (const p of pools) await kube.delete("WarmupPolicy", p).catch(() => undefined);
  if (ns) await deleteNamespace(ns);
  if (madeWorktree)
    execFileSync("git", ["-C", REPO, "worktree", "remove", "--force", oldDir], { stdio: "ignore" });
  if (work) rmSync(work, { recursive: true, force: true });
});

describe(`upgrade from main ${OLD}: stored policies become CRs`, () => {
  it("every policy the old core stored is a CR with the same fields after the upgrade, none lost", async () => {
    const data = join(work, "data");
    const tls = join(work, "tls");
    await generateDevCerts({ dir: tls, hosts: ["localhost", "127.0.0.1"] });
    // Server TLS only (the old core then takes agents by token alone); no agent talks to it here.
    rmSync(join(tls, "ca.crt"));
    const port = await freePort();
    const log: string[] = [];
    oldCore = spawn(
      process.execPath,
      [
        "bin/wave.ts",
        "core",
        ...["--data-dir", data, "--host", "127.0.0.1", "--port", String(port), "--grpc-port", "0"],
        ...["--admin-token", OLD_ADMIN, "--viewer-token", "old-viewer-token-0123456789"],
        ...[
          "--agent-token",
          "old-agent-token-0123456789",
          "--grpc-tls-dir",
          tls,
          "--grpc-allow-no-client-cert",
        ],
        ...["--cluster-id", clusterId],
      ],
      { cwd: oldDir, stdio: ["ignore", "pipe", "pipe"] },
    );
    oldCore.stdout?.on("data", (b: Buffer) => log.push(b.toString()));
    oldCore.stderr?.on("data", (b: Buffer) => log.push(b.toString()));
    const base = `http://127.0.0.1:${port}/api/v1/clusters/${clusterId}/policies`;
    const headers = { authorization: `Bearer ${OLD_ADMIN}`, "content-type": "application/json" };
    await waitFor(
      `${OLD}'s core serving (log: ${log.join("").slice(-400)})`,
      async () => (await fetch(`${base}/spot`, { headers }).catch(() => undefined))?.ok === true,
      { timeoutMs: 90_000 },
    );

    const spot = [
      { kind: "Deployment", name: "web", body: { threshold: 2, strategy: "Prefer", percentAboveBase: 25 } },
      { kind: "StatefulSet", name: "db", body: { threshold: 3, strategy: "Require", repair: false } },
      { kind: "Deployment", name: "batch", body: { threshold: 0, strategy: "Prefer", repair: true } },
    ];
    const warmup = [
      {
        pool: pools[0] ?? "",
        body: { enabled: true, maxWarmNodes: 3, ttlSeconds: 900, maxCostPerHour: 1.25 },
      },
      { pool: pools[1] ?? "", body: { enabled: false, prePull: false } },
    ];
    for (const s of spot) {
      const r = await fetch(`${base}/spot/${s.kind}/${ns}/${s.name}`, {
        method: "PUT",
        headers,
        body: JSON.stringify(s.body),
      });
      assert.equal(r.status, 200, await r.text());
    }
    for (const w of warmup) {
      const r = await fetch(`${base}/warmup/${w.pool}`, {
        method: "PUT",
        headers,
        body: JSON.stringify(w.body),
      });
      assert.equal(r.status, 200, await r.text());
    }
    const oldWarmup = (await (await fetch(`${base}/warmup`, { headers })).json()) as {
      nodePool: string;
      policy: Record<string, unknown>;
    }[];
    const old = oldCore;
    const exited = new Promise((r) => old.once("exit", r));
    old.kill("SIGTERM");
    await exited;
    oldCore = undefined;

    // Today's core on the same data dir, today's agent on the rig.
    const rig = await startCoreAndAgent(clusterId, data);
    try {
      const mark = await waitFor("the migration mark", () => rig.store.policyMigration(clusterId), {
        timeoutMs: 60_000,
      });
      assert.deepEqual([mark.created, mark.existed], [5, 0]);

      const web = await kube.get("SpotPolicy", "web", ns);
      assert.deepEqual(web.spec, {
        targetRef: { kind: "Deployment", name: "web" },
        threshold: 2,
        strategy: "Prefer",
        percentAboveBase: 25,
        repair: "On",
      });
      assert.equal(
        web.metadata.annotations?.["wave.sh/migrated-from"],
        `core:${clusterId}/spot/${ns}/Deployment/web`,
      );
      const db = await kube.get("SpotPolicy", "db", ns);
      assert.deepEqual(
        [db.spec.targetRef.kind, db.spec.threshold, db.spec.strategy, db.spec.repair],
        ["StatefulSet", 3, "Require", "Off"],
      );
      const batch = await kube.get("SpotPolicy", "batch", ns);
      assert.deepEqual([batch.spec.threshold, batch.spec.repair], [0, "On"]);
      for (const w of oldWarmup.filter((p) => pools.includes(p.nodePool))) {
        const cr = await kube.get("WarmupPolicy", w.nodePool);
        const p = w.policy;
        assert.deepEqual(
          [
            cr.spec.nodePool,
            cr.spec.enabled,
            cr.spec.maxWarmNodes,
            cr.spec.ttlSeconds,
            cr.spec.cooldownSeconds,
          ],
          [w.nodePool, p["enabled"], p["maxWarmNodes"], p["ttlSeconds"], p["cooldownSeconds"]],
        );
        assert.deepEqual(
          [
            cr.spec.prePull,
            cr.spec.prePullDeadlineSeconds,
            cr.spec.maxCostPerHour === undefined ? null : Number(cr.spec.maxCostPerHour),
          ],
          [p["prePull"], p["prePullDeadlineSeconds"], p["maxCostPerHour"]],
        );
      }
      assert.equal(oldWarmup.filter((p) => pools.includes(p.nodePool)).length, 2);

      // None lost: today's API lists all of them from the CRs the agent streams.
      const A = { authorization: `Bearer ${ADMIN_TOKEN}` };
      await waitFor("all migrated CRs in core's state", () =>
        Promise.resolve(rig.hub.state(clusterId).spotPolicies(ns).length === 3),
      );
      const set = (
        await rig.app.inject({
          method: "GET",
          url: `/api/v1/clusters/${clusterId}/policies/spot`,
          headers: A,
        })
      ).json<{ policies: { workload: { namespace: string; name: string } }[] }>();
      assert.deepEqual(
        set.policies
          .filter((p) => p.workload.namespace === ns)
          .map((p) => p.workload.name)
          .sort(),
        ["batch", "db", "web"],
      );

      // A second start changes nothing.
      const rv = web.metadata.resourceVersion;
      await rig.stop();
      const again = await startCoreAndAgent(clusterId, data);
      try {
        assert.equal((await again.store.policyMigration(clusterId))?.created, 5);
        assert.equal((await kube.get("SpotPolicy", "web", ns)).metadata.resourceVersion, rv);
      } finally {
        await again.stop();
      }
    } catch (err) {
      await rig.stop().catch(() => undefined);
      throw err;
    }
  });
});
