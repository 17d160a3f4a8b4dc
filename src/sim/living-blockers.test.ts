// Issue 34: the embedded cluster shows each reason Karpenter gives for not disrupting a node or
// not launching one, at least once a simulated day — and the simulator's Karpenter honours them.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { Event } from "../objects/kube.ts";
import { CompositePriceProvider } from "../pricing/composite.ts";
import { StaticPriceProvider, loadStaticPriceTable } from "../pricing/static.ts";
import { FakeClock } from "../shared/clock.ts";
import { seeded } from "../shared/random.ts";
import { buildCatalog, buildOfferings } from "./catalog.ts";
import { seedLivingCluster } from "./living.ts";
import { Simulator } from "./simulator.ts";
import { parseDisruptionMessage, parsePodEvent } from "../karpenter/events/parse.ts";

const MIN = 60_000;
const HOUR = 60 * MIN;
const prices = new CompositePriceProvider({ static: new StaticPriceProvider(loadStaticPriceTable()) });

describe("the living cluster's day shows every blocker (issue 34)", () => {
  it("a PDB allowing 0, a do-not-disrupt pod, a scheduled budget, WhenEmpty, a pod no pool takes — in Karpenter's words, and honoured", async () => {
    const day = Date.UTC(2026, 11, 3);
    const clock = new FakeClock(day);
    const kube = new MemoryKube({ clock, random: seeded(3), historyLimit: 2000, eventTtlMs: HOUR });
    const sim = new Simulator({
      kube,
      clock,
      offerings: buildOfferings(buildCatalog(), prices),
      random: seeded(7),
      spotInterruptionRate: 0.15,
    });
    const drive = await seedLivingCluster(kube);
    const events: Event[] = [];
    const seen = new Set<string>();
    const collect = (): void => {
      for (const e of kube.peek("Event")) {
        const k = `${e.metadata.namespace ?? ""}/${e.metadata.name ?? ""}/${String(e.count ?? 1)}`;
        if (seen.has(k)) continue;
        seen.add(k);
        events.push(e);
      }
    };
    // Which nodes held a ledger or migration pod when (a blocked node must never be disrupted).
    const pinnedNodes = new Set<string>();
    for (let t = 0; t < 24 * HOUR; t += 30_000) {
      await drive(clock.now());
      await sim.tick(30_000);
      for (const p of kube.peek("Pod"))
        if (
          p.spec.nodeName &&
          /^(ledger|migrate)-/.test(p.metadata.name ?? "") &&
          p.status?.phase === "Running"
        )
          pinnedNodes.add(p.spec.nodeName);
      if (t % (10 * MIN) === 0) collect();
      await clock.advance(30_000);
    }
    collect();
    const about = (reason: string, re: RegExp): Event[] =>
      events.filter((e) => e.reason === reason && re.test(e.message ?? ""));

    const pdb = about(
      "DisruptionBlocked",
      /^Pdb prevents pod evictions \(PodDisruptionBudget=\[payments\/ledger\]\)$/,
    );
    assert.ok(
      pdb.some((e) => e.involvedObject.kind === "Node") &&
        pdb.some((e) => e.involvedObject.kind === "NodeClaim"),
    );
    const dnd = about(
      "DisruptionBlocked",
      /^Pod has "karpenter\.sh\/do-not-disrupt" annotation \(Pod=data\/migrate-\S+\)$/,
    );
    assert.ok(dnd.length > 0, "do-not-disrupt pod");
    const budget = about(
      "DisruptionBlocked",
      /^No allowed disruptions for disruption reason \w+ due to blocking budget$/,
    );
    assert.ok(
      budget.length > 0 &&
        budget.every((e) => e.involvedObject.kind === "NodePool" && e.involvedObject.name === "gpu"),
    );
    for (const e of budget) {
      const h = new Date(e.lastTimestamp ?? "").getUTCHours();
      assert.ok(
        h >= 9 && h < 11,
        `budget blocks only in its 09:00–11:00 window, got ${e.lastTimestamp ?? ""}`,
      );
    }
    const whenEmpty = about(
      "Unconsolidatable",
      /^NodePool "gpu" has consolidation policy WhenEmpty, but node is not empty$/,
    );
    assert.ok(whenEmpty.length > 0, "WhenEmpty with pods on the node");
    const pending = about("FailedScheduling", /^Failed to schedule pod, /).filter((e) =>
      (e.involvedObject.name ?? "").startsWith("indexer-"),
    );
    assert.ok(pending.length > 0, "the indexer no pool can take");
    const msg = pending[0]?.message ?? "";
    assert.match(msg, /did not tolerate taint \(taint=wave\.sh\/arch=arm64:NoSchedule\)/);
    assert.match(
      msg,
      /incompatible requirements, key kubernetes\.io\/arch, kubernetes\.io\/arch In \[arm64\] not in kubernetes\.io\/arch In \[amd64\]/,
    );
    assert.equal(msg.split("; ").length, 6, "one part per NodePool");

    // Read by the explain parser as it reads the real Karpenter's (src/karpenter/events/fixtures).
    assert.equal(parseDisruptionMessage(pdb[0]?.message ?? "").reason, "pdb");
    assert.equal(parseDisruptionMessage(dnd[0]?.message ?? "").reason, "do-not-disrupt");
    assert.deepEqual(
      [parseDisruptionMessage(budget[0]?.message ?? "")].map((p) => [p.reason, p.disruptionReason]),
      [["budget", "Empty"]],
    );
    assert.deepEqual(
      [parseDisruptionMessage(whenEmpty[0]?.message ?? "")].map((p) => [p.reason, p.nodePool]),
      [["when-empty", "gpu"]],
    );
    const reasons = parsePodEvent(pending[0] ?? { reason: "", message: "" }).reasons;
    assert.deepEqual(reasons.map((r) => r.kind).sort(), [
      "requirement",
      "requirement",
      "taint",
      "taint",
      "taint",
      "taint",
    ]);
    assert.ok(reasons.some((r) => r.kind === "requirement" && r.key === "kubernetes.io/arch"));

    // Honoured: nodes holding the ledger (PDB 0) or a migration (do-not-disrupt) were never
    // consolidated, and no GPU node was disrupted inside the budget's window.
    const terminating = events.filter(
      (e) => e.reason === "DisruptionTerminating" && e.involvedObject.kind === "Node",
    );
    const consolidated = terminating.filter((e) => /Empty|Underutilized/.test(e.message ?? ""));
    assert.ok(consolidated.length > 10, "the day still consolidates elsewhere");
    assert.ok(pinnedNodes.size > 0);
    const evictedPinned = events.filter(
      (e) => e.reason === "Evicted" && /^(ledger|migrate)-/.test(e.involvedObject.name ?? ""),
    );
    assert.deepEqual(
      evictedPinned.map((e) => `${e.involvedObject.name ?? ""} ${e.lastTimestamp ?? ""}`),
      [],
      "no ledger or migration pod evicted by consolidation",
    );
    const gpuNodes = new Set(
      events
        .filter((e) => e.involvedObject.kind === "Node" && e.reason === "Unconsolidatable")
        .map((e) => e.involvedObject.name),
    );
    for (const e of consolidated.filter((x) => gpuNodes.has(x.involvedObject.name))) {
      const at = Date.parse(e.lastTimestamp ?? "");
      assert.ok(
        at < day + 9 * HOUR || at >= day + 11 * HOUR,
        `GPU node disrupted in the freeze at ${e.lastTimestamp ?? ""}`,
      );
    }
  });
});
