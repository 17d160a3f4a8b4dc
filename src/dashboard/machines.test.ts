import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { machinesOf, memoryOf, NO_POOL, vcpuOf } from "./machines.ts";
import { cluster } from "./testkit.ts";

describe("machinesOf", () => {
  it("joins NodeClaims to Nodes, keeps launching claims and unmanaged nodes", () => {
    const { nodes, nodeClaims } = cluster([
      {
        name: "a",
        pool: "default",
        instanceType: "m5.large",
        capacityType: "spot",
        zone: "us-east-1a",
        cpu: "2",
        memory: "8Gi",
      },
      { name: "b", pool: "default", instanceType: "m5.large", capacityType: "on-demand", unregistered: true },
      { name: "mng-1", instanceType: "t3.medium", cpu: "2", memory: "4Gi" },
    ]);
    nodes[1]!.metadata.labels!["eks.amazonaws.com/capacityType"] = "SPOT";
    const ms = machinesOf(nodes, nodeClaims);
    assert.deepEqual(
      ms.map((m) => [m.name, m.nodePool, m.node, m.nodeClaim, m.capacityType]),
      [
        ["a", "default", "a", "a-nc", "spot"],
        ["b-nc", "default", undefined, "b-nc", "on-demand"],
        ["mng-1", NO_POOL, "mng-1", undefined, "spot"],
      ],
    );
    assert.equal(vcpuOf(ms[0]!), 2);
    assert.equal(memoryOf(ms[0]!), 8 * 2 ** 30);
    assert.equal(ms[0]!.ready, true);
    assert.equal(ms[1]!.ready, false);
    assert.equal(ms[0]!.createdAt, Date.parse("2026-01-01T00:00:00Z"));
  });

  it("joins by provider ID when status.nodeName is not set yet", () => {
    const { nodes, nodeClaims } = cluster([{ name: "a", pool: "p" }]);
    delete nodeClaims[0]!.status!.nodeName;
    const ms = machinesOf(nodes, nodeClaims);
    assert.equal(ms.length, 1);
    assert.equal(ms[0]!.node, "a");
  });

  it("takes the zone from an EC2 provider ID when the node has no zone label", () => {
    const { nodes, nodeClaims } = cluster([{ name: "a", pool: "p", instanceType: "m5.large" }]);
    nodes[0]!.spec = { ...nodes[0]!.spec, providerID: "aws:///eu-west-1b/i-0123456789abcdef0" };
    nodeClaims[0]!.status = { ...nodeClaims[0]!.status, providerID: "aws:///eu-west-1b/i-0123456789abcdef0" };
    const [m] = machinesOf(nodes, nodeClaims);
    assert.equal(m!.zone, "eu-west-1b");
  });

  it("records an unparsable quantity as a problem instead of failing", () => {
    const { nodes, nodeClaims } = cluster([{ name: "a", pool: "p", cpu: "two" }]);
    const [m] = machinesOf(nodes, nodeClaims);
    assert.equal(m!.capacity.cpu, undefined);
    assert.match(m!.problems.join(), /a capacity: .*two/);
  });
});
