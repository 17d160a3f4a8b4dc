import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { SpotPolicyResource } from "../objects/policy-crds.ts";
import { FakeClock } from "../shared/clock.ts";
import { SpotPolicyIndex } from "./crd-policy-source.ts";
import { statusChanged } from "../policy/status.ts";
import { SpotStatusWriter, spotPolicyStatus } from "./policy-status.ts";
import { emptyStatus, type AdoptionStatus } from "./repair.ts";

const T0 = Date.UTC(2026, 0, 1, 12);
const cr = (threshold = 2, generation = 1): SpotPolicyResource => ({
  apiVersion: "wave.sh/v1alpha1",
  kind: "SpotPolicy",
  metadata: { name: "web", namespace: "shop", generation, creationTimestamp: "2026-01-01T00:00:00Z" },
  spec: { targetRef: { kind: "Deployment", name: "web" }, threshold, strategy: "Prefer" },
});
const seen = (o: Partial<AdoptionStatus> = {}): AdoptionStatus => ({
  ...emptyStatus("on"),
  onDemand: 2,
  target: 2,
  live: 5,
  ...o,
});
const cond = (s: ReturnType<typeof spotPolicyStatus>, type: string): string =>
  `${s.conditions?.find((c) => c.type === type)?.status ?? "-"} ${s.conditions?.find((c) => c.type === type)?.reason ?? "-"}`;

describe("spotPolicyStatus", () => {
  it("target = actual: Ready, with the split and the generation it describes", () => {
    const s = spotPolicyStatus(cr(2, 3), seen(), undefined, T0);
    assert.deepEqual(
      { ...s, conditions: undefined },
      {
        observedGeneration: 3,
        targetOnDemand: 2,
        targetSpot: 3,
        onDemand: 2,
        spot: 3,
        conditions: undefined,
      },
    );
    assert.equal(cond(s, "Ready"), "True AtTarget");
    assert.equal(cond(s, "WorkloadFound"), "True PodsFound");
    assert.equal(cond(s, "PinnedByWorkload"), "False NotPinned");
    assert.equal(cond(s, "Adopting"), "False Done");
    assert.ok(
      s.conditions?.every(
        (c) => c.lastTransitionTime === "2026-01-01T12:00:00Z" && c.observedGeneration === 3,
      ),
    );
  });

  it("converging, adopting, pinned pods, no pods, last repair", () => {
    const s = spotPolicyStatus(
      cr(),
      seen({
        onDemand: 0,
        direction: "shortfall",
        toMove: 2,
        moved: 1,
        pinned: 1,
        lastRepair: { at: T0 - 1000, pod: "web-1", action: "shortfall: evicted" },
      }),
      undefined,
      T0,
    );
    assert.equal(cond(s, "Ready"), "False Converging");
    assert.equal(cond(s, "Adopting"), "True Moving");
    assert.equal(cond(s, "PinnedByWorkload"), "True CapacityTypeInPodSpec");
    assert.deepEqual(s.lastRepair, {
      time: "2026-01-01T11:59:59Z",
      pod: "web-1",
      action: "shortfall: evicted",
    });
    const none = spotPolicyStatus(cr(), seen({ live: 0, onDemand: 0, target: 0 }), undefined, T0);
    assert.equal(cond(none, "WorkloadFound"), "False NoPods");
  });

  it("an invalid spec says why; one in conflict shows Conflict and names the policy that decides", () => {
    const bad = spotPolicyStatus(
      cr(-1),
      undefined,
      { key: "shop/web", errors: ["spec.threshold: must be an integer ≥ 0"], keptPrevious: false },
      T0,
    );
    assert.equal(cond(bad, "Ready"), "False InvalidSpec");
    assert.match(bad.conditions?.[0]?.message ?? "", /threshold/);
    const dup = spotPolicyStatus(cr(), undefined, undefined, T0, {
      key: "shop/web",
      target: "shop/Deployment/web",
      winner: "shop/a",
      message: "Deployment shop/web already has SpotPolicy shop/a, created first, which decides",
    });
    assert.equal(cond(dup, "Ready"), "False Conflict");
    assert.equal(cond(dup, "Conflict"), "True OlderPolicyDecides");
    assert.match(dup.conditions?.find((c) => c.type === "Conflict")?.message ?? "", /shop\/a/);
  });

  it("a held move names what holds it in Adopting (issue 43)", () => {
    const s = spotPolicyStatus(
      cr(),
      seen({
        onDemand: 0,
        direction: "shortfall",
        toMove: 2,
        heldBy: "the last 3 evictions were refused by a PodDisruptionBudget",
      }),
      undefined,
      T0,
    );
    assert.equal(cond(s, "Adopting"), "True Held");
    assert.match(
      s.conditions?.find((c) => c.type === "Adopting")?.message ?? "",
      /0 of 2 moved; held: the last 3 evictions were refused by a PodDisruptionBudget/,
    );
  });

  it("keeps a condition's transition time while its status holds", () => {
    const first = spotPolicyStatus(cr(), seen(), undefined, T0);
    const later = spotPolicyStatus({ ...cr(), status: first }, seen(), undefined, T0 + 60_000);
    assert.equal(statusChanged(first, later), false);
    const flipped = spotPolicyStatus(
      { ...cr(), status: first },
      seen({ onDemand: 1, direction: "shortfall" }),
      undefined,
      T0 + 60_000,
    );
    assert.equal(
      flipped.conditions?.find((c) => c.type === "Ready")?.lastTransitionTime,
      "2026-01-01T12:01:00Z",
    );
    assert.equal(
      flipped.conditions.find((c) => c.type === "WorkloadFound")?.lastTransitionTime,
      "2026-01-01T12:00:00Z",
    );
  });
});

describe("SpotStatusWriter", () => {
  it("writes the status subresource once per change, with Wave's field manager, never the spec", async () => {
    const clock = new FakeClock(T0);
    const kube = new MemoryKube({ clock });
    const created = await kube.create("SpotPolicy", cr());
    const index = new SpotPolicyIndex();
    index.upsert(created);
    let view = seen();
    const writer = new SpotStatusWriter({
      kube,
      index,
      seen: () => new Map([["shop/Deployment/web", view]]),
      clock,
    });
    await writer.sync();
    const written = await kube.get("SpotPolicy", "web", "shop");
    assert.equal(written.status?.onDemand, 2);
    assert.equal(written.metadata.generation, 1);
    assert.equal(writer.writes, 1);
    index.upsert(written);
    await clock.advance(10_000);
    await writer.sync();
    assert.equal(writer.writes, 1, "unchanged: no write");
    view = seen({ onDemand: 1, direction: "shortfall" });
    await writer.sync();
    assert.equal(writer.writes, 2);
    const after = await kube.get("SpotPolicy", "web", "shop");
    assert.equal(after.status?.onDemand, 1);
    assert.equal(after.status.conditions?.find((c) => c.type === "Ready")?.status, "False");
    assert.equal(after.spec.threshold, 2);
  });

  it("two SpotPolicies on one workload: the one created first gets the repair's view, the other a Conflict condition naming it", async () => {
    const clock = new FakeClock(T0);
    const kube = new MemoryKube({ clock });
    const git = await kube.create("SpotPolicy", {
      ...cr(2),
      metadata: { name: "web-git", namespace: "shop" },
    });
    await clock.advance(60_000);
    const console_ = await kube.create("SpotPolicy", {
      ...cr(5),
      metadata: { name: "a-console", namespace: "shop" },
    });
    const index = new SpotPolicyIndex();
    index.upsert(console_);
    index.upsert(git);
    const writer = new SpotStatusWriter({
      kube,
      index,
      seen: () => new Map([["shop/Deployment/web", seen()]]),
      clock,
    });
    await writer.sync();
    const winner = await kube.get("SpotPolicy", "web-git", "shop");
    const loser = await kube.get("SpotPolicy", "a-console", "shop");
    assert.equal(winner.status?.targetOnDemand, 2);
    assert.equal(winner.status.conditions?.find((c) => c.type === "Ready")?.reason, "AtTarget");
    assert.equal(
      winner.status.conditions.find((c) => c.type === "Conflict"),
      undefined,
    );
    const conflict = loser.status?.conditions?.find((c) => c.type === "Conflict");
    assert.equal(conflict?.status, "True");
    assert.match(conflict.message, /SpotPolicy shop\/web-git, created first, which decides/);
    assert.equal(loser.status?.targetOnDemand, undefined, "no figures for a policy not in force");
  });
});
