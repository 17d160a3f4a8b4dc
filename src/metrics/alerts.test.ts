// Wave's alert rules on Prometheus's own tool, as the chart ships them: the PrometheusRule that
// deploy/helm/wave renders from files/alerts.yaml and its `alerts` values goes through
// `promtool check rules` and `promtool test rules` with a unit test of every alert firing and not
// firing (test/prometheus/alerts.test.yaml). promtool comes from hack/prometheus/build.sh
// (`npm run prometheus:build`), helm from `npm run helm:build`; .ci/run builds both.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import {
  helmMissing,
  renderAlertRules as renderRules,
  RUNBOOKS,
  type RuleFile,
} from "../../test/support/alert-rules.ts";

const root = new URL("../../", import.meta.url).pathname;
const promtool = process.env["PROMTOOL"] ?? join(root, ".rig/bin/promtool");
const tests = join(root, "test/prometheus/alerts.test.yaml");
const skip = !existsSync(promtool)
  ? `promtool not built at ${promtool}: run npm run prometheus:build`
  : helmMissing();

interface TestFile {
  tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
}

/** Runs `promtool test rules` of the test file against these rules, in a temporary directory. */
function promtoolTest(rules: RuleFile | string): { status: number | null; out: string } {
  const dir = mkdtempSync(join(tmpdir(), "wave-alerts-"));
  try {
    writeFileSync(join(dir, "rendered-alerts.yaml"), typeof rules === "string" ? rules : stringify(rules));
    writeFileSync(join(dir, "alerts.test.yaml"), readFileSync(tests, "utf8"));
    const r = spawnSync(promtool, ["test", "rules", join(dir, "alerts.test.yaml")], { encoding: "utf8" });
    return { status: r.status, out: r.stdout + r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("alert rules (promtool, as the chart renders them)", { skip }, () => {
  const rules = skip ? { groups: [] } : renderRules();
  const alerts = rules.groups.flatMap((g) => g.rules);

  it("promtool check rules accepts the rendered rules", () => {
    const dir = mkdtempSync(join(tmpdir(), "wave-alerts-"));
    try {
      writeFileSync(join(dir, "rules.yaml"), stringify(rules));
      const out = execFileSync(promtool, ["check", "rules", join(dir, "rules.yaml")], { encoding: "utf8" });
      assert.match(out, /SUCCESS: 10 rules found/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("promtool test rules passes, with every alert tested firing and not firing and an absolute runbook", () => {
    const r = promtoolTest(rules);
    assert.equal(r.status, 0, r.out);
    const cases = (parse(readFileSync(tests, "utf8")) as TestFile).tests.flatMap((t) => t.alert_rule_test);
    const doc = readFileSync(join(root, "docs/metrics.md"), "utf8");
    for (const a of alerts) {
      const mine = cases.filter((c) => c.alertname === a.alert);
      assert.ok(
        mine.some((c) => c.exp_alerts.length > 0),
        `${a.alert} has a firing case`,
      );
      assert.ok(
        mine.some((c) => c.exp_alerts.length === 0),
        `${a.alert} has a not-firing case`,
      );
      assert.equal(a.annotations?.["runbook_url"], `${RUNBOOKS}#${a.alert.toLowerCase()}`);
      assert.ok(doc.includes(`### ${a.alert}`), `docs/metrics.md has a runbook section for ${a.alert}`);
    }
    assert.ok(alerts.some((a) => a.alert === "WaveTargetDown" && /^up\{job=~".+"\} == 0$/.test(a.expr)));
    assert.ok(alerts.some((a) => a.alert === "WaveTargetMissing" && a.expr.startsWith("absent(up{job=")));
  });

  it("each alert can be disabled, and its for, severity and threshold set from values", () => {
    const tuned = renderRules([
      "alerts.rules.WaveTargetDown.enabled=false",
      "alerts.rules.WavePricingStale.threshold=7200",
      "alerts.rules.WavePricingStale.for=1h",
      "alerts.rules.WaveWebhookFallbacks.threshold=5",
      "alerts.rules.WaveAgentDisconnected.severity=page",
      "webhook.enabled=false",
    ]);
    const by = new Map(tuned.groups.flatMap((g) => g.rules).map((r) => [r.alert, r]));
    assert.equal(by.size, 9);
    assert.ok(!by.has("WaveTargetDown"));
    const stale = by.get("WavePricingStale");
    assert.ok(stale);
    assert.match(stale.expr, /> 7200\n/);
    assert.equal(stale.for, "1h");
    assert.match(stale.annotations?.["description"] ?? "", /older than 7200 s/);
    assert.match(by.get("WaveWebhookFallbacks")?.expr ?? "", /> 5$/);
    assert.equal(by.get("WaveAgentDisconnected")?.labels?.["severity"], "page");
    // Without the webhook, no absent() of its job (it would fire forever).
    assert.equal(
      by.get("WaveTargetMissing")?.expr,
      'absent(up{job="wave-core"}) or absent(up{job="wave-agent-metrics"})',
    );
    const jobs = renderRules(["alerts.jobs.core=wave/core"]).groups.flatMap((g) => g.rules);
    assert.equal(
      jobs.find((r) => r.alert === "WaveTargetDown")?.expr,
      'up{job=~"wave/core|wave-agent-metrics|wave-webhook"} == 0',
    );
  });

  it("the unit tests catch a broken rule (a threshold that can never fire)", () => {
    const broken = stringify(rules).replace(
      "max by (cluster, nodepool) (wave_nodepool_thrashing) == 1",
      "max by (cluster, nodepool) (wave_nodepool_thrashing) == 2",
    );
    assert.notEqual(broken, stringify(rules));
    const r = promtoolTest(broken);
    assert.notEqual(r.status, 0, "promtool must fail on the broken rule");
    assert.match(r.out, /WaveNodePoolThrashing/);
  });
});
