// Wave's alert rules as the chart ships them: the PrometheusRule deploy/helm/wave renders from
// files/alerts.yaml and its `alerts` values (thresholds, for, severity, runbook URLs), written as a
// Prometheus rule file for promtool. The rule file itself is not valid PromQL before rendering.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";

const root = new URL("../../", import.meta.url).pathname;
export const helmBinary = join(root, ".rig/bin/helm");
const chart = join(root, "deploy/helm/wave");

/** The base URL test/prometheus/alerts.test.yaml expects in every runbook_url. */
export const RUNBOOKS = "https://wave.example/docs/metrics.md";

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string | undefined>;
  annotations?: Record<string, string | undefined>;
}
export interface RuleFile {
  groups: { name: string; rules: AlertRule[] }[];
}

export const helmMissing = (): string | false =>
  existsSync(helmBinary) ? false : `helm not built at ${helmBinary}: run npm run helm:build`;

/** The rule groups of the chart's PrometheusRule (release "wave"), with these extra --set values. */
export function renderAlertRules(set: string[] = []): RuleFile {
  const out = execFileSync(
    helmBinary,
    [
      "template",
      "wave",
      chart,
      "--namespace",
      "wave",
      "--kube-version",
      "1.33.0",
      "--set",
      "checks.crds=false",
      "--set",
      "prometheusRule.enabled=true",
      "--set",
      `alerts.runbookBaseUrl=${RUNBOOKS}`,
      ...set.flatMap((s) => ["--set", s]),
      "--show-only",
      "templates/prometheusrule.yaml",
    ],
    { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
  );
  return (parse(out) as { spec: RuleFile }).spec;
}

/** The same as a rule file's text. */
export const alertRulesYaml = (set: string[] = []): string => stringify(renderAlertRules(set));
