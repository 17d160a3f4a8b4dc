// ClusterThrashing: the one computation of a cluster's thrashing reports, shared by the API routes
// and /metrics — recomputed when the recent history, the pools' disruption specs, the node counts
// or the Karpenter version change (or the window slid by 15 s), reused otherwise.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Disruption, LifecycleEvent, StoredWarmupEvent } from "../../core/store/store.ts";
import { ClusterState } from "../../state/cluster.ts";
import { nodePool } from "../testkit.ts";
import { ClusterThrashing, type ThrashingHistory } from "./cluster.ts";

const MIN = 60_000;
const NOW = Date.UTC(2026, 11, 3, 12);

/** sigs#2388 in pool "default": a node consolidated at 5 minutes, replaced by the same type a minute later. */
function churn(): LifecycleEvent[] {
  const out: LifecycleEvent[] = [];
  for (let i = 0; i < 6; i++) {
    const at = NOW - 30 * MIN + i * 6 * MIN;
    const base = {
      clusterId: "c1",
      nodeClaim: `nc-${String(i)}`,
      nodeClaimUid: `u-${String(i)}`,
      nodePool: "default",
      instanceType: "m5.large",
    };
    out.push({ ...base, phase: "Launched", at });
    if (i < 5) out.push({ ...base, phase: "Disrupted", reason: "Underutilized", at: at + 5 * MIN });
  }
  return out;
}

class FakeHistory implements ThrashingHistory {
  revision = 1;
  reads = 0;
  readonly store = {
    warmupEvents: (): Promise<StoredWarmupEvent[]> => Promise.resolve([]),
  };

  recentHistory() {
    const rows = (
      from: number,
      to: number,
    ): Promise<{ lifecycle: LifecycleEvent[]; disruptions: Disruption[] }> => {
      this.reads++;
      return Promise.resolve({
        lifecycle: churn().filter((e) => e.at >= from && e.at < to),
        disruptions: [],
      });
    };
    return { revision: this.revision, rows };
  }
}

describe("ClusterThrashing", () => {
  const state = new ClusterState();
  state.apply(
    "NodePool",
    "add",
    nodePool("default", {
      disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "0s" },
    }),
  );

  it("computes once per change of the history, the pools or the version, not per request", async () => {
    const h = new FakeHistory();
    const t = new ClusterThrashing(h);
    const c = { id: "c1", state, info: { karpenterVersion: "v1.8.2" } };
    const first = await t.reports(c, NOW);
    assert.equal(first[0]?.severity, "high");
    assert.equal(await t.reports(c, NOW), first, "the same reports for a second reader");
    assert.equal(await t.reports(c, NOW + 10_000), first, "within 15 s");
    assert.equal(h.reads, 1);

    await t.reports(c, NOW + 20_000);
    assert.equal(h.reads, 2, "the window slid");
    h.revision++;
    await t.reports(c, NOW + 20_000);
    assert.equal(h.reads, 3, "new history");

    const ids = async (version: string) =>
      (await t.reports({ ...c, info: { karpenterVersion: version } }, NOW + 20_000))[0]?.advice.map(
        (a) => a.id,
      ) ?? [];
    assert.ok(!(await ids("v1.8.2")).includes("balanced-policy"));
    assert.equal(h.reads, 3, "v1.8.2 again: reused");
    assert.ok((await ids("v1.15.0")).includes("balanced-policy"), "Balanced once the cluster runs v1.14+");
    assert.equal(h.reads, 4, "a new Karpenter version");

    state.apply(
      "NodePool",
      "update",
      nodePool("default", {
        disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "20m" },
      }),
    );
    const after = await t.reports({ ...c, info: { karpenterVersion: "v1.15.0" } }, NOW + 20_000);
    assert.equal(h.reads, 5, "the pool's spec changed");
    assert.ok(
      !after[0]?.advice.some((a) => a.id === "raise-consolidate-after"),
      "its advice follows the spec",
    );
  });

  it("is one instance per hub and options: the routes and /metrics share it", () => {
    const h = new FakeHistory();
    assert.equal(ClusterThrashing.of(h), ClusterThrashing.of(h, {}));
    assert.notEqual(ClusterThrashing.of(h), ClusterThrashing.of(h, { windowMs: MIN }));
    assert.notEqual(ClusterThrashing.of(h), ClusterThrashing.of(new FakeHistory()));
  });
});
