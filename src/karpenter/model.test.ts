// Labels, node facts, requirements, resources and pod requests on the KWOK fixtures.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { fixtures } from "../../test/fixtures/karpenter/load.ts";
import type { Pod } from "../objects/kube.ts";
import { parseDuration } from "./duration.ts";
import {
  capacityTypeOf,
  instanceTypeOf,
  isDoNotDisrupt,
  isKarpenterManaged,
  nodeLabelsOf,
  nodePoolOf,
  zoneOf,
} from "./labels.ts";
import {
  isCordoned,
  isDisruptionTainted,
  isInitialized,
  isKwok,
  isReady,
  isRegistered,
  isTerminating,
  providerIDOf,
} from "./node.ts";
import {
  allowedCapacityTypes,
  allowsCapacityType,
  allowsInstanceType,
  allowsZone,
  limitStatus,
  nodePoolRequirements,
  requirementsAllow,
  requirementsAllowLabels,
  wouldExceedLimits,
} from "./requirements.ts";
import {
  addResources,
  fits,
  formatResources,
  isTerminalPod,
  maxResources,
  parseResources,
  podRequests,
  subtractResourceLists,
  subtractResources,
  sumResourceLists,
} from "./resources.ts";
import { QuantityError } from "./quantity.ts";

const GiB = 2 ** 30;
const MiB = 2 ** 20;

describe("labels", () => {
  it("reads pool, capacity type, instance type and zone off a node and its claim", () => {
    for (const obj of [fixtures.node("initialized"), fixtures.nodeClaim("initialized")]) {
      assert.deepEqual(nodeLabelsOf(obj), {
        nodePool: "default",
        capacityType: "spot",
        instanceType: "c-4x-amd64-linux",
        zone: "test-zone-a",
        arch: "amd64",
      });
      assert.equal(isKarpenterManaged(obj), true);
    }
    const od = fixtures.node("drifted");
    assert.equal(capacityTypeOf(od), "on-demand");
    assert.equal(zoneOf(od), "test-zone-b");
  });
  it("an unknown capacity type or a non-Karpenter node reads as absent", () => {
    const n = fixtures.node("initialized");
    n.metadata.labels = {
      "karpenter.sh/capacity-type": "preemptible",
      "beta.kubernetes.io/instance-type": "m5.large",
    };
    assert.equal(capacityTypeOf(n), undefined);
    assert.equal(nodePoolOf(n), undefined);
    assert.equal(isKarpenterManaged(n), false);
    assert.equal(instanceTypeOf(n), "m5.large");
  });
  it("do-not-disrupt annotation", () => {
    const p = fixtures.pod("running");
    assert.equal(isDoNotDisrupt(p), false);
    p.metadata.annotations = { "karpenter.sh/do-not-disrupt": "true" };
    assert.equal(isDoNotDisrupt(p), true);
  });
});

describe("node facts", () => {
  it("ready, registered, initialized", () => {
    const n = fixtures.node("initialized");
    assert.equal(isReady(n), true);
    assert.equal(isRegistered(n), true);
    assert.equal(isInitialized(n), true);
    const u = fixtures.node("unregistered");
    assert.equal(isReady(u), false);
    assert.equal(isRegistered(u), false);
    assert.equal(isInitialized(u), false);
  });
  it("KWOK by providerID or the kwok label, from nodes and claims", () => {
    assert.equal(providerIDOf(fixtures.node("initialized")), "kwok://festive-hopper-2913848191");
    assert.equal(providerIDOf(fixtures.nodeClaim("launched")), "kwok://festive-hopper-2913848191");
    assert.equal(providerIDOf(fixtures.nodeClaim("pending")), undefined);
    assert.equal(isKwok(fixtures.node("initialized")), true);
    assert.equal(isKwok(fixtures.nodeClaim("launched")), true);
    const aws = fixtures.node("initialized");
    aws.spec = { providerID: "aws:///us-east-1a/i-0abc" };
    aws.metadata.labels = {};
    aws.metadata.annotations = {};
    assert.equal(isKwok(aws), false);
  });
  it("disruption taint, cordon and termination", () => {
    assert.equal(isDisruptionTainted(fixtures.node("disrupted")), true);
    assert.equal(isDisruptionTainted(fixtures.node("initialized")), false);
    assert.equal(isCordoned(fixtures.node("disrupted")), false);
    assert.equal(isTerminating(fixtures.nodeClaim("terminating")), true);
    assert.equal(isTerminating(fixtures.nodeClaim("disrupting")), false);
  });
});

describe("requirements", () => {
  const pool = fixtures.nodePool();
  it("capacity types, instance types and zones the pool allows", () => {
    assert.equal(allowsCapacityType(pool, "spot"), true);
    assert.equal(allowsCapacityType(pool, "on-demand"), true);
    assert.equal(allowsCapacityType(pool, "reserved"), false);
    assert.deepEqual(allowedCapacityTypes(pool), ["spot", "on-demand"]);
    assert.equal(allowsZone(pool, "test-zone-a"), true);
    assert.equal(allowsZone(pool, "test-zone-d"), false);
    // No instance-type requirement on the pool: any name is allowed by that key.
    assert.equal(allowsInstanceType(pool, "c-4x-amd64-linux"), true);
  });
  it("template labels become In requirements", () => {
    const reqs = nodePoolRequirements(pool);
    assert.ok(reqs.some((r) => r.key === "team" && r.operator === "In" && r.values?.[0] === "platform"));
    assert.equal(requirementsAllow(reqs, "team", "data"), false);
  });
  it("Gt/Lt compare integers; non-integers never match", () => {
    const reqs = nodePoolRequirements(pool);
    assert.equal(requirementsAllow(reqs, "karpenter.kwok.sh/instance-cpu", "32"), true);
    assert.equal(requirementsAllow(reqs, "karpenter.kwok.sh/instance-cpu", "48"), false);
    assert.equal(requirementsAllow(reqs, "karpenter.kwok.sh/instance-cpu", "4x"), false);
    assert.equal(requirementsAllow([{ key: "n", operator: "Gt", values: ["3"] }], "n", "4"), true);
  });
  it("Exists, DoesNotExist and absent labels", () => {
    const reqs = [
      { key: "gpu", operator: "Exists" as const },
      { key: "legacy", operator: "DoesNotExist" as const },
    ];
    assert.equal(requirementsAllowLabels(reqs, { gpu: "a100", legacy: undefined }), true);
    assert.equal(requirementsAllowLabels(reqs, { gpu: undefined }), false);
    assert.equal(requirementsAllowLabels(reqs, { legacy: "1" }), false);
    assert.equal(
      requirementsAllow(nodePoolRequirements(pool), "topology.kubernetes.io/zone", undefined),
      true,
    );
  });
  it("the fixture's own node labels satisfy its pool", () => {
    const labels = fixtures.node("initialized").metadata.labels ?? {};
    assert.equal(requirementsAllowLabels(nodePoolRequirements(pool), labels), true);
  });
  it("limits vs usage", () => {
    const usage = parseResources(pool.status?.resources);
    const status = limitStatus(pool.spec.limits, usage);
    assert.deepEqual(status, [
      { resource: "cpu", limit: 1_000_000, usage: 12_000, remaining: 988_000, ratio: 0.012, exceeded: false },
      {
        resource: "memory",
        limit: 1000 * GiB,
        usage: 24 * GiB,
        remaining: 976 * GiB,
        ratio: 0.024,
        exceeded: false,
      },
    ]);
    assert.equal(wouldExceedLimits(pool.spec.limits, usage, { cpu: 988_000 }), false);
    assert.equal(wouldExceedLimits(pool.spec.limits, usage, { cpu: 988_001 }), true);
    assert.deepEqual(limitStatus(undefined, usage), []);
    const [zero] = limitStatus({ cpu: "0" }, { cpu: 1 });
    assert.ok(zero);
    assert.equal(zero.ratio, Infinity);
    assert.equal(zero.exceeded, true);
  });
});

describe("resources", () => {
  it("parse, add, subtract, max, fit and format", () => {
    const alloc = parseResources(fixtures.node("initialized").status?.allocatable);
    assert.deepEqual(alloc, { cpu: 3900, "ephemeral-storage": 20 * GiB, memory: 8182 * MiB, pods: 64 });
    const a = { cpu: 500, memory: 512 * MiB };
    const b = { cpu: 250, pods: 1 };
    assert.deepEqual(addResources(a, b), { cpu: 750, memory: 512 * MiB, pods: 1 });
    assert.deepEqual(subtractResources(b, a), { cpu: -250, pods: 1, memory: -512 * MiB });
    assert.deepEqual(maxResources(a, b), { cpu: 500, memory: 512 * MiB, pods: 1 });
    assert.equal(fits(a, alloc), true);
    assert.equal(fits({ "nvidia.com/gpu": 1 }, alloc), false);
    assert.deepEqual(formatResources(alloc), {
      cpu: "3900m",
      "ephemeral-storage": "20Gi",
      memory: "8182Mi",
      pods: "64",
    });
  });
  it("sums and subtracts ResourceLists as strings", () => {
    assert.deepEqual(
      sumResourceLists(
        { cpu: "500m", memory: "512Mi" },
        { cpu: "1.5", memory: "512Mi", pods: "1" },
        undefined,
      ),
      {
        cpu: "2",
        memory: "1Gi",
        pods: "1",
      },
    );
    assert.deepEqual(
      subtractResourceLists(
        { cpu: "4", "nvidia.com/gpu": "1000", "ephemeral-storage": "20Gi" },
        { cpu: "4100m" },
      ),
      {
        cpu: "-100m",
        "nvidia.com/gpu": "1000",
        "ephemeral-storage": "20Gi",
      },
    );
  });
  it("a bad quantity names the resource", () => {
    assert.throws(
      () => parseResources({ cpu: "1", memory: "2GB" }),
      (e: unknown) => e instanceof QuantityError && /memory/.test(e.message) && /2GB/.test(e.message),
    );
  });
});

describe("podRequests", () => {
  it("sums containers", () => {
    assert.deepEqual(podRequests(fixtures.pod("running")), { cpu: 600, memory: 576 * MiB });
  });
  it("init containers raise the floor; sidecars add and stack under later init containers; overhead adds", () => {
    // containers 1500m/3Gi/1 gpu + sidecar 250m/256Mi = 1750m, 3Gi+256Mi; init "fetch" runs alone
    // (the sidecar starts after it): 2 cpu, 1Gi → cpu is raised to 2000m. Then + 50m/32Mi overhead.
    assert.deepEqual(podRequests(fixtures.pod("pending")), {
      cpu: 2050,
      memory: 3 * GiB + 256 * MiB + 32 * MiB,
      "nvidia.com/gpu": 1,
    });
  });
  it("an init container after a sidecar runs alongside it", () => {
    const pod: Pod = {
      metadata: { name: "p" },
      spec: {
        initContainers: [
          { name: "side", restartPolicy: "Always", resources: { requests: { cpu: "500m" } } },
          { name: "init", resources: { requests: { cpu: "1" } } },
        ],
        containers: [{ name: "main", resources: { requests: { cpu: "200m" } } }],
      },
    };
    // max(main 200m + side 500m, init 1000m + side 500m) = 1500m
    assert.deepEqual(podRequests(pod), { cpu: 1500 });
  });
  it("max(sum(containers), max(init)) without sidecars", () => {
    const pod: Pod = {
      metadata: { name: "p" },
      spec: {
        initContainers: [
          { name: "a", resources: { requests: { cpu: "3", memory: "100Mi" } } },
          { name: "b", resources: { requests: { cpu: "1", memory: "2Gi" } } },
        ],
        containers: [
          { name: "x", resources: { requests: { cpu: "1", memory: "1Gi" } } },
          { name: "y", resources: { requests: { cpu: "1", memory: "512Mi" } } },
          { name: "z" },
        ],
      },
    };
    assert.deepEqual(podRequests(pod), { cpu: 3000, memory: 2 * GiB });
  });
  it("pod-level cpu/memory requests override the container aggregate", () => {
    const pod = fixtures.pod("running");
    pod.spec.resources = { requests: { cpu: "2", "nvidia.com/gpu": "4" } };
    assert.deepEqual(podRequests(pod), { cpu: 2000, memory: 576 * MiB });
  });
  it("zero requests are left out, the rest kept", () => {
    const pod: Pod = {
      metadata: {},
      spec: {
        containers: [
          { name: "a", resources: { requests: { cpu: "0", memory: "64Mi" } } },
          { name: "b", resources: { requests: { cpu: "0m" } } },
        ],
      },
    };
    assert.deepEqual(podRequests(pod), { memory: 64 * MiB });
  });
  it("no requests at all is empty", () => {
    assert.deepEqual(podRequests({ metadata: {}, spec: { containers: [{ name: "c" }] } }), {});
  });
  it("terminal pods", () => {
    assert.equal(isTerminalPod(fixtures.pod("succeeded")), true);
    assert.equal(isTerminalPod(fixtures.pod("running")), false);
    assert.equal(isTerminalPod(fixtures.pod("pending")), false);
  });
});

describe("podRequests agrees with k8s.io/component-helpers PodRequests (golden files)", () => {
  const dir = new URL("../../test/fixtures/karpenter/", import.meta.url);
  const pods = readFileSync(new URL("podrequests-golden.pods.jsonl", dir), "utf8").trim().split("\n");
  const expected = readFileSync(new URL("podrequests-golden.expected.txt", dir), "utf8").split("\n");

  it("covers sidecars, init containers, overhead and pod-level requests", () => {
    assert.equal(pods.length, 300);
    const all = pods.join("\n");
    for (const needle of [
      '"restartPolicy":"Always"',
      '"initContainers"',
      '"overhead"',
      '},"resources":{"requests"',
    ]) {
      assert.ok(all.includes(needle), needle);
    }
  });

  it("every pod's requests match", () => {
    const mismatches: string[] = [];
    pods.forEach((line, i) => {
      const r = podRequests(JSON.parse(line) as Pod);
      const ours = Object.keys(r)
        .sort()
        .map((k) => `${k}=${String(r[k])} `)
        .join("");
      if (ours !== expected[i])
        mismatches.push(`pod ${String(i)}: kubernetes "${expected[i] ?? ""}", wave "${ours}"`);
    });
    assert.deepEqual(mismatches, []);
  });
});

describe("parseDuration", () => {
  it("Go durations and Never", () => {
    assert.equal(parseDuration("720h"), 720 * 3_600_000);
    assert.equal(parseDuration("30s"), 30_000);
    assert.equal(parseDuration("1h30m"), 90 * 60_000);
    assert.equal(parseDuration("1.5h"), 90 * 60_000);
    assert.equal(parseDuration("500ms"), 500);
    assert.equal(parseDuration("0"), 0);
    assert.equal(parseDuration("-5m"), -300_000);
    assert.equal(parseDuration("Never"), null);
  });
  it("rejects junk", () => {
    for (const bad of ["", "5", "h", "5d", "1h 30m", "never", "+"]) {
      assert.throws(() => parseDuration(bad), /invalid duration/, bad);
    }
  });
});
