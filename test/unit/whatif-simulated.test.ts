// What-if on the simulated cluster, through the real path: `wave start` on the simulator (its
// agent streams to core; core's samplers record pods per workload into the store), then
// `wave whatif spot …` → core's API → the simulator's replay of what core recorded.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Started } from "../../src/cli/start.ts";
import { run } from "../../src/cli/main.ts";
import type { SpotViewDto, WhatifReportDto } from "../../src/dashboard/dto.ts";
import { LIVING_SPOT_POLICIES } from "../../src/sim/living.ts";
import { captureIo as capture } from "../support/io.ts";
import { startSimulatedWave, type SimulatedWave } from "../support/wave.ts";

const CLUSTER = "sim";
const API = "shop/Deployment/api";
/** The embedded cluster's policy for shop/api, and the candidate: three more pods on-demand. */
const CURRENT =
  LIVING_SPOT_POLICIES.find((p) => p.workload.namespace === "shop" && p.workload.name === "api")?.threshold ??
  0;
const CANDIDATE = CURRENT + 3;

let sim: SimulatedWave;
let w: Started;

before(async () => {
  sim = await startSimulatedWave("whatif-sim-test", CLUSTER, { simulatedHistoryMs: 10 * 60_000 });
  w = sim.w;
  // The pods-per-workload sampler writes a bucket a minute (of the cluster's clock): wait for some.
  for (let i = 0; i < 100; i++) {
    const rows = await w.store.workloadPods({ clusterId: CLUSTER, from: 0, to: Date.now() + 60_000 });
    if (rows.some((r) => r.workload === API)) break;
    await new Promise((r) => setTimeout(r, 200));
  }
});

after(() => sim.stop());

describe("wave whatif on the simulated cluster", { timeout: 300_000 }, () => {
  it("replays what core recorded under the current policy and a candidate with 3 more api pods on-demand", async () => {
    const base = [
      "--server",
      w.url,
      "--viewer-token",
      w.tokens.viewer,
      "--cluster-id",
      CLUSTER,
      "--window",
      "1h",
    ];
    // The replay ends at the pods core sees now: as many api pods as the spot page counts (the
    // living cluster moves on while the replay runs: read it before and after).
    const apiPods = async (): Promise<number> => {
      const res = await fetch(new URL(`api/v1/clusters/${CLUSTER}/spot-placement`, w.url), {
        headers: { authorization: `Bearer ${w.tokens.viewer}` },
      });
      const view = (await res.json()) as SpotViewDto;
      const live = view.workloads.find((x) => x.workload.name === "api" && x.workload.namespace === "shop");
      return live?.pods ?? 0;
    };
    const before = await apiPods();
    const io = capture();
    const code = await run(
      ["whatif", "spot", "deployment/shop/api", "--threshold", String(CANDIDATE), ...base, "--json"],
      io,
    );
    assert.equal(code, 0, io.stderr.join(""));
    const r = JSON.parse(io.stdout.join("")) as WhatifReportDto;
    assert.equal(r.clusterId, CLUSTER);
    assert.equal(r.catalog, "aws");
    assert.ok(r.historyBuckets >= 3, `pod counts recorded by core: ${r.historyBuckets} buckets`);
    assert.ok(r.workloads.includes(API) && r.workloads.length >= 5, r.workloads.join(", "));
    const policyOf = (side: WhatifReportDto["current"]) =>
      side.policy.spot.find((p) => p.workload.name === "api" && p.workload.namespace === "shop")?.threshold;
    assert.equal(policyOf(r.current), CURRENT, "the cluster's stored policy is the current one");
    assert.equal(policyOf(r.candidate), CANDIDATE);
    assert.equal(r.candidate.policy.spot.length, r.current.policy.spot.length, "the other policies stay");

    const now = r.current.now.workloads[API];
    const cand = r.candidate.now.workloads[API];
    assert.ok(now && cand);
    const after = await apiPods();
    const total = now.onDemand + now.spot + now.pending;
    assert.ok(
      total >= Math.min(before, after) * 0.85 && total <= Math.max(before, after) * 1.15,
      `replayed ${total} api pods, the cluster had ${before} before and ${after} after`,
    );
    assert.ok(
      now.onDemand >= Math.min(CURRENT, total) && cand.onDemand >= Math.min(CANDIDATE, total),
      JSON.stringify({ now, cand }),
    );
    for (const side of [r.current, r.candidate]) {
      assert.ok(side.costPerHour > 0 && Math.abs(side.costPerMonth - side.costPerHour * 730) < 1e-6);
      assert.ok(side.spotShare > 0 && side.spotShare < 1, `spot share ${side.spotShare}`);
      assert.ok(side.podStart.count > 0 && side.podStart.p95Ms >= side.podStart.p50Ms);
    }
    // The model check: the current policy's replay beside what core recorded over the same window.
    assert.ok(r.recorded, "core's series over the window are set beside the replay");
    assert.ok(r.recorded.costPerHour > 0 && r.recorded.coveredMs > 0);
    console.log(
      `# model check: replayed $${r.current.costPerHour.toFixed(3)}/h vs recorded $${r.recorded.costPerHour.toFixed(3)}/h ` +
        `(${(r.recorded.fidelity.costError * 100).toFixed(1)} %); nodes per pool: ` +
        Object.entries(r.recorded.pools)
          .map(
            ([p, v]) =>
              `${p} ${(r.current.pools?.[p]?.nodes ?? 0).toFixed(1)}/${v.nodes.toFixed(1)} ` +
              `(${((r.recorded?.fidelity.poolNodesError[p] ?? 0) * 100).toFixed(0)} %)`,
          )
          .join(", "),
    );
    console.log(
      `# what-if on the simulated cluster: ${r.historyBuckets} buckets, ${r.workloads.length} workloads, ` +
        `cost/h ${r.current.costPerHour.toFixed(3)} → ${r.candidate.costPerHour.toFixed(3)}, ` +
        `api on-demand ${now.onDemand} → ${cand.onDemand}, replays took ${r.tookMs} ms`,
    );

    const text = capture();
    assert.equal(
      await run(["whatif", "spot", "deployment/shop/api", "--threshold", String(CANDIDATE), ...base], text),
      0,
    );
    const out = text.stdout.join("");
    for (const row of [
      "cost/h (average)",
      "cost/month (730 h)",
      "spot share (node-hours)",
      "pod start p50",
      "pod start p95",
    ])
      assert.match(out, new RegExp(`^${row.replace(/[()/]/g, "\\$&")}\\s+\\S+\\s+\\S+`, "m"), row);
    assert.match(out, /^deployment\/shop\/api pods \(on-demand \/ spot\)/m);
  });
});
