// Forged AdmissionReviews without an owner uid, with made-up revisions, and in bulk (issue 32), over
// the real review → allocator → backing verifier on the in-memory apiserver with real ReplicaSets:
// the findings as they were reproduced against 23cd1c2, each asserting where the real pods run.
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import type { AdmissionReviewResponse, JsonPatchOp } from "./admission.ts";
import { ASSIGNMENT_LABEL, SLOT_LABEL } from "../objects/wave.ts";
import { seeded } from "../shared/random.ts";
import { APISERVER, PlacementWorld } from "./placement-world.ts";

let world: PlacementWorld | undefined;
afterEach(async () => {
  await world?.stop();
  world = undefined;
});

async function start(o: Parameters<typeof PlacementWorld.create>[0]): Promise<PlacementWorld> {
  world = await PlacementWorld.create(o);
  return world;
}

/** The labels an answer gives its pod (assignment, slot), or "unplaced" without a slot. */
function assigned(res: AdmissionReviewResponse): string {
  const patch = res.response.patch;
  if (!patch) return "unchanged";
  const ops = JSON.parse(Buffer.from(patch, "base64").toString("utf8")) as JsonPatchOp[];
  const labels = new Map<string, unknown>();
  for (const op of ops) {
    if (op.path === "/metadata/labels" && typeof op.value === "object" && op.value !== null)
      for (const [k, v] of Object.entries(op.value)) labels.set(k, v);
    const m = /^\/metadata\/labels\/(.+)$/.exec(op.path);
    if (m?.[1]) labels.set(m[1].replaceAll("~1", "/").replaceAll("~0", "~"), op.value);
  }
  if (labels.get(SLOT_LABEL) === undefined) return "unplaced";
  return String(labels.get(ASSIGNMENT_LABEL));
}

const randomHash = (rand: () => number): string =>
  Array.from({ length: 10 }, () => "bcdfghjklmnpqrstvwxz2456789"[Math.floor(rand() * 27)]).join("");

describe("forged AdmissionReviews without an owner uid (issue 32)", () => {
  it("(a) a uid-less forger at 5/s never takes a freed on-demand slot: exactly N for 100 s, no eviction", async () => {
    const w = await start({ threshold: 3, repair: true });
    await w.scale("h1", 3);
    await w.sync();
    assert.equal(await w.onDemand(), 3);
    const answers = new Set<string>();
    const samples: number[] = [];
    for (let step = 0; step < 500; step++) {
      if (step === 5) {
        const victim = (await w.live()).find((p) => p.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand");
        await w.kube.delete("Pod", victim?.metadata.name ?? "", { namespace: "shop" });
        await w.settle(); // the pod watch sees it: the slot is free for the next review
      }
      // The forger names the real ReplicaSet and revision, without the uid; it polls at 5/s, so it
      // comes before the ReplicaSet controller's replacement.
      answers.add(assigned(await w.forge(w.podReview("h1", "api", { uid: undefined }))));
      await w.tick(200);
      if (step % 5 === 4) samples.push(await w.onDemand());
    }
    // Every forged review answered spot; the replacement took the freed slot at once and the
    // workload held 3 on-demand at every one of the 100 one-second samples; no repair eviction.
    assert.deepEqual(
      {
        forgedAnswers: [...answers],
        secondsOffThree: samples.filter((n) => n !== 3).length,
        evictions: w.evictions,
      },
      { forgedAnswers: ["spot"], secondsOffThree: 0, evictions: 0 },
    );
    assert.equal((await w.ledger()).entries.size, 3, "the ledger holds only the real pods' slots");
  });

  it("a controller reference without a uid is unbacked even while the ReplicaSet has room; its address is charged", async () => {
    const w = await start({ threshold: 3 });
    await w.scale("h1", 3); // a real scale-up: room for three pods
    const forged = await w.forge(w.podReview("h1", "api", { uid: "" }));
    assert.equal(forged.response.allowed, true, "never blocked");
    assert.equal(assigned(forged), "spot");
    assert.equal((await w.ledger()).entries.size, 0, "recorded nowhere");
    await w.sync();
    assert.equal(await w.onDemand(), 3, "the real pods get all three on-demand slots");
    // A reference that is not the controller's: the pod has no controller, Wave leaves it alone.
    const loose = await w.forge(w.podReview("h1", "api", { controller: false }));
    assert.equal(assigned(loose), "unchanged");
  });

  it("(b) a random pod-template-hash every 10 s starves no genuine review and causes no repair eviction", async () => {
    const w = await start({ threshold: 3, repair: true });
    await w.scale("h1", 6);
    await w.sync();
    assert.equal(await w.onDemand(), 3);
    const rand = seeded(32);
    const genuine: string[] = [];
    const samples: number[] = [];
    const forgedAnswers = new Set<string>();
    for (let t = 0; t < 95; t++) {
      if (t % 10 === 0)
        forgedAnswers.add(assigned(await w.forge(w.podReview(randomHash(rand), "api", { uid: undefined }))));
      // Churn: a pod deleted every 5 s (its replacement is a genuine review).
      if (t % 5 === 2) {
        const live = await w.live();
        const victim = live[Math.floor(rand() * live.length)];
        await w.kube.delete("Pod", victim?.metadata.name ?? "", { namespace: "shop" });
      }
      const before = new Set((await w.live()).map((p) => p.metadata.name));
      await w.tick(1000);
      for (const p of await w.live())
        if (!before.has(p.metadata.name)) genuine.push(p.metadata.labels?.[ASSIGNMENT_LABEL] ?? "unplaced");
      samples.push(await w.onDemand());
    }
    assert.ok(genuine.length >= 16, `${genuine.length} genuine reviews`);
    // Replacements of on-demand pods got on-demand; exactly 3 at every sample; no repair eviction.
    assert.deepEqual(
      {
        forgedAnswers: [...forgedAnswers],
        onDemandReplacements: genuine.includes("on-demand"),
        secondsOffThree: samples.filter((n) => n !== 3).length,
        evictions: w.evictions,
      },
      { forgedAnswers: ["spot"], onDemandReplacements: true, secondsOffThree: 0, evictions: 0 },
    );
  });

  it("(c) 5,400 forged reviews in 18 s never fill the ledger; real pods are still placed", async () => {
    const w = await start({ threshold: 3, deployments: ["api", "web"] });
    await w.scale("h1", 3);
    await w.scale("w1", 2, "web");
    await w.sync();
    const rand = seeded(5400);
    // 300/s: 30 at once every 100 ms, the last 90 one by one (a batch that does not fit fails whole,
    // so single reviews are what fill a ledger to its last slot).
    for (let tick = 0; tick < 177; tick++) {
      await Promise.all(
        Array.from({ length: 30 }, () => w.forge(w.podReview(randomHash(rand), "api", { uid: undefined }))),
      );
      await w.clock.advance(100);
    }
    for (let i = 0; i < 90; i++) await w.forge(w.podReview(randomHash(rand), "api", { uid: undefined }));
    assert.equal(w.forged, 5400);
    // A real pod replaced while the forger keeps going, and the workload scaled up: placed, not
    // "ledger full".
    const victim = (await w.live()).find((p) => p.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand");
    await w.kube.delete("Pod", victim?.metadata.name ?? "", { namespace: "shop" });
    const watched = (): boolean =>
      w.pods.view(w.ledgerId()).pods.some((p) => p.metadata.name === victim?.metadata.name);
    for (let i = 0; i < 100 && watched(); i++) await w.settle();
    for (let i = 0; i < 10; i++) await w.forge(w.podReview(randomHash(rand), "api", { uid: undefined }));
    await w.scale("h1", 5);
    await w.scale("w1", 4, "web");
    await w.sync();
    assert.deepEqual(
      { unplaced: w.unplaced, onDemand: await w.onDemand(), webOnDemand: await w.onDemand("web") },
      { unplaced: [], onDemand: 3, webOnDemand: 3 },
      "every real pod placed, the replacement on-demand",
    );
    assert.equal((await w.ledger()).entries.size, 3, "only the real pods' on-demand slots");
  });
});

describe("in-flight reservations per owner and revision, capped per revision (issue 32)", () => {
  it("a rollout's reservations in flight do not take the old ReplicaSet's room", async () => {
    const w = await start({ threshold: 3 });
    await w.scale("h1", 3);
    await w.sync();
    // The rollout: the new ReplicaSet's three reviews answered, their pods not created yet.
    await w.scale("h2", 3);
    const inFlight = await Promise.all([0, 1, 2].map(() => w.answer(w.podReview("h2"), APISERVER)));
    assert.deepEqual(inFlight.map(assigned), ["on-demand", "on-demand", "on-demand"]);
    // Meanwhile an old pod dies and the old ReplicaSet replaces it.
    const victim = (await w.live("api", "h1")).find(
      (p) => p.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand",
    );
    await w.kube.delete("Pod", victim?.metadata.name ?? "", { namespace: "shop" });
    await w.scale("h2", 0); // (only the old ReplicaSet's controller acts in this test)
    await w.sync();
    assert.equal(await w.onDemand("api", "h1"), 3, "the old revision's replacement got its on-demand slot");
  });

  it("holds at most 500 reservations in flight per revision, even when the owner's room cannot be read", async () => {
    const w = await start({ threshold: 0, percentAboveBase: 100 });
    await w.scale("h1", 3);
    // The apiserver cannot answer the ReplicaSet reads: availability first counts reviews as backed.
    w.kube.inject((r) =>
      r.op === "get" && r.kind === "ReplicaSet"
        ? {
            apiVersion: "v1",
            kind: "Status",
            status: "Failure",
            code: 500,
            reason: "InternalError",
            message: "etcd",
          }
        : undefined,
    );
    const answers = await Promise.all(Array.from({ length: 700 }, () => w.forge(w.podReview("h1"))));
    const byAnswer = new Map<string, number>();
    for (const a of answers.map(assigned)) byAnswer.set(a, (byAnswer.get(a) ?? 0) + 1);
    assert.deepEqual(Object.fromEntries(byAnswer), { "on-demand": 500, spot: 200 });
    assert.equal((await w.ledger()).entries.size, 500);
  });

  it("a full ledger fails only the reviews that need a slot recorded, not the others of their batch", async () => {
    const w = await start({ threshold: 3, maxEntries: 3 });
    await w.scale("h1", 3);
    await w.sync(); // 3 on-demand slots: the ledger is full
    await w.scale("h1", 4);
    await w.scale("h2", 1);
    // In one batch: the new revision's first pod (an on-demand slot to record: none left) and the
    // old revision's 4th (spot, nothing to record).
    const [rolled, extra] = await Promise.all([
      w.answer(w.podReview("h2"), APISERVER),
      w.answer(w.podReview("h1"), APISERVER),
    ]);
    assert.deepEqual([assigned(rolled), assigned(extra)], ["unplaced", "spot"]);
    assert.match(rolled.response.warnings?.join() ?? "", /ledger full \(3 slots\)/);
  });

  it("a full ledger degrades only its own workload: its next pods go unplaced, another workload is placed", async () => {
    const w = await start({
      threshold: 0,
      percentAboveBase: 50,
      deployments: ["api", "web"],
      maxEntries: 10,
    });
    await w.scale("h1", 12);
    await w.scale("w1", 4, "web");
    await w.sync();
    assert.equal(w.unplaced.length, 2, "api's 11th and 12th pods: the ledger is full");
    assert.ok(
      w.unplaced.every((m) => /ledger full/.test(m)),
      w.unplaced.join("\n"),
    );
    const web = await w.live("web");
    assert.equal(web.length, 4);
    assert.ok(
      web.every((p) => p.metadata.labels?.[SLOT_LABEL] !== undefined),
      "web's pods all placed",
    );
    assert.equal(await w.onDemand("web"), 2);
  });
});

describe("a forger who knows the ReplicaSet's uid (issue 42, finding 4)", () => {
  /** 120 s at 5 reviews/s; an on-demand pod deleted at 1 s; samples each second. */
  async function run(forger: boolean): Promise<{ secondsOffThree: number; evictions: number }> {
    const w = await start({ threshold: 3, repair: true });
    await w.scale("h1", 3);
    await w.sync();
    assert.equal(await w.onDemand(), 3);
    const samples: number[] = [];
    for (let step = 0; step < 600; step++) {
      if (step === 5) {
        const victim = (await w.live()).find((p) => p.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand");
        await w.kube.delete("Pod", victim?.metadata.name ?? "", { namespace: "shop" });
        await w.settle();
      }
      // The real ReplicaSet, its uid and revision: everything a namespace reader knows. It comes
      // before the controller's replacement, and after every repair eviction.
      if (forger) await w.forge(w.podReview("h1"));
      await w.tick(200);
      if (step % 5 === 4) samples.push(await w.onDemand());
    }
    return { secondsOffThree: samples.filter((n) => n !== 3).length, evictions: w.evictions };
  }

  it("keeps the workload at its on-demand target with no repair eviction (control: the same)", async () => {
    assert.deepEqual(await run(false), { secondsOffThree: 0, evictions: 0 }, "control");
    await world?.stop();
    world = undefined;
    assert.deepEqual(await run(true), { secondsOffThree: 0, evictions: 0 }, "forger");
  });

  it("a review whose pod-template-hash is not its ReplicaSet's takes no slot", async () => {
    const w = await start({ threshold: 3 });
    await w.scale("h1", 3); // room for three
    const forged = w.podReview("h1");
    const labels = (forged.object as { metadata: { labels: Record<string, string> } }).metadata.labels;
    labels["pod-template-hash"] = "zz9";
    // Not the ReplicaSet's revision (its name's suffix either): not a pod of a known workload.
    assert.notEqual(assigned(await w.forge(forged)), "on-demand");
    assert.equal((await w.ledger()).entries.size, 0, "recorded nowhere");
    await w.sync();
    assert.equal(await w.onDemand(), 3);
  });
});
