// Issue 39 on the rig (Karpenter v1.15.0, StaticCapacity on): a static NodePool of this test's own
// (spec.replicas 3, no pods) → Karpenter makes 3 nodes; Wave (startWave: agent + core + API in
// this process) shows 3/3 on its API and /metrics, says "static" for each of its nodes in the
// consolidation view (no blocker, no fix, no saving), refuses a warmup policy on it with that
// reason; replicas 2 → 2/2, and the node Karpenter removed is no thrashing.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type {
  ConsolidationViewDto,
  NodePoolDto,
  ThrashingDto,
  WarmupViewDto,
} from "../../src/dashboard/dto.ts";
import { isWarmupPod } from "../../src/objects/wave.ts";
import type { Pod } from "../../src/objects/kube.ts";
import {
  createNamespace,
  deleteNamespace,
  kubectl,
  list,
  remove,
  requireRig,
  waitFor,
  withRigLogsOnFailure,
} from "./harness.ts";
import { startWaveOnRig, type InProcessWave } from "./wave-in-process.ts";
import { sumOf } from "./crosscheck.ts";
import { applyTaintedPool, POOL_LABEL } from "./pools.ts";

const CLUSTER = "e2e-static-pool";

let ns = "";
let pool = "";
let running: InProcessWave | undefined;

const log = (msg: string): void => void process.stderr.write(`# ${msg}\n`);

const api = <T>(path: string, init?: RequestInit): Promise<T> => {
  assert.ok(running);
  return running.api<T>(path, init);
};

/** This pool's gauge `name` in core's /metrics. */
async function metric(name: string): Promise<number | undefined> {
  assert.ok(running);
  return sumOf(await running.metrics(), name, { cluster: CLUSTER, nodepool: pool });
}

/** The rig's NodePool `default` as a static pool of ours: replicas, a label and taint, no limits but nodes. */
async function applyStaticPool(replicas: number): Promise<void> {
  // A static NodeClaim carries only its pool's requirements, and KWOK's provider launches one only
  // when they name its instance types ("instance type requirement not found" otherwise). Static
  // pools take no limits but limits.nodes (pkg/apis/v1/nodepool.go).
  await applyTaintedPool(pool, {
    replicas,
    limits: { nodes: "5" },
    requirements: [{ key: "node.kubernetes.io/instance-type", operator: "In", values: ["c-1x-amd64-linux"] }],
  });
}

const readyNodes = async (): Promise<string[]> =>
  (await list("nodes", { selector: `${POOL_LABEL}=${pool}` }))
    .filter(
      (n) =>
        n.metadata.deletionTimestamp === undefined &&
        (
          (n.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? []
        ).some((c) => c.type === "Ready" && c.status === "True"),
    )
    .map((n) => n.metadata.name);

/** The pool's static figure on the API and /metrics, once both say actual/desired. */
async function shows(actual: number, desired: number): Promise<void> {
  await waitFor(
    `Wave's API and /metrics to show ${actual}/${desired} for the static pool`,
    async () => {
      const p = (await api<NodePoolDto[]>("nodepools")).find((x) => x.name === pool);
      const d = await metric("wave_nodepool_desired_nodes");
      const a = await metric("wave_nodepool_actual_nodes");
      return p?.static?.desiredNodes === desired &&
        p.static.actualNodes === actual &&
        d === desired &&
        a === actual
        ? true
        : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 1_000 },
  );
}

before(async () => {
  await requireRig();
  ns = await createNamespace("static");
  pool = `${ns}-pool`;
  running = await startWaveOnRig(CLUSTER, ns);
});

after(async () => {
  await running?.stop();
  if (pool !== "") {
    await remove("warmuppolicies.wave.sh", pool).catch(() => undefined);
    await remove("nodepools.karpenter.sh", pool);
  }
  if (ns !== "") await deleteNamespace(ns);
});

test("a static NodePool: 3/3, 'static' in consolidation, warmup refused; replicas 2 → 2/2, no thrashing", async () => {
  await withRigLogsOnFailure(async () => {
    const t0 = Date.now();
    await applyStaticPool(3);
    const nodes = await waitFor(
      "Karpenter to make the static pool's 3 nodes",
      async () => {
        const n = await readyNodes();
        return n.length === 3 ? n : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 1_000 },
    );
    log(`3 nodes in ${String(Math.round((Date.now() - t0) / 1000))} s: ${nodes.join(", ")}`);
    await shows(3, 3);

    const sentence = "static: Karpenter keeps 3 nodes and never consolidates them";
    const view = await waitFor(
      "the consolidation view to say 'static' for each of the pool's nodes",
      async () => {
        const v = await api<ConsolidationViewDto>(`consolidation?nodePool=${pool}`);
        return v.items.length === 3 && v.items.every((n) => n.static) ? v : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1_000 },
    );
    for (const n of view.items) {
      assert.deepEqual(
        n.blockers.map((b) => [b.reason, b.blocking, b.fix, b.message]),
        [["static", false, null, sentence]],
      );
      assert.equal(n.blocked, false);
      assert.equal(n.savingsPerHour, 0, "no 'would save'");
    }
    assert.deepEqual(
      view.staticPools.find((p) => p.nodePool === pool),
      { nodePool: pool, nodes: 3, replicas: 3, message: sentence },
    );
    assert.ok(!view.byPoolReason.some((r) => r.nodePool === pool), "not counted as blocked");
    log(`consolidation: ${sentence}`);

    // A warmup policy on the pool: refused with that reason, and no warmup pod.
    await api("policies/warmup/" + pool, {
      method: "PUT",
      body: JSON.stringify({ enabled: true, maxWarmNodes: 1, ttlSeconds: 600, prePull: false }),
    });
    const row = await waitFor(
      "the Warmup page to refuse the static pool",
      async () => {
        const r = (await api<WarmupViewDto>("warmup")).pools.find((p) => p.nodePool === pool);
        return r?.policy.enabled && r.blocker === "static-pool" ? r : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1_000 },
    );
    assert.equal(
      row.blockerDetail,
      `${sentence}; it launches no node for a pending pod, so Wave does not warm it`,
    );
    log(`warmup: ${row.blocker}: ${row.blockerDetail}`);
    const warmups = (await list("pods", { namespace: ns })).filter((p) => isWarmupPod(p as unknown as Pod));
    assert.equal(warmups.length, 0, "Wave's warmup controller started nothing");

    // Replicas 3 → 2: Karpenter removes one node; Wave shows 2/2 and no thrashing.
    await kubectl([
      "patch",
      "nodepool",
      pool,
      "--type",
      "merge",
      "-p",
      JSON.stringify({ spec: { replicas: 2 } }),
    ]);
    await waitFor(
      "Karpenter to scale the static pool to 2 nodes",
      async () => ((await readyNodes()).length === 2 ? true : undefined),
      { timeoutMs: 180_000, intervalMs: 1_000 },
    );
    await shows(2, 2);
    // Once the detector has the removal (its summary counts it), it is no churn.
    const thrash = await waitFor(
      "the thrashing report to count the removed node",
      async () => {
        const r = (await api<ThrashingDto[]>("thrashing")).find((x) => x.nodePool === pool);
        return r && /, 1 removed\)/.test(r.summary) ? r : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 2_000 },
    );
    assert.equal(thrash.severity, "none");
    assert.equal(thrash.score, 0);
    assert.deepEqual(thrash.evidence, [], "the removed node is no churn");
    assert.deepEqual(thrash.advice, []);
    log(`thrashing: ${thrash.summary}`);
    await waitFor(
      "the consolidation view to say Karpenter keeps 2",
      async () => {
        const v = await api<ConsolidationViewDto>(`consolidation?nodePool=${pool}`);
        const s = v.staticPools.find((p) => p.nodePool === pool);
        return s?.message === "static: Karpenter keeps 2 nodes and never consolidates them" && s.nodes === 2
          ? true
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1_000 },
    );
  });
});
