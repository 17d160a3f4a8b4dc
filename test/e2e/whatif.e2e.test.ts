// Issue 14's what-if Must-show, on the rig (real kube-apiserver + Karpenter's KWOK provider): a
// Deployment runs all on spot (spot policy threshold 0); `wave whatif spot … --threshold 2`
// replays the cluster as core knows it (state + pods per workload from the store) and predicts
// the on-demand pods and the pool's cost/h; then the policy is applied (`wave spot set`), the
// pods are re-created and placed by Wave's webhook, Karpenter launches for them — and what core's
// API then shows equals the prediction within 10 %; the current side (the baseline) is within 5 % of
// what the rig shows before the change.
// Wave runs as in production, split in two: `wave start` in this process (agent → gRPC → core →
// API, history samplers) and a `wave webhook` process registered for this test's namespace.
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { NodePoolDto, SpotViewDto, WhatifReportDto } from "../../src/dashboard/dto.ts";
import { run } from "../../src/cli/main.ts";
import type { Started } from "../../src/cli/start.ts";
import {
  apply,
  createNamespace,
  kubectl,
  list,
  requireRig,
  sweepStaleWebhookConfigs,
  waitFor,
  waitForWebhookPlacement,
  withRigLogsOnFailure,
} from "./harness.ts";
import { applyTaintedPool, FOUR_VCPU } from "./pools.ts";
import {
  cleanupTenant,
  startRigWave,
  startTenantWebhook,
  webDeployment,
  webPlacement,
} from "./tenant-rig.ts";
import { captureIo as capture } from "../support/io.ts";

const CLUSTER = "whatif-rig";
const E2E_OWNER = "whatif";
const REPLICAS = 4;
/** The candidate: the first 2 pods on-demand. */
const THRESHOLD = 2;

let ns = "";
let waveNs = "";
let pool = "";
let tmp = "";
let configName = "";
let wave: Started | undefined;
const spawned: ChildProcess[] = [];

function log(msg: string): void {
  process.stderr.write(`# ${msg}\n`);
}

const deployment = (replicas: number): object =>
  webDeployment(ns, pool, replicas, "example.test/whatif-e2e/web:1.0");
const placement = (): Promise<{ od: number; spot: number } | undefined> => webPlacement(ns, REPLICAS);

/** `wave …` in this process, against this test's core. */
async function wave_(args: string[], token: "viewer" | "admin"): Promise<string> {
  assert.ok(wave);
  const io = capture();
  const auth =
    token === "admin" ? ["--admin-token", wave.tokens.admin] : ["--viewer-token", wave.tokens.viewer];
  const code = await run([...args, "--server", wave.url, "--cluster-id", CLUSTER, ...auth], io);
  assert.equal(code, 0, `wave ${args.join(" ")}: ${io.stderr.join("")}`);
  return io.stdout.join("");
}

async function api<T>(path: string): Promise<T> {
  assert.ok(wave);
  const res = await fetch(new URL(`api/v1/clusters/${CLUSTER}/${path}`, wave.url), {
    headers: { authorization: `Bearer ${wave.tokens.viewer}` },
    signal: AbortSignal.timeout(10_000),
  });
  assert.equal(res.status, 200, `GET ${path}: ${res.status}`);
  return (await res.json()) as T;
}

before(async () => {
  await requireRig();
  await sweepStaleWebhookConfigs(E2E_OWNER);
  ns = await createNamespace("e2e-whatif");
  waveNs = await createNamespace("e2e-whatif-wave");
  pool = ns;
  // A node left empty when the pods move goes soon; occupied nodes stay.
  await applyTaintedPool(pool, {
    limits: { cpu: "64" },
    capacityTypes: ["spot", "on-demand"],
    disruption: { consolidationPolicy: "WhenEmpty", consolidateAfter: "20s", budgets: [{ nodes: "100%" }] },
    requirements: [FOUR_VCPU],
  });

  tmp = await mkdtemp(join(tmpdir(), "wave-e2e-whatif-"));
  wave = await startRigWave("wave-e2e-whatif", { clusterId: CLUSTER, namespace: waveNs, tmp });
  ({ configName } = await startTenantWebhook({
    wave,
    cluster: CLUSTER,
    name: "whatif-webhook-0",
    ns,
    waveNs,
    tmp,
    owner: E2E_OWNER,
    spawned,
  }));
});

after(async () => {
  await cleanupTenant({ configName, spawned, wave, namespaces: [ns, waveNs], pool, tmp });
});

test(
  "what-if (rig): threshold 0 → 2 predicts the on-demand pods and the pool's cost/h the rig then shows, within 10 %",
  { timeout: 600_000 },
  () =>
    withRigLogsOnFailure(async () => {
      assert.ok(wave);
      const w = wave;
      const key = `${ns}/Deployment/web`;

      // All spot: threshold 0, set as a user would.
      await wave_(
        // --force: the Deployment comes after its policy, so core sees no pod of it yet.
        ["spot", "set", `deployment/${ns}/web`, "--threshold", "0", "--strategy", "prefer", "--force"],
        "admin",
      );
      await waitForWebhookPlacement(ns, "web", "the apiserver to call Wave's webhook with threshold 0");
      await apply(deployment(REPLICAS));
      await waitFor(
        `${REPLICAS} Running pods of web, all on spot`,
        async () => {
          const p = await placement();
          return p?.od === 0 && p.spot === REPLICAS ? p : undefined;
        },
        { timeoutMs: 150_000, intervalMs: 1000 },
      );
      await waitFor(
        "core to show web 0 on-demand / 4 spot",
        async () => {
          const v = await api<SpotViewDto>("spot-placement");
          const x = v.workloads.find((y) => y.workload.namespace === ns && y.workload.name === "web");
          return x?.actual.onDemand === 0 && x.actual.spot === REPLICAS ? x : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 1000 },
      );
      // Core's history: a bucket of pods per workload (one a minute).
      await waitFor(
        "core to record web's pod count in its history",
        async () =>
          (await w.store.workloadPods({ clusterId: CLUSTER, from: 0, to: Date.now() + 60_000 })).some(
            (r) => r.workload === key && r.pods === REPLICAS,
          ),
        { timeoutMs: 90_000, intervalMs: 1000 },
      );
      const before = (await api<NodePoolDto[]>("nodepools")).find((p) => p.name === pool);
      assert.ok(before);

      // What-if: the same flags as `wave spot set`, replayed by core on the simulator.
      const t0 = Date.now();
      const r = JSON.parse(
        await wave_(
          ["whatif", "spot", `deployment/${ns}/web`, "--threshold", String(THRESHOLD), "--json"],
          "viewer",
        ),
      ) as WhatifReportDto;
      log(`what-if took ${Date.now() - t0} ms (replays ${r.tookMs} ms, ${r.historyBuckets} history buckets)`);
      assert.equal(r.catalog, "kwok");
      assert.ok(r.historyBuckets >= 1);
      assert.deepEqual(r.current.now.workloads[key], { onDemand: 0, spot: REPLICAS, pending: 0 });
      const predicted = r.candidate.now.workloads[key];
      const predictedPool = r.candidate.now.pools[pool];
      assert.ok(predicted && predictedPool, JSON.stringify(r.candidate.now));
      assert.equal(predicted.onDemand, THRESHOLD);
      // The baseline: the current side reproduces what the rig shows now (all spot), within 5 %.
      const nowPool = r.current.now.pools[pool]?.costPerHour ?? 0;
      log(
        `baseline: current side $${nowPool.toFixed(4)}/h vs the rig now $${before.costPerHour.toFixed(4)}/h`,
      );
      assert.ok(
        Math.abs(nowPool - before.costPerHour) <= 0.05 * before.costPerHour,
        `current side ${nowPool} vs the rig now ${before.costPerHour}`,
      );
      // The model check, logged: over the test's few recorded minutes the pool was still launching
      // (its average is below the settled count), so it is no baseline here.
      const recordedPool = r.recorded?.pools[pool];
      log(
        `model check, pool ${pool}: replayed ${(r.current.pools?.[pool]?.nodes ?? 0).toFixed(2)} nodes ` +
          `vs recorded ${(recordedPool?.nodes ?? 0).toFixed(2)} over ${((r.recorded?.coveredMs ?? 0) / 60_000).toFixed(0)} min`,
      );
      const text = await wave_(
        ["whatif", "spot", `deployment/${ns}/web`, "--threshold", String(THRESHOLD)],
        "viewer",
      );
      log(`wave whatif:\n${text.replace(/^/gm, "#   ")}`);

      // Apply it: the webhook places the re-created pods, Karpenter launches for them.
      await wave_(
        ["spot", "set", `deployment/${ns}/web`, "--threshold", String(THRESHOLD), "--strategy", "prefer"],
        "admin",
      );
      await waitFor(
        "the webhook to serve threshold 2",
        async () => {
          const set = await api<{
            policies: { workload: { namespace: string; name: string }; threshold: number }[];
          }>("policies/spot");
          // The rig is shared with the other e2e lane: its SpotPolicies are listed here too.
          const web = set.policies.find((p) => p.workload.namespace === ns && p.workload.name === "web");
          return web?.threshold === THRESHOLD ? true : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 1000 },
      );
      await new Promise((res) => setTimeout(res, 5000)); // the webhook's policy poll (2 s)
      await kubectl(["-n", ns, "scale", "deployment/web", "--replicas=0"]);
      await waitFor(
        "web's pods to go",
        async () =>
          (await list("pods", { namespace: ns, selector: "app=web" })).length === 0 ? true : undefined,
        { timeoutMs: 60_000, intervalMs: 1000 },
      );
      await kubectl(["-n", ns, "scale", "deployment/web", `--replicas=${REPLICAS}`]);
      const t1 = Date.now();
      const placed = await waitFor(
        `${REPLICAS} Running pods of web placed ${THRESHOLD} on-demand`,
        async () => {
          const p = await placement();
          return p?.od === THRESHOLD && p.spot === REPLICAS - THRESHOLD ? p : undefined;
        },
        { timeoutMs: 180_000, intervalMs: 1000 },
      );
      log(
        `placed ${placed.od} on-demand / ${placed.spot} spot after ${((Date.now() - t1) / 1000).toFixed(0)} s`,
      );
      // Settled: the pool's nodes are the pods' nodes (empty ones consolidated), as core sees them.
      const shown = await waitFor(
        "core to show the pool settled: one node per pod, none left empty",
        async () => {
          const claims = (
            await list("nodeclaims.karpenter.sh", { selector: `karpenter.sh/nodepool=${pool}` })
          ).filter((c) => c.metadata.deletionTimestamp === undefined);
          if (claims.length !== REPLICAS) return undefined;
          const p = (await api<NodePoolDto[]>("nodepools")).find((x) => x.name === pool);
          const v = await api<SpotViewDto>("spot-placement");
          const x = v.workloads.find((y) => y.workload.namespace === ns && y.workload.name === "web");
          return p?.nodes === REPLICAS && x?.actual.onDemand === THRESHOLD ? { pool: p, web: x } : undefined;
        },
        { timeoutMs: 180_000, intervalMs: 2000 },
      );

      const within = (a: number, b: number): boolean => Math.abs(a - b) <= 0.1 * Math.max(Math.abs(b), 1e-9);
      log(
        `predicted: ${predicted.onDemand} on-demand / ${predicted.spot} spot, pool ${pool} $${predictedPool.costPerHour.toFixed(4)}/h (${predictedPool.nodes} nodes)`,
      );
      log(
        `the rig:   ${shown.web.actual.onDemand} on-demand / ${shown.web.actual.spot} spot, pool ${pool} $${shown.pool.costPerHour.toFixed(4)}/h (${shown.pool.nodes} nodes)`,
      );
      assert.ok(within(predicted.onDemand, shown.web.actual.onDemand), "on-demand pods within 10 %");
      assert.ok(
        within(predictedPool.costPerHour, shown.pool.costPerHour),
        `cost/h: predicted ${predictedPool.costPerHour} vs the rig ${shown.pool.costPerHour}`,
      );
    }),
);
