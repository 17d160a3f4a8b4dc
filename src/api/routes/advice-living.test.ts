// Issue 43, on ONE running instance (`wave start` on the embedded living cluster, nothing built by
// hand): the Thrashing page's fix for batch is applied through the API, then every advice path is
// read as the console reads it — Thrashing fixes, the Consolidation page, the Warmup page, and each
// node's drawer — and no NodePool field gets two different values. Before issue 43 the
// Consolidation page offered batch `consolidateAfter: "1m"` right after the fix raised it to 15m,
// and the same "1m" to pools whose nodes would save $0.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startWave, type Started } from "../../cli/start.ts";
import type { ConsolidationViewDto, ThrashingFixesDto } from "../../dashboard/dto.ts";
import { nodePoolPatchesIn, patchConflicts, poolFieldsOf } from "../../dashboard/pool-advice.ts";
import { realClock, type Clock } from "../../shared/clock.ts";
import { createLogger } from "../../shared/log.ts";
import { simulatedConfig } from "../../../test/support/wave.ts";

const MIN = 60_000;
const CLUSTER = "living-advice";

/** Real time pinned to start at `startAt` (the scenario's demand follows the time of day). */
class PinnedClock implements Clock {
  readonly #offset: number;
  constructor(startAt: number) {
    this.#offset = startAt - Date.now();
  }
  now(): number {
    return Date.now() + this.#offset;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return realClock.sleep(ms, signal);
  }
}

const clock = new PinnedClock(Date.UTC(2026, 11, 3, 12, 0));
let tmp: string;
let w: Started;

async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const res = await fetch(new URL(`api/v1/clusters/${CLUSTER}/${path}`, w.url), {
    method: init.method ?? "GET",
    headers: {
      authorization: `Bearer ${init.method === "POST" ? w.tokens.admin : w.tokens.viewer}`,
      ...(init.body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  assert.equal(res.status, 200, `${init.method ?? "GET"} ${path}: ${res.status} ${await res.clone().text()}`);
  return (await res.json()) as T;
}

/** Every NodePool patch the console's advice paths offer now, by source. */
async function advice() {
  const now = clock.now();
  const [thrashing, consolidation, warmup] = await Promise.all([
    api<ThrashingFixesDto[]>("thrashing/fixes"),
    api<ConsolidationViewDto>("consolidation"),
    api<unknown>(`warmup?from=${now - 60 * MIN}&to=${now}`),
  ]);
  // The drawer of every node that has a NodePool blocker: the same fix as the page.
  const drawers = await Promise.all(
    consolidation.items
      .filter((n) => n.blockers.some((b) => b.object.kind === "NodePool"))
      .map((n) => api<unknown>(`nodes/${encodeURIComponent(n.node)}`)),
  );
  return {
    consolidation,
    patches: [
      ...nodePoolPatchesIn("thrashing", thrashing),
      ...nodePoolPatchesIn("consolidation", consolidation),
      ...nodePoolPatchesIn("warmup", warmup),
      ...nodePoolPatchesIn("node drawer", drawers),
    ],
  };
}

/** Core trails the cluster by the deltas still in flight: give them (real) time to land. */
const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 3000));

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "wave-living-advice-"));
  w = await startWave(
    simulatedConfig(tmp, CLUSTER),
    {},
    {
      clock,
      log: createLogger({ level: "error", base: { app: "living-advice-test" } }),
      simulatedHistoryMs: 30 * MIN,
    },
  );
  await w.caughtUp;
  await settle();
});

after(async () => {
  await w.stop();
  rmSync(tmp, { recursive: true, force: true });
});

describe("one advisor per NodePool field, on the running embedded cluster", { timeout: 300_000 }, () => {
  it("after the thrashing fix, no advice path proposes a value another contradicts", async (t) => {
    const fixes = await api<ThrashingFixesDto[]>("thrashing/fixes");
    const fix = fixes
      .find((f) => f.nodePool === "batch")
      ?.fixes.find((f) => f.title.startsWith("Raise consolidateAfter"));
    assert.ok(fix, JSON.stringify(fixes));
    const applied = await api<{ patch: unknown }>("thrashing/apply", {
      method: "POST",
      body: { nodePool: "batch", title: fix.title },
    });
    const raised = poolFieldsOf(applied.patch).consolidateAfter;
    assert.ok(typeof raised === "string" && raised !== "1m", String(raised));
    await settle();

    // Right after the fix (batch still shows its churn) and once more a little later.
    for (const at of ["right after the fix", "10 s later"]) {
      if (at !== "right after the fix") await new Promise((r) => setTimeout(r, 10_000));
      const { consolidation, patches } = await advice();
      t.diagnostic(
        `${at}: ${patches.length} NodePool patches (${[...new Set(patches.map((p) => `${p.source}/${p.pool}`))].join(", ")}); ` +
          `blocked ${consolidation.blockedNodes} nodes, $${consolidation.blockedCostPerHour.toFixed(3)}/h, waiting ${consolidation.waitingNodes}`,
      );
      assert.deepEqual(patchConflicts(patches), [], at);
      // batch: no path offers to lower consolidateAfter back.
      for (const p of patches.filter((x) => x.pool === "batch")) {
        const v = poolFieldsOf(p.patch).consolidateAfter;
        assert.ok(v === undefined || v === raised, `${p.source} offers batch consolidateAfter ${String(v)}`);
      }
      // No NodePool patch for a node that would save nothing or only waits.
      for (const n of consolidation.items)
        for (const b of n.blockers)
          if (b.object.kind === "NodePool" && b.fix?.patch)
            assert.ok(
              n.blocked,
              `${n.node} (${n.nodePool ?? ""}) saves $${n.savingsPerHour}: ${b.fix.title}`,
            );
      for (const n of consolidation.items.filter((x) => x.waiting))
        for (const b of n.blockers.filter((x) => x.waiting)) assert.equal(b.fix?.patch ?? null, null);
    }
  });
});
