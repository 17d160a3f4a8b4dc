// Wave's thrashing advice, applied through its API, ends the thrashing — on ONE running instance:
// `wave start` on the embedded living cluster (simulator → agent → gRPC → core → API, nothing
// built by hand). The misconfigured batch pool (consolidateAfter 0s under a job that stops every
// 2 minutes) thrashes; the console's fix "Raise consolidateAfter" is applied by an admin through
// POST …/thrashing/apply on that same instance; 40 minutes of the cluster's time later the
// detector no longer flags the pool and Karpenter no longer churns its nodes. The cluster's
// history is fast-forwarded (the lagging clock), and the 40 minutes after the fix run on a clock
// geared up to 30× real time — the whole instance on it, as `npm start` runs on the real one.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startWave, type Started } from "../../cli/start.ts";
import type {
  DisruptionDto,
  LifecycleEventDto,
  ThrashingDto,
  ThrashingFixesDto,
} from "../../dashboard/dto.ts";
import { GearClock } from "../../../test/support/gear-clock.ts";
import { createLogger } from "../../shared/log.ts";
import { simulatedConfig } from "../../../test/support/wave.ts";

const MIN = 60_000;
const CLUSTER = "living-fix";
/** The thrashing window (DEFAULT_THRASHING_OPTIONS.windowMs). */
const WINDOW = 30 * MIN;
/** The cluster's time after the fix: a few minutes for the last short-lived nodes to go, then a window. */
const AFTER_FIX = WINDOW + 10 * MIN;
const GEAR = 60;

const clock = new GearClock(Date.UTC(2026, 11, 3, 12, 0));
let tmp: string;
let w: Started;

async function api<T>(
  path: string,
  init: { method?: string; body?: unknown; admin?: boolean } = {},
): Promise<T> {
  const res = await fetch(new URL(`api/v1/clusters/${CLUSTER}/${path}`, w.url), {
    method: init.method ?? "GET",
    headers: {
      authorization: `Bearer ${init.admin === true ? w.tokens.admin : w.tokens.viewer}`,
      ...(init.body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  assert.equal(res.status, 200, `${init.method ?? "GET"} ${path}: ${res.status} ${await res.clone().text()}`);
  return (await res.json()) as T;
}

/** The batch pool over the last window: its thrashing report, launches and disruptions by reason. */
async function batchNow(): Promise<{
  report: ThrashingDto | undefined;
  launched: number;
  reasons: string[];
}> {
  const now = clock.now();
  const range = `from=${now - WINDOW}&to=${now + 1}&limit=1000`;
  const [thrashing, events, disruptions] = await Promise.all([
    api<ThrashingDto[]>("thrashing"),
    api<LifecycleEventDto[]>(`events?pool=batch&${range}`),
    api<DisruptionDto[]>(`disruptions?pool=batch&${range}`),
  ]);
  return {
    report: thrashing.find((t) => t.nodePool === "batch"),
    launched: events.filter((e) => e.phase === "Launched").length,
    reasons: disruptions.map((d) => d.reason),
  };
}

/** Core trails the cluster by the deltas still in flight: give them (real) time to land. */
const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 3000));

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), "wave-living-fix-"));
  w = await startWave(
    simulatedConfig(tmp, CLUSTER),
    {},
    {
      clock,
      log: createLogger({ level: "error", base: { app: "living-fix-test" } }),
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

describe("thrashing advice applied on the running embedded cluster", { timeout: 300_000 }, () => {
  it("the batch pool thrashes, Wave's fix goes in through the API, and the churn stops", async (t) => {
    const before = await batchNow();
    assert.ok(before.report?.flagged, `batch flagged: ${JSON.stringify(before.report)}`);
    assert.ok(before.launched >= 8, `batch churns: ${before.launched} nodes launched in 30 min`);

    const fixes = await api<ThrashingFixesDto[]>("thrashing/fixes");
    const batch = fixes.find((f) => f.nodePool === "batch");
    assert.ok(batch?.canApply, JSON.stringify(fixes));
    const fix = batch.fixes.find((f) => f.title.startsWith("Raise consolidateAfter"));
    assert.ok(fix, JSON.stringify(batch.fixes));
    const applied = await api<{ patch: { spec: { disruption: { consolidateAfter: string } } } }>(
      "thrashing/apply",
      { method: "POST", body: { nodePool: "batch", title: fix.title }, admin: true },
    );
    const want = applied.patch.spec.disruption.consolidateAfter;
    assert.equal((await w.kube.get("NodePool", "batch")).spec.disruption?.consolidateAfter, want);
    const fixedAt = clock.now();

    // The same instance runs on: 40 minutes of the cluster's time, geared up.
    clock.gear(GEAR);
    while (clock.now() < fixedAt + AFTER_FIX) await new Promise((r) => setTimeout(r, 100));
    clock.gear(1);
    await settle();

    const later = await batchNow();
    const story =
      `before the fix: ${before.report.severity} (${before.report.score}), ${before.launched} launched in 30 min; ` +
      `the fix: consolidateAfter ${want}; 30 min ending ${(clock.now() - fixedAt) / MIN} min after it: ` +
      `${later.report?.severity ?? "?"} (${later.report?.score ?? "?"}), ${later.launched} launched, ` +
      `disruptions [${later.reasons.join(", ")}]`;
    t.diagnostic(story);
    assert.equal(later.report?.severity, "none", story);
    // Spot interruptions still come (the scenario's, at random): the only removals left, each
    // replaced by one launch. Karpenter's own consolidation no longer churns the pool.
    const interrupted = later.reasons.filter((r) => r === "Interrupted").length;
    assert.equal(later.reasons.length, interrupted, `no consolidation of batch nodes: ${story}`);
    assert.ok(later.launched <= interrupted, `no launches but interruption replacements: ${story}`);
  });
});
