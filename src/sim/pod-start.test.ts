// Issue 38 point 5: the replay sees pod start — node boot per pool, image pull, warm vs cold
// placement — at the recorded cluster's coarse period as on a continuous one.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DEFAULT_POLICY } from "../policy/warmup.ts";
import { replay, type ReplayOptions, type ReplayPolicy } from "./replay.ts";
import { parseRecordedWorkload, recordedWorkload } from "./workload.ts";
import { kwokTestPool } from "./pool.test-helper.ts";
import { KUBELET_START_MS, PodStartModel } from "./pod-start.ts";
import type { Pod } from "../objects/kube.ts";

const MINUTE = 60_000;
const PERIOD = 150_000;

function deployment(name: string, replicas: number, cpu: string, image = `${name}:1`): unknown {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: "shop" },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name, image, resources: { requests: { cpu, memory: "1Gi" } } }] },
      },
    },
  };
}

// A ramp: every 10 min one more 3-CPU pod, a whole 4-vCPU node each — every step waits for a
// launch (boot 60 s, then its image, 20 s) unless a warm node holds the room and the image.
const RAMP = recordedWorkload(
  parseRecordedWorkload({
    nodePools: [kwokTestPool("pool", { cpu: "4", consolidateAfter: "30s" })],
    deployments: [deployment("ramp", 0, "3")],
    steps: [1, 2, 3, 4, 5, 6].map((n) => ({ at: `${n * 10}m`, deployment: "shop/ramp", replicas: n })),
  }),
);

const NONE: ReplayPolicy = { spot: [], warmup: {} };
const ramp = (
  policy: ReplayPolicy,
  extra: Partial<ReplayOptions> = {},
): Promise<Awaited<ReturnType<typeof replay>>> =>
  replay({
    workload: RAMP,
    policy,
    durationMs: 70 * MINUTE,
    catalog: "kwok",
    bootDelayMs: MINUTE,
    poolPullMs: { pool: 20_000 },
    spotInterruptionRate: 0,
    seed: 3,
    quietStepMs: 30_000,
    ...extra,
  });
const WARM: ReplayPolicy = {
  spot: [],
  warmup: {
    pool: { ...DEFAULT_POLICY, enabled: true, maxWarmNodes: 1, ttlSeconds: 1800, cooldownSeconds: 60 },
  },
};

describe("the replay's pod start (issue 38)", () => {
  it("a cold start is the batch window, the pool's boot, the image pull and the kubelet's start", async () => {
    const r = await ramp(NONE);
    assert.equal(r.podStart.count, 6);
    // 1 s batch + 60 s boot + 20 s pull + 1 s start.
    assert.equal(r.podStart.p50Ms, 82_000);
    assert.equal(r.podStart.p95Ms, 82_000);
    const noPull = await ramp(NONE, { poolPullMs: {} });
    assert.equal(noPull.podStart.p50Ms, 62_000, "without a pull, boot alone");
    const ownBoot = await ramp(NONE, { poolBootMs: { pool: 30_000 } });
    assert.equal(ownBoot.podStart.p50Ms, 52_000, "the pool's own boot before the cluster's");
  });

  it("is the same at the recorded 150 s period as on a continuous cluster (not the period, not three)", async () => {
    const grid = await ramp(NONE, { cadence: [{ from: 0, stepMs: PERIOD }] });
    assert.notEqual(grid.podStart.p50Ms, PERIOD);
    assert.equal(grid.podStart.p50Ms, 82_000);
    assert.equal(grid.podStart.p95Ms, 82_000);
  });

  it("warmup with pre-pull lowers the candidate's p50 below the current policy's: the step lands on the warm node, its image there", async () => {
    for (const cadence of [undefined, [{ from: 0, stepMs: PERIOD }]]) {
      const opts = cadence ? { cadence } : {};
      const current = await ramp(NONE, opts);
      const warm = await ramp(WARM, opts);
      assert.ok(warm.preemptions >= 3, `warm pods taken by the ramp: ${warm.preemptions}`);
      assert.ok(
        warm.podStart.p50Ms <= KUBELET_START_MS + 1000,
        `p50 ${current.podStart.p50Ms} → ${warm.podStart.p50Ms} ms (cadence ${cadence ? "150 s" : "1 s"})`,
      );
      assert.ok(warm.podStart.p50Ms < current.podStart.p50Ms);
      // Without pre-pull the warm node saves the boot, not the pull.
      const noPrePull = await ramp(
        { spot: [], warmup: { pool: { ...WARM.warmup.pool!, prePull: false } } },
        opts,
      );
      assert.ok(
        noPrePull.podStart.p50Ms >= 20_000 && noPrePull.podStart.p50Ms < current.podStart.p50Ms,
        `no pre-pull: p50 ${noPrePull.podStart.p50Ms} ms`,
      );
      assert.ok(warm.costPerHour > current.costPerHour, "the warm node costs");
    }
  });

  it("a pod on a node that already ran its image starts without a pull; a new image waits for it", async () => {
    // Three 1-CPU web pods share one node; at 10 min one more (the node ran web:1), at 20 min a
    // pod of another image onto the same node.
    const w = recordedWorkload(
      parseRecordedWorkload({
        nodePools: [kwokTestPool("pool", { cpu: "8", consolidateAfter: "30s" })],
        deployments: [deployment("web", 3, "1"), deployment("side", 0, "1", "side:2")],
        steps: [
          { at: "10m", deployment: "shop/web", replicas: 4 },
          { at: "20m", deployment: "shop/side", replicas: 1 },
        ],
      }),
    );
    const r = await replay({
      workload: w,
      policy: NONE,
      durationMs: 30 * MINUTE,
      catalog: "kwok",
      bootDelayMs: MINUTE,
      poolPullMs: { pool: 20_000 },
      spotInterruptionRate: 0,
      seed: 3,
      settleMs: 5 * MINUTE,
    });
    assert.equal(r.podStartByDeployment["shop/web"]?.p50Ms, KUBELET_START_MS, "web:1 is on the node");
    assert.equal(r.podStartByDeployment["shop/side"]?.p50Ms, 20_000 + KUBELET_START_MS, "side:2 is pulled");
  });
});

describe("PodStartModel", () => {
  const pod = (uid: string, created: number, image = "app:1"): Pod => ({
    metadata: { uid, name: uid, namespace: "ns", creationTimestamp: new Date(created).toISOString() },
    spec: { containers: [{ name: "c", image }] },
  });

  it("launches a batch its window after its newest pod, not before the batch opened, never after now", () => {
    const m = new PodStartModel({ bootMs: 60_000 });
    assert.equal(m.launchAt(150_000, 0, [pod("a", 0)], 1000, 10_000), 1000);
    assert.equal(
      m.launchAt(450_000, 300_000, [pod("a", 0)], 1000, 10_000),
      301_000,
      "waited before the batch opened",
    );
    assert.equal(m.launchAt(2000, 0, [pod("a", 0), pod("b", 1500)], 1000, 10_000), 2000, "not after now");
  });

  it("binds on a node registered this tick once both were there; pulls once per node and image", () => {
    const m = new PodStartModel({ bootMs: 60_000, poolPullMs: { p: 20_000 } });
    m.registered("n", "p", 1000, 300_000, 2);
    // The same tick, the clock a moment on (the embedded cluster's runs on real time).
    m.bind(pod("a", 0), "n", 300_004, 2);
    assert.equal(m.startAt(pod("a", 0), "n", 450_000), 61_000 + 20_000 + KUBELET_START_MS);
    // Later, the image is there.
    m.bind(pod("b", 500_000), "n", 500_000, 3);
    assert.equal(m.startAt(pod("b", 500_000), "n", 501_000), 501_000);
    // A new image waits for its pull, then starts.
    m.bind(pod("c", 600_000, "other:1"), "n", 600_000, 4);
    assert.equal(m.startAt(pod("c", 600_000, "other:1"), "n", 601_000), undefined);
    assert.equal(m.nextPullEnd(), 621_000);
    assert.equal(m.startAt(pod("c", 600_000, "other:1"), "n", 620_000), undefined, "pulled, not started");
    assert.equal(m.startAt(pod("c", 600_000, "other:1"), "n", 621_000), 621_000);
    assert.deepEqual(m.imagesOn("n", 620_000), ["app:1", "other:1"]);
  });
});
