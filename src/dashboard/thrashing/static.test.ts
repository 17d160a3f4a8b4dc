// Thrashing ignores a static NodePool's own scale operations: Karpenter deletes and creates its
// NodeClaims when replicas change, with no disruption reason (issue 39).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { LifecycleRecord } from "../history.ts";
import { nodePool } from "../testkit.ts";
import { detectThrashing } from "./detect.ts";

const MIN = 60_000;
const T0 = Date.UTC(2026, 0, 1, 12);

/** Replicas flapping 3 → 2 → 3 …: a node removed (no reason) every 4 min, another launched 1 min later. */
function flapping(pool: string): LifecycleRecord[] {
  const out: LifecycleRecord[] = [];
  for (let k = 0; k < 7; k++) {
    const base = { nodeClaim: `${pool}-${String(k)}`, nodePool: pool, instanceType: "m5.large" };
    const at = T0 + k * 4 * MIN;
    out.push({ ...base, phase: "Launched", at });
    out.push({ ...base, phase: "Initialized", at: at + 30_000 });
    if (k < 6) out.push({ ...base, phase: "Terminated", at: at + 3 * MIN });
  }
  return out;
}

const now = T0 + 29 * MIN;

describe("thrashing: static NodePools", () => {
  it("the same launches and removals are thrashing in an elastic pool", () => {
    const r = detectThrashing({ nodePool: "p", pool: nodePool("p"), events: flapping("p"), nodes: 3, now });
    assert.ok(r.signals.cycles >= 5);
    assert.notEqual(r.severity, "none");
    assert.ok(r.advice.length > 0);
  });

  it("but a static pool's removals are its replicas changing: planned, no cycle, no advice", () => {
    const pool = nodePool("p", { replicas: 3 });
    const r = detectThrashing({ nodePool: "p", pool, events: flapping("p"), nodes: 3, now });
    assert.equal(r.signals.cycles, 0);
    assert.equal(r.severity, "none");
    assert.equal(r.score, 0);
    assert.deepEqual(r.advice, [], "no consolidateAfter or policy advice for a pool that ignores them");
    assert.deepEqual(r.signals.reasons, { ReplicasChanged: 6 });
  });

  it("a static pool's node removed for a reason (drift, repair) keeps it", () => {
    const events = flapping("p").map((e) =>
      e.phase === "Terminated" && e.nodeClaim === "p-0" ? { ...e, reason: "Unhealthy" } : e,
    );
    const r = detectThrashing({ nodePool: "p", pool: nodePool("p", { replicas: 3 }), events, nodes: 3, now });
    assert.equal(r.signals.reasons["Unhealthy"], 1);
    assert.equal(r.signals.reasons["ReplicasChanged"], 5);
  });
});
