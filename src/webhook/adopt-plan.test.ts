// Adoption's pure planning (issue 28): which running pods are adopted where they run, which are
// left alone, and the evictions that then bring the workload to its target.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../objects/kube.ts";
import { ASSIGNMENT_LABEL, LEDGER_LABEL, SLOT_LABEL } from "../objects/wave.ts";
import { CAPACITY_TYPE_LABEL } from "../objects/karpenter.ts";
import { adoptionPatch, asAdopted, governedBy, planAdoption, plannedMoves } from "./adopt-plan.ts";
import type { SpotPolicy, WorkloadRef } from "../policy/spot.ts";

const web: WorkloadRef = { namespace: "shop", kind: "Deployment", name: "web" };
const policy = (threshold: number, extra: Partial<SpotPolicy> = {}): SpotPolicy => ({
  workload: web,
  threshold,
  strategy: "Prefer",
  ...extra,
});
const capacityOf = (n: string | undefined): string =>
  !n ? "none" : n.startsWith("od") ? "on-demand" : n.startsWith("spot") ? "spot" : "unknown";

function pod(
  name: string,
  o: {
    node?: string;
    assigned?: string;
    hash?: string;
    created?: number;
    ready?: boolean;
    spec?: Partial<Pod["spec"]>;
    owner?: { kind: string; name: string };
  } = {},
): Pod {
  const hash = o.hash ?? "h1";
  return {
    metadata: {
      name,
      namespace: "shop",
      creationTimestamp: new Date(o.created ?? 0).toISOString(),
      labels: {
        "pod-template-hash": hash,
        ...(o.assigned
          ? { [ASSIGNMENT_LABEL]: o.assigned, [SLOT_LABEL]: `t-${name}`, [LEDGER_LABEL]: "l" }
          : {}),
      },
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          kind: o.owner?.kind ?? "ReplicaSet",
          name: o.owner?.name ?? `web-${hash}`,
          uid: "u",
          controller: true,
        },
      ],
    },
    spec: { containers: [], ...(o.node ? { nodeName: o.node } : {}), ...o.spec },
    status: {
      phase: o.node ? "Running" : "Pending",
      conditions: [{ type: "Ready", status: o.ready === false ? "False" : "True" }],
    },
  };
}

describe("adoption plan", () => {
  it("adopts running pods by their node's capacity type; leaves pinned, unscheduled and unlabelled-node pods", () => {
    const plan = planAdoption(
      [
        pod("a", { node: "od-1" }),
        pod("b", { node: "spot-1" }),
        pod("c"),
        pod("d", { node: "other-1" }),
        pod("e", { node: "od-1", spec: { nodeSelector: { [CAPACITY_TYPE_LABEL]: "on-demand" } } }),
        {
          ...pod("f", { node: "spot-1" }),
          metadata: { ...pod("f").metadata, deletionTimestamp: "2026-01-01T00:00:00Z" },
        },
      ],
      capacityOf,
    );
    assert.deepEqual(
      plan.adopt.map((a) => [a.pod.metadata.name, a.capacity]),
      [
        ["a", "on-demand"],
        ["b", "spot"],
      ],
    );
    assert.deepEqual(
      plan.waiting.map((p) => p.metadata.name),
      ["c"],
    );
    assert.deepEqual(
      plan.outside.map((p) => p.metadata.name),
      ["d"],
    );
    assert.deepEqual(
      plan.pinned.map((p) => p.metadata.name),
      ["e"],
      "a terminating pod is nothing at all",
    );
  });

  it("finds a pod's policy as admission does: the Deployment's before its ReplicaSet's", () => {
    const p = pod("a", { node: "od-1" });
    const rs: WorkloadRef = { namespace: "shop", kind: "ReplicaSet", name: "web-h1" };
    const only =
      (...refs: WorkloadRef[]) =>
      (r: WorkloadRef) =>
        refs.some((x) => x.kind === r.kind && x.name === r.name);
    assert.equal(governedBy(p, web, only(web)), true);
    assert.equal(governedBy(p, rs, only(web, rs)), false, "the Deployment's policy wins");
    assert.equal(governedBy(p, rs, only(rs)), true);
    assert.equal(governedBy(pod("j", { owner: { kind: "Job", name: "web" } }), web, only(web)), false);
    assert.equal(
      governedBy(pod("o", { hash: "h2", owner: { kind: "ReplicaSet", name: "api-h2" } }), web, only(web)),
      false,
    );
  });

  it("labels as admission does: assignment, slot, ledger, and on on-demand the deletion cost", () => {
    assert.deepEqual(adoptionPatch(pod("a"), "on-demand", "L", "T"), {
      metadata: {
        labels: { [ASSIGNMENT_LABEL]: "on-demand", [SLOT_LABEL]: "T", [LEDGER_LABEL]: "L" },
        annotations: { "controller.kubernetes.io/pod-deletion-cost": "10000" },
      },
    });
    assert.deepEqual(adoptionPatch(pod("a"), "spot", "L", "T").metadata.annotations, undefined);
    assert.equal(asAdopted(pod("a"), "spot", "L").metadata.labels?.[ASSIGNMENT_LABEL], "spot");
  });

  it("plans |on-demand − target| evictions of the side in excess, cheapest first; none at the target", () => {
    const spot8 = Array.from({ length: 8 }, (_, i) =>
      pod(`s${i}`, { node: "spot-1", assigned: "spot", created: i * 1000 }),
    );
    const short = plannedMoves(policy(3), spot8);
    assert.equal(short.direction, "shortfall");
    assert.deepEqual(
      short.pods.map((p) => p.metadata.name),
      ["s7", "s6", "s5"],
      "the youngest first",
    );
    assert.deepEqual([short.onDemand, short.target, short.live], [0, 3, 8]);

    const od6 = Array.from({ length: 6 }, (_, i) =>
      pod(`o${i}`, { node: "od-1", assigned: "on-demand", created: i, ready: i !== 1 }),
    );
    const excess = plannedMoves(policy(2), od6);
    assert.equal(excess.direction, "excess");
    assert.deepEqual(
      excess.pods.map((p) => p.metadata.name),
      ["o1", "o5", "o4", "o3"],
      "not Ready first, then the youngest",
    );

    const at = plannedMoves(policy(3), [...od6.slice(0, 3), ...spot8.slice(0, 5)]);
    assert.deepEqual([at.direction, at.pods.length], ["none", 0]);
    assert.equal(
      plannedMoves(policy(2, { percentAboveBase: 50 }), od6).pods.length,
      2,
      "target 2 + ⌈50 % × 4⌉ = 4",
    );
    const rolling = plannedMoves(policy(3), [
      ...spot8.slice(0, 4),
      pod("n", { node: "spot-1", assigned: "spot", hash: "h2" }),
    ]);
    assert.deepEqual([rolling.direction, rolling.reason], ["none", "rollout in progress"]);
  });
});
