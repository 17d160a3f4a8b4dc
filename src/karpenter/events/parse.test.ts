import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseDisruptionMessage, parsePodEvent, parseSchedulingMessage } from "./parse.ts";

describe("Karpenter disruption Events", () => {
  const cases: [string, string, Record<string, unknown>?][] = [
    [
      `Cannot disrupt Node: disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation`,
      "do-not-disrupt",
    ],
    [
      `Cannot disrupt Node: pod "default/web-1" has "karpenter.sh/do-not-disrupt" annotation`,
      "do-not-disrupt",
    ],
    [`Cannot disrupt Node: pdb "default/db" prevents pod evictions`, "pdb"],
    ["Cannot disrupt Node: node is nominated for a pending pod", "nominated"],
    ["Cannot disrupt Node: node isn't initialized", "not-initialized"],
    ["nodeclaim not initialized", "not-initialized"],
    ["candidate is already being disrupted", "being-disrupted"],
    [
      "No allowed disruptions for disruption reason Underutilized due to blocking budget",
      "budget",
      { disruptionReason: "Underutilized" },
    ],
    ["No allowed disruptions due to blocking budget", "budget"],
    [`NodePool "batch" has consolidation disabled`, "consolidation-disabled", { nodePool: "batch" }],
    [
      `NodePool "batch" has consolidation policy WhenEmpty, but node is not empty`,
      "when-empty",
      { nodePool: "batch" },
    ],
    [
      "SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate, got 3",
      "spot-to-spot",
    ],
    ["would schedule against uninitialized nodeclaim default-abc", "uninitialized-neighbor"],
    [
      `not all pods would schedule, shop/web-7 => incompatible with nodepool "default", incompatible requirements, key topology.kubernetes.io/zone`,
      "pods-fit-nowhere",
      { pod: "shop/web-7" },
    ],
    [
      "Consolidation rejected: delete node-a, reason: disruption cost too high (savings: $0.42)",
      "other",
      { savingsPerHour: 0.42 },
    ],
    ["something new in a later release", "other"],
  ];
  for (const [msg, reason, extra] of cases)
    it(`${reason}: ${msg.slice(0, 60)}`, () => {
      const p = parseDisruptionMessage(msg);
      assert.equal(p.reason, reason);
      assert.equal(p.message, msg);
      for (const [k, v] of Object.entries(extra ?? {}))
        assert.equal((p as unknown as Record<string, unknown>)[k], v, k);
    });
});

describe("Karpenter FailedScheduling", () => {
  it("one reason per NodePool: requirement key, taint, limit, resources", () => {
    const r = parseSchedulingMessage(
      `Failed to schedule pod, incompatible with nodepool "a", daemonset overhead={"cpu":"200m","pods":"2"}, incompatible requirements, label "example.com/team" does not have known values; incompatible with nodepool "b", daemonset overhead={"cpu":"200m"}, no instance type satisfied resources {"cpu":"64","pods":"3"} and requirements karpenter.sh/capacity-type In [on-demand spot]; incompatible with nodepool "c", daemonset overhead={}, did not tolerate team=ml:NoSchedule; all available instance types exceed limits for nodepool: "d"`,
    );
    assert.deepEqual(
      r.map((x) => [x.nodePool, x.kind, x.key]),
      [
        ["a", "requirement", "example.com/team"],
        ["b", "resources", null],
        ["c", "taint", "team=ml:NoSchedule"],
        ["d", "limit", null],
      ],
    );
  });

  it("Nominated names the NodeClaim; another reason reads as nothing", () => {
    assert.deepEqual(
      parsePodEvent({ reason: "Nominated", message: "Pod should schedule on: nodeclaim/default-8wq2x" }),
      {
        kind: "nominated",
        reasons: [],
        nominatedTo: "nodeclaim/default-8wq2x",
      },
    );
    assert.equal(parsePodEvent({ reason: "Pulled", message: "x" }).kind, "other");
  });

  it("unknown wording is kept as 'other', never dropped", () => {
    const [r] = parseSchedulingMessage("Failed to schedule pod, the moon is in the wrong phase");
    assert.deepEqual(r, {
      nodePool: null,
      kind: "other",
      key: null,
      detail: "the moon is in the wrong phase",
    });
  });
});
