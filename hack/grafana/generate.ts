// `npm run grafana:generate`: writes Wave's Grafana dashboard (src/metrics/grafana.ts) to
// deploy/grafana/wave.json and to the chart's copy (Helm reads files only inside the chart).
// Both are checked in; src/metrics/grafana.test.ts fails when either differs from this output.
import { writeFileSync } from "node:fs";
import { DASHBOARD_FILES, dashboardJson } from "../../src/metrics/grafana.ts";

const json = dashboardJson();
for (const file of DASHBOARD_FILES) {
  writeFileSync(new URL(`../../${file}`, import.meta.url), json);
  process.stdout.write(`wrote ${file}\n`);
}
