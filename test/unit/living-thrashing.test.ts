// Issue #27's must-show for thrashing: the embedded cluster (six pools, only `batch` misconfigured:
// consolidateAfter 0s under a job that stops every 2 minutes) over 2 simulated hours, at three
// times of day (night low, midday peak, the evening scale-down). `wave start` on the simulator
// generates the history as it does for `npm start`; the detector then reads core's stored
// history at every minute of the last hour: `batch` is flagged (warning or critical) at each one
// from its first half hour on, the other five pools — spot interruptions, a drift roll, cron
// bursts, GPU scoring runs, warmup, the day curve — never are. Their wave_nodepool_thrashing series
// (the gauge's own definition, isFlagged) go through Prometheus's rule tests: WaveNodePoolThrashing
// fires for batch only. The API at the end (the running instance's own reports) agrees.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { startWave } from "../../src/cli/start.ts";
import type { ThrashingDto } from "../../src/dashboard/dto.ts";
import { detectThrashingAll, isFlagged, type Severity } from "../../src/dashboard/thrashing/detect.ts";
import { pinnedClock } from "../../src/sim/clock.ts";
import { LIVING_POOLS } from "../../src/sim/living.ts";
import { createLogger } from "../../src/shared/log.ts";
import { simulatedConfig } from "../support/wave.ts";
import { alertRulesYaml, helmMissing, RUNBOOKS } from "../support/alert-rules.ts";

const MIN = 60_000;
const HOUR = 60 * MIN;
const CLUSTER = "living";
const root = new URL("../../", import.meta.url).pathname;
const promtool = process.env["PROMTOOL"] ?? join(root, ".rig/bin/promtool");
const POOLS = LIVING_POOLS.map((p) => p.metadata.name ?? "");

interface Run {
  at: string;
  /** Per pool, the severity at each minute of the last hour (oldest first). */
  severities: Map<string, Severity[]>;
  scores: Map<string, number[]>;
  api: ThrashingDto[];
}

const tmps: string[] = [];
after(() => {
  for (const t of tmps) rmSync(t, { recursive: true, force: true });
});

/** `wave start` on the simulator ending at `hhmm` UTC with 2 h of history; the last hour, minute by minute. */
async function run(hhmm: string): Promise<Run> {
  const [h, m] = hhmm.split(":").map(Number) as [number, number];
  const clock = pinnedClock(Date.UTC(2026, 11, 3, h, m));
  const tmp = mkdtempSync(join(tmpdir(), "wave-living-thrash-"));
  tmps.push(tmp);
  const w = await startWave(
    simulatedConfig(tmp, CLUSTER),
    {},
    {
      clock,
      log: createLogger({ level: "error", base: { app: "living-thrash" } }),
      simulatedHistoryMs: 2 * HOUR,
    },
  );
  try {
    await w.caughtUp;
    // Core trails the cluster by the deltas still in flight: let them land.
    await new Promise((r) => setTimeout(r, 3000));
    const now = clock.now();
    // All of the cluster's history (it starts 2 h ago): the lives give each pool's size too.
    const q = { clusterId: CLUSTER, from: now - 3 * HOUR, to: now + 1, limit: 1_000_000 };
    const [events, disruptions, warmup] = await Promise.all([
      w.store.lifecycle(q),
      w.store.disruptions(q),
      w.store.warmupEvents(q),
    ]);
    const warmNodes = new Set(
      warmup.filter((e) => e.type === "miss" && e.reason === "ttl").map((e) => e.node ?? ""),
    );
    const pools = (await w.kube.list("NodePool")).items;
    const severities = new Map<string, Severity[]>(POOLS.map((p) => [p, []]));
    const scores = new Map<string, number[]>(POOLS.map((p) => [p, []]));
    for (let t = now - HOUR; t <= now; t += MIN) {
      const reports = detectThrashingAll({
        pools,
        events: events.filter((e) => e.at <= t),
        disruptions: disruptions.filter((d) => d.at <= t),
        warmNodes,
        now: t,
      });
      for (const r of reports) {
        severities.get(r.nodePool)?.push(r.severity);
        scores.get(r.nodePool)?.push(r.score);
      }
    }
    const res = await fetch(new URL(`api/v1/clusters/${CLUSTER}/thrashing`, w.url), {
      headers: { authorization: `Bearer ${w.tokens.viewer}` },
    });
    assert.equal(res.status, 200);
    return { at: hhmm, severities, scores, api: (await res.json()) as ThrashingDto[] };
  } finally {
    await w.stop();
  }
}

const runs: Run[] = [];

describe("thrashing on the embedded cluster, 2 simulated hours", { timeout: 300_000 }, () => {
  for (const at of ["03:00", "12:00", "20:00"]) {
    it(`at ${at} UTC: batch flagged through the last half hour, the other five pools never`, async () => {
      const r = await run(at);
      runs.push(r);
      const seen = [...r.scores].map(([p, s]) => `${p}: ${s.join(" ")}`).join("\n");
      const batch = r.severities.get("batch") ?? [];
      assert.equal(batch.length, 61, seen);
      assert.ok(batch.slice(30).every(isFlagged), `batch flagged at every minute of the last 30:\n${seen}`);
      for (const p of POOLS.filter((x) => x !== "batch"))
        assert.ok(!(r.severities.get(p) ?? []).some(isFlagged), `${p} never flagged:\n${seen}`);
      // The running instance's own reports (the route, with core's node counts) agree at the end.
      const flaggedNow = r.api.filter((t) => isFlagged(t.severity)).map((t) => t.nodePool);
      assert.deepEqual(
        flaggedNow,
        ["batch"],
        JSON.stringify(r.api.map((t) => [t.nodePool, t.severity, t.score])),
      );
    });
  }

  it(
    "WaveNodePoolThrashing fires for batch only on those figures (promtool)",
    {
      skip: existsSync(promtool)
        ? helmMissing()
        : `promtool not built at ${promtool}: run npm run prometheus:build`,
    },
    () => {
      assert.equal(runs.length, 3, "the three runs above");
      const dir = mkdtempSync(join(tmpdir(), "wave-living-promtool-"));
      tmps.push(dir);
      const tests = runs.map((r) => ({
        name: `embedded cluster at ${r.at}: the last hour's wave_nodepool_thrashing`,
        interval: "1m",
        input_series: POOLS.map((p) => ({
          series: `wave_nodepool_thrashing{cluster="${CLUSTER}",nodepool="${p}"}`,
          values: (r.severities.get(p) ?? []).map((s) => (isFlagged(s) ? "1" : "0")).join(" "),
        })),
        alert_rule_test: [
          {
            eval_time: "60m",
            alertname: "WaveNodePoolThrashing",
            exp_alerts: [
              {
                exp_labels: { severity: "warning", cluster: CLUSTER, nodepool: "batch" },
                exp_annotations: {
                  summary: `NodePool batch in cluster ${CLUSTER} is thrashing`,
                  description:
                    "Karpenter keeps creating and removing nodes of this pool; each cycle re-pulls images and evicts pods.",
                  runbook_url: `${RUNBOOKS}#wavenodepoolthrashing`,
                },
              },
            ],
          },
        ],
      }));
      // The rules as the chart renders them (thresholds and runbook URLs come from its values).
      writeFileSync(join(dir, "alerts.yaml"), alertRulesYaml());
      const file = join(dir, "living.test.yaml");
      writeFileSync(
        file,
        stringify({
          rule_files: ["alerts.yaml"],
          evaluation_interval: "1m",
          tests,
        }),
      );
      const out = spawnSync(promtool, ["test", "rules", file], { encoding: "utf8" });
      assert.equal(out.status, 0, out.stdout + out.stderr);
    },
  );
});
