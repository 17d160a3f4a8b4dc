import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MemoryKube } from "../kube/memory/memory.ts";
import { NODE_POOL_LABEL } from "../objects/karpenter.ts";
import { CompositePriceProvider } from "../pricing/composite.ts";
import { StaticPriceProvider, loadStaticPriceTable } from "../pricing/static.ts";
import { FakeClock } from "../shared/clock.ts";
import { seeded } from "../shared/random.ts";
import { buildCatalog, buildOfferings } from "./catalog.ts";
import { LIVING_DEPLOYMENTS, LIVING_POOLS, LIVING_TIMING, dayShare, livingDemand } from "./living.ts";
import { Simulator, poolAllows } from "./simulator.ts";

const MIN = 60_000;
const prices = new CompositePriceProvider({ static: new StaticPriceProvider(loadStaticPriceTable()) });

describe("the living default cluster", () => {
  it("has six pools the catalog can serve, incl. on-demand, spot-only, GPU, arm64, a job pool and batch", () => {
    const offerings = buildOfferings(buildCatalog(), prices);
    assert.deepEqual(
      LIVING_POOLS.map((p) => p.metadata.name),
      ["general", "spot-heavy", "gpu", "arm64", "analytics", "batch"],
    );
    for (const p of LIVING_POOLS)
      assert.ok(
        offerings.some((o) => poolAllows(p, o)),
        `${p.metadata.name ?? ""} servable`,
      );
    const arm = LIVING_POOLS.find((p) => p.metadata.name === "arm64");
    assert.ok(offerings.filter((o) => arm && poolAllows(arm, o)).every((o) => o.type.arch === "arm64"));
  });

  it("moves demand all day: a day curve, bursts, and a batch job that stops and starts", () => {
    const day = Date.UTC(2026, 11, 3);
    assert.ok(dayShare(day + 15 * 60 * MIN) > 0.99 && dayShare(day + 3 * 60 * MIN) < 0.01);
    const web = new Set<number>();
    const etl = new Set<number>();
    const reports = new Set<number>();
    const gpu = new Set<number>();
    for (let t = day + 14 * 60 * MIN; t < day + 16 * 60 * MIN; t += MIN) {
      const d = livingDemand(t);
      web.add(d["shop/web"] ?? -1);
      etl.add(d["batch/etl"] ?? -1);
      reports.add(d["data/reports"] ?? -1);
      gpu.add(d["ml/inference"] ?? -1);
    }
    assert.ok(web.size > 5, "the web tier ripples even at the daily peak");
    assert.deepEqual([...etl].sort(), [0, 6]);
    assert.deepEqual(
      [...reports].sort((a, b) => a - b),
      [0, 20],
    );
    assert.ok(gpu.size > 1, "GPU demand moves within two hours");
    for (const key of Object.keys(livingDemand(day)))
      assert.ok(
        LIVING_DEPLOYMENTS.some((d) => `${d.metadata.namespace ?? ""}/${d.metadata.name ?? ""}` === key),
        `${key} is a Deployment of the scenario`,
      );
  });

  it("the misconfigured batch pool thrashes until Wave's advice is applied, then stops", async () => {
    const clock = new FakeClock(Date.UTC(2026, 11, 3, 10));
    const kube = new MemoryKube({ clock, random: seeded(3), historyLimit: 5000 });
    const sim = new Simulator({
      kube,
      clock,
      offerings: buildOfferings(buildCatalog(), prices),
      random: seeded(7),
      spotInterruptionRate: 0,
    });
    await kube.create("Namespace", { metadata: { name: "batch" } });
    const pool = LIVING_POOLS.find((p) => p.metadata.name === "batch");
    const etl = LIVING_DEPLOYMENTS.find((d) => d.metadata.name === "etl");
    assert.ok(pool && etl);
    await kube.create("NodePool", structuredClone(pool));
    await kube.create("Deployment", structuredClone(etl), { namespace: "batch" });
    const launched = new Set<string>();
    const run = async (ms: number): Promise<number> => {
      const before = launched.size;
      for (let t = 0; t < ms; t += 5000) {
        const replicas = livingDemand(clock.now(), LIVING_TIMING)["batch/etl"] ?? 0;
        await kube.patch("Deployment", "etl", { spec: { replicas } }, { namespace: "batch" });
        await sim.tick(5000);
        for (const c of kube.peek("NodeClaim"))
          if (c.metadata.labels?.[NODE_POOL_LABEL] === "batch") launched.add(c.metadata.name ?? "");
        await clock.advance(5000);
      }
      return launched.size - before;
    };
    const churn = await run(30 * MIN);
    assert.ok(churn >= 12, `consolidateAfter 0s: ${churn} nodes launched in 30 min`);
    // Wave's advice for this pool ("Raise consolidateAfter to 15m"), applied as its kubectl patch.
    await kube.patch("NodePool", "batch", { spec: { disruption: { consolidateAfter: "15m" } } });
    await run(5 * MIN);
    const after = await run(30 * MIN);
    assert.equal(after, 0, "no more launches once the job's pauses fit in consolidateAfter");
  });
});
