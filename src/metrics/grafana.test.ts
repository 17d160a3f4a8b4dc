import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { DASHBOARD_FILES, dashboardJson, resolvedQueries, ROWS, waveDashboard } from "./grafana.ts";

describe("Grafana dashboard as code", () => {
  it("the checked-in JSON equals the generator's output (run npm run grafana:generate)", () => {
    const want = dashboardJson();
    for (const file of DASHBOARD_FILES) {
      const have = readFileSync(new URL(`../../${file}`, import.meta.url), "utf8");
      assert.equal(have, want, `${file} is stale: run npm run grafana:generate`);
    }
  });

  it("has the cluster and nodepool variables and a Prometheus query behind every panel", () => {
    const d = waveDashboard();
    const names = (d.templating.list ?? []).map((v) => v.name);
    assert.deepEqual(names, ["datasource", "cluster", "nodepool"]);
    const panels = (d.panels ?? []).filter((p) => p.type !== "row");
    assert.equal(panels.length, ROWS.flatMap((r) => r.panels).length);
    const ids = new Set((d.panels ?? []).map((p) => p.id));
    assert.equal(ids.size, (d.panels ?? []).length, "panel ids are unique");
    for (const p of panels) {
      const targets = (p as { targets?: { expr?: string }[] }).targets ?? [];
      assert.ok(targets.length > 0 && targets.every((t) => t.expr), `${p.title} has PromQL targets`);
    }
  });

  it("filters every Wave series by cluster, and resolves Grafana's variables for evaluation", () => {
    for (const r of ROWS)
      for (const p of r.panels)
        for (const q of p.queries)
          // The webhook's own series (its /metrics, one webhook per cluster) carry no cluster label.
          if (/wave_(?!spot_fallbacks_total|spot_late_answers_total)/.test(q.expr))
            assert.match(q.expr, /cluster=~"\$cluster"/, p.title);
    const resolved = resolvedQueries({ cluster: "c1", rateInterval: "1m", range: "1h" });
    for (const { queries } of resolved) for (const q of queries) assert.doesNotMatch(q, /\$/);
  });
});
