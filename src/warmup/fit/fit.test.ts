import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../../shared/clock.ts";
import {
  ARCH_LABEL,
  CAPACITY_TYPE_LABEL,
  NODE_POOL_LABEL,
  TOPOLOGY_ZONE_LABEL,
} from "../../objects/karpenter.ts";
import type { Node, Pod } from "../../objects/kube.ts";
import { DEFAULT_POLICY } from "../../policy/warmup.ts";
import { WARMUP_LABEL } from "../../objects/wave.ts";
import { node, nodePool, pod, T0 } from "../testing/fixtures.ts";
import {
  detect,
  dominantShare,
  largestPod,
  podsByNodeName,
  referenceNode,
  type Detection,
} from "./detect.ts";
import { admit, likelyOffering, limitHeadroom, newNodeEstimate, type AdmissionInput } from "./limits.ts";
import { poolOfPod } from "../../karpenter/pool-of-pod.ts";
import { podRequests } from "../../karpenter/room.ts";
import { toleratesTaint } from "../../karpenter/scheduling.ts";

const GiB = 2 ** 30;

function run(nodes: Node[], workload: Pod[], others: Pod[] = [], pool = nodePool("general")): Detection {
  return detect({ pool, nodes, podsByNode: podsByNodeName([...workload, ...others]), workload });
}

describe("requests and shares", () => {
  it("takes max(sum of containers, largest init) plus overhead", () => {
    const p = pod("p", { cpu: "500m", memory: "1Gi" });
    p.spec.containers.push({ name: "b", resources: { requests: { cpu: "250m" } } });
    p.spec.initContainers = [{ name: "i", resources: { requests: { cpu: "2", memory: "512Mi" } } }];
    p.spec.overhead = { cpu: "100m" };
    assert.deepEqual(podRequests(p), { cpu: 2100, memory: GiB });
  });

  it("ranks by dominant share against the pool's typical node", () => {
    const ref = referenceNode(nodePool("g"), [node("a", "g", { cpu: "4", memory: "16Gi" })]);
    assert.deepEqual(ref, { cpu: 4000, memory: 16 * GiB });
    // 1 CPU = 25 % of the node; 8 GiB = 50 %: the memory-heavy pod is larger.
    const cpuHeavy = pod("cpu", { cpu: "1", memory: "1Gi" });
    const memHeavy = pod("mem", { cpu: "100m", memory: "8Gi" });
    assert.equal(dominantShare(podRequests(memHeavy), ref), 0.5);
    assert.equal(largestPod([cpuHeavy, memHeavy], ref)?.pod.metadata.name, "mem");
  });

  it("falls back to pool limits, then to 1 CPU : 4 GiB, when the pool has no nodes", () => {
    assert.deepEqual(referenceNode(nodePool("g", { limits: { cpu: "100", memory: "200Gi" } }), []), {
      cpu: 100_000,
      memory: 200 * GiB,
    });
    assert.deepEqual(referenceNode(nodePool("g"), []), { cpu: 1000, memory: 4 * GiB });
  });
});

describe("fit detection", () => {
  const big = (extra: Partial<Parameters<typeof pod>[1]> = {}): Pod =>
    pod("big", { cpu: "2", memory: "4Gi", node: "n1", ...extra });

  it("finds no need when a Ready node has room", () => {
    const d = run([node("n1", "general"), node("n2", "general")], [big()]);
    assert.deepEqual(!d.warmup && d.reason === "fits" ? d.nodes : [], ["n1", "n2"]);
  });

  it("warms up when the pool has zero nodes and a pending pod", () => {
    const d = run([], [pod("pending", { cpu: "1", memory: "1Gi" })]);
    assert.equal(d.warmup, true);
  });

  it("does nothing without workload", () => {
    assert.deepEqual(run([node("n1", "general")], []), { warmup: false, reason: "no-workload" });
  });

  it("counts DaemonSet pods' requests on the node", () => {
    const nodes = [node("n1", "general", { cpu: "4", memory: "16Gi" })];
    // big (2 CPU) on n1 leaves 2 CPU: one more fits…
    assert.equal(run(nodes, [big()]).warmup, false);
    // …until a DaemonSet pod takes 500m of it.
    const ds = pod("ds", { cpu: "500m", memory: "128Mi", node: "n1", daemonSet: true });
    const d = run(nodes, [big()], [ds]);
    assert.deepEqual(d.warmup && d.reasons.n1, ["insufficient:cpu"]);
  });

  it("counts each warmup pod as one warm slot, up to the target", () => {
    const nodes = [node("n1", "general", { cpu: "4" }), node("w1", "general", { cpu: "4" })];
    const warm = pod("w", { cpu: "2", node: "w1", labels: { [WARMUP_LABEL]: "true" } });
    const full = pod("f", { cpu: "3", node: "n1" });
    const input = {
      pool: nodePool("general"),
      nodes,
      podsByNode: podsByNodeName([full, warm]),
      workload: [full],
    };
    // The warm node's room is the warmup pod's: it is a slot, not free room.
    const one = detect(input, 1, 1);
    assert.deepEqual(!one.warmup && one.reason === "fits" ? one.nodes : undefined, []);
    // A target of two warm slots wants another.
    const two = detect(input, 1, 2);
    assert.deepEqual(two.warmup && two.reasons, { n1: ["insufficient:cpu"], w1: ["insufficient:cpu"] });
    // A target of zero never warms.
    assert.equal(detect(input, 0, 0).warmup, false);
  });

  it("wants no warmup while a node has room for the largest pod, whatever the target", () => {
    // The scheduler would bind a warmup pod to that room, and a warmup pod on a node older than
    // its warmup is removed at once: it would be made and removed again every pass.
    const nodes = [node("n1", "general", { cpu: "4" }), node("n2", "general", { cpu: "4" })];
    const full = pod("f", { cpu: "3", node: "n1" });
    const input = { pool: nodePool("general"), nodes, podsByNode: podsByNodeName([full]), workload: [full] };
    const d = detect(input, 0, 2);
    assert.deepEqual(!d.warmup && d.reason === "fits" ? d.nodes : undefined, ["n2"]);
    assert.equal(detect(input, 1, 3).warmup, false);
  });

  it("respects taints the pod does not tolerate, and tolerations", () => {
    const taint = { key: "team", value: "a", effect: "NoSchedule" as const };
    const nodes = [node("n1", "general", { taints: [taint] })];
    const d = run(nodes, [big({ node: "elsewhere" })]);
    assert.deepEqual(d.warmup && d.reasons.n1, ["taint:team"]);
    const tolerant = big({
      node: "elsewhere",
      tolerations: [{ key: "team", operator: "Equal", value: "a" }],
    });
    assert.equal(run(nodes, [tolerant]).warmup, false);
    // PreferNoSchedule never blocks.
    const soft = [node("n1", "general", { taints: [{ key: "x", effect: "PreferNoSchedule" }] })];
    assert.equal(run(soft, [big({ node: "elsewhere" })]).warmup, false);
    assert.equal(toleratesTaint({ operator: "Exists" }, taint), true);
    assert.equal(toleratesTaint({ key: "team", operator: "Equal", value: "b" }, taint), false);
  });

  it("respects nodeSelector and required node affinity", () => {
    const nodes = [node("n1", "general", { labels: { [TOPOLOGY_ZONE_LABEL]: "test-zone-a" } })];
    const sel = big({ node: "elsewhere", nodeSelector: { [TOPOLOGY_ZONE_LABEL]: "test-zone-b" } });
    const d = run(nodes, [sel]);
    assert.deepEqual(d.warmup && d.reasons, { n1: ["selector"] });
    assert.equal(
      run(nodes, [big({ node: "x", nodeSelector: { [TOPOLOGY_ZONE_LABEL]: "test-zone-a" } })]).warmup,
      false,
    );
    const affinity = (op: "In" | "NotIn"): Pod =>
      big({
        node: "elsewhere",
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: TOPOLOGY_ZONE_LABEL, operator: op, values: ["test-zone-a"] }] },
              ],
            },
          },
        },
      });
    assert.equal(run(nodes, [affinity("In")]).warmup, false);
    assert.equal(run(nodes, [affinity("NotIn")]).warmup, true);
  });

  it("respects max pods", () => {
    const nodes = [node("n1", "general", { pods: "2", cpu: "16", memory: "64Gi" })];
    const small = pod("s", { cpu: "100m", node: "n1" });
    assert.equal(run(nodes, [small]).warmup, false);
    const d = run(nodes, [small, pod("s2", { cpu: "100m", node: "n1" })]);
    assert.deepEqual(d.warmup && d.reasons.n1, ["max-pods"]);
  });

  it("ignores nodes that are not Ready or are cordoned", () => {
    const d = run(
      [node("n1", "general", { ready: false }), node("n2", "general", { unschedulable: true })],
      [big({ node: "x" })],
    );
    assert.deepEqual(d.warmup && d.reasons, { n1: ["not-ready"], n2: ["not-ready"] });
  });
});

describe("pool of a pod", () => {
  const pools = [
    nodePool("general"),
    nodePool("gpu", { taints: [{ key: "nvidia.com/gpu", effect: "NoSchedule" }], labels: { team: "ml" } }),
    nodePool("heavy", {
      weight: 10,
      requirements: [{ key: ARCH_LABEL, operator: "In", values: ["arm64"] }],
    }),
  ];
  const nodes = new Map([["n1", node("n1", "gpu")]]);

  it("uses the bound node's pool label", () => {
    assert.equal(poolOfPod(pod("p", { node: "n1" }), pools, nodes), "gpu");
    assert.equal(poolOfPod(pod("p", { node: "unmanaged" }), pools, nodes), undefined);
  });

  it("uses a nodeSelector / required affinity on karpenter.sh/nodepool", () => {
    assert.equal(
      poolOfPod(pod("p", { nodeSelector: { [NODE_POOL_LABEL]: "general" } }), pools, nodes),
      "general",
    );
    const pinGpu = (tolerate: boolean): Pod =>
      pod("p", {
        ...(tolerate ? { tolerations: [{ key: "nvidia.com/gpu", operator: "Exists" as const }] } : {}),
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: NODE_POOL_LABEL, operator: "In", values: ["gpu"] }] },
              ],
            },
          },
        },
      });
    // Pinned to a pool whose taint it does not tolerate: no pool can take it.
    assert.equal(poolOfPod(pinGpu(false), pools, nodes), undefined);
    assert.equal(poolOfPod(pinGpu(true), pools, nodes), "gpu");
  });

  it("matches requirements, template labels and taints; highest weight wins", () => {
    // Unconstrained pod: general and heavy can host it (gpu is tainted); heavy weighs more.
    assert.equal(poolOfPod(pod("p"), pools, nodes), "heavy");
    assert.equal(poolOfPod(pod("p", { nodeSelector: { [ARCH_LABEL]: "amd64" } }), pools, nodes), "general");
    const ml = pod("p", {
      nodeSelector: { team: "ml" },
      tolerations: [{ key: "nvidia.com/gpu", operator: "Exists" }],
    });
    assert.equal(poolOfPod(ml, pools, nodes), "gpu");
    // A custom label no pool sets cannot be satisfied.
    assert.equal(poolOfPod(pod("p", { nodeSelector: { team: "web" } }), pools, nodes), undefined);
  });
});

describe("admission limits", () => {
  const clock = new FakeClock(T0);
  const base = (over: Partial<AdmissionInput> = {}): AdmissionInput => ({
    policy: { ...DEFAULT_POLICY, enabled: true, maxCostPerHour: 1 },
    now: clock.now(),
    pool: nodePool("general", {
      limits: { cpu: "16", memory: "64Gi" },
      resources: { cpu: "8", memory: "32Gi" },
    }),
    warmups: 0,
    pendingWarmups: 0,
    lastWarmupAt: undefined,
    estimate: { cpu: 4000, memory: 16 * GiB },
    warmCostPerHour: 0,
    newNodeCostPerHour: 0.2,
    ...over,
  });

  it("admits within every limit", () => {
    assert.deepEqual(admit(base()), { ok: true });
  });

  it("refuses when the pool's spec.limits are reached", () => {
    const pool = nodePool("general", { limits: { cpu: "16" }, resources: { cpu: "14" } });
    assert.deepEqual(limitHeadroom(pool), { cpu: 2000 });
    const a = admit(base({ pool }));
    assert.equal(a.ok ? "" : a.reason, "pool-limit");
  });

  it("estimates a new node as a typical pool node, never smaller than the largest pod", () => {
    const est = newNodeEstimate([node("a", "g", { cpu: "4", memory: "16Gi" })], { cpu: 6000, memory: GiB });
    assert.equal(est.cpu, 6000);
    assert.equal(est.memory, 16 * GiB);
  });

  it("enforces disabled, max warm nodes, one in flight and the cooldown with the injected clock", async () => {
    const r = (over: Partial<AdmissionInput>): string => {
      const a = admit(base(over));
      return a.ok ? "ok" : a.reason;
    };
    assert.equal(r({ policy: DEFAULT_POLICY }), "disabled");
    assert.equal(r({ warmups: 1 }), "max-warm-nodes");
    assert.equal(
      r({ warmups: 1, pendingWarmups: 1, policy: { ...base().policy, maxWarmNodes: 3 } }),
      "in-flight",
    );
    const last = clock.now();
    await clock.advance(299_000);
    const a = admit(base({ now: clock.now(), lastWarmupAt: last }));
    assert.deepEqual(a.ok ? undefined : [a.reason, a.retryAfterMs], ["cooldown", 1000]);
    await clock.advance(1000);
    assert.equal(r({ now: clock.now(), lastWarmupAt: last }), "ok");
  });

  it("enforces the hourly cost cap and refuses on unknown warm prices", () => {
    const r = (over: Partial<AdmissionInput>): string => {
      const a = admit(base(over));
      return a.ok ? "ok" : a.reason;
    };
    assert.equal(r({ warmCostPerHour: 0.9, newNodeCostPerHour: 0.2 }), "cost-cap");
    assert.equal(r({ warmCostPerHour: undefined }), "price-unknown");
    assert.equal(r({ newNodeCostPerHour: undefined }), "ok");
    assert.equal(r({ policy: { ...base().policy, maxCostPerHour: null }, warmCostPerHour: undefined }), "ok");
  });

  it("guesses the offering from the pool's nodes and capacity-type requirement", () => {
    const spot = nodePool("g", {
      requirements: [{ key: CAPACITY_TYPE_LABEL, operator: "In", values: ["on-demand", "spot"] }],
    });
    assert.deepEqual(
      likelyOffering(spot, [
        node("a", "g", { instanceType: "c-2x" }),
        node("b", "g", { instanceType: "c-2x" }),
      ]),
      {
        instanceType: "c-2x",
        capacityType: "spot",
        places: [],
        // What a NodeOverlay matches: a pool node's of that type, as the capacity type it would launch as.
        labels: {
          [CAPACITY_TYPE_LABEL]: "spot",
          "karpenter.sh/nodepool": "g",
          "kubernetes.io/arch": "amd64",
          "node.kubernetes.io/instance-type": "c-2x",
        },
      },
    );
    assert.deepEqual(likelyOffering(nodePool("g", { requirements: [] }), []), {
      capacityType: "on-demand",
      places: [],
    });
  });

  it("says where the new node may land: the pool's zone requirement, else its nodes' zones", () => {
    const zoned = (name: string, zone: string) => {
      const n = node(name, "g", { instanceType: "m5.large" });
      n.metadata.labels = { ...n.metadata.labels, "topology.kubernetes.io/zone": zone };
      return n;
    };
    const nodes = [zoned("a", "us-east-1a"), zoned("b", "us-east-1b"), zoned("c", "us-east-1a")];
    assert.deepEqual(likelyOffering(nodePool("g", { requirements: [] }), nodes).places, [
      { zone: "us-east-1a", region: undefined },
      { zone: "us-east-1b", region: undefined },
    ]);
    const pinned = nodePool("g", {
      requirements: [{ key: "topology.kubernetes.io/zone", operator: "In", values: ["us-east-1c"] }],
    });
    assert.deepEqual(likelyOffering(pinned, nodes).places, [{ zone: "us-east-1c" }]);
  });
});
