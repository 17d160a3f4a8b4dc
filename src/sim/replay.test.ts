import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { DEFAULT_POLICY } from "../policy/warmup.ts";
import { percentile, replay, type ReplayOptions, type ReplayPolicy } from "./replay.ts";
import { WorkloadError, generatedWorkload, parseRecordedWorkload, recordedWorkload } from "./workload.ts";
import { kwokTestPool } from "./pool.test-helper.ts";
import type { NodeOverlay } from "../objects/karpenter.ts";

// One KWOK pool of 4-vCPU nodes (3 one-CPU pods per node): web's 3 pods from the start, burst's
// one pod at 5 min — it needs a second node, which a warm node would have ready.
function deployment(name: string, replicas: number): unknown {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: "shop" },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [{ name, image: `${name}:1`, resources: { requests: { cpu: "1", memory: "1Gi" } } }],
        },
      },
    },
  };
}

const POOL = kwokTestPool("pool", { cpu: "4", consolidateAfter: "30s" });

const workload = recordedWorkload(
  parseRecordedWorkload({
    nodePools: [POOL],
    deployments: [deployment("web", 3), deployment("burst", 0)],
    steps: [{ at: "5m", deployment: "shop/burst", replicas: 1 }],
  }),
);

const NONE: ReplayPolicy = { spot: [], warmup: {} };
const MINUTE = 60_000;
const base = (policy: ReplayPolicy): ReplayOptions => ({
  workload,
  policy,
  durationMs: 10 * MINUTE,
  catalog: "kwok",
  bootDelayMs: MINUTE,
  spotInterruptionRate: 0,
  seed: 3,
});
const price = (ct: "spot" | "on-demand"): number =>
  new KwokPriceProvider().price("c-4x-amd64-linux", ct, "test-zone-a")?.usdPerHour ?? NaN;

describe("percentile", () => {
  it("is the nearest rank of an ascending list, 0 when empty", () => {
    assert.equal(percentile([], 50), 0);
    assert.equal(percentile([7], 95), 7);
    const xs = Array.from({ length: 20 }, (_, i) => i + 1);
    assert.equal(percentile(xs, 50), 10);
    assert.equal(percentile(xs, 95), 19);
    assert.equal(percentile(xs, 100), 20);
    assert.equal(percentile(xs, 0), 1);
  });
});

describe("replay", () => {
  it("is deterministic for a seed", async () => {
    const a = await replay(base(NONE));
    const b = await replay(base(NONE));
    assert.deepEqual(a, b);
  });

  it("counts NodeClaims, node-hours, cost and pod start latency from the simulated cluster", async () => {
    const r = await replay(base(NONE));
    // web's three pods share a node; burst's needs a second one (4 × 1 CPU > 3.9 allocatable).
    assert.equal(r.nodeClaimsCreated, 2);
    assert.equal(r.nodeHours.onDemand, 0, "unconstrained pods go to the cheaper spot offering");
    // Node 1 lives ~10 min, node 2 ~5 min (both from launch, not from Ready).
    assert.ok(
      r.nodeHours.spot > 14 / 60 && r.nodeHours.spot <= 15 / 60,
      `spot node-hours ${r.nodeHours.spot}`,
    );
    // Cost is the spot price × node-hours, averaged over the run.
    assert.ok(Math.abs(r.costPerHour - (price("spot") * r.nodeHours.spot) / (10 / 60)) < 1e-9);
    assert.equal(r.podStart.count, 4);
    assert.equal(r.pendingAtEnd, 0);
    // Every pod waited for a node: batch window + boot delay.
    assert.ok(r.podStart.p50Ms >= MINUTE && r.podStart.p50Ms <= MINUTE + 15_000, `p50 ${r.podStart.p50Ms}`);
    assert.deepEqual(Object.keys(r.podStartByDeployment), ["shop/burst", "shop/web"]);
    assert.equal(r.podStartByDeployment["shop/web"]?.count, 3);
    assert.equal(r.podStartByDeployment["shop/burst"]?.count, 1);
    assert.equal(r.spotInterruptions, 0);
    assert.equal(r.preemptions, 0);
    // The charts' buckets (a minute each over 10 min) add up to the run's figures.
    assert.equal(r.timeline.length, 10);
    const usd = r.timeline.reduce((a, b) => a + b.costPerHour * MINUTE, 0);
    assert.ok(Math.abs(usd / (10 * MINUTE) - r.costPerHour) < 1e-9, `${usd} vs ${r.costPerHour}`);
    assert.ok(r.timeline.some((b) => b.spotPods === 4) && r.timeline.every((b) => b.onDemandPods === 0));
    assert.deepEqual(r.podStartHistogram, [0, 0, 0, 0, 4, 0, 0], "every start between 60 and 120 s");
  });

  it("prices each NodeClaim as Karpenter sees it under a NodeOverlay (the rules machinePrice applies)", async () => {
    const list = await replay(base(NONE));
    const overlays: NodeOverlay[] = [
      {
        metadata: { name: "savings-plan" },
        spec: {
          requirements: [{ key: "karpenter.sh/nodepool", operator: "In", values: ["pool"] }],
          priceAdjustment: "-30%",
        },
        status: { conditions: [{ type: "ValidationSucceeded", status: "True" }] },
      },
    ];
    const r = await replay({ ...base(NONE), overlays });
    assert.deepEqual(r.nodeHours, list.nodeHours, "the same machines");
    assert.ok(
      Math.abs(r.costPerHour - list.costPerHour * 0.7) < 1e-9,
      `${r.costPerHour} vs ${list.costPerHour}`,
    );
    const other = await replay({
      ...base(NONE),
      overlays: [
        {
          ...overlays[0]!,
          spec: {
            ...overlays[0]!.spec,
            requirements: [{ key: "karpenter.sh/nodepool", operator: "In", values: ["other"] }],
          },
        },
      ],
    });
    assert.equal(other.costPerHour, list.costPerHour, "an overlay for another pool changes nothing");
  });

  it("ticks no more often than the recorded cluster acted (its cadence), yet stamps pod starts as a continuous cluster would", async () => {
    const opts = { ...base(NONE), durationMs: 20 * MINUTE };
    const every = await replay(opts);
    const stepped = await replay({ ...opts, cadence: [{ from: 0, stepMs: 2 * MINUTE }] });
    const burst = (r: typeof every): number => r.podStartByDeployment["shop/burst"]?.p50Ms ?? NaN;
    // Every second: batch window + boot + the kubelet's start.
    assert.ok(burst(every) <= MINUTE + 15_000, `continuous: ${burst(every)}`);
    // Every 2 min the scale-up lands in a step, then a step for the batch, one for the boot, one
    // for the kubelet (8 min of ticks); the pod is stamped when a continuous cluster starts it.
    assert.equal(burst(stepped), burst(every), `stepped: ${burst(stepped)}`);
    // A period shorter than the replay's own step changes nothing.
    const fine = await replay({ ...opts, cadence: [{ from: 0, stepMs: 10 }] });
    assert.equal(burst(fine), burst(every));
  });

  it("counts a node until it is gone (drained and terminated), as the cloud bills it and core records it", async () => {
    const short = recordedWorkload(
      parseRecordedWorkload({
        nodePools: [POOL],
        deployments: [deployment("web", 3)],
        steps: [{ at: "5m", deployment: "shop/web", replicas: 0 }],
      }),
    );
    // Every 2 min: launched at 2 min, empty at 6, a candidate at 8, disrupted at 10, gone at 12.
    const r = await replay({
      ...base(NONE),
      workload: short,
      durationMs: 15 * MINUTE,
      cadence: [{ from: 0, stepMs: 2 * MINUTE }],
    });
    assert.equal(r.nodeClaimsCreated, 1);
    const hours = r.nodeHours.spot + r.nodeHours.onDemand;
    assert.ok(Math.abs(hours - 10 / 60) < 1e-9, `node-hours ${hours * 60} min`);
  });

  it("applies a spot policy through Wave's admission: the base runs on-demand", async () => {
    const current = await replay(base(NONE));
    const candidate = await replay(
      base({
        spot: [
          {
            workload: { kind: "Deployment", namespace: "shop", name: "web" },
            threshold: 2,
            strategy: "Require",
          },
        ],
        warmup: {},
      }),
    );
    assert.equal(current.nodeHours.onDemand, 0);
    assert.ok(candidate.nodeHours.onDemand > 9 / 60, `on-demand node-hours ${candidate.nodeHours.onDemand}`);
    assert.ok(candidate.nodeHours.spot > 0, "the pods above the threshold stay on spot");
    assert.ok(candidate.costPerHour > current.costPerHour);
  });

  it("applies a warmup policy: the scale-up lands on a warm node instead of waiting for a boot", async () => {
    const current = await replay(base(NONE));
    const candidate = await replay(
      base({ spot: [], warmup: { pool: { ...DEFAULT_POLICY, enabled: true, maxWarmNodes: 1 } } }),
    );
    const burst = (r: typeof current): number => r.podStartByDeployment["shop/burst"]?.maxMs ?? NaN;
    assert.ok(
      burst(current) >= MINUTE,
      `without warmup the burst pod waits for a boot: ${burst(current)} ms`,
    );
    assert.ok(burst(candidate) <= 5_000, `with warmup it starts at once: ${burst(candidate)} ms`);
    assert.equal(candidate.podStart.count, 4, "warmup pods are not workload");
    assert.ok(candidate.costPerHour > current.costPerHour, "the warm node costs money");
  });

  it("refuses a workload whose NodePools no instance type of the catalog satisfies", async () => {
    await assert.rejects(
      replay({ workload: generatedWorkload(), policy: NONE, durationMs: MINUTE, catalog: "kwok" }),
      (err: unknown) =>
        err instanceof WorkloadError &&
        /NodePools batch, general, gpu, spot-heavy: no instance type of the kwok catalog satisfies their requirements/.test(
          err.message,
        ),
    );
  });

  it("rejects a non-positive duration or step", async () => {
    await assert.rejects(replay({ ...base(NONE), durationMs: 0 }), RangeError);
    await assert.rejects(replay({ ...base(NONE), stepMs: 0 }), RangeError);
  });
});
