import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LifecycleEvent } from "../../core/store/store.ts";
import { coldStartsOf } from "../cold-starts.ts";
import { coldStartRange, coldStarts, savedPerHit, timeSavedSeconds } from "./time-saved.ts";

const T0 = Date.parse("2026-03-02T12:00:30Z");

function launch(uid: string, pool: string, at: number, seconds?: number): LifecycleEvent[] {
  const base = { clusterId: "c", nodeClaim: uid, nodeClaimUid: uid, nodePool: pool };
  return [
    { ...base, phase: "Launched", at },
    ...(seconds === undefined ? [] : [{ ...base, phase: "Initialized" as const, at: at + seconds * 1000 }]),
  ];
}

describe("time saved", () => {
  it("prices a hit at its pool's median cold start, else the cluster's, else nothing", () => {
    const cs = coldStarts([
      ...launch("a", "general", T0, 60),
      ...launch("b", "general", T0, 90),
      ...launch("c", "batch", T0, 30),
      ...launch("d", "batch", T0), // not initialized yet: not a measurement
    ]);
    assert.deepEqual(cs.pools.get("general"), { seconds: 75, samples: 2 });
    assert.deepEqual(cs.pools.get("batch"), { seconds: 30, samples: 1 });
    assert.deepEqual(cs.cluster, { seconds: 60, samples: 3 });
    assert.equal(savedPerHit(cs, "gpu"), 60, "a pool without launches takes the cluster's");
    assert.equal(
      timeSavedSeconds({ general: { hits: 2 }, batch: { hits: 1 }, gpu: { hits: 1 } }, cs),
      150 + 30 + 60,
    );
    assert.equal(savedPerHit(coldStarts([]), "general"), 0, "nothing measured, nothing claimed");
  });

  it("measures from the minute an hour ago, once per history revision and minute", async () => {
    assert.deepEqual(coldStartRange(T0), { from: Date.parse("2026-03-02T11:00:00Z"), to: T0 + 1 });
    let revision = 1;
    let reads = 0;
    const rows = launch("a", "general", T0 - 600_000, 60);
    const hub = {
      recentHistory: () => ({
        rows: (from: number, to: number) => {
          reads++;
          return Promise.resolve({ lifecycle: rows.filter((r) => r.at >= from && r.at < to) });
        },
        get revision() {
          return revision;
        },
      }),
    };
    const first = await coldStartsOf(hub, "c", T0);
    assert.equal(
      await coldStartsOf(hub, "c", T0 + 20_000),
      first,
      "same minute, same history: the same figure",
    );
    revision++;
    rows.push(...launch("b", "general", T0 - 300_000, 80));
    const next = await coldStartsOf(hub, "c", T0 + 21_000);
    assert.notEqual(next, first);
    assert.deepEqual(next.pools.get("general"), { seconds: 70, samples: 2 });
    assert.equal(reads, 3);
  });
});
