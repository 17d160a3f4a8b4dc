import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { documentedPermissions, effectiveIn, minus, parseCanIList, ruleKeys } from "./helm-rbac.ts";

// Captured from the rig (kubectl v1.34) for the chart's agent ServiceAccount, trimmed.
const AGENT_TABLE = `Resources                                       Non-Resource URLs                      Resource Names   Verbs
selfsubjectreviews.authentication.k8s.io        []                                     []               [create]
leases.coordination.k8s.io                      []                                     []               [create]
events                                          []                                     []               [get list watch]
daemonsets.apps                                 []                                     []               [get list watch]
leases.coordination.k8s.io                      []                                     [wave-agent]     [get update]
                                                [/healthz]                             []               [get]
                                                [/api/*]                               []               [get]
`;

describe("RBAC.md permission sets", () => {
  it("expands rules into one key per group, resource, verb and name", () => {
    assert.deepEqual(
      ruleKeys("namespace", [
        { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "update"] },
        { apiGroups: [""], resources: ["pods"], verbs: ["get"], resourceNames: ["a", "b"] },
      ]),
      [
        "namespace|coordination.k8s.io|leases|get|-",
        "namespace|coordination.k8s.io|leases|update|-",
        "namespace||pods|get|a",
        "namespace||pods|get|b",
      ],
    );
  });

  it("reads every component's table from RBAC.md", () => {
    const md = readFileSync(new URL("../../deploy/helm/wave/RBAC.md", import.meta.url), "utf8");
    const docs = documentedPermissions(md);
    // core's table is empty (no rules): it has no entry.
    assert.deepEqual([...docs.keys()].sort(), ["agent", "cleanup", "webhook"]);
    const agent = docs.get("agent") ?? new Set();
    assert.ok(agent.has("cluster||nodes|watch|-"));
    assert.ok(agent.has("namespace|coordination.k8s.io|leases|update|wave-agent"));
    assert.ok(!agent.has("namespace|coordination.k8s.io|leases|update|-"));
  });

  it("splits documented permissions by where they apply", () => {
    const doc = new Set(["cluster||nodes|get|-", "namespace||pods|create|-"]);
    assert.deepEqual([...effectiveIn(doc, true)].sort(), ["|nodes|get|-", "|pods|create|-"]);
    assert.deepEqual([...effectiveIn(doc, false)], ["|nodes|get|-"]);
  });

  it("parses kubectl auth can-i --list, groups, names and non-resource URLs included", () => {
    assert.deepEqual([...parseCanIList(AGENT_TABLE)].sort(), [
      "apps|daemonsets|get|-",
      "apps|daemonsets|list|-",
      "apps|daemonsets|watch|-",
      "authentication.k8s.io|selfsubjectreviews|create|-",
      "coordination.k8s.io|leases|create|-",
      "coordination.k8s.io|leases|get|wave-agent",
      "coordination.k8s.io|leases|update|wave-agent",
      "url|/api/*|get",
      "url|/healthz|get",
      "|events|get|-",
      "|events|list|-",
      "|events|watch|-",
    ]);
  });

  it("refuses output that is not the can-i table", () => {
    assert.throws(() => parseCanIList("NAME   READY\nfoo    1/1\n"), /not a kubectl auth can-i --list table/);
    assert.throws(
      () => parseCanIList(AGENT_TABLE.replace("[get update]", "get update ")),
      /expected a \[list\] cell/,
    );
  });

  it("names the difference of two sets", () => {
    assert.deepEqual(minus(["b", "a", "c"], new Set(["c"])), ["a", "b"]);
  });
});
