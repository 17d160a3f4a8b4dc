// Wave's parsers on objects recorded from each rig pair (test/fixtures/karpenter/recorded/<version>/,
// written by hack/rig/record-fixtures.ts): one Karpenter release per folder, so a shape a release
// changes (condition sets, reasons, labels, Events) is checked against what that release writes.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { isKarpenterEvent, trimNodeClaim, trimNodePool } from "../agent/trim.ts";
import { canonicalReason } from "../dashboard/history.ts";
import type { Event, Node } from "../objects/kube.ts";
import type { NodeClaim, NodePool } from "../objects/karpenter.ts";
import { capacityTypeOf, instanceTypeOf, nodePoolOf, zoneOf } from "./labels.ts";
import { diffNodeClaim, nodeClaimState, type LifecycleTransition } from "./lifecycle.ts";
import { isInitialized, isKwok, isReady, isRegistered } from "./node.ts";
import { nodePoolRequirements, requirementsAllow } from "./requirements.ts";

const root = new URL("../../test/fixtures/karpenter/recorded/", import.meta.url);
const versions = readdirSync(root).filter((d) => /^v\d+\.\d+\.\d+$/.test(d));
const load = (v: string, f: string): unknown => JSON.parse(readFileSync(new URL(`${v}/${f}`, root), "utf8"));

it("fixtures exist for every rig pair recorded so far (at least one)", () => {
  assert.ok(versions.length >= 1, `no recorded versions under ${root.pathname}`);
});

for (const v of versions) {
  describe(`Karpenter ${v} (recorded on the rig)`, () => {
    const claims = load(v, "nodeclaim-versions.json") as NodeClaim[];
    const node = load(v, "node.json") as Node;
    const pool = load(v, "nodepool.json") as NodePool;
    const events = load(v, "events.json") as Event[];

    it("NodeClaim: every version's conditions survive the agent's trim, unknown types included", () => {
      for (const c of claims) {
        const types = (c.status?.conditions ?? []).map((x) => x.type).sort();
        const kept = (trimNodeClaim(c).status?.conditions ?? []).map((x) => x.type).sort();
        assert.deepEqual(kept, types);
      }
    });

    it("NodeClaim: its recorded phases only move forward and reach Initialized → Disrupting → Terminating", () => {
      // A release may write several conditions in one update (v1.6.4 sets Registered and
      // Initialized together), so a phase can be skipped between two observed versions.
      const order = ["Pending", "Launched", "Registered", "Initialized", "Disrupting", "Terminating"];
      const phases: string[] = [];
      for (const c of claims) {
        const p = nodeClaimState(c).phase;
        if (phases.at(-1) !== p) phases.push(p);
      }
      const idx = phases.map((p) => order.indexOf(p));
      assert.deepEqual(
        idx,
        [...idx].sort((x, y) => x - y),
        `phases seen: ${phases.join(" → ")}`,
      );
      for (const p of ["Initialized", "Disrupting", "Terminating"])
        assert.ok(phases.includes(p), phases.join(" → "));
      const last = claims.at(-1);
      assert.ok(last);
      assert.equal(nodeClaimState(last).reason, "Empty");
    });

    it("NodeClaim: diffing the versions in order gives each lifecycle step once, with the reason", () => {
      const steps: LifecycleTransition[] = [];
      let prev: NodeClaim | undefined;
      for (const c of claims) {
        steps.push(...diffNodeClaim(prev, c, { observedAt: "2026-12-03T00:00:00Z" }));
        prev = c;
      }
      assert.ok(prev);
      steps.push(...diffNodeClaim(prev, prev, { observedAt: "2026-12-03T00:00:00Z", deleted: true }));
      assert.deepEqual(
        steps.map((s) => s.type),
        ["Created", "Launched", "Registered", "Initialized", "Disrupted", "Terminating", "Terminated"],
      );
      const disrupted = steps.find((s) => s.type === "Disrupted");
      assert.equal(canonicalReason(disrupted?.reason), "Empty");
      for (const s of steps.slice(1, 4)) assert.ok(!Number.isNaN(Date.parse(s.at)), `${s.type} at ${s.at}`);
    });

    it("Node: KWOK provider labels and lifecycle markers parse", () => {
      assert.equal(isKwok(node), true);
      assert.equal(isReady(node), true);
      assert.equal(isRegistered(node), true);
      assert.equal(isInitialized(node), true);
      assert.equal(nodePoolOf(node), pool.metadata.name);
      assert.match(capacityTypeOf(node) ?? "", /^(spot|on-demand)$/);
      assert.match(instanceTypeOf(node) ?? "", /^[csm]-\d+x-(amd64|arm64)-(linux|windows)$/);
      assert.match(zoneOf(node) ?? "", /^test-zone-[a-d]$/);
    });

    it("NodePool: requirements, disruption settings and status conditions parse and survive the trim", () => {
      const reqs = nodePoolRequirements(pool);
      assert.equal(requirementsAllow(reqs, "karpenter.sh/capacity-type", "spot"), true);
      assert.equal(requirementsAllow(reqs, "kubernetes.io/os", "windows"), false);
      assert.equal(pool.spec.disruption?.consolidationPolicy, "WhenEmptyOrUnderutilized");
      const types = (pool.status?.conditions ?? []).map((c) => c.type);
      assert.ok(types.includes("Ready"), `conditions: ${types.join(", ")}`);
      assert.deepEqual(
        (trimNodePool(pool).status?.conditions ?? []).map((c) => c.type).sort(),
        [...types].sort(),
      );
    });

    it("Events: every one Karpenter wrote is forwarded, reasons as written", () => {
      assert.ok(events.length > 0);
      for (const e of events)
        assert.equal(isKarpenterEvent(e), true, `${e.reason ?? ""} on ${e.involvedObject.kind ?? ""}`);
      const reasons = new Set(events.map((e) => e.reason));
      assert.ok(reasons.has("DisruptionTerminating"), [...reasons].join(", "));
      assert.ok(reasons.has("Nominated"), [...reasons].join(", "));
    });
  });
}
