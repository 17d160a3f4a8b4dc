import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../objects/kube.ts";
import {
  counts,
  emptyLedger,
  LedgerFormatError,
  parseLedger,
  reconcile,
  reserve,
  serializeLedger,
  wouldAssignSpot,
} from "./ledger.ts";
import { spotPolicy, WEB } from "../policy/spot.test-helper.ts";
import { ASSIGNMENT_LABEL, SLOT_LABEL } from "../objects/wave.ts";

const workload = WEB;
const policy = spotPolicy;
const tokens = (n: number, from = 0): string[] => Array.from({ length: n }, (_, i) => `t${from + i}`);
const pod = (token: string, capacity: string, extra: Partial<Pod["metadata"]> = {}, phase?: string): Pod =>
  ({
    metadata: { name: `p-${token}`, labels: { [SLOT_LABEL]: token, [ASSIGNMENT_LABEL]: capacity }, ...extra },
    spec: { containers: [] },
    ...(phase ? { status: { phase } } : {}),
  }) as Pod;

describe("reserve", () => {
  it("gives exactly the first N pods on-demand", () => {
    const l = emptyLedger(workload);
    const caps = reserve(l, policy(3), tokens(10), 1000);
    assert.deepEqual(caps.slice(0, 3), ["on-demand", "on-demand", "on-demand"]);
    assert.ok(caps.slice(3).every((c) => c === "spot"));
    assert.deepEqual(counts(l), { onDemand: 3, spot: 0 }, "spot slots are not tracked without a percentage");
    assert.deepEqual(reserve(l, policy(3), ["x"], 1000), ["spot"], "later batches see earlier slots");
  });

  it("reaches base + percentage incrementally (base 2, 50 %, 10 pods → 6 on-demand)", () => {
    const l = emptyLedger(workload);
    const caps = reserve(l, policy(2, 50), tokens(10), 1000);
    assert.equal(caps.filter((c) => c === "on-demand").length, 6);
    assert.deepEqual(counts(l), { onDemand: 6, spot: 4 });
    const more = reserve(l, policy(2, 50), tokens(4, 10), 1000);
    assert.equal(more.filter((c) => c === "on-demand").length, 2);
  });

  it("refuses to grow past maxEntries", () => {
    assert.throws(() => reserve(emptyLedger(workload), policy(10), tokens(5), 0, 4), LedgerFormatError);
  });

  it("wouldAssignSpot probes without changing the ledger", () => {
    const l = emptyLedger(workload);
    reserve(l, policy(2), tokens(1), 0);
    assert.equal(wouldAssignSpot(l, policy(2), 1), false);
    assert.equal(wouldAssignSpot(l, policy(2), 2), true);
    assert.equal(l.entries.size, 1);
  });
});

describe("reconcile", () => {
  const timing = { reservationTtlMs: 60_000, skewMs: 5_000 };

  it("confirms live pods and frees slots of terminating and finished pods; the baseline refills first", () => {
    const l = emptyLedger(workload);
    reserve(l, policy(3), ["a", "b", "c", "d"], 1000);
    const pods = [
      pod("a", "on-demand"),
      pod("b", "on-demand", { deletionTimestamp: "2026-01-01T00:00:00Z" }),
      pod("c", "on-demand", {}, "Failed"),
      pod("d", "spot"),
    ];
    const next = reconcile(l, policy(3), pods, 2000, 2100, timing);
    assert.deepEqual([...next.entries.keys()], ["a"]);
    assert.equal(next.entries.get("a")?.confirmedAt, 2100);
    assert.equal(next.reconciledAt, 2000);
    assert.equal(l.entries.size, 3, "input untouched");
    assert.deepEqual(reserve(next, policy(3), ["e", "f", "g"], 3000), ["on-demand", "on-demand", "spot"]);
  });

  it("keeps in-flight reservations and drops those whose pod never appeared after the TTL", () => {
    const l = emptyLedger(workload);
    reserve(l, policy(2), ["old", "young"], 0);
    l.entries.get("young")!.reservedAt = 50_000;
    const next = reconcile(l, policy(2), [], 70_000, 70_010, timing);
    assert.deepEqual([...next.entries.keys()], ["young"]);
  });

  it("frees a confirmed slot only when a list newer than its confirmation (plus skew) misses it", () => {
    const l = emptyLedger(workload);
    reserve(l, policy(2), ["a"], 0);
    const seen = reconcile(l, policy(2), [pod("a", "on-demand")], 10_000, 10_100, timing);
    assert.equal(reconcile(seen, policy(2), [], 12_000, 12_100, timing).entries.size, 1, "within skew: kept");
    assert.equal(reconcile(seen, policy(2), [], 20_000, 20_100, timing).entries.size, 0, "gone: freed");
  });

  it("re-adds live pods missing from a lost ledger (pods are the truth)", () => {
    const next = reconcile(
      emptyLedger(workload),
      policy(1, 50),
      [pod("a", "on-demand"), pod("b", "spot")],
      5,
      6,
      timing,
    );
    assert.deepEqual(counts(next), { onDemand: 1, spot: 1 });
    const thresholdOnly = reconcile(
      emptyLedger(workload),
      policy(1),
      [pod("a", "on-demand"), pod("b", "spot")],
      5,
      6,
      timing,
    );
    assert.deepEqual(counts(thresholdOnly), { onDemand: 1, spot: 0 });
  });

  it("ignores pods without Wave's labels", () => {
    const stray = { metadata: { name: "x", labels: { [SLOT_LABEL]: "z" } }, spec: { containers: [] } } as Pod;
    assert.equal(reconcile(emptyLedger(workload), policy(1), [stray], 5, 6, timing).entries.size, 0);
  });
});

describe("ledger wire format", () => {
  it("round-trips", () => {
    const l = emptyLedger(workload);
    reserve(l, policy(2, 50), tokens(5), 1234);
    l.reconciledAt = 99;
    const back = parseLedger(serializeLedger(l));
    assert.deepEqual(back, l);
  });

  it("rejects garbage with a clear error", () => {
    for (const bad of [
      "",
      "{",
      "[]",
      '{"v":2}',
      '{"v":1,"w":"x","r":0,"e":{"t":["x",1,2]}}',
      '{"v":1,"w":"x","r":0,"e":{"t":[1]}}',
    ])
      assert.throws(() => parseLedger(bad), LedgerFormatError, bad);
  });
});

describe("reservations per address (issue 42)", () => {
  it("an unconfirmed reservation counts only for its own address; confirmed, for all; kept across the wire", () => {
    const l = emptyLedger(workload);
    const forged = reserve(l, policy(1), [{ token: "f", source: "10.9.9.9" }], 1000);
    assert.deepEqual(forged, ["on-demand"]);
    assert.deepEqual(
      reserve(l, policy(1), [{ token: "f2", source: "10.9.9.9" }], 1000),
      ["spot"],
      "the forger's own next review sees its reservation",
    );
    const back = parseLedger(serializeLedger(l));
    assert.equal(back.entries.get("f")?.source, "10.9.9.9");
    assert.deepEqual(
      reserve(back, policy(1), [{ token: "a", source: "172.18.0.1" }], 1000),
      ["on-demand"],
      "the apiserver's review is not starved by it",
    );
    const e = back.entries.get("a");
    assert.ok(e);
    e.confirmedAt = 2000; // its pod was seen
    assert.deepEqual(reserve(back, policy(1), [{ token: "b", source: "10.9.9.9" }], 2000), ["spot"]);
    assert.deepEqual(
      parseLedger(serializeLedger(back)).entries.get("a")?.source,
      undefined,
      "dropped once seen",
    );
  });
});
