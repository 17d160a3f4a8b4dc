// The cross-check e2e's judge (test/e2e/crosscheck.ts) can fail: every source perturbed in turn —
// a count off by one, money off by more than 1e-6, a page showing another value, a source that
// lost the figure — is reported, naming the figure and the source.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { usd } from "../../ui/src/format.ts";
import { disagreements, parseExposition, sumOf, type Figure } from "../e2e/crosscheck.ts";
import { quantity, recompute, type PriceOf } from "../e2e/crosscheck-figures.ts";
import type { KubeObject } from "../e2e/harness.ts";

const agreeing = (): Figure[] => [
  {
    name: "nodes",
    kind: "count",
    api: 7,
    others: { metrics: 7, prometheus: 7, recomputed: 7 },
    page: { shown: "7", format: (n) => String(n) },
  },
  {
    name: "cost per hour",
    kind: "money",
    api: 1.234567891,
    others: { metrics: 1.2345678912, prometheus: 1.2345674, recomputed: 1.234567891 },
    page: { shown: "$1.23", format: usd },
  },
];

describe("cross-check judge", () => {
  it("agrees when every source gives the API's figure (money to 1e-6)", () => {
    assert.deepEqual(disagreements(agreeing()), []);
  });

  for (const source of ["metrics", "prometheus", "recomputed", "overview"] as const) {
    it(`fails when ${source} is perturbed: a count off by one, money off by 2e-6`, () => {
      const count = agreeing();
      count[0]!.others[source] = 8;
      assert.deepEqual(disagreements(count), [`nodes: ${source} 8 ≠ api 7`]);
      const money = agreeing();
      money[1]!.others[source] = 1.234567891 + 2e-6;
      assert.equal(disagreements(money).length, 1);
      assert.match(disagreements(money)[0] ?? "", new RegExp(`^cost per hour: ${source} `));
    });
    it(`fails when ${source} lost the figure`, () => {
      const f = agreeing();
      f[0]!.others[source] = undefined;
      assert.deepEqual(disagreements(f), [`nodes: ${source} has no value (api 7)`]);
    });
  }

  it("fails when the page shows another value than the API's, formatted as the page does", () => {
    const f = agreeing();
    f[1]!.page = { shown: "$1.24", format: usd };
    assert.deepEqual(disagreements(f), ['cost per hour: page shows "$1.24" ≠ api $1.23']);
    f[1]!.page = { shown: undefined, format: usd };
    assert.equal(disagreements(f).length, 1);
  });

  it("fails when the API itself is perturbed: every other source then disagrees", () => {
    const f = agreeing();
    f[0]!.api = 6;
    assert.equal(disagreements(f).length, 4);
  });
});

describe("exposition parsing", () => {
  const text = [
    "# HELP wave_nodes Nodes.",
    "# TYPE wave_nodes gauge",
    'wave_nodes{cluster="a",nodepool="p",capacity_type="spot"} 2',
    'wave_nodes{cluster="a",nodepool="q",capacity_type="on-demand"} 3',
    'wave_nodes{cluster="b",nodepool="p",capacity_type="spot"} 5',
    'wave_x{l="quote \\" and , comma"} 1.5e-7',
    "",
  ].join("\n");

  it("sums a metric's samples by labels", () => {
    const s = parseExposition(text);
    assert.equal(sumOf(s, "wave_nodes", { cluster: "a" }), 5);
    assert.equal(sumOf(s, "wave_nodes", { nodepool: "p" }), 7);
    assert.equal(sumOf(s, "wave_nodes", { cluster: "c" }), undefined);
    assert.equal(sumOf(s, "wave_x", { l: 'quote " and , comma' }), 1.5e-7);
  });

  it("refuses a line that is not a sample", () => {
    assert.throws(() => parseExposition("wave_nodes{"), /not an exposition sample/);
  });
});

describe("recomputation from the apiserver's objects", () => {
  const obj = (kind: string, name: string, rest: Partial<KubeObject> = {}): KubeObject => ({
    apiVersion: "v1",
    kind,
    ...rest,
    metadata: { name, ...rest.metadata },
  });
  const ct = "karpenter.sh/capacity-type";
  const typeLabel = "node.kubernetes.io/instance-type";
  const node = (name: string, type: string, capacityType: string, cpu: string, alloc: string): KubeObject =>
    obj("Node", name, {
      metadata: { name, labels: { [ct]: capacityType, [typeLabel]: type, "karpenter.sh/nodepool": "p" } },
      status: { capacity: { cpu, memory: "8Gi" }, allocatable: { cpu: alloc, memory: "7Gi" } },
    });
  const price: PriceOf = (type, capacityType) =>
    (type === "t4" ? 0.2 : 0.1) * (capacityType === "spot" ? 0.5 : 1);

  it("parses quantities and refuses a suffix it does not know", () => {
    assert.equal(quantity("250m"), 0.25);
    assert.equal(quantity("2Gi"), 2 * 2 ** 30);
    assert.equal(quantity("1.5e3"), 1500);
    assert.throws(() => quantity("3Qi"), /unknown quantity suffix/);
  });

  it("joins NodeClaims to Nodes, sizes by the larger of capacity and allocatable, sums pods' requests", () => {
    const claim = obj("NodeClaim", "c1", {
      metadata: { name: "c1", labels: { [ct]: "spot", [typeLabel]: "t4" } },
      status: { nodeName: "n1" },
    });
    const pod = obj("Pod", "a", {
      metadata: { name: "a", namespace: "x" },
      spec: {
        nodeName: "n1",
        containers: [{ resources: { requests: { cpu: "500m", memory: "1Gi" } } }],
        initContainers: [{ resources: { requests: { cpu: "2" } } }],
      },
      status: { phase: "Running" },
    });
    const r = recompute(
      {
        nodes: [node("n1", "t4", "spot", "2350m", "3900m"), node("n2", "t2", "on-demand", "2", "2")],
        nodeClaims: [claim],
        pods: [pod],
        replicaSets: [],
        spotPolicies: [],
      },
      price,
    );
    assert.equal(r.nodes, 2);
    assert.ok(Math.abs(r.cost - (0.1 + 0.1)) < 1e-12);
    assert.ok(Math.abs(r.spotSavings - 0.1) < 1e-12);
    assert.ok(Math.abs(r.spotRatio.vcpu - 3.9 / 5.9) < 1e-12);
    assert.equal(r.requested.cpu, 2, "the init container's 2 cores outweigh the container's 0.5");
    assert.equal(r.allocatable.memoryBytes, 14 * 2 ** 30);
  });
});
