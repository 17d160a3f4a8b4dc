// Warmup never fights consolidation, on the simulated Karpenter (FakeClock: 12 minutes in
// seconds). The rig's acceptance (test/e2e/warmup-consolidation.soak.e2e.test.ts) in small: a pool that
// consolidates empty nodes 20 s after they empty, one pod filling its one 4-vCPU node, no further
// demand, Wave's real warmup controller with a 30 s TTL and no cooldown of its own. Every warm
// node expires unused and Karpenter consolidates it; back-off must space the next ones out.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { Deployment } from "../objects/kube.ts";
import {
  CAPACITY_TYPE_LABEL,
  INSTANCE_TYPE_LABEL,
  NODE_POOL_LABEL,
  type NodePool,
} from "../objects/karpenter.ts";
import { isWavePod, isWarmupPod } from "../objects/wave.ts";
import { CompositePriceProvider } from "../pricing/composite.ts";
import { StaticPriceProvider, loadStaticPriceTable } from "../pricing/static.ts";
import { FakeClock } from "../shared/clock.ts";
import { seeded } from "../shared/random.ts";
import { mirrorMemoryKube } from "../state/follow.ts";
import { backoffCooldownMs } from "../warmup/backoff.ts";
import { WarmupController } from "../warmup/controller.ts";
import { DEFAULT_POLICY } from "../policy/warmup.ts";
import type { LifecycleRecord } from "../dashboard/history.ts";
import { detectThrashing, isFlagged } from "../dashboard/thrashing/detect.ts";
import { buildCatalog, buildOfferings } from "./catalog.ts";
import { Simulator } from "./simulator.ts";

const prices = new CompositePriceProvider({ static: new StaticPriceProvider(loadStaticPriceTable()) });
const POOL = "jobs";
const POLICY = { ...DEFAULT_POLICY, enabled: true, ttlSeconds: 30, cooldownSeconds: 0, prePull: false };
const MIN = 60_000;

const nodePool: NodePool = {
  apiVersion: "karpenter.sh/v1",
  kind: "NodePool",
  metadata: { name: POOL },
  spec: {
    template: {
      spec: {
        requirements: [
          { key: CAPACITY_TYPE_LABEL, operator: "In", values: ["on-demand"] },
          { key: "karpenter.k8s.aws/instance-cpu", operator: "In", values: ["4"] },
        ],
        nodeClassRef: { group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: "default" },
      },
    },
    disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "20s" },
  },
};

/** 3 of a 4-vCPU node's CPUs: a second one never fits beside it, so warmup has work. */
const workload: Deployment = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "job", namespace: "default", labels: { app: "job" } },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: "job" } },
    template: {
      metadata: { labels: { app: "job" } },
      spec: {
        nodeSelector: { [NODE_POOL_LABEL]: POOL },
        containers: [{ name: "c", image: "job:1", resources: { requests: { cpu: "3", memory: "1Gi" } } }],
      },
    },
  },
};

async function run(): Promise<{
  starts: number[];
  maxUnused: number;
  misses: number;
  hits: number;
  lifecycle: LifecycleRecord[];
  warmNodes: Set<string>;
  now: number;
}> {
  const clock = new FakeClock(Date.UTC(2026, 11, 4, 10));
  const random = seeded(5);
  const kube = new MemoryKube({ clock, random, historyLimit: 20_000 });
  const { state } = await mirrorMemoryKube(kube);
  const sim = new Simulator({
    kube,
    clock,
    offerings: buildOfferings(buildCatalog(), prices),
    random,
    spotInterruptionRate: 0,
  });
  await kube.create("Namespace", { metadata: { name: "wave" } });
  await kube.create("Namespace", { metadata: { name: "default" } });
  await kube.create("NodePool", structuredClone(nodePool));
  await kube.create("Deployment", structuredClone(workload), { namespace: "default" });
  const warmNodes = new Set<string>();
  let misses = 0;
  let hits = 0;
  const warmup = new WarmupController({
    client: kube,
    view: state,
    clock,
    namespace: "wave",
    policyOf: () => POLICY,
    onEvent: (e) => {
      if (e.type === "miss") {
        misses++;
        if (e.reason === "ttl" && e.node !== undefined) warmNodes.add(e.node);
      }
      if (e.type === "hit") hits++;
    },
  });
  // The workload first: Running on its own node before warmup starts.
  const running = (): boolean =>
    kube.peek("Pod").some((p) => p.metadata.labels?.["app"] === "job" && p.status?.phase === "Running");
  for (let s = 0; s < 120 && !running(); s++) {
    await sim.tick(1000);
    await clock.advance(1000);
  }
  await warmup.start();
  const starts: number[] = [];
  const seen = new Set<string>();
  const launched = new Map<string, LifecycleRecord>();
  const lifecycle: LifecycleRecord[] = [];
  let maxUnused = 0;
  const end = clock.now() + 12 * MIN;
  while (clock.now() < end) {
    await sim.tick(1000);
    await warmup.reconcileAll();
    const pods = kube.peek("Pod");
    for (const p of pods.filter(isWarmupPod)) {
      const name = p.metadata.name ?? "";
      if (!seen.has(name)) starts.push(clock.now());
      seen.add(name);
    }
    // Unused: a node of the pool running no real pod that Karpenter is not already removing.
    const used = new Set(pods.filter((p) => !isWavePod(p)).map((p) => p.spec.nodeName));
    const unused = kube
      .peek("Node")
      .filter(
        (n) =>
          n.metadata.labels?.[NODE_POOL_LABEL] === POOL &&
          n.metadata.deletionTimestamp === undefined &&
          !(n.spec?.taints ?? []).some((t) => t.key === "karpenter.sh/disrupted") &&
          !used.has(n.metadata.name),
      );
    maxUnused = Math.max(maxUnused, unused.length);
    // The pool's NodeClaims as core's lifecycle rows would have them: launched, then gone.
    const claims = kube.peek("NodeClaim").filter((c) => c.metadata.labels?.[NODE_POOL_LABEL] === POOL);
    for (const c of claims) {
      const name = c.metadata.name ?? "";
      const known = launched.get(name);
      const row: LifecycleRecord = {
        nodeClaim: name,
        nodePool: POOL,
        nodeName: c.status?.nodeName ?? known?.nodeName,
        instanceType: c.metadata.labels?.[INSTANCE_TYPE_LABEL],
        phase: "Launched",
        at: known?.at ?? clock.now(),
      };
      if (!known) lifecycle.push(row);
      else known.nodeName = row.nodeName;
      launched.set(name, known ?? row);
    }
    for (const [name, row] of launched) {
      if (claims.some((c) => c.metadata.name === name)) continue;
      lifecycle.push({ ...row, phase: "Terminated", reason: "Empty", at: clock.now() });
      launched.delete(name);
    }
    await clock.advance(1000);
  }
  return { starts, maxUnused, misses, hits, lifecycle, warmNodes, now: clock.now() };
}

describe("warmup against consolidation (simulated Karpenter, 12 min)", () => {
  it("one unused warm node at most, growing cooldown, and the thrashing report names the warmup", async (t) => {
    const r = await run();
    const gaps = r.starts.slice(1).map((s, i) => (s - (r.starts[i] ?? 0)) / 1000);
    t.diagnostic(
      `${r.starts.length} warmups, gaps ${gaps.join(", ")} s; max unused nodes ${r.maxUnused}; misses ${r.misses}`,
    );
    const story = `warmups at ${r.starts.map((s) => (s - (r.starts[0] ?? 0)) / 1000).join(", ")} s (gaps ${gaps.join(", ")} s), max unused ${r.maxUnused}, misses ${r.misses}, hits ${r.hits}`;
    assert.equal(r.hits, 0, story);
    assert.ok(r.maxUnused <= 1, `never more than one unused warm node: ${story}`);
    assert.ok(r.starts.length >= 4, `warm nodes came again: ${story}`);
    for (const [i, gap] of gaps.entries()) {
      // Before warmup i + 2, i + 1 warm nodes in a row expired unused.
      assert.ok(gap * 1000 >= backoffCooldownMs(POLICY, i + 1), `gap ${i + 1} backed off: ${story}`);
      if (i > 0) assert.ok(gap > (gaps[i - 1] ?? 0), `the gaps grow: ${story}`);
    }
    const report = detectThrashing({
      nodePool: POOL,
      events: r.lifecycle,
      warmNodes: r.warmNodes,
      now: r.now,
    });
    if (isFlagged(report.severity)) {
      assert.ok(
        report.evidence.some((e) => e.warmup),
        `the warm nodes are evidence: ${JSON.stringify(report)}`,
      );
      assert.equal(report.advice[0]?.id, "warmup-churn", report.summary);
      assert.match(report.summary, /Wave's own warm nodes/);
      // The other churned nodes held the workload: Karpenter moved it onto a warm node Wave had
      // just released (empty, paid for) and removed the node it left — replaced by a warm node.
      const warm = new Set(report.evidence.filter((e) => e.warmup).map((e) => e.nodeClaim));
      const claimOfWarm = new Set(
        r.lifecycle
          .filter((l) => l.nodeName !== undefined && r.warmNodes.has(l.nodeName))
          .map((l) => l.nodeClaim),
      );
      for (const e of report.evidence.filter((x) => !x.warmup))
        assert.ok(
          e.replacedBy !== undefined && (warm.has(e.replacedBy) || claimOfWarm.has(e.replacedBy)),
          `${e.nodeClaim} gave way to a released warm node: ${JSON.stringify(e)}`,
        );
    }
  });
});
