import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeClock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import { seeded } from "../../shared/random.ts";
import type { IngestBatch } from "../ingest/sink.ts";
import type { LifecycleEvent as Step } from "../lifecycle/derive.ts";
import { openStore } from "../store/open.ts";
import type { Store } from "../store/store.ts";
import { ClusterHub } from "./hub.ts";
import { readRange } from "./recent.ts";

const T0 = Date.parse("2026-03-02T12:00:00Z");
const MIN = 60_000;
const PHASES = ["Launched", "Registered", "Initialized", "Disrupted", "Terminated"] as const;

let dir: string;
let store: Store;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-recent-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function fresh(name: string): Promise<Store> {
  store = await openStore({ backend: "sqlite", path: join(dir, `${name}.db`) }, { log: silentLogger });
  return store;
}

let seq = 0;
function batch(clusterId: string, lifecycle: Step[], receivedAt: number): IngestBatch {
  return { clusterId, sessionId: "s", sequence: ++seq, receivedAt, changes: [], lifecycle };
}

function step(claim: number, type: (typeof PHASES)[number], at: number, reason?: string): Step {
  return {
    id: `nc-${claim}/${type}`,
    type,
    at: new Date(at).toISOString(),
    nodeClaim: `nc-${claim}`,
    uid: `uid-${claim}`,
    nodePool: `pool-${claim % 3}`,
    instanceType: "c-4x-amd64-linux",
    source: "condition",
    ...(reason ? { reason } : {}),
  };
}

/** What the dashboard read from the store before: every row of [from, to). */
async function fromStore(s: Store, clusterId: string, from: number, to: number) {
  return {
    lifecycle: await s.lifecycle({ clusterId, from, to, limit: 1_000_000 }),
    disruptions: await s.disruptions({ clusterId, from, to, limit: 1_000_000 }),
  };
}

describe("recent history in the hub", () => {
  it("answers what the store answers after random batches with repeats and late steps", async () => {
    const s = await fresh("random");
    const clock = new FakeClock(T0);
    const hub = new ClusterHub(s, clock, { recentHistoryMs: 30 * MIN });
    const random = seeded(7);
    const int = (n: number): number => Math.floor(random() * n);
    // History from before the hub looked: the seed must pick it up.
    await hub.write(
      batch("c1", [step(0, "Launched", T0 - 20 * MIN), step(1, "Launched", T0 - 50 * MIN)], T0),
    );
    const recent = hub.recentHistory("c1");
    const check = async (where: string): Promise<void> => {
      const now = clock.now();
      for (const from of [now - 10 * MIN, now - 29 * MIN, now - 45 * MIN]) {
        assert.deepEqual(
          await recent.rows(from, now + 1),
          await fromStore(s, "c1", from, now + 1),
          `${where}, from now-${(now - from) / MIN} min`,
        );
      }
    };
    await check("seeded");
    for (let i = 0; i < 60; i++) {
      await clock.advance(int(90_000));
      const steps: Step[] = [];
      for (let k = int(5); k >= 0; k--) {
        const claim = int(25);
        const phase = PHASES[int(PHASES.length)] ?? "Launched";
        // Mostly now; sometimes late (minutes ago) or a repeat of a stored step at another time.
        const at = clock.now() - (random() < 0.3 ? int(40 * MIN) : 0);
        steps.push(step(claim, phase, at, phase === "Disrupted" ? "Underutilized" : undefined));
      }
      await hub.write(batch(random() < 0.9 ? "c1" : "c2", steps, clock.now()));
      if (i % 4 === 0) await check(`batch ${i}`);
    }
    await check("end");
    assert.ok(recent.revision > 1, "refreshed as batches arrived");
  });

  it("a stored step shows in the next read", async () => {
    const s = await fresh("next");
    const clock = new FakeClock(T0);
    const hub = new ClusterHub(s, clock);
    const recent = hub.recentHistory("c1");
    assert.deepEqual(await recent.rows(T0 - MIN, T0 + 1), { lifecycle: [], disruptions: [] });
    await hub.write(batch("c1", [step(5, "Disrupted", T0, "Empty")], T0));
    const rows = await recent.rows(T0 - MIN, T0 + 1);
    assert.deepEqual(
      rows.lifecycle.map((e) => [e.nodeClaim, e.phase]),
      [["nc-5", "Disrupted"]],
    );
    assert.deepEqual(
      rows.disruptions.map((d) => [d.nodeClaim, d.reason]),
      [["nc-5", "Empty"]],
    );
  });

  it("pages through the store's order, also past instants with more rows than a page", async () => {
    // at: 1 1 2 5×9 7 8 9 — at 5 alone fills more than a page of 4.
    const ats = [1, 1, 2, 5, 5, 5, 5, 5, 5, 5, 5, 5, 7, 8, 9];
    const rows = ats.map((at, i) => ({ at, id: String(i) }));
    const fetch = (from: number, to: number, limit: number) =>
      Promise.resolve(rows.filter((r) => r.at >= from && r.at < to).slice(0, limit));
    for (const page of [1, 2, 3, 4, 5000]) {
      assert.deepEqual(await readRange(fetch, 0, 100, (r) => r.id, page), rows, `page of ${page}`);
      assert.deepEqual(await readRange(fetch, 2, 8, (r) => r.id, page), rows.slice(2, 13), `page of ${page}`);
    }
  });
});
