import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { NodePool } from "../objects/karpenter.ts";
import type { Node, Pod } from "../objects/kube.ts";
import { DEFAULT_POLICY } from "../policy/warmup.ts";
import {
  ClusterWhatifError,
  catalogOf,
  clusterWhatif,
  fidelityOf,
  ownTemplate,
  recordCluster,
  recordedWindow,
  warmupNotes,
  type ClusterWhatifInput,
} from "./cluster-whatif.ts";
import { kwokTestPool } from "./pool.test-helper.ts";

const MIN = 60_000;
const NOW = Date.UTC(2026, 11, 3, 12);

const pool = kwokTestPool("flex", { cpu: "4", consolidateAfter: "30s" });

/** A pod of Deployment shop/api as the agent forwards it, placed by Wave's webhook on spot. */
function apiPod(i: number): Pod {
  return {
    metadata: {
      name: `api-7d9f-${i}`,
      namespace: "shop",
      uid: `u${i}`,
      creationTimestamp: new Date(NOW - 5 * MIN).toISOString(),
      labels: {
        app: "api",
        "pod-template-hash": "7d9f",
        "wave.sh/capacity-assignment": "spot",
        "wave.sh/spot-slot": `s${i}`,
      },
      ownerReferences: [
        { apiVersion: "apps/v1", kind: "ReplicaSet", name: "api-7d9f", uid: "rs", controller: true },
      ],
    },
    spec: {
      nodeName: "n1",
      containers: [
        { name: "api", image: "api:1", resources: { requests: { cpu: "500m", memory: "256Mi" } } },
      ],
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: "karpenter.sh/capacity-type", operator: "In", values: ["spot"] }] },
            ],
          },
        },
      },
    },
    status: { phase: "Running" },
  };
}

/** apiPod(i) as a pod of another Deployment's ReplicaSet (`app`-`hash`) in `namespace`. */
function otherPod(app: string, hash: string, namespace: string, i: number): Pod {
  const p = apiPod(i);
  return {
    ...p,
    metadata: {
      ...p.metadata,
      name: `${app}-${hash}-${i}`,
      namespace,
      labels: { app, "pod-template-hash": hash },
      // The same controller, renamed: a ReplicaSet `<deployment>-<pod-template-hash>`.
      ownerReferences: (p.metadata.ownerReferences ?? []).map((o) => ({
        ...o,
        name: `${app}-${hash}`,
        uid: `rs-${app}`,
      })),
    },
  };
}

const node: Node = {
  metadata: {
    name: "n1",
    labels: {
      "node.kubernetes.io/instance-type": "c-4x-amd64-linux",
      "karpenter.sh/capacity-type": "spot",
      "karpenter.sh/nodepool": "flex",
    },
  },
};

const api = { kind: "Deployment" as const, namespace: "shop", name: "api" };
const input = (over: Partial<ClusterWhatifInput> = {}): ClusterWhatifInput => ({
  nodePools: [pool],
  nodes: [node],
  pods: Array.from({ length: 6 }, (_, i) => apiPod(i)),
  history: [],
  now: NOW,
  windowMs: 24 * 60 * MIN,
  current: { spot: [{ workload: api, threshold: 0, strategy: "Prefer" }], warmup: {} },
  changes: { spot: [{ workload: api, threshold: 2, strategy: "Prefer" }], warmup: {} },
  spotInterruptionRate: 0,
  bootDelayMs: 5000,
  ...over,
});

void describe("cluster what-if", () => {
  void it("takes the workload's own template: Wave's capacity-type term and labels removed", () => {
    const t = ownTemplate(apiPod(0));
    assert.equal(t.spec.affinity, undefined);
    assert.deepEqual(t.metadata?.labels, { app: "api" });
    assert.equal(t.spec.nodeName, undefined);
  });

  void it("replays the history's pod counts as scale steps, ending at the current counts", () => {
    const history = [
      { workload: "shop/Deployment/api", ts: NOW - 30 * MIN, pods: 2 },
      { workload: "shop/Deployment/api", ts: NOW - 29 * MIN, pods: 2 },
      { workload: "shop/Deployment/api", ts: NOW - 20 * MIN, pods: 8 },
      { workload: "shop/Deployment/gone", ts: NOW - 20 * MIN, pods: 3 },
      { workload: "shop/Deployment/api", ts: NOW - 25 * 60 * MIN, pods: 50 },
    ];
    const r = recordCluster(input({ history }));
    assert.equal(r.from, NOW - 30 * MIN, "the window starts at its first bucket; older rows are out of it");
    assert.equal(r.buckets, 3);
    assert.equal(r.workload.deployments[0]?.spec.replicas, 2);
    assert.deepEqual(
      r.workload.steps.map((s) => [s.atMs / MIN, s.replicas]),
      [
        [10, 8],
        [30, 6],
      ],
    );
    assert.deepEqual(
      r.skipped.map((s) => s.workload),
      ["shop/Deployment/gone"],
    );
  });

  void it("replays a recorded rollout as one: a new revision replaces the pods, its surge is not demand", () => {
    const api = (min: number, pods: number, revision: string, revisionPods: number) => ({
      workload: "shop/Deployment/api",
      ts: NOW - min * MIN,
      pods,
      revision,
      revisionPods,
    });
    const history = [
      api(30, 4, "a", 4),
      api(25, 4, "a", 4),
      // The rollout: 4 new pods beside the old ones, which go over the next minutes.
      api(20, 7, "b", 4),
      api(19, 5, "b", 4),
      api(18, 4, "b", 4),
      // Demand grows.
      api(10, 6, "b", 6),
      // A rollback to the first revision; demand falls as it rolls: the new revision's pods shrink.
      api(5, 10, "a", 6),
      api(4, 8, "a", 5),
      api(3, 5, "a", 5),
      // Back from no pods with a new revision: it starts, nothing to replace.
      { workload: "shop/Deployment/web", ts: NOW - 30 * MIN, pods: 2, revision: "w1", revisionPods: 2 },
      { workload: "shop/Deployment/web", ts: NOW - 25 * MIN, pods: 0 },
      { workload: "shop/Deployment/web", ts: NOW - 20 * MIN, pods: 2, revision: "w2", revisionPods: 2 },
    ];
    const web = (i: number): Pod => otherPod("web", "1a", "shop", i);
    const r = recordCluster(
      input({ history, pods: [...Array.from({ length: 6 }, (_, i) => apiPod(i)), web(0), web(1)] }),
    );
    assert.deepEqual(
      r.workload.steps.filter((s) => s.name === "api").map((s) => [s.atMs / MIN, s.replicas]),
      [
        [20, 6],
        [26, 5],
        [30, 6],
      ],
      "4 wanted through the rollout, 6 once demand grew, 5 as the rollback's pods shrank, then now's 6",
    );
    assert.deepEqual(
      (r.workload.rollouts ?? []).map((x) => [x.atMs / MIN, x.name]),
      [
        [10, "api"],
        [25, "api"],
      ],
    );
  });

  void it("replays the pods a recorded rollout replaces as new pods", async () => {
    const rolled = [
      { workload: "shop/Deployment/api", ts: NOW - 30 * MIN, pods: 6, revision: "a", revisionPods: 6 },
      { workload: "shop/Deployment/api", ts: NOW - 20 * MIN, pods: 9, revision: "b", revisionPods: 6 },
      { workload: "shop/Deployment/api", ts: NOW - 19 * MIN, pods: 6, revision: "b", revisionPods: 6 },
    ];
    const steady = rolled.map((h) => ({ ...h, revision: "a" }));
    const [with_, without] = await Promise.all([
      clusterWhatif(input({ history: rolled })),
      clusterWhatif(input({ history: steady })),
    ]);
    assert.equal(without.current.podStart.count, 0, "the starting pods run throughout");
    assert.equal(with_.current.podStart.count, 6, "the rollout started 6 new pods");
    assert.deepEqual(with_.current.now.workloads["shop/Deployment/api"], {
      onDemand: 0,
      spot: 6,
      pending: 0,
    });
  });

  void it("picks the KWOK catalog on the rig's nodes", () => {
    assert.equal(catalogOf([node], [pool]), "kwok");
    assert.equal(catalogOf([], [pool]), "kwok");
  });

  void it("predicts the threshold's on-demand pods and what they cost, against the current all-spot", async () => {
    const r = await clusterWhatif(input());
    const key = "shop/Deployment/api";
    assert.deepEqual(r.current.now.workloads[key], { onDemand: 0, spot: 6, pending: 0 });
    assert.deepEqual(r.candidate.now.workloads[key], { onDemand: 2, spot: 4, pending: 0 });
    assert.ok(r.candidate.now.nodes.onDemand >= 1 && r.current.now.nodes.onDemand === 0);
    assert.ok(r.candidate.costPerHour > r.current.costPerHour, "on-demand costs more than spot");
    assert.ok(r.current.spotShare === 1 && r.candidate.spotShare < 1);
    assert.equal(r.catalog, "kwok");
  });

  void it("places a pod selecting a pool's template label in that pool, not in an untainted one", async () => {
    const open: NodePool = { ...pool, metadata: { name: "default" } };
    const labelled: NodePool = {
      ...pool,
      metadata: { name: "mine" },
      spec: { ...pool.spec, template: { ...pool.spec.template, metadata: { labels: { team: "shop" } } } },
    };
    const pods = Array.from({ length: 6 }, (_, i) => {
      const p = apiPod(i);
      return { ...p, spec: { ...p.spec, nodeSelector: { team: "shop" } } };
    });
    const r = await clusterWhatif(input({ nodePools: [open, labelled], pods }));
    assert.deepEqual(r.candidate.now.workloads["shop/Deployment/api"], { onDemand: 2, spot: 4, pending: 0 });
    assert.deepEqual(Object.keys(r.candidate.now.pools), ["mine"]);
  });

  void it("refuses a change for a workload or pool the cluster does not have", async () => {
    await assert.rejects(
      clusterWhatif(
        input({
          changes: {
            spot: [{ workload: { ...api, name: "nope" }, threshold: 1, strategy: "Prefer" }],
            warmup: {},
          },
        }),
      ),
      (e: Error) =>
        e instanceof ClusterWhatifError &&
        /no live pod of deployment\/shop\/nope.*shop\/Deployment\/api/.test(e.message),
    );
    await assert.rejects(
      clusterWhatif(input({ changes: { spot: [], warmup: { gpu: { ...DEFAULT_POLICY, enabled: true } } } })),
      /no NodePool gpu \(NodePools: flex\)/,
    );
  });
});

describe("the recorded window beside the current policy's replay", () => {
  const M = 60_000;
  const pt = (ts: number, nodePool: string, nodes: number, costPerHour: number) => ({
    ts,
    resolutionMs: M,
    nodePool,
    nodes,
    costPerHour,
  });
  it("averages core's series over the covered minutes, gaps left out, and gives the replay's errors", () => {
    const points = [
      // minute 0: two pools (a: on-demand and spot series), minute 1: pool a only, minute 3 after a gap.
      pt(0, "a", 2, 1),
      pt(0, "a", 1, 0.5),
      pt(0, "b", 4, 2),
      pt(M, "a", 3, 1.5),
      pt(3 * M, "a", 3, 1.5),
      pt(9 * M, "a", 100, 100), // outside [from, to)
    ];
    const rec = recordedWindow(points, 0, 5 * M);
    assert.ok(rec);
    assert.equal(rec.coveredMs, 3 * M);
    assert.ok(Math.abs(rec.costPerHour - (3.5 + 1.5 + 1.5) / 3) < 1e-12);
    assert.ok(Math.abs((rec.pools.a?.nodes ?? 0) - 3) < 1e-12);
    assert.ok(Math.abs((rec.pools.b?.nodes ?? 0) - 4 / 3) < 1e-12);
    const f = fidelityOf({ costPerHour: 2.6, pools: { a: { nodes: 3.3, costPerHour: 2 } } }, rec);
    assert.ok(Math.abs(f.costError - (2.6 - 6.5 / 3) / (6.5 / 3)) < 1e-12);
    assert.ok(Math.abs((f.poolNodesError.a ?? 0) - 0.1) < 1e-12);
    assert.equal(f.poolNodesError.b, -1, "a pool the replay never launched");
    assert.equal(recordedWindow([], 0, 5 * M), undefined);
  });
});

void describe("a workload with no live pod now", () => {
  void it("is replayed from the last pod core saw of it (a job between runs), else skipped", () => {
    const etl = (i: number): Pod => otherPod("etl", "5b6c", "batch", i);
    const history = [
      { workload: "batch/Deployment/etl", ts: NOW - 30 * MIN, pods: 4 },
      { workload: "batch/Deployment/etl", ts: NOW - 20 * MIN, pods: 0 },
    ];
    const without = recordCluster(input({ history }));
    assert.deepEqual(
      without.skipped.map((s) => s.workload),
      ["batch/Deployment/etl"],
    );
    const r = recordCluster(input({ history, templates: [etl(0), apiPod(0)] }));
    assert.deepEqual(r.skipped, []);
    const d = r.workload.deployments.find((x) => x.metadata.name === "etl");
    assert.equal(d?.spec.replicas, 4, "it starts at its recorded count");
    assert.equal(d.spec.template.metadata?.labels?.app, "etl");
    assert.deepEqual(
      r.workload.steps.filter((s) => s.name === "etl").map((s) => [s.atMs / MIN, s.replicas]),
      [[10, 0]],
      "and ends at 0: no live pod now",
    );
  });
});

void describe("a warmup candidate that starts pods slower", () => {
  void it("says so, with the workloads that got slower and the preemptions", () => {
    const stats = (p95Ms: number) => ({ count: 10, p50Ms: 1000, p95Ms, maxMs: p95Ms });
    const now = {
      podStart: stats(184_000),
      podStartByDeployment: { "shop/api": stats(49_000), "data/ingest": stats(6_000) },
      preemptions: 40,
    };
    const cand = {
      podStart: stats(301_000),
      podStartByDeployment: { "shop/api": stats(225_000), "data/ingest": stats(6_000) },
      preemptions: 48,
    };
    const names = new Map([
      ["shop/Deployment/api", { namespace: "shop", name: "api" }],
      ["data/Deployment/ingest", { namespace: "data", name: "ingest" }],
    ]);
    const warm = { spot: [], warmup: { arm64: { ...DEFAULT_POLICY, enabled: true } } };
    const [note, ...rest] = warmupNotes(warm, now, cand, names);
    assert.equal(rest.length, 0);
    assert.match(
      note ?? "",
      /^warmup on arm64: the replay's p95 pod start is worse \(184 s → 301 s\), not better; slower: shop\/Deployment\/api 49 s → 225 s; warm pods preempted by workload pods 40 → 48\./,
    );
    assert.deepEqual(warmupNotes(warm, cand, now, names), [], "a better p95 needs no note");
    assert.deepEqual(warmupNotes({ spot: [], warmup: {} }, now, cand, names), [], "nor a spot candidate");
  });
});
