import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { DisruptionRecord, LifecycleRecord, NodeCountPoint } from "../history.ts";
import { nodePool } from "../testkit.ts";
import { detectThrashing, detectThrashingAll, isFlagged } from "./detect.ts";

const MIN = 60_000;
const T0 = Date.UTC(2026, 0, 1, 12);

interface Life {
  name: string;
  pool: string;
  type: string;
  launched: number;
  disrupted?: number;
  terminated?: number;
  reason?: string;
  capacityType?: string;
}

/** A node's life in `pool`: launched, and with `end` disrupted for its reason and gone `after` ms later. */
function life(
  name: string,
  pool: string,
  type: string,
  launched: number,
  end?: { at: number; after: number; reason: string },
): Life {
  if (!end) return { name, pool, type, launched };
  return {
    name,
    pool,
    type,
    launched,
    disrupted: end.at,
    terminated: end.at + end.after,
    reason: end.reason,
  };
}

function history(lives: Life[]): { events: LifecycleRecord[]; disruptions: DisruptionRecord[] } {
  const events: LifecycleRecord[] = [];
  const disruptions: DisruptionRecord[] = [];
  for (const l of lives) {
    const base = {
      nodeClaim: l.name,
      nodePool: l.pool,
      instanceType: l.type,
      capacityType: l.capacityType ?? "spot",
      zone: "us-east-1a",
    };
    events.push({ ...base, phase: "Launched", at: l.launched });
    events.push({ ...base, phase: "Registered", at: l.launched + 40_000 });
    events.push({ ...base, phase: "Initialized", at: l.launched + 60_000 });
    if (l.disrupted !== undefined) {
      events.push({ ...base, phase: "Disrupted", at: l.disrupted, reason: l.reason });
      disruptions.push({
        nodeClaim: l.name,
        nodePool: l.pool,
        reason: l.reason ?? "Underutilized",
        at: l.disrupted,
      });
    }
    if (l.terminated !== undefined)
      events.push({ ...base, phase: "Terminated", at: l.terminated, reason: l.reason });
  }
  return { events, disruptions };
}

/**
 * aws#7146: consolidation with consolidateAfter 30s; nodes live 5–10 min and are replaced in
 * waves, generation after generation — about 15 disruptions in 30 minutes, node count flat.
 */
function awsChurnTrace(): Life[] {
  const types = ["m5.large", "c5.large", "m5.large", "r5.large", "m5.large"];
  const lives: Life[] = [];
  for (let g = -1; g <= 3; g++) {
    for (let i = 0; i < 5; i++) {
      const launched = T0 + g * 9 * MIN + i * 30_000;
      const disrupted = launched + (6 + i * 0.5) * MIN;
      const alive = disrupted > T0 + 30 * MIN;
      lives.push(
        life(
          `default-g${String(g + 1)}-${String(i)}`,
          "default",
          types[i]!,
          launched,
          alive ? undefined : { at: disrupted, after: MIN, reason: "Underutilized" },
        ),
      );
    }
  }
  return lives;
}

/** sigs#2388: one node replaced again and again by the same instance type. */
function sameTypeTrace(): Life[] {
  const lives: Life[] = [];
  for (let k = -1; k <= 3; k++) {
    const launched = T0 + k * 9 * MIN;
    const disrupted = launched + 8 * MIN;
    const alive = disrupted > T0 + 30 * MIN;
    lives.push(
      life(
        `gpu-${String(k + 1)}`,
        "gpu",
        "g5.2xlarge",
        launched,
        alive ? undefined : { at: disrupted, after: 2 * MIN, reason: "Underutilized" },
      ),
    );
  }
  return lives;
}

/** A healthy pool: long-lived nodes, one consolidation, one scale-up, a planned drift roll. */
function calmTrace(): Life[] {
  const lives: Life[] = [];
  for (let i = 0; i < 10; i++)
    lives.push(life(`calm-${String(i)}`, "calm", "m6i.xlarge", T0 - 6 * 3_600_000 + i * MIN));
  lives[0]!.disrupted = T0 + 10 * MIN;
  lives[0]!.terminated = T0 + 11 * MIN;
  lives[0]!.reason = "Underutilized";
  lives.push({ name: "calm-new", pool: "calm", type: "m6i.xlarge", launched: T0 + 12 * MIN });
  // Drift roll: two nodes replaced by the same type within minutes: planned, not churn.
  for (const i of [1, 2]) {
    lives[i]!.disrupted = T0 + (15 + i) * MIN;
    lives[i]!.terminated = T0 + (17 + i) * MIN;
    lives[i]!.reason = "Drifted";
    lives.push(life(`calm-drift-${String(i)}`, "calm", "m6i.xlarge", T0 + (15 + i) * MIN));
  }
  return lives;
}

const now = T0 + 30 * MIN;
const flatCounts = (pool: string, n: number): NodeCountPoint[] =>
  Array.from({ length: 31 }, (_, m) => ({ nodePool: pool, ts: T0 + m * MIN, nodes: n }));

describe("thrashing: aws#7146-shaped churn", () => {
  const { events, disruptions } = history(awsChurnTrace());
  const pool = nodePool("default", {
    disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "30s" },
  });
  const r = detectThrashing({
    nodePool: "default",
    pool,
    events,
    disruptions,
    nodeCounts: flatCounts("default", 5),
    now,
  });

  it("is flagged high with the signals that make it churn", () => {
    assert.equal(r.severity, "high");
    assert.ok(r.score >= 90, `score ${String(r.score)}`);
    assert.ok(
      r.signals.voluntaryDisruptions >= 14 && r.signals.voluntaryDisruptions <= 17,
      String(r.signals.voluntaryDisruptions),
    );
    assert.ok(r.signals.shortLived >= 15);
    assert.equal(r.signals.flat, true);
    assert.ok(r.signals.maxGeneration >= 2, "several generations");
    const med = r.signals.medianLifetimeMs ?? 0;
    assert.ok(med >= 5 * MIN && med <= 10 * MIN);
  });

  it("lists the churned NodeClaims with lifetimes, reasons and replacements", () => {
    const e = r.evidence.find((x) => x.nodeClaim === "default-g1-0");
    assert.ok(e);
    assert.equal(e.lifetimeMs, 6 * MIN);
    assert.equal(e.reason, "Underutilized");
    assert.equal(e.shortLived, true);
    assert.equal(e.launchedAt, T0);
    assert.equal(e.terminatedAt, T0 + 7 * MIN);
    assert.ok(e.replacedBy?.startsWith("default-g2-"));
    assert.ok(r.evidence.every((x) => (x.lifetimeMs ?? 0) < 15 * MIN));
  });

  it("advises from the evidence and the pool's spec", () => {
    const ids = r.advice.map((a) => a.id);
    assert.deepEqual(ids, [
      "raise-consolidate-after",
      "balanced-policy",
      "when-empty-policy",
      "do-not-disrupt",
      "underutilized-budget",
    ]);
    const raise = r.advice[0]!;
    assert.deepEqual(raise.patch, { spec: { disruption: { consolidateAfter: "15m" } } });
    assert.match(raise.detail, /consolidateAfter is 30s/);
    assert.match(r.summary, /high thrashing/);
  });
});

describe("thrashing: sigs#2388-shaped same-type replacement", () => {
  const { events, disruptions } = history(sameTypeTrace());
  const r = detectThrashing({ nodePool: "gpu", pool: nodePool("gpu"), events, disruptions, now });

  it("is flagged, with each replacement by the same instance type as evidence", () => {
    assert.ok(r.severity === "high" || r.severity === "medium", `${r.severity} ${String(r.score)}`);
    assert.equal(r.signals.sameTypeReplacements, 3);
    assert.deepEqual(
      r.evidence.map((e) => [e.nodeClaim, e.replacedBy, e.sameTypeReplacement, e.lifetimeMs]),
      [
        ["gpu-1", "gpu-2", true, 8 * MIN],
        ["gpu-2", "gpu-3", true, 8 * MIN],
        ["gpu-3", "gpu-4", true, 8 * MIN],
      ],
    );
    assert.equal(r.signals.maxGeneration, 3);
    assert.ok(r.advice.some((a) => a.id === "balanced-policy"));
    // consolidateAfter unset = 0s: raise to twice the 8 min lifetime, rounded up to 5 min.
    assert.deepEqual(r.advice.find((a) => a.id === "raise-consolidate-after")?.patch, {
      spec: { disruption: { consolidateAfter: "20m" } },
    });
  });

  it("advises Balanced only where the cluster's Karpenter accepts it (v1.14+), or its version is unknown", () => {
    const withVersion = (karpenterVersion: string) =>
      detectThrashing({
        nodePool: "gpu",
        pool: nodePool("gpu"),
        events,
        disruptions,
        now,
        options: { karpenterVersion },
      }).advice.map((a) => a.id);
    for (const v of ["v1.14.0", "v1.15.0", "v2.0.0"])
      assert.ok(withVersion(v).includes("balanced-policy"), v);
    for (const v of ["v1.8.2", "v1.13.0", "v1.0.8"]) {
      const ids = withVersion(v);
      assert.ok(!ids.includes("balanced-policy"), v);
      assert.ok(ids.includes("when-empty-policy"), `${v}: WhenEmpty still offered`);
    }
  });
});

describe("thrashing: a calm pool", () => {
  const { events, disruptions } = history(calmTrace());
  const r = detectThrashing({
    nodePool: "calm",
    events,
    disruptions,
    nodeCounts: flatCounts("calm", 10),
    now,
  });

  it("is not flagged and gets no advice", () => {
    assert.equal(r.severity, "none", `score ${String(r.score)}: ${r.summary}`);
    assert.ok(r.score < 20);
    assert.deepEqual(r.advice, []);
    assert.equal(r.signals.shortLived, 0);
    assert.equal(r.signals.reasons.Drifted, 2, "planned drift is reported");
    assert.equal(r.signals.voluntaryDisruptions, 1);
  });

  it("a pure scale-up is not churn", () => {
    const lives: Life[] = Array.from({ length: 10 }, (_, i) => ({
      name: `up-${String(i)}`,
      pool: "up",
      type: "m5.large",
      launched: T0 + i * MIN,
    }));
    const up = detectThrashing({ nodePool: "up", ...history(lives), now });
    assert.equal(up.severity, "none");
    assert.equal(up.signals.flat, false);
    assert.equal(up.signals.launched, 10);
  });
});

describe("thrashing: window, options and advice variants", () => {
  const { events, disruptions } = history(awsChurnTrace());

  it("forgets churn that ended before the window", () => {
    const later = detectThrashing({ nodePool: "default", events, disruptions, now: now + 2 * 3_600_000 });
    assert.equal(later.severity, "none");
  });

  it("honours a shorter short-lifetime threshold", () => {
    const r = detectThrashing({
      nodePool: "default",
      events,
      disruptions,
      now,
      options: { shortLifetimeMs: 5 * MIN },
    });
    assert.equal(r.signals.shortLived, 0);
  });

  it("does not suggest what the pool already does", () => {
    const pool = nodePool("default", {
      disruption: {
        consolidationPolicy: "WhenEmpty",
        consolidateAfter: "1h",
        budgets: [{ nodes: "1", reasons: ["Underutilized"] }],
      },
    });
    const r = detectThrashing({ nodePool: "default", pool, events, disruptions, now });
    assert.deepEqual(
      r.advice.map((a) => a.id),
      ["do-not-disrupt"],
    );
  });

  it("flags a bad consolidateAfter", () => {
    const pool = nodePool("default", { disruption: { consolidateAfter: "soon" } });
    const r = detectThrashing({ nodePool: "default", pool, events, disruptions, now });
    assert.equal(r.advice[0]?.id, "fix-spec");
  });

  it("spot interruptions are not thrashing, however many: replacing them is provisioning's job", () => {
    const lives = awsChurnTrace().map((l) => (l.reason ? { ...l, reason: "Interrupted" } : l));
    const r = detectThrashing({ nodePool: "default", ...history(lives), now });
    assert.equal(r.severity, "none", r.summary);
    assert.equal(r.score, 0);
    assert.ok((r.signals.reasons.Interrupted ?? 0) >= 14, "reported among the reasons");
    assert.equal(r.signals.voluntaryDisruptions, 0);
    assert.deepEqual(r.evidence, []);
    assert.deepEqual(r.advice, []);
  });

  it("reports every pool, worst first", () => {
    const all = [...awsChurnTrace(), ...sameTypeTrace(), ...calmTrace()];
    const pools = ["idle", "default", "gpu", "calm"].map((n) => nodePool(n));
    const reports = detectThrashingAll({ pools, ...history(all), now });
    assert.deepEqual(
      reports.map((x) => [x.nodePool, x.severity]),
      [
        ["default", "high"],
        ["gpu", "high"],
        ["calm", "none"],
        ["idle", "none"],
      ],
    );
  });

  it("a deleted pool (history only, its nodes removed with it) is not thrashing and gets no report", () => {
    const all = [...awsChurnTrace(), ...sameTypeTrace(), ...calmTrace()];
    const reports = detectThrashingAll({ pools: [nodePool("calm")], ...history(all), now });
    assert.deepEqual(
      reports.map((x) => x.nodePool),
      ["calm"],
    );
    // Before the first snapshot no pool is known: history is all there is.
    const early = detectThrashingAll({ pools: [], ...history(all), now });
    assert.ok(early.some((x) => x.nodePool === "default" && x.severity === "high"));
  });

  it("names Wave's own warm nodes in the evidence and the advice", () => {
    const named = history(awsChurnTrace()).events.map((e) => ({ ...e, nodeName: `node-of-${e.nodeClaim}` }));
    const warm = ["node-of-default-g1-0", "node-of-default-g1-1"];
    const r = detectThrashing({ nodePool: "default", events: named, now, warmNodes: new Set(warm) });
    assert.notEqual(r.severity, "none");
    const flagged = r.evidence.filter((e) => e.warmup).length;
    assert.equal(flagged, 2, "both warm nodes are in the evidence, flagged");
    assert.equal(r.signals.warmupCaused, flagged);
    assert.match(r.summary, /Wave's own warm nodes/);
    assert.equal(r.advice[0]?.id, "warmup-churn");
    const none = detectThrashing({ nodePool: "default", events: named, now });
    assert.ok(none.evidence.every((e) => !e.warmup));
    assert.ok(none.advice.every((a) => a.id !== "warmup-churn"));
  });
});

describe("thrashing: calibrated against normal churn", () => {
  /** `n` cycles in pool `pool`: a node lives 6 min, is consolidated, and launched again 2 min later. */
  function cycles(pool: string, n: number, slots = 1): Life[] {
    const lives: Life[] = [];
    for (let s = 0; s < slots; s++)
      for (let k = 0; k <= n / slots; k++) {
        const launched = T0 + k * 8 * MIN + s * 10_000;
        const disrupted = launched + 6 * MIN;
        const alive = k >= n / slots;
        lives.push(
          life(
            `${pool}-${String(s)}-${String(k)}`,
            pool,
            "m5.large",
            launched,
            alive ? undefined : { at: disrupted, after: 30_000, reason: "Empty" },
          ),
        );
      }
    return lives;
  }

  it("scores relative to the pool's size: the same cycles flag a 2-node pool, not a 40-node one", () => {
    const h = history(cycles("p", 6, 2));
    const small = detectThrashing({ nodePool: "p", ...h, nodes: 2, now });
    const large = detectThrashing({ nodePool: "p", ...h, nodes: 40, now });
    assert.equal(small.signals.cycles, large.signals.cycles);
    assert.ok(isFlagged(small.severity), `${small.severity} ${String(small.score)}: ${small.summary}`);
    assert.ok(!isFlagged(large.severity), `${large.severity} ${String(large.score)}: ${large.summary}`);
    assert.ok(
      large.signals.averageNodes >= 38 && large.signals.turnover < 0.2,
      String(large.signals.turnover),
    );
  });

  it("a diurnal scale-down is not thrashing: nodes go one by one and nothing is launched again", () => {
    const lives: Life[] = [];
    for (let i = 0; i < 20; i++)
      lives.push(
        life(`day-${String(i)}`, "day", "m6i.xlarge", T0 - 8 * 3_600_000, {
          at: T0 + i * 90_000,
          after: MIN,
          reason: i % 3 ? "Underutilized" : "Empty",
        }),
      );
    // The evening ripple: three nodes launched for a bump and consolidated nine minutes later.
    for (let i = 0; i < 3; i++)
      lives.push(
        life(`ripple-${String(i)}`, "day", "m6i.large", T0 + 5 * MIN, {
          at: T0 + 14 * MIN + i * 20_000,
          after: T0 + 15 * MIN - (T0 + 14 * MIN + i * 20_000),
          reason: "Underutilized",
        }),
      );
    const r = detectThrashing({ nodePool: "day", ...history(lives), nodes: 10, now });
    assert.equal(r.severity, "none", `${String(r.score)}: ${r.summary}`);
    assert.equal(r.signals.shortLived, 3, "the ripple's nodes were short-lived");
    assert.equal(r.signals.cycles, 0, "but their capacity was not needed again");
  });

  it("expiry and drift rolls are not thrashing, even replaced by the same type within minutes", () => {
    const lives: Life[] = [];
    for (let i = 0; i < 8; i++) {
      const gone = T0 + i * 3 * MIN;
      lives.push(
        life(`old-${String(i)}`, "roll", "m6i.xlarge", T0 - 30 * 24 * 3_600_000, {
          at: gone,
          after: 2 * MIN,
          reason: i % 2 ? "Expired" : "Drifted",
        }),
      );
      lives.push({ name: `new-${String(i)}`, pool: "roll", type: "m6i.xlarge", launched: gone + 10_000 });
    }
    const r = detectThrashing({ nodePool: "roll", ...history(lives), nodes: 8, now });
    assert.equal(r.severity, "none", r.summary);
    assert.equal(r.signals.replacements, 8, "each replacement is seen");
    assert.deepEqual(r.signals.reasons, { Drifted: 4, Expired: 4 });
  });

  it("one odd cycle is not thrashing; a pool's own repeated cycles are", () => {
    const one = detectThrashing({ nodePool: "p", ...history(cycles("p", 1)), nodes: 1, now });
    assert.equal(one.signals.cycles, 1);
    assert.equal(one.severity, "none");
    const many = detectThrashing({ nodePool: "p", ...history(cycles("p", 3)), nodes: 1, now });
    assert.equal(many.signals.maxGeneration, 3);
    assert.equal(many.severity, "high", many.summary);
  });

  it("flags medium and high only (the metric's and the alert's 'warning or critical'), not low", () => {
    assert.deepEqual(
      (["none", "low", "medium", "high"] as const).map((s) => [s, isFlagged(s)]),
      [
        ["none", false],
        ["low", false],
        ["medium", true],
        ["high", true],
      ],
    );
  });
});

describe("thrashing: advice follows the cycles, not every removal", () => {
  it("a churning pool with even more spot interruptions: consolidation advice first, interruptions noted", () => {
    const lives: Life[] = [...awsChurnTrace()];
    // 20 other nodes of the pool interrupted one after another, each replaced 20 s later.
    for (let i = 0; i < 20; i++) {
      lives.push(
        life(`spot-${String(i)}`, "default", "c5.xlarge", T0 - 5 * 3_600_000, {
          at: T0 + i * 80_000,
          after: 30_000,
          reason: "Interrupted",
        }),
      );
      lives.push(life(`spot-new-${String(i)}`, "default", "c5.xlarge", T0 + i * 80_000 + 20_000));
    }
    const pool = nodePool("default", {
      disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "30s" },
    });
    const r = detectThrashing({ nodePool: "default", pool, ...history(lives), nodes: 25, now });
    assert.equal(r.signals.reasons.Interrupted, 20);
    assert.deepEqual(Object.keys(r.signals.cycleReasons), ["Underutilized"]);
    assert.ok(isFlagged(r.severity), `${r.severity} ${String(r.score)}: ${r.summary}`);
    const ids = r.advice.map((a) => a.id);
    assert.ok(ids.includes("raise-consolidate-after"), ids.join());
    assert.ok(ids.includes("spot-interruptions"), ids.join());
    assert.ok(
      r.evidence.every((e) => e.reason === "Underutilized"),
      "interrupted nodes are not evidence",
    );
  });
});
