import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { KarpenterEventLog } from "./karpenter-events.ts";
import type { Event } from "../../objects/kube.ts";

const T = Date.parse("2026-06-01T10:00:00Z");
const ev = (name: string, node: string, atMs: number, count = 1): Event => ({
  metadata: { name, namespace: "default" },
  involvedObject: { kind: "Node", name: node },
  reason: "DisruptionBlocked",
  message: name,
  count,
  lastTimestamp: new Date(atMs).toISOString(),
});

describe("Karpenter Events kept per cluster", () => {
  it("keeps an Event past the apiserver's hour and updates it in place", () => {
    const log = new KarpenterEventLog();
    log.add(ev("a", "n1", T), T);
    log.add(ev("a", "n1", T + 60_000, 2), T + 60_000);
    const kept = log.events(T + 3 * 3_600_000);
    assert.equal(kept.length, 1);
    assert.equal(kept[0]?.count, 2);
  });

  it("is bounded per object, in all, and by age", () => {
    const log = new KarpenterEventLog({ perObject: 2, max: 3, retainMs: 3_600_000 });
    for (let i = 0; i < 4; i++) log.add(ev(`x${i}`, "n1", T + i), T);
    assert.deepEqual(
      log.events(T).map((e) => e.message),
      ["x2", "x3"],
    );
    log.add(ev("y", "n2", T), T);
    log.add(ev("z", "n3", T), T);
    // Beyond 3 in all: the least recently touched object (n1, 2 Events) goes.
    assert.deepEqual(
      log
        .events(T)
        .map((e) => e.message)
        .sort(),
      ["y", "z"],
    );
    assert.equal(log.events(T + 2 * 3_600_000).length, 0);
    assert.equal(log.size, 0);
    log.add(ev("old", "n4", T), T + 2 * 3_600_000);
    assert.equal(log.size, 0, "an Event already past retention is not kept");
  });
});
