// Issue 43: pending pods with the pool whose requirement fails named, the requirement that rules
// out every instance type named (not the pod's size), and per reason a fix and its cost.
// The asserts narrow as they go (assert.equal asserts its actual); optional chains keep each line readable alone.
/* eslint-disable @typescript-eslint/no-unnecessary-condition */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Event, Pod } from "../../objects/kube.ts";
import type { NodePool } from "../../objects/karpenter.ts";
import { LIVING_DEPLOYMENTS, LIVING_POOLS } from "../../sim/living.ts";
import { poolRejection } from "../../sim/simulator.ts";
import { podRequests } from "../../karpenter/resources.ts";
import { nodePool } from "../testkit.ts";
import { pendingView } from "./pending.ts";
import type { Catalog } from "./plan.ts";

const NOW = Date.parse("2026-06-01T10:00:00Z");

/** A pending pod of a Deployment (its ReplicaSet `<name>-h1`), from a template. */
function podOf(name: string, ns: string, spec: Pod["spec"]): Pod {
  return {
    metadata: {
      name: `${name}-h1-x`,
      namespace: ns,
      creationTimestamp: "2026-06-01T09:50:00Z",
      labels: { "pod-template-hash": "h1" },
      ownerReferences: [
        { apiVersion: "apps/v1", kind: "ReplicaSet", name: `${name}-h1`, uid: "u", controller: true },
      ],
    },
    spec,
    status: { phase: "Pending" },
  };
}

const failed = (p: Pod, message: string): Event => ({
  metadata: { name: `${p.metadata.name ?? ""}.1`, namespace: p.metadata.namespace ?? "" },
  involvedObject: { kind: "Pod", namespace: p.metadata.namespace ?? "", name: p.metadata.name ?? "" },
  reason: "FailedScheduling",
  message,
  lastTimestamp: "2026-06-01T09:59:30Z",
});

const machine = (pool: string, instanceType: string, usdPerHour: number, cpu = 4000): Catalog => ({
  pool,
  instanceType,
  capacityType: "on-demand",
  zone: undefined,
  region: undefined,
  cpu,
  memory: 16 * 2 ** 30,
  extended: {},
  usdPerHour,
});

describe("pending pods: the pool, the requirement, the fix and its cost (issue 43)", () => {
  it("the living cluster's indexer: every one of Karpenter's six unnamed parts gets its pool, none reads 'no NodePool'", () => {
    const d = LIVING_DEPLOYMENTS.find((x) => x.metadata.name === "indexer");
    assert.ok(d);
    const p = podOf("indexer", "data", d.spec.template.spec);
    // Karpenter v1.15's words for each pool, as the simulator writes them (one part per pool, unnamed).
    const message = `Failed to schedule pod, ${LIVING_POOLS.map((pool) => poolRejection(p, pool, podRequests(p))).join("; ")}`;
    const catalog = [machine("arm64", "m7g.large", 0.0816), machine("general", "m7i.large", 0.1008)];
    const v = pendingView("c", {
      pods: [p],
      events: [failed(p, message)],
      now: NOW,
      pools: LIVING_POOLS,
      catalog,
    });
    const reasons = v.pods[0]?.reasons ?? [];
    assert.equal(reasons.length, 6);
    assert.deepEqual(
      reasons.map((r) => r.nodePool).sort(),
      LIVING_POOLS.map((x) => x.metadata.name).sort(),
      JSON.stringify(reasons.map((r) => [r.nodePool, r.kind, r.detail])),
    );
    assert.ok(reasons.every((r) => !/did not name|no NodePool/.test(r.text)));
    // arm64: only its taint is in the way — the fix tolerates it on the indexer's Deployment, for an arm64 node's price.
    const arm = reasons.find((r) => r.nodePool === "arm64");
    assert.equal(arm?.kind, "taint");
    assert.deepEqual(arm?.fix?.target, { kind: "Deployment", namespace: "data", name: "indexer" });
    assert.deepEqual(arm?.fix?.patch, {
      spec: {
        template: {
          spec: {
            tolerations: [{ key: "wave.sh/arch", operator: "Equal", value: "arm64", effect: "NoSchedule" }],
          },
        },
      },
    });
    assert.match(arm?.fix?.kubectl ?? "", /^kubectl patch deployment indexer -n data --type merge -p /);
    assert.equal(arm?.costPerHour, 0.0816);
    // general: its arch requirement — the fix allows arm64 there (a patch on the NodePool).
    const general = reasons.find((r) => r.nodePool === "general");
    assert.equal(general?.kind, "requirement");
    assert.equal(general?.key, "kubernetes.io/arch");
    assert.match(
      JSON.stringify(general?.fix?.patch),
      /"kubernetes.io\/arch","operator":"In","values":\["amd64","arm64"\]/,
    );
    assert.equal(general?.costPerHour, 0.1008);
  });

  it("no instance type met all requirements: names the pod's requirement, not its size", () => {
    const gpu = nodePool("gpu", {
      template: {
        spec: {
          requirements: [{ key: "karpenter.k8s.aws/instance-gpu-count", operator: "In", values: ["1"] }],
        },
      },
    });
    const p = podOf("trainer", "ml", {
      containers: [{ name: "c", resources: { requests: { cpu: "2", memory: "8Gi" } } }],
      nodeSelector: { "karpenter.sh/nodepool": "gpu", "karpenter.k8s.aws/instance-gpu-count": "8" },
    });
    const message =
      "Failed to schedule pod, no instance type met all requirements, requirements=karpenter.sh/nodepool In [gpu], " +
      'karpenter.k8s.aws/instance-gpu-count In [1], resources={"cpu":"2","memory":"8Gi","pods":"1"}';
    const v = pendingView("c", { pods: [p], events: [failed(p, message)], now: NOW, pools: [gpu] });
    const r = v.pods[0]?.reasons[0];
    assert.equal(r?.nodePool, "gpu");
    assert.equal(r?.kind, "requirement");
    assert.equal(r?.key, "karpenter.k8s.aws/instance-gpu-count");
    assert.match(
      r?.text ?? "",
      /meets the pod's requirement karpenter\.k8s\.aws\/instance-gpu-count In \[8\] \(the pool: karpenter\.k8s\.aws\/instance-gpu-count In \[1\]\)/,
    );
    assert.doesNotMatch(r?.text ?? "", /enough resources|room for the pod/);
    // Karpenter's own "has enough resources": the size is the cause, and the text says the pod's size.
    const big = podOf("big", "ml", {
      containers: [{ name: "c", resources: { requests: { cpu: "500", memory: "8Gi" } } }],
    });
    const sized = pendingView("c", {
      pods: [big],
      events: [
        failed(
          big,
          'Failed to schedule pod, no instance type has enough resources, requirements=karpenter.sh/nodepool In [gpu], resources={"cpu":"500"}',
        ),
      ],
      now: NOW,
      pools: [gpu],
    }).pods[0]?.reasons[0];
    assert.equal(sized?.kind, "resources");
    assert.match(sized?.text ?? "", /no instance type has room for the pod \(cpu 500, memory 8\.0 GiB/);
  });

  it("a pool at its limits: the fix raises them by the node the pod needs, at that node's price", () => {
    const limited: NodePool = nodePool(
      "limited",
      { limits: { cpu: "8", memory: "32Gi" } },
      { resources: { cpu: "8", memory: "20Gi" } },
    );
    const p = podOf("web", "shop", {
      containers: [{ name: "c", resources: { requests: { cpu: "1", memory: "1Gi" } } }],
    });
    const message =
      "Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=limited)";
    const v = pendingView("c", {
      pods: [p],
      events: [failed(p, message)],
      now: NOW,
      pools: [limited],
      catalog: [machine("limited", "m7i.xlarge", 0.2016)],
    });
    const r = v.pods[0]?.reasons[0];
    assert.equal(r?.kind, "limit");
    assert.deepEqual(r?.fix?.patch, { spec: { limits: { cpu: "12", memory: "36Gi" } } });
    assert.equal(r?.costPerHour, 0.2016);
  });
});
