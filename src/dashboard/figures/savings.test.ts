// Realized savings over a range on the simulated cluster (`npm start`'s scenario: Karpenter,
// scheduler and kubelets simulated over the in-memory apiserver). Every simulated minute the
// savings rows are recorded into a real SQLite store, as core's sampler does; the expected
// dollars per pool and per workload are computed independently here, straight from the
// apiserver's NodeClaims, Nodes and Pods with the same price list, and must equal what the store
// sums for any range to 1e-6.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { openStore } from "../../core/store/open.ts";
import { MemoryKube } from "../../kube/memory/memory.ts";
import { createPricing } from "../../pricing/setup.ts";
import { FakeClock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import { seeded } from "../../shared/random.ts";
import { buildOfferings, buildCatalog } from "../../sim/catalog.ts";
import { seedScenario } from "../../sim/scenario.ts";
import { Simulator } from "../../sim/simulator.ts";
import { ClusterState } from "../../state/cluster.ts";
import { savingsRates, savingsReport, savingsRows } from "./savings.ts";
import type { SavingsLineDto } from "../dto.ts";

const MIN = 60_000;
const HOUR = 60 * MIN;

/** "500m" → 500, "2" → 2000 (the scenario's CPU quantities). */
function millicores(q: string | undefined): number {
  if (q === undefined) return 0;
  return q.endsWith("m") ? Number(q.slice(0, -1)) : Number(q) * 1000;
}

type Sums = Map<string, { actual: number; od: number }>;
const add = (m: Sums, k: string, actual: number, od: number): void => {
  const s = m.get(k) ?? { actual: 0, od: 0 };
  s.actual += actual;
  s.od += od;
  m.set(k, s);
};

describe("realized savings on the simulated cluster", () => {
  it("sums per pool and per workload over any range equal an independent count from the apiserver's objects", async () => {
    const start = Date.UTC(2026, 0, 5, 8);
    const clock = new FakeClock(start);
    const kube = new MemoryKube({ clock, random: seeded(3), historyLimit: 2000 });
    const { provider: prices } = createPricing({ clock });
    const sim = new Simulator({
      kube,
      clock,
      offerings: buildOfferings(buildCatalog(), prices),
      random: seeded(7),
      bootDelayMs: 30_000,
    });
    const drive = await seedScenario(kube, start);
    const store = await openStore({ backend: "sqlite", path: ":memory:" }, { log: silentLogger });
    const poolsWant = new Map<number, Sums>();
    const workloadsWant = new Map<number, Sums>();
    try {
      const minutes = 20;
      for (let m = 0; m < minutes; m++) {
        for (let s = 0; s < 60; s++) {
          await drive(clock.now());
          await sim.tick(1000);
          await clock.advance(1000);
        }
        // The state core would hold, and the bucket that just ended.
        const ts = clock.now() - MIN;
        const [nodes, claims, pools, pods] = await Promise.all([
          kube.list("Node"),
          kube.list("NodeClaim"),
          kube.list("NodePool"),
          kube.list("Pod"),
        ]);
        const state = new ClusterState();
        state.replaceAll("NodePool", pools.items);
        state.replaceAll("NodeClaim", claims.items);
        state.replaceAll("Node", nodes.items);
        state.replaceAll("Pod", pods.items);
        await store.writeSavings(
          savingsRows(savingsRates(state, prices), { clusterId: "sim", ts, stepMs: MIN }),
        );

        // Independently: every launched NodeClaim priced by its labels; pods charged their CPU
        // request's share of their node's allocatable CPU; workloads named after the Deployment.
        const pw: Sums = new Map();
        const ww: Sums = new Map();
        const nodeByName = new Map(nodes.items.map((n) => [n.metadata.name ?? "", n]));
        for (const c of claims.items) {
          const node = c.status?.nodeName ? nodeByName.get(c.status.nodeName) : undefined;
          const labels = { ...c.metadata.labels, ...node?.metadata.labels };
          const it = labels["node.kubernetes.io/instance-type"];
          const ct = (labels["karpenter.sh/capacity-type"] ?? "on-demand") as "spot" | "on-demand";
          if (!it) continue;
          const own = prices.price(it, ct, labels["topology.kubernetes.io/zone"])?.usdPerHour;
          const od = prices.price(it, "on-demand", labels["topology.kubernetes.io/zone"])?.usdPerHour;
          assert.ok(own !== undefined && od !== undefined, `the scenario's ${it} is priced`);
          const hours = MIN / HOUR;
          add(pw, labels["karpenter.sh/nodepool"] ?? "(none)", own * hours, od * hours);
          if (!node) continue;
          const alloc = millicores(node.status?.allocatable?.["cpu"]);
          for (const p of pods.items) {
            if (p.spec.nodeName !== node.metadata.name) continue;
            if (p.status?.phase === "Succeeded" || p.status?.phase === "Failed") continue;
            const rs = p.metadata.ownerReferences?.find((o) => o.controller)?.name ?? "";
            const hash = p.metadata.labels?.["pod-template-hash"] ?? "";
            const deployment = rs.slice(0, rs.length - hash.length - 1);
            const cpu = p.spec.containers.reduce(
              (sum, ctr) => sum + millicores(ctr.resources?.requests?.["cpu"]),
              0,
            );
            const share = Math.min(1, cpu / alloc);
            add(
              ww,
              `${p.metadata.namespace}/Deployment/${deployment}`,
              share * own * hours,
              share * od * hours,
            );
          }
        }
        poolsWant.set(ts, pw);
        workloadsWant.set(ts, ww);
      }

      const check = async (from: number, to: number): Promise<void> => {
        const pools: Sums = new Map();
        const workloads: Sums = new Map();
        for (const [ts, pw] of poolsWant) {
          if (ts < from || ts >= to) continue;
          for (const [k, v] of pw) add(pools, k, v.actual, v.od);
          for (const [k, v] of workloadsWant.get(ts) ?? [])
            if (v.od > v.actual) add(workloads, k, v.actual, v.od);
        }
        const report = savingsReport(await store.savings({ clusterId: "sim", from, to }), from, to);
        // Each line's savings (and a pool's actual cost) as recomputed, to 1e-6.
        const matches = (lines: SavingsLineDto[], want: Sums, actualToo: boolean): void => {
          assert.deepEqual(lines.map((l) => l.name).sort(), [...want.keys()].sort());
          for (const l of lines) {
            const w = want.get(l.name);
            assert.ok(w);
            assert.ok(
              Math.abs(l.savedUsd - (w.od - w.actual)) <= 1e-6,
              `${l.name}: ${l.savedUsd} vs ${w.od - w.actual}`,
            );
            if (actualToo) assert.ok(Math.abs(l.actualUsd - w.actual) <= 1e-6, `${l.name} actual`);
          }
        };
        matches(report.pools, pools, true);
        matches(report.workloads, workloads, false);
        const total = [...pools.values()].reduce((s, v) => s + v.od - v.actual, 0);
        assert.ok(Math.abs(report.total.savedUsd - total) <= 1e-6);
      };
      await check(start, start + 20 * MIN);
      await check(start + 5 * MIN, start + 12 * MIN);
      const whole = savingsReport(
        await store.savings({ clusterId: "sim", from: start, to: start + 20 * MIN }),
        0,
        0,
      );
      // The scenario runs spot: savings are real, and some workloads save.
      assert.ok(whole.total.savedUsd > 0, "spot saved money in the scenario");
      assert.ok(whole.workloads.length > 0 && whole.workloads.every((w) => w.savedUsd > 0));
    } finally {
      await store.close();
    }
  });
});
