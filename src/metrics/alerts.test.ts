// Wave's alert rules on Prometheus's own tool: `promtool check rules` and `promtool test rules`
// with a unit test of every alert firing and not firing (test/prometheus/alerts.test.yaml).
// promtool comes from hack/prometheus/build.sh (`npm run prometheus:build`; .ci/run builds it).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";

const root = new URL("../../", import.meta.url).pathname;
const promtool = process.env["PROMTOOL"] ?? join(root, ".rig/bin/promtool");
const rules = join(root, "deploy/helm/wave/files/alerts.yaml");
const tests = join(root, "test/prometheus/alerts.test.yaml");
const skip = existsSync(promtool) ? false : `promtool not built at ${promtool}: run npm run prometheus:build`;

interface RuleFile {
  groups: { rules: { alert: string; annotations?: Record<string, string> }[] }[];
}
interface TestFile {
  tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
}

describe("alert rules (promtool)", { skip }, () => {
  it("promtool check rules accepts the rule file", () => {
    const out = execFileSync(promtool, ["check", "rules", rules], { encoding: "utf8" });
    assert.match(out, /SUCCESS: 7 rules found/);
  });

  it("promtool test rules passes, with every alert tested firing and not firing", () => {
    const r = spawnSync(promtool, ["test", "rules", tests], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const alerts = (parse(readFileSync(rules, "utf8")) as RuleFile).groups.flatMap((g) => g.rules);
    const cases = (parse(readFileSync(tests, "utf8")) as TestFile).tests.flatMap((t) => t.alert_rule_test);
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
      assert.match(
        a.annotations?.["runbook_url"] ?? "",
        /^docs\/metrics\.md#/,
        `${a.alert} links its runbook`,
      );
      const doc = readFileSync(join(root, "docs/metrics.md"), "utf8");
      assert.ok(doc.includes(`### ${a.alert}`), `docs/metrics.md has a runbook section for ${a.alert}`);
    }
  });

  it("the unit tests catch a broken rule (a threshold that can never fire)", () => {
    const dir = mkdtempSync(join(tmpdir(), "wave-alerts-"));
    try {
      const broken = readFileSync(rules, "utf8").replace(
        "max by (cluster, nodepool) (wave_nodepool_thrashing) == 1",
        "max by (cluster, nodepool) (wave_nodepool_thrashing) == 2",
      );
      writeFileSync(join(dir, "alerts.yaml"), broken);
      const t = readFileSync(tests, "utf8").replace(
        "../../deploy/helm/wave/files/alerts.yaml",
        join(dir, "alerts.yaml"),
      );
      writeFileSync(join(dir, "tests.yaml"), t);
      const r = spawnSync(promtool, ["test", "rules", join(dir, "tests.yaml")], { encoding: "utf8" });
      assert.notEqual(r.status, 0, "promtool must fail on the broken rule");
      assert.match(r.stdout + r.stderr, /WaveNodePoolThrashing/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
