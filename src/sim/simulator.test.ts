import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MemoryKube } from "../kube/memory/memory.ts";
import { FakeClock } from "../shared/clock.ts";
import { CompositePriceProvider } from "../pricing/composite.ts";
import { StaticPriceProvider, loadStaticPriceTable } from "../pricing/static.ts";
import { K } from "../karpenter/types.ts";
import { buildCatalog, buildOfferings } from "./catalog.ts";
import { seeded } from "../shared/random.ts";
import { Simulator } from "./simulator.ts";
import { seedScenario } from "./scenario.ts";

const prices = new CompositePriceProvider({ static: new StaticPriceProvider(loadStaticPriceTable()) });

async function runScenario(seconds: number) {
  const clock = new FakeClock(Date.UTC(2026, 11, 1, 12));
  const random = seeded(7);
  const kube = new MemoryKube({ clock, random, historyLimit: 100_000 });
  const offerings = buildOfferings(buildCatalog(), prices);
  const sim = new Simulator({ kube, clock, offerings, random, bootDelayMs: 3000, spotInterruptionRate: 0 });
  const drive = await seedScenario(kube, clock.now());
  const created = new Map<string, string>();
  const deleted = new Set<string>();
  for (let s = 0; s < seconds; s++) {
    await drive(clock.now());
    await sim.tick(1000);
    for (const c of (await kube.list("NodeClaim")).items)
      created.set(c.metadata.name ?? "", c.metadata.labels?.[K.nodePoolLabel] ?? "");
    for (const name of created.keys()) {
      if (!(await kube.list("NodeClaim", { fieldSelector: `metadata.name=${name}` })).items.length)
        deleted.add(name);
    }
    await clock.advance(1000);
  }
  return { kube, created, deleted };
}

describe("simulated Karpenter cluster", () => {
  it("provisions every pool with the right offerings and runs the pods", async () => {
    const { kube } = await runScenario(40);
    const nodes = (await kube.list("Node")).items;
    const byPool = (pool: string) => nodes.filter((n) => n.metadata.labels?.[K.nodePoolLabel] === pool);
    assert.ok(byPool("general").length > 0, "general has nodes");
    assert.ok(byPool("spot-heavy").length > 0, "spot-heavy has nodes");
    assert.ok(byPool("spot-heavy").every((n) => n.metadata.labels?.[K.capacityTypeLabel] === "spot"));
    const gpu = byPool("gpu");
    assert.ok(gpu.length > 0, "gpu has nodes");
    assert.ok(gpu.every((n) => n.metadata.labels?.[K.instanceTypeLabel]?.startsWith("g5.")));
    assert.ok(gpu.every((n) => n.metadata.labels?.[K.capacityTypeLabel] === "on-demand"));
    // Where spot is allowed the cheapest offering is spot.
    assert.ok(byPool("general").every((n) => n.metadata.labels?.[K.capacityTypeLabel] === "spot"));
    const api = (await kube.list("Pod", { namespace: "shop", labelSelector: "app=api" })).items;
    assert.equal(api.length, 10);
    assert.ok(
      api.every((p) => p.status?.phase === "Running"),
      "api pods running",
    );
    const claims = (await kube.list("NodeClaim")).items;
    assert.ok(
      claims.every((c) => c.status?.conditions?.some((x) => x.type === "Initialized" && x.status === "True")),
    );
  });

  it("churns the misconfigured batch pool and keeps the calm ones", async () => {
    const { created, deleted } = await runScenario(130);
    const batchCreated = [...created].filter(([, pool]) => pool === "batch").map(([n]) => n);
    const batchDeleted = batchCreated.filter((n) => deleted.has(n));
    assert.ok(batchCreated.length >= 4, `batch created ${batchCreated.length} nodeclaims`);
    assert.ok(batchDeleted.length >= 2, `batch deleted ${batchDeleted.length} nodeclaims`);
    const gpuDeleted = [...created].filter(([n, pool]) => pool === "gpu" && deleted.has(n));
    assert.equal(gpuDeleted.length, 0, "the gpu pool is calm");
  });
});
