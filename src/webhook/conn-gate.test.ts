// The connection gate's ranks and evictions (issue 42, finding 3), on a fake clock.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../shared/clock.ts";
import { cidrList, ConnectionGate, type GateConn } from "./conn-gate.ts";

function gate(trustedCidrs: string[] = []): { g: ConnectionGate; clock: FakeClock; closed: string[] } {
  const clock = new FakeClock();
  const g = new ConnectionGate(
    { maxConnections: 6, maxConnectionsPerAddress: 3, trustedCidrs, reviewTrustMs: 60_000 },
    clock,
  );
  return { g, clock, closed: [] };
}

describe("connection gate", () => {
  it("caps an address of rank 0; a configured CIDR is not capped per address", () => {
    const { g } = gate(["10.0.0.0/24"]);
    const a = [1, 2, 3, 4].map(() => g.admit("192.168.1.5", () => undefined));
    assert.deepEqual(
      a.map((c) => c !== undefined),
      [true, true, true, false],
    );
    const b = [1, 2, 3].map(() => g.admit("::ffff:10.0.0.9", () => undefined));
    assert.ok(
      b.every((c) => c !== undefined),
      "the apiserver's CIDR, seen on a dual-stack socket",
    );
    assert.equal(g.rank("10.0.0.9"), 2);
    assert.equal(g.open, 6);
    assert.equal(g.refused, 1);
  });

  it("when full, a configured apiserver takes the longest-idle connection of the heaviest address, never a busy one", async () => {
    const { g, clock, closed } = gate(["10.0.0.1/32"]);
    const held: GateConn[] = [];
    for (const addr of ["1.1.1.1", "1.1.1.1", "1.1.1.1", "2.2.2.2", "2.2.2.2", "3.3.3.3"]) {
      await clock.advance(1_000);
      const c = g.admit(addr, () => closed.push(addr));
      assert.ok(c);
      held.push(c);
    }
    const [first, second] = held;
    assert.ok(first && second);
    first.busy = true; // being answered
    assert.ok(g.admit("10.0.0.1", () => undefined));
    assert.deepEqual(closed, ["1.1.1.1"]);
    assert.equal(g.evicted, 1);
    assert.equal(g.open, 6);
    // The evicted one is second (first is busy): releasing it again changes nothing.
    g.release(second);
    assert.equal(g.open, 6);
  });

  it("a newcomer of rank 0 takes only from a heavier address (fair share); a reviewer earns rank 1 for a while", async () => {
    const { g, clock, closed } = gate();
    for (const addr of ["1.1.1.1", "1.1.1.1", "1.1.1.1", "2.2.2.2", "2.2.2.2", "2.2.2.2"])
      assert.ok(g.admit(addr, () => closed.push(addr)));
    assert.ok(
      g.admit("3.3.3.3", () => undefined),
      "0 < 3 − 1: takes one",
    );
    assert.ok(
      g.admit("3.3.3.3", () => undefined),
      "1 < 3 − 1: takes one",
    );
    assert.equal(
      g.admit("3.3.3.3", () => undefined),
      undefined,
      "2 held against 2 and 2: refused",
    );
    g.reviewed("3.3.3.3");
    assert.equal(g.rank("3.3.3.3"), 1);
    assert.ok(
      g.admit("3.3.3.3", () => undefined),
      "rank 1 takes from rank 0 regardless",
    );
    await clock.advance(60_001);
    assert.equal(g.rank("3.3.3.3"), 0, "the priority lapses");
    assert.equal(closed.length, 3);
  });

  it("refuses malformed CIDRs", () => {
    assert.throws(() => cidrList(["10.0.0.0/33"]), /not a CIDR/);
    assert.throws(() => cidrList(["example"]), /not a CIDR/);
    assert.ok(cidrList(["fd00::/8", "10.1.2.3"]).check("10.1.2.3", "ipv4"));
  });
});
