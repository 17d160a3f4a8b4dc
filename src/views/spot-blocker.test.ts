// Issue 43 (6): a Spot page row stuck at "adopting … next in 0 s · 0 evictions done" names what
// holds it, in the page's API (`progress.blocker`) — built by the page's own builder.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { machineObjects, nodePool, pod } from "../dashboard/testkit.ts";
import type { SpotProgressDto } from "../dashboard/dto.ts";
import type { SpotRepair } from "../core/store/store.ts";
import type { NodePool } from "../objects/karpenter.ts";
import type { Node, Pod, PodDisruptionBudget } from "../objects/kube.ts";
import { ASSIGNMENT_LABEL } from "../objects/wave.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { buildSpotView } from "./spot.ts";

const T0 = Date.parse("2026-12-07T12:00:00Z");
const policy = {
  workload: { namespace: "shop", kind: "Deployment" as const, name: "web" },
  threshold: 2,
  strategy: "Require" as const,
};

function webPod(name: string, node: string | undefined, assigned: "spot" | "on-demand"): Pod {
  const p = pod(name, node, "1", "1Gi", node ? "Running" : "Pending");
  p.metadata.namespace = "shop";
  p.metadata.creationTimestamp = new Date(T0 - 20 * 60_000).toISOString();
  p.metadata.labels = { app: "web", "pod-template-hash": "abc12", [ASSIGNMENT_LABEL]: assigned };
  p.metadata.ownerReferences = [
    { apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-abc12", uid: "u", controller: true },
  ];
  if (!node) {
    p.spec.affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: "karpenter.sh/capacity-type", operator: "In", values: [assigned] }] },
          ],
        },
      },
    };
    p.status = {
      phase: "Pending",
      conditions: [
        {
          type: "PodScheduled",
          status: "False",
          reason: "Unschedulable",
          message: "0/3 nodes are available",
        },
      ],
    };
  }
  return p;
}

function machine(name: string, ct: "spot" | "on-demand"): Node {
  const n = machineObjects({
    name,
    pool: "general",
    instanceType: "c-4x-amd64-linux",
    capacityType: ct,
    cpu: "4",
  }).node;
  assert.ok(n);
  return n;
}

const offering = (
  name: string,
  cts: string[],
  limits?: Record<string, string>,
  used?: Record<string, string>,
) =>
  nodePool(
    name,
    {
      template: {
        spec: { requirements: [{ key: "karpenter.sh/capacity-type", operator: "In", values: cts }] },
      },
      ...(limits ? { limits } : {}),
    },
    used ? { resources: used } : undefined,
  );

/** The web row's progress for this cluster, its policy changed 10 minutes ago. */
function progressOf(o: {
  pods: Pod[];
  pools?: NodePool[];
  pdbs?: PodDisruptionBudget[];
  repairs?: SpotRepair[];
}): SpotProgressDto | null {
  const v = buildSpotView({
    clusterId: "c",
    state: {
      nodePools: () => o.pools ?? [offering("general", ["spot", "on-demand"])],
      nodes: () => [machine("od", "on-demand"), machine("sp1", "spot"), machine("sp2", "spot")],
      pods: () => o.pods,
      podDisruptionBudgets: () => o.pdbs ?? [],
    },
    policies: [policy],
    prices: new KwokPriceProvider(),
    now: T0,
    repairs: o.repairs ?? [],
    policySince: new Map([["shop/Deployment/web", T0 - 10 * 60_000]]),
  });
  return v.workloads.find((w) => w.workload.name === "web")?.progress ?? null;
}

const allOnSpot = (): Pod[] => [
  webPod("web-1", "sp1", "spot"),
  webPod("web-2", "sp1", "spot"),
  webPod("web-3", "sp2", "spot"),
  webPod("web-4", "sp2", "spot"),
];

describe("a stuck spot row names its blocker", () => {
  it("a PodDisruptionBudget allowing 0 disruptions, by name", () => {
    const pdb: PodDisruptionBudget = {
      metadata: { name: "web-pdb", namespace: "shop" },
      spec: { selector: { matchLabels: { app: "web" } }, minAvailable: 4 },
      status: { disruptionsAllowed: 0, currentHealthy: 4, desiredHealthy: 4, expectedPods: 4 },
    };
    const p = progressOf({
      pods: allOnSpot(),
      pdbs: [pdb, { ...pdb, metadata: { name: "other", namespace: "blog" } }],
      repairs: [
        {
          clusterId: "c",
          event: "e1",
          workload: "shop/Deployment/web",
          action: "EvictBlocked",
          pod: "shop/web-4",
          type: "Warning",
          message: "… — blocked by a PodDisruptionBudget, will retry in 300 s",
          at: T0 - 60_000,
        },
      ],
    });
    assert.equal(p?.toMove, 2);
    assert.equal(p.blocker?.kind, "pdb");
    assert.equal(p.blocker.object, "shop/web-pdb");
    assert.match(
      p.blocker.message,
      /PodDisruptionBudget shop\/web-pdb allows 0 disruptions \(4 healthy, 4 required\)/,
    );
  });

  it("the NodePool its pending pods need at its limit, with the limit", () => {
    const pods = [...allOnSpot().slice(0, 3), webPod("web-5", undefined, "on-demand")];
    const p = progressOf({
      pods,
      pools: [
        offering("general", ["spot"]),
        offering("od-pool", ["on-demand"], { cpu: "8" }, { cpu: "8", memory: "32Gi" }),
      ],
    });
    assert.equal(p?.blocker?.kind, "pool-limit");
    assert.equal(p.blocker.object, "od-pool");
    assert.match(
      p.blocker.message,
      /NodePool od-pool at its limit \(cpu 8 of 8\): no node for 1 pending pod/,
    );
  });

  it("no NodePool offering the capacity the pending pods are assigned", () => {
    const pods = [...allOnSpot().slice(0, 3), webPod("web-5", undefined, "on-demand")];
    const p = progressOf({ pods, pools: [offering("general", ["spot"])] });
    assert.equal(p?.blocker?.kind, "no-capacity");
    assert.match(p.blocker.message, /no NodePool can launch a node for pod web-5 \(assigned on-demand\)/);
  });

  it("pods running on capacity other than their assignment: the repair counts the assignment", () => {
    const pods = [
      webPod("web-1", "od", "spot"),
      webPod("web-2", "od", "spot"),
      webPod("web-3", "od", "spot"),
      webPod("web-4", "sp1", "on-demand"),
    ];
    const p = progressOf({ pods });
    assert.equal(p?.toMove, 1);
    assert.equal(p.blocker?.kind, "misplaced");
  });

  it("a repair that does not act: the Lease its leader holds", () => {
    const p = progressOf({ pods: allOnSpot() });
    assert.equal(p?.nextAt, T0, "'next in 0 s'");
    assert.equal(p.blocker?.kind, "repair-idle");
    assert.match(p.blocker.message, /no repair action for 595 s past its due time: .*Lease wave-spot-repair/);
  });

  it("nothing holds a workload at its target", () => {
    const pods = [
      webPod("web-1", "od", "on-demand"),
      webPod("web-2", "od", "on-demand"),
      webPod("web-3", "sp1", "spot"),
      webPod("web-4", "sp2", "spot"),
    ];
    assert.equal(progressOf({ pods })?.blocker, null);
  });
});
