// Issue 43 in the console: the Overview's pending pods — per reason the fix and what its node
// would cost, and the card counting the same read as the table (it said 3 while the table said 4).
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { cleanup, render, screen } from "@testing-library/react";
import type { LiveDto, OverviewDto, PendingPodDto, PendingViewDto } from "../../src/dashboard/dto.ts";
import { Overview } from "../src/pages/Overview.tsx";
import { ctxFor, mockFetch, NOW } from "./helpers.tsx";

afterEach(() => cleanup());

const tolerate = `kubectl patch deployment indexer -n data --type merge -p '{"spec":{"template":{"spec":{"tolerations":[{"key":"wave.sh/arch","operator":"Equal","value":"arm64","effect":"NoSchedule"}]}}}}'`;

const pendingPod = (name: string, reasons: PendingPodDto["reasons"] = []): PendingPodDto => ({
  namespace: "data",
  name,
  since: NOW - 600_000,
  waitingSeconds: 600,
  reasons,
  nominatedTo: null,
  lastEvent: null,
});

const pending: PendingViewDto = {
  clusterId: "prod",
  at: NOW,
  pods: [
    pendingPod("indexer-1", [
      {
        nodePool: "arm64",
        kind: "taint",
        key: "wave.sh/arch=arm64:NoSchedule",
        text: "NodePool arm64: the pod does not tolerate its taint wave.sh/arch=arm64:NoSchedule",
        detail: "did not tolerate taint (taint=wave.sh/arch=arm64:NoSchedule)",
        fix: {
          title: "Let Deployment indexer tolerate wave.sh/arch=arm64:NoSchedule",
          detail: "",
          target: { kind: "Deployment", namespace: "data", name: "indexer" },
          patch: { spec: {} },
          kubectl: tolerate,
        },
        costPerHour: 0.0816,
      },
      {
        nodePool: "gpu",
        kind: "requirement",
        key: "karpenter.k8s.aws/instance-gpu-count",
        text: "NodePool gpu: no instance type meets the pod's requirement karpenter.k8s.aws/instance-gpu-count In [8]",
        detail: "no instance type met all requirements, requirements=…",
        fix: {
          title: "Relax the pod's requirement",
          detail: "relax it in the pod's workload",
          target: { kind: "NodePool", namespace: null, name: "gpu" },
          patch: null,
          kubectl: null,
        },
        costPerHour: null,
      },
    ]),
    pendingPod("b"),
    pendingPod("c"),
    pendingPod("d"),
  ],
  byPoolReason: [],
};

const overview: OverviewDto = {
  clusterId: "prod",
  at: NOW,
  nodes: 3,
  nodePools: 6,
  // The live stream's count, a moment older than the pending read: not what the card shows.
  pendingPods: 3,
  costPerHour: 0.5,
  costPerMonth: 365,
  priceSources: { live: 3 },
  spotRatio: { nodes: 0.5, vcpu: 0.5, cost: 0.3 },
  spotSavingsPerHour: 0,
  requested: { cpu: 2, memoryBytes: 2 ** 30 },
  allocatable: { cpu: 8, memoryBytes: 2 ** 33 },
  disruptionsLastHour: 0,
  thrashingPools: [],
  warmup: {
    warmNodes: 0,
    costPerHour: 0,
    hits: 0,
    misses: 0,
    timeSavedSeconds: 0,
    warmCostUsd: 0,
    from: 0,
    to: 0,
  },
};

describe("Overview: pending pods (issue 43)", () => {
  it("the card and the table count one read; each reason shows its fix and its node's cost", async () => {
    const calls = mockFetch([
      [/\/pending$/, () => [200, pending]],
      [/\/series\?/, () => [200, { from: 0, to: 0, step: 60, nodePool: null, points: [], gaps: [] }]],
      [/\/disruptions\/counts\?/, () => [200, { from: 0, to: NOW, total: 0, counts: [] }]],
      [/\/savings\?/, () => [500, { error: "x" }]],
    ]);
    const live: LiveDto = { overview, nodePools: [] };
    render(<Overview ctx={ctxFor({ live })} />);
    const rows = await screen.findAllByTestId("pending-row");
    assert.equal(rows.length, 4);
    assert.equal(screen.getByTestId("overview-pending").textContent, "4 pending pods");
    assert.equal(calls.filter((c) => /\/pending$/.test(c.url)).length, 1, "one request for both");
    assert.equal(screen.getByTestId("pending-fix-patch").textContent, tolerate);
    assert.match(screen.getByTestId("pending-fix-cost").textContent, /\$0\.082\/h/);
    assert.match(rows[0]?.textContent ?? "", /instance-gpu-count In \[8\].*Relax the pod's requirement/);
  });
});
