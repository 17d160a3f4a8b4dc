import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MemoryKube } from "../kube/memory/memory.ts";
import { FakeClock } from "../shared/clock.ts";
import { CompositePriceProvider } from "../pricing/composite.ts";
import { StaticPriceProvider, loadStaticPriceTable } from "../pricing/static.ts";
import { CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, NODE_POOL_LABEL } from "../objects/karpenter.ts";
import { buildCatalog, buildKwokOfferings, buildOfferings } from "./catalog.ts";
import type { Pod } from "../objects/kube.ts";
import { seeded } from "../shared/random.ts";
import { Simulator } from "./simulator.ts";
import { seedScenario } from "./scenario.ts";
import { kwokTestPool } from "./pool.test-helper.ts";

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
      created.set(c.metadata.name ?? "", c.metadata.labels?.[NODE_POOL_LABEL] ?? "");
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
    const byPool = (pool: string) => nodes.filter((n) => n.metadata.labels?.[NODE_POOL_LABEL] === pool);
    assert.ok(byPool("general").length > 0, "general has nodes");
    assert.ok(byPool("spot-heavy").length > 0, "spot-heavy has nodes");
    assert.ok(byPool("spot-heavy").every((n) => n.metadata.labels?.[CAPACITY_TYPE_LABEL] === "spot"));
    const gpu = byPool("gpu");
    assert.ok(gpu.length > 0, "gpu has nodes");
    assert.ok(gpu.every((n) => n.metadata.labels?.[INSTANCE_TYPE_LABEL]?.startsWith("g5.")));
    assert.ok(gpu.every((n) => n.metadata.labels?.[CAPACITY_TYPE_LABEL] === "on-demand"));
    // Where spot is allowed the cheapest offering is spot.
    assert.ok(byPool("general").every((n) => n.metadata.labels?.[CAPACITY_TYPE_LABEL] === "spot"));
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

describe("simulated kube-scheduler and Karpenter nomination", () => {
  // 3 pods that must run on-demand and 3 that prefer spot, each 0.5 CPU: Karpenter launches one
  // node per capacity type. The spot-preferring pods must not take the on-demand node's room.
  const pod = (name: string, affinity: Pod["spec"]["affinity"]): Pod => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "shop" },
    spec: {
      affinity,
      containers: [{ name: "c", image: "x", resources: { requests: { cpu: "500m", memory: "512Mi" } } }],
    },
    status: { phase: "Pending" },
  });
  const capacity = (values: string[]): { key: string; operator: "In"; values: string[] } => ({
    key: CAPACITY_TYPE_LABEL,
    operator: "In",
    values,
  });

  for (const seed of [1, 2, 3, 4]) {
    it(`puts pods preferring spot on spot and the on-demand ones on their node (seed ${seed})`, async () => {
      const clock = new FakeClock(Date.UTC(2026, 11, 1, 12));
      const random = seeded(seed);
      const kube = new MemoryKube({ clock, random });
      const sim = new Simulator({
        kube,
        clock,
        random,
        offerings: buildKwokOfferings(),
        bootDelayMs: 10_000,
        spotInterruptionRate: 0,
      });
      await kube.create("Namespace", { metadata: { name: "shop" } });
      await kube.create("NodePool", {
        apiVersion: "karpenter.sh/v1",
        kind: "NodePool",
        metadata: { name: "general" },
        spec: { template: { spec: { requirements: [capacity(["spot", "on-demand"])] } } },
      });
      const preferSpot = {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 100, preference: { matchExpressions: [capacity(["spot"])] } },
        ],
      };
      const requireOnDemand = {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [capacity(["on-demand"])] }],
        },
      };
      for (const i of [1, 2, 3]) {
        // Names sort the spot-preferring pods first: the scheduler sees them first.
        await kube.create("Pod", pod(`a-spot-${i}`, { nodeAffinity: preferSpot }), { namespace: "shop" });
        await kube.create("Pod", pod(`z-od-${i}`, { nodeAffinity: requireOnDemand }), { namespace: "shop" });
      }
      for (let s = 0; s < 30; s++) {
        await sim.tick(1000);
        await clock.advance(1000);
      }
      const nodes = new Map(
        (await kube.list("Node")).items.map((n) => [
          n.metadata.name,
          n.metadata.labels?.[CAPACITY_TYPE_LABEL],
        ]),
      );
      const pods = (await kube.list("Pod", { namespace: "shop" })).items;
      assert.deepEqual(
        pods.map((p) => [p.metadata.name, p.status?.phase, nodes.get(p.spec.nodeName)]),
        [
          ["a-spot-1", "Running", "spot"],
          ["a-spot-2", "Running", "spot"],
          ["a-spot-3", "Running", "spot"],
          ["z-od-1", "Running", "on-demand"],
          ["z-od-2", "Running", "on-demand"],
          ["z-od-3", "Running", "on-demand"],
        ],
      );
    });
  }
});

/** A simulator over KWOK offerings, 10 s boots, no spot interruptions, and one 2-CPU pool (shop). */
async function oneSmallPool(): Promise<{ clock: FakeClock; kube: MemoryKube; sim: Simulator }> {
  const clock = new FakeClock(Date.UTC(2026, 11, 1, 12));
  const random = seeded(5);
  const kube = new MemoryKube({ clock, random });
  const sim = new Simulator({
    kube,
    clock,
    random,
    offerings: buildKwokOfferings(),
    bootDelayMs: 10_000,
    spotInterruptionRate: 0,
  });
  await kube.create("Namespace", { metadata: { name: "shop" } });
  await kube.create("NodePool", kwokTestPool("general", { cpu: "2", consolidateAfter: "10m" }));
  return { clock, kube, sim };
}

describe("simulated Karpenter nomination", () => {
  it("provisions again for a nominated pod whose node another pod took", async () => {
    const { clock, kube, sim } = await oneSmallPool();
    const pod = (
      name: string,
      cpu: string,
      nodeSelector?: Record<string, string>,
      priority?: number,
    ): Pod => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "shop" },
      spec: {
        ...(nodeSelector ? { nodeSelector } : {}),
        ...(priority !== undefined ? { priority } : {}),
        containers: [{ name: "c", image: "x", resources: { requests: { cpu } } }],
      },
      status: { phase: "Pending" },
    });
    const tick = async (n: number): Promise<void> => {
      for (let s = 0; s < n; s++) {
        await sim.tick(1000);
        await clock.advance(1000);
      }
    };
    // z-od gets an on-demand NodeClaim; a-any, created later, gets a spot one, but when the
    // on-demand node comes up first the scheduler (a-any has the higher priority) puts a-any there.
    await kube.create("Pod", pod("z-od", "1", { [CAPACITY_TYPE_LABEL]: "on-demand" }), { namespace: "shop" });
    await tick(5);
    await kube.create("Pod", pod("a-any", "1500m", undefined, 100), { namespace: "shop" });
    await tick(35);
    const phase = async (name: string): Promise<string | undefined> =>
      (await kube.get("Pod", name, "shop")).status?.phase;
    assert.equal(await phase("a-any"), "Running");
    assert.equal(await phase("z-od"), "Running", "z-od got a node of its own, not waiting for consolidation");
    const claims = (await kube.list("NodeClaim")).items.map((c) => c.metadata.labels?.[CAPACITY_TYPE_LABEL]);
    assert.deepEqual(claims.sort(), ["on-demand", "on-demand", "spot"]);
  });
});

describe("simulated node names", () => {
  // A day at a high interruption rate launches thousands of nodes from the same PRNG: names drawn
  // at random collide. A PRNG that always draws the same value makes every draw collide.
  it("never hands out a NodeClaim or Node name twice, even when the random draws repeat", async () => {
    const clock = new FakeClock(Date.UTC(2026, 11, 1, 12));
    const kube = new MemoryKube({ clock, random: seeded(1) });
    const sim = new Simulator({
      kube,
      clock,
      random: () => 0.5,
      offerings: buildKwokOfferings(),
      bootDelayMs: 1000,
      spotInterruptionRate: 0,
    });
    await kube.create("Namespace", { metadata: { name: "shop" } });
    await kube.create("NodePool", {
      apiVersion: "karpenter.sh/v1",
      kind: "NodePool",
      metadata: { name: "general" },
      spec: {
        template: {
          spec: { requirements: [{ key: "karpenter.kwok.sh/instance-cpu", operator: "In", values: ["32"] }] },
        },
      },
    });
    // Three pods of 20 CPU on 32-CPU types: a node each, launched in one provisioning pass.
    for (const i of [1, 2, 3])
      await kube.create(
        "Pod",
        {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: `big-${i}`, namespace: "shop" },
          spec: {
            containers: [{ name: "c", image: "x", resources: { requests: { cpu: "20", memory: "1Gi" } } }],
          },
          status: { phase: "Pending" },
        },
        { namespace: "shop" },
      );
    for (let s = 0; s < 20; s++) {
      await sim.tick(1000);
      await clock.advance(1000);
    }
    const claims = (await kube.list("NodeClaim")).items.map((c) => c.metadata.name);
    const nodes = (await kube.list("Node")).items.map((n) => n.metadata.name);
    assert.equal(new Set(claims).size, 3, claims.join(", "));
    assert.equal(new Set(nodes).size, 3, nodes.join(", "));
    const pods = (await kube.list("Pod", { namespace: "shop" })).items;
    assert.ok(
      pods.every((p) => p.status?.phase === "Running"),
      pods.map((p) => p.status?.phase).join(),
    );
  });
});

describe("simulated kube-scheduler's queue", () => {
  it("places the pod waiting longest first, not the first by name (PrioritySort)", async () => {
    const { clock, kube, sim } = await oneSmallPool();
    const pod = (name: string): Pod => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "shop" },
      spec: { containers: [{ name: "c", image: "x", resources: { requests: { cpu: "1500m" } } }] },
      status: { phase: "Pending" },
    });
    // z-old waits for its node; a-new comes just before that node is up and sorts first by name.
    await kube.create("Pod", pod("z-old"), { namespace: "shop" });
    for (let s = 0; s < 12; s++) {
      if (s === 9) await kube.create("Pod", pod("a-new"), { namespace: "shop" });
      await sim.tick(1000);
      await clock.advance(1000);
    }
    const node = async (name: string): Promise<string | undefined> =>
      (await kube.get("Pod", name, "shop")).spec.nodeName;
    assert.ok((await node("z-old")) !== undefined, "the older pod got the node launched for it");
    assert.equal(await node("a-new"), undefined);
  });
});
