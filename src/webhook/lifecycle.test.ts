// A workload's whole life against the slot ledger (issue 20) and forged reviews (issue 16), on the
// in-memory apiserver with the real pod watch: deletions, rollouts, forged AdmissionReviews, and
// the repair controller's evictions and Events.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import { jsonPatch as applyJsonPatch } from "../kube/memory/patch.ts";
import type { Pod, ReplicaSet } from "../objects/kube.ts";
import { FakeClock } from "../shared/clock.ts";
import type { AdmissionRequest, JsonPatchOp } from "./admission.ts";
import type { AllocationResult } from "./allocator.ts";
import { POD_TEMPLATE_HASH_LABEL } from "./constants.ts";
import { ledgerId } from "./ledger.ts";
import { createSpotMetrics } from "./metrics.ts";
import type { SpotPolicy } from "../policy/spot.ts";
import type { InMemoryPolicySource } from "./policy-source.ts";
import { preferPolicy } from "../policy/spot.test-helper.ts";
import { SpotRepair } from "./repair.ts";
import { policySource, startedPods, testAllocator } from "./placement.test-helper.ts";
import { review } from "./review.ts";
import {
  ASSIGNMENT_LABEL,
  LEDGER_LABEL,
  SLOT_LABEL,
  SPOT_REPAIR_EVENT_COMPONENT,
  SPOT_REPAIR_EVENT_REASON,
} from "../objects/wave.ts";
import { CAPACITY_TYPE_LABEL } from "../objects/karpenter.ts";

const APP_NS = "shop";
const workload = { namespace: APP_NS, kind: "Deployment", name: "api" } as const;
const policy = (threshold: number, extra: Partial<SpotPolicy> = {}): SpotPolicy =>
  preferPolicy(workload, threshold, extra);

async function until(what: string, check: () => boolean, clock: FakeClock): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await new Promise((r) => setImmediate(r));
    if (i % 20 === 19) await clock.advance(10);
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** The repair with its defaults over `policies`, on a setup's apiserver, pod watch and ledger. */
const plainRepair = (
  t: Pick<Awaited<ReturnType<typeof setup>>, "kube" | "pods" | "allocator" | "clock">,
  policies: InMemoryPolicySource,
): SpotRepair =>
  new SpotRepair({
    kube: t.kube,
    pods: t.pods,
    policies,
    allocator: t.allocator,
    clock: t.clock,
    identity: "webhook-0",
  });

async function setup() {
  const clock = new FakeClock();
  const kube = new MemoryKube({ clock });
  const pods = await startedPods(kube, clock);
  await until("the pod watch", () => pods.ready, clock);
  const allocator = testAllocator(kube, clock, pods);
  const rss = new Map<string, ReplicaSet>();
  /** The Deployment's ReplicaSet of `hash`, scaled to `replicas`. */
  const scale = async (hash: string, replicas: number): Promise<ReplicaSet> => {
    const name = `api-${hash}`;
    const current = rss.get(hash);
    const rs = current
      ? await kube.replace(
          "ReplicaSet",
          { ...current, spec: { ...current.spec, replicas } },
          { namespace: APP_NS },
        )
      : await kube.create(
          "ReplicaSet",
          {
            apiVersion: "apps/v1",
            kind: "ReplicaSet",
            metadata: { name, namespace: APP_NS },
            spec: { replicas, selector: { matchLabels: { app: "api" } } },
          },
          { namespace: APP_NS },
        );
    rss.set(hash, rs);
    return rs;
  };
  let podSeq = 0;
  /** What the ReplicaSet controller and the apiserver do: admit (allocate) and persist a pod. */
  /** `stuck`: a spot pod comes out as the webhook patched it (requiring spot) and stays Unschedulable. */
  const admit = async (hash: string, p: SpotPolicy, source = "10.0.0.1", stuck = false): Promise<Pod> => {
    const rs = rss.get(hash);
    assert.ok(rs?.metadata.uid);
    const r = await allocator.allocate({
      workload,
      policy: p,
      dryRun: false,
      revision: hash,
      owner: { kind: "ReplicaSet", namespace: APP_NS, name: rs.metadata.name ?? "", uid: rs.metadata.uid },
      source,
    });
    const pod = await kube.create(
      "Pod",
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: `api-${hash}-${podSeq++}`,
          namespace: APP_NS,
          labels: {
            app: "api",
            [POD_TEMPLATE_HASH_LABEL]: hash,
            [ASSIGNMENT_LABEL]: r.capacity,
            [SLOT_LABEL]: r.slot,
            [LEDGER_LABEL]: r.ledger,
          },
          ownerReferences: [
            {
              apiVersion: "apps/v1",
              kind: "ReplicaSet",
              name: rs.metadata.name ?? "",
              uid: rs.metadata.uid,
              controller: true,
            },
          ],
        },
        ...(stuck && r.capacity === "spot"
          ? {
              spec: {
                containers: [{ name: "c" }],
                affinity: {
                  nodeAffinity: {
                    requiredDuringSchedulingIgnoredDuringExecution: {
                      nodeSelectorTerms: [
                        {
                          matchExpressions: [{ key: CAPACITY_TYPE_LABEL, operator: "In", values: ["spot"] }],
                        },
                      ],
                    },
                  },
                },
              },
              // Born Pending; the scheduler marks it Unschedulable afterwards (an update).
              status: { phase: "Pending" },
            }
          : {
              spec: { containers: [{ name: "c" }], nodeName: "n1" },
              status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
            }),
      },
      { namespace: APP_NS },
    );
    await until(
      `the watch to see ${pod.metadata.name}`,
      () => live().some((q) => q.metadata.name === pod.metadata.name),
      clock,
    );
    return pod;
  };
  const live = (): Pod[] =>
    pods.view(ledgerId(workload)).pods.filter((p) => p.metadata.deletionTimestamp === undefined);
  const del = async (pod: Pod): Promise<void> => {
    await kube.delete("Pod", pod.metadata.name ?? "", { namespace: APP_NS });
    await until(
      `the watch to see ${pod.metadata.name} gone`,
      () => !live().some((q) => q.metadata.name === pod.metadata.name),
      clock,
    );
  };
  const onDemand = (): number =>
    live().filter((p) => p.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand").length;
  return { clock, kube, pods, allocator, scale, admit, del, live, onDemand };
}

describe("spot placement through a workload's life", () => {
  it("gives a deleted young on-demand pod's slot to its replacement at once (no 60 s wait)", async () => {
    const { scale, admit, del, onDemand, clock } = await setup();
    await scale("h1", 5);
    const created: Pod[] = [];
    for (let i = 0; i < 5; i++) created.push(await admit("h1", policy(3)));
    assert.equal(onDemand(), 3);
    const young = created.find((p) => p.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand");
    assert.ok(young);
    await clock.advance(2_000); // two seconds old: far inside the old 60 s "being created" window
    await del(young);
    const replacement = await admit("h1", policy(3));
    assert.equal(replacement.metadata.labels?.[ASSIGNMENT_LABEL], "on-demand");
    assert.equal(onDemand(), 3);
  });

  it("scale 12 → 2 → 6 keeps min(N, replicas) on-demand", async () => {
    const { scale, admit, del, live, onDemand } = await setup();
    await scale("h1", 12);
    for (let i = 0; i < 12; i++) await admit("h1", policy(3));
    assert.equal(onDemand(), 3);
    await scale("h1", 2);
    // The ReplicaSet controller deletes the cheapest pods first: spot (deletion cost), then on-demand.
    const byCost = [...live()].sort(
      (a, b) =>
        Number(a.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand") -
        Number(b.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand"),
    );
    for (const p of byCost.slice(0, 10)) await del(p);
    assert.equal(onDemand(), 2);
    await scale("h1", 6);
    for (let i = 0; i < 4; i++) await admit("h1", policy(3));
    assert.equal(onDemand(), 3);
  });

  it("a rollout's new revision gets its own N on-demand pods while the old one still runs", async () => {
    const { scale, admit, del, live, onDemand } = await setup();
    await scale("old", 8);
    for (let i = 0; i < 8; i++) await admit("old", policy(3));
    await scale("new", 2);
    const first = [await admit("new", policy(3)), await admit("new", policy(3))];
    assert.deepEqual(
      first.map((p) => p.metadata.labels?.[ASSIGNMENT_LABEL]),
      ["on-demand", "on-demand"],
      "the new revision's first pods take on-demand slots although the old revision holds 3",
    );
    await scale("new", 8);
    for (let i = 0; i < 6; i++) await admit("new", policy(3));
    assert.ok(onDemand() <= 6, "overshoot at most N while both revisions run");
    for (const p of live().filter((q) => q.metadata.labels?.[POD_TEMPLATE_HASH_LABEL] === "old"))
      await del(p);
    assert.equal(onDemand(), 3, "exactly N once the old revision is gone");
  });
});

describe("a StatefulSet through its life (issue 20)", () => {
  const db = { namespace: APP_NS, kind: "StatefulSet", name: "db" } as const;
  const dbPolicy = (threshold: number): SpotPolicy => ({ workload: db, threshold, strategy: "Prefer" });

  /** What the StatefulSet controller and the apiserver do, each pod admitted through review(). */
  async function statefulSet(replicas: number, p: SpotPolicy) {
    const s = await setup();
    let sts = await s.kube.create(
      "StatefulSet",
      {
        apiVersion: "apps/v1",
        kind: "StatefulSet",
        metadata: { name: "db", namespace: APP_NS },
        spec: {
          replicas,
          selector: { matchLabels: { app: "db" } },
          template: { metadata: { labels: { app: "db" } }, spec: { containers: [{ name: "c" }] } },
        },
      },
      { namespace: APP_NS },
    );
    const id = ledgerId(db);
    const live = (): Pod[] => s.pods.view(id).pods.filter((x) => x.metadata.deletionTimestamp === undefined);
    const capacityOf = (name: string): string | undefined =>
      live().find((x) => x.metadata.name === name)?.metadata.labels?.[ASSIGNMENT_LABEL];
    const onDemand = (): number =>
      live().filter((x) => x.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand").length;
    let seq = 0;
    const create = async (ordinal: number, revision: string): Promise<Pod> => {
      const pod: Pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: `db-${ordinal}`,
          namespace: APP_NS,
          labels: {
            app: "db",
            "controller-revision-hash": `db-${revision}`,
            "statefulset.kubernetes.io/pod-name": `db-${ordinal}`,
          },
          ownerReferences: [
            {
              apiVersion: "apps/v1",
              kind: "StatefulSet",
              name: "db",
              uid: sts.metadata.uid ?? "",
              controller: true,
            },
          ],
        },
        spec: { containers: [{ name: "c" }] },
      };
      const res = await review(
        {
          uid: `review-${seq++}`,
          kind: { group: "", version: "v1", kind: "Pod" },
          resource: { group: "", version: "v1", resource: "pods" },
          namespace: APP_NS,
          operation: "CREATE",
          object: pod,
        },
        { policies: { lookup: () => p }, allocator: s.allocator, clock: s.clock, source: "172.18.0.1" },
      );
      const ops = JSON.parse(
        Buffer.from(res.response.patch ?? "", "base64").toString("utf8"),
      ) as JsonPatchOp[];
      const admitted = applyJsonPatch(pod, ops);
      const created = await s.kube.create(
        "Pod",
        {
          ...admitted,
          spec: { ...admitted.spec, nodeName: "n1" },
          status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
        },
        { namespace: APP_NS },
      );
      await until(`the watch to see db-${ordinal}`, () => capacityOf(`db-${ordinal}`) !== undefined, s.clock);
      return created;
    };
    const remove = async (ordinal: number): Promise<void> => {
      await s.kube.delete("Pod", `db-${ordinal}`, { namespace: APP_NS });
      await until(
        `the watch to see db-${ordinal} gone`,
        () => capacityOf(`db-${ordinal}`) === undefined,
        s.clock,
      );
    };
    const scaleTo = async (n: number): Promise<void> => {
      sts = await s.kube.replace(
        "StatefulSet",
        { ...sts, spec: { ...sts.spec, replicas: n } },
        { namespace: APP_NS },
      );
    };
    // OrderedReady: db-0 first, each after the previous one is Ready.
    for (let i = 0; i < replicas; i++) await create(i, "r1");
    return { ...s, live, capacityOf, onDemand, create, remove, scaleTo };
  }

  it("a rolling update keeps N on-demand: each recreated pod (same name, new controller-revision-hash) takes its predecessor's slot", async () => {
    const t = await statefulSet(6, dbPolicy(3));
    const before = [0, 1, 2, 3, 4, 5].map((i) => t.capacityOf(`db-${i}`));
    assert.deepEqual(before, ["on-demand", "on-demand", "on-demand", "spot", "spot", "spot"]);
    // The StatefulSet controller: highest ordinal first, each pod deleted, then recreated.
    for (let i = 5; i >= 0; i--) {
      await t.remove(i);
      assert.ok(t.onDemand() >= 2, "at most the pod being replaced is missing");
      await t.create(i, "r2");
      assert.equal(t.capacityOf(`db-${i}`), before[i], `db-${i} keeps its capacity type`);
      assert.equal(t.onDemand(), 3, `exactly N after db-${i} is recreated (no overshoot)`);
    }
    const ledger = await t.allocator.update(db, dbPolicy(3));
    assert.equal([...ledger.entries.values()].filter((e) => e.capacity === "on-demand").length, 3);
  });

  it("scaled down after a rolling update, it keeps its on-demand pods (the highest ordinals go first)", async () => {
    const t = await statefulSet(6, dbPolicy(3));
    for (let i = 5; i >= 0; i--) {
      await t.remove(i);
      await t.create(i, "r2");
    }
    await t.scaleTo(3);
    for (let i = 5; i >= 3; i--) await t.remove(i);
    assert.equal(t.onDemand(), 3, "min(N, replicas) on-demand without waiting for the repair");
  });

  it("the repair's cooldown is per workload: a Deployment's eviction does not hold back the StatefulSet's", async () => {
    const t = await statefulSet(4, dbPolicy(1));
    await t.scale("h1", 4);
    for (let i = 0; i < 4; i++) await t.admit("h1", policy(1));
    const repair = plainRepair(t, policySource(policy(2), dbPolicy(2))); // both thresholds raised: a shortfall in each
    await repair.tick();
    await t.clock.advance(6_000);
    await repair.tick();
    assert.deepEqual(
      repair.actions.map((a) => [a.workload, a.kind, a.outcome]),
      [
        ["shop/Deployment/api", "shortfall", "evicted"],
        ["shop/StatefulSet/db", "shortfall", "evicted"],
      ],
      "both workloads repaired in the same pass",
    );
    await t.clock.advance(1_000);
    await repair.tick();
    assert.equal(repair.actions.length, 2, "and each then cools down");
  });

  it("a partitioned rollout (two revisions for good) holds exactly N, with the repair still on watch", async () => {
    const t = await statefulSet(6, dbPolicy(3));
    // partition: 3 → only db-5, db-4, db-3 move to the new revision, and stay there.
    for (let i = 5; i >= 3; i--) {
      await t.remove(i);
      await t.create(i, "r2");
    }
    assert.equal(t.onDemand(), 3);
    const repair = plainRepair(t, policySource(dbPolicy(2)));
    await repair.tick();
    await t.clock.advance(6_000);
    await repair.tick();
    assert.deepEqual(
      repair.actions.map((a) => [a.kind, a.outcome]),
      [["excess", "evicted"]],
      "a threshold lowered during the partition is repaired: one count, not one per revision",
    );
  });
});

describe("forged AdmissionReviews (issue 16)", () => {
  it("cannot spend a workload's on-demand slots: the next real pod still gets one", async () => {
    const { scale, admit, allocator, kube, onDemand } = await setup();
    const rs = await scale("h1", 2);
    await admit("h1", policy(3));
    await admit("h1", policy(3));
    assert.equal(onDemand(), 2);
    // Three reviews nobody will create pods for (the ReplicaSet is full), from an in-cluster pod.
    const forged: AllocationResult[] = [];
    for (let i = 0; i < 3; i++)
      forged.push(
        await allocator.allocate({
          workload,
          policy: policy(3),
          dryRun: false,
          revision: "h1",
          owner: { kind: "ReplicaSet", namespace: APP_NS, name: "api-h1", uid: rs.metadata.uid ?? "" },
          source: "10.9.9.9",
        }),
      );
    assert.deepEqual(
      forged.map((r) => [r.capacity, r.backed]),
      [
        ["spot", false],
        ["spot", false],
        ["spot", false],
      ],
    );
    // A review naming a ReplicaSet that does not exist (or another uid) is not backed either.
    const ghost = await allocator.allocate({
      workload,
      policy: policy(3),
      dryRun: false,
      revision: "h1",
      owner: { kind: "ReplicaSet", namespace: APP_NS, name: "api-h1", uid: "not-the-uid" },
      source: "10.9.9.9",
    });
    assert.equal(ghost.backed, false);
    await scale("h1", 3);
    const real = await admit("h1", policy(3));
    assert.equal(real.metadata.labels?.[ASSIGNMENT_LABEL], "on-demand", "the real pod is not pushed to spot");
    assert.ok(await kube.get("ReplicaSet", "api-h1", APP_NS));
  });
});

describe("per-source limits on verification reads (issue 16)", () => {
  /** A review of a pod of `rs` as the apiserver (or a forger) sends it. */
  const podReview = (rs: ReplicaSet, uid: string): AdmissionRequest => ({
    uid,
    kind: { group: "", version: "v1", kind: "Pod" },
    resource: { group: "", version: "v1", resource: "pods" },
    namespace: APP_NS,
    operation: "CREATE",
    object: {
      metadata: {
        generateName: `${rs.metadata.name ?? ""}-`,
        labels: { app: "api", [POD_TEMPLATE_HASH_LABEL]: "h1" },
        ownerReferences: [
          {
            apiVersion: "apps/v1",
            kind: "ReplicaSet",
            name: rs.metadata.name ?? "",
            uid: rs.metadata.uid ?? "",
            controller: true,
          },
        ],
      },
      spec: { containers: [{ name: "c" }] },
    },
  });
  const forge = (s: Awaited<ReturnType<typeof setup>>, rs: ReplicaSet, source: string, p = policy(3)) =>
    s.allocator.allocate({
      workload,
      policy: p,
      dryRun: false,
      revision: "h1",
      owner: { kind: "ReplicaSet", namespace: APP_NS, name: "api-h1", uid: rs.metadata.uid ?? "" },
      source,
    });
  const ledgerSlots = async (s: Awaited<ReturnType<typeof setup>>): Promise<number> =>
    (await s.allocator.update(workload, policy(3))).entries.size;

  it("a source over its limit is answered spot — allowed, never blocked, nothing recorded — and other sources are unaffected", async () => {
    const s = await setup();
    const rs = await s.scale("h1", 0);
    // A forger in the cluster spends its burst of 20 fresh reads while the ReplicaSet is full.
    for (let i = 0; i < 20; i++) assert.equal((await forge(s, rs, "10.9.9.9")).backed, false);
    await s.scale("h1", 3); // a real scale-up: the controller has room for three pods
    const full = await s.kube.get("ReplicaSet", "api-h1", APP_NS);
    const res = await review(podReview(full, "forged-21"), {
      policies: { lookup: () => policy(3) },
      allocator: s.allocator,
      clock: s.clock,
      source: "10.9.9.9",
    });
    assert.equal(res.response.allowed, true, "the webhook never blocks pod creation");
    const ops = JSON.parse(Buffer.from(res.response.patch ?? "", "base64").toString("utf8")) as JsonPatchOp[];
    const placed = applyJsonPatch(podReview(full, "forged-21").object as Pod, ops);
    const labels = placed.metadata.labels;
    assert.equal(labels?.[ASSIGNMENT_LABEL], "spot", "over its limit: spot, not an on-demand slot");
    assert.equal(await ledgerSlots(s), 0, "recorded nowhere");
    // The apiserver's reviews of the real pods come from another address: all three on-demand.
    for (let i = 0; i < 3; i++)
      assert.equal(
        (await s.admit("h1", policy(3), "172.18.0.1")).metadata.labels?.[ASSIGNMENT_LABEL],
        "on-demand",
      );
    assert.equal(s.onDemand(), 3);
  });

  it("a limited source batched with a real review does not take the real pod's on-demand slot", async () => {
    const s = await setup();
    const rs = await s.scale("h1", 0);
    for (let i = 0; i < 20; i++) await forge(s, rs, "10.9.9.9");
    const room = await s.scale("h1", 1);
    // Both reviews arrive in the same tick: the allocator answers them in one batch.
    const [forged, real] = await Promise.all([forge(s, room, "10.9.9.9"), forge(s, room, "172.18.0.1")]);
    assert.deepEqual([forged.capacity, forged.backed], ["spot", false]);
    assert.deepEqual(
      [real.capacity, real.backed],
      ["on-demand", true],
      "the real review is verified on its own source's budget",
    );
    assert.equal(await ledgerSlots(s), 1, "only the real pod's slot");
  });

  it("a second forged review in the same batch is verified too, not handed the slot the first was refused", async () => {
    const s = await setup();
    const rs = await s.scale("h1", 1);
    await s.admit("h1", policy(2)); // the ReplicaSet is full; one on-demand slot of two is free
    const [a, b] = await Promise.all([
      forge(s, rs, "10.9.9.9", policy(2)),
      forge(s, rs, "10.9.9.8", policy(2)),
    ]);
    assert.deepEqual(
      [a, b].map((r) => [r.capacity, r.backed]),
      [
        ["spot", false],
        ["spot", false],
      ],
    );
    assert.equal(await ledgerSlots(s), 1, "only the real pod's slot");
  });

  it("the budget refills with the injected clock: 10 reads a second", async () => {
    const s = await setup();
    const rs = await s.scale("h1", 0);
    for (let i = 0; i < 20; i++) await forge(s, rs, "10.9.9.9");
    const room = await s.scale("h1", 3);
    assert.equal((await forge(s, room, "10.9.9.9")).backed, false, "exhausted");
    await s.clock.advance(100);
    assert.deepEqual(
      await forge(s, room, "10.9.9.9").then((r) => [r.capacity, r.backed]),
      ["on-demand", true],
      "one read 100 ms later (the residual risk the threat model names: a real scale-up's room)",
    );
    assert.equal((await forge(s, room, "10.9.9.9")).backed, false, "and only one");
  });
});

describe("spot repair (ADR 0006)", () => {
  const repairOf = (
    s: Awaited<ReturnType<typeof setup>>,
    p: SpotPolicy,
    over: {
      metrics?: ReturnType<typeof createSpotMetrics>;
      timing?: { graceMs: number; cooldownMs: number };
    } = {},
  ) =>
    new SpotRepair({
      kube: s.kube,
      pods: s.pods,
      policies: policySource(p),
      allocator: s.allocator,
      clock: s.clock,
      metrics: over.metrics ?? createSpotMetrics(),
      identity: "webhook-0",
      timing: over.timing ?? { graceMs: 5_000, cooldownMs: 5_000 },
    });

  it("restores a shortfall by evicting one spot pod, and records a WaveSpotRepair Event", async () => {
    const s = await setup();
    await s.scale("h1", 6);
    for (let i = 0; i < 6; i++) await s.admit("h1", policy(1));
    assert.equal(s.onDemand(), 1);
    // Threshold raised after the fact: no admission is coming.
    const raised = policy(3);
    const repair = repairOf(s, raised);
    await repair.tick();
    assert.equal(repair.actions.length, 0, "nothing within the grace period");
    await s.clock.advance(6_000);
    await repair.tick();
    assert.deepEqual(
      repair.actions.map((a) => [a.kind, a.outcome]),
      [["shortfall", "evicted"]],
    );
    const evicted = repair.actions[0]?.pod ?? "";
    await until("the eviction", () => !s.live().some((p) => p.metadata.name === evicted), s.clock);
    await s.admit("h1", raised); // the ReplicaSet's replacement
    assert.equal(s.onDemand(), 2);
    const events = (await s.kube.list("Event", { namespace: APP_NS })).items;
    const e = events.find((x) => x.involvedObject.name === evicted);
    assert.ok(e, "an Event on the evicted pod");
    assert.equal(e.reason, SPOT_REPAIR_EVENT_REASON);
    assert.equal(e.reportingComponent, SPOT_REPAIR_EVENT_COMPONENT);
    assert.equal(e.source?.component, SPOT_REPAIR_EVENT_COMPONENT);
    assert.match(e.message ?? "", /^shop\/Deployment\/api: 1 of 6 live pods on-demand, target 3/);
    await s.clock.advance(2_000);
    await repair.tick();
    assert.equal(repair.actions.length, 1, "rate-limited: one action per cooldown");
    await s.clock.advance(6_000);
    await repair.tick();
    assert.equal(repair.actions.length, 2);
  });

  it("brings an excess back to N by evicting on-demand pods, never below N", async () => {
    const s = await setup();
    await s.scale("h1", 6);
    for (let i = 0; i < 6; i++) await s.admit("h1", policy(4));
    const lowered = policy(2);
    const repair = repairOf(s, lowered);
    for (let round = 0; round < 6; round++) {
      await repair.tick();
      await s.clock.advance(6_000);
      await repair.tick();
      for (const a of repair.actions.filter((x) => x.outcome === "evicted")) {
        if (s.live().some((p) => p.metadata.name === a.pod)) {
          await until("the eviction", () => !s.live().some((p) => p.metadata.name === a.pod), s.clock);
          await s.admit("h1", lowered);
        }
      }
      assert.ok(s.onDemand() >= 2, "never below the new N");
    }
    assert.equal(s.onDemand(), 2);
    assert.ok(repair.actions.every((a) => a.kind === "excess"));
  });

  it("Prefer without spot: opens the fallback window, then replaces every pod still requiring spot", async () => {
    const s = await setup();
    await s.scale("h1", 4);
    const p = policy(1);
    for (let i = 0; i < 4; i++) await s.admit("h1", p, "10.0.0.1", true);
    const stuck = s.live().filter((x) => x.metadata.labels?.[ASSIGNMENT_LABEL] === "spot");
    assert.equal(stuck.length, 3);
    // kube-scheduler finds no node: the pod watch must see that update, not only the pod's birth.
    for (const p of stuck)
      await s.kube.patch(
        "Pod",
        p.metadata.name ?? "",
        { status: { conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable" }] } },
        { namespace: APP_NS, type: "merge" },
      );
    await until(
      "the pod watch to see the spot pods Unschedulable",
      () =>
        s
          .live()
          .filter((x) => x.metadata.labels?.[ASSIGNMENT_LABEL] === "spot")
          .every((x) => x.status?.conditions?.some((c) => c.reason === "Unschedulable") === true),
      s.clock,
    );
    const repair = repairOf(s, p);
    await s.clock.advance(30_000);
    await repair.tick();
    assert.equal(repair.actions.length, 0, "not stuck long enough to call spot unavailable");
    await s.clock.advance(61_000);
    await repair.tick();
    assert.deepEqual(
      repair.actions.map((a) => [a.kind, a.outcome]),
      [["fallback", "evicted"]],
      "the window opens with the oldest stuck pod",
    );
    const ledger = await s.allocator.update(workload, p);
    assert.ok(ledger.fallbackUntil > s.clock.now(), "the ledger's fallback window is open");
    // The other two were admitted before the window: they still require spot and would stay
    // Pending for the whole window. Each is replaced in turn, one per cooldown.
    for (let i = 0; i < 2; i++) {
      await s.clock.advance(6_000);
      await repair.tick();
    }
    assert.deepEqual(
      repair.actions.map((a) => a.kind),
      ["fallback", "fallback", "fallback"],
    );
    assert.deepEqual(
      repair.actions.map((a) => a.pod).sort(),
      stuck.map((x) => x.metadata.name ?? "").sort(),
      "each stuck spot pod evicted once",
    );
    const events = (await s.kube.list("Event", { namespace: APP_NS })).items.map((e) => e.message ?? "");
    assert.equal(
      events.filter((m) => /still requiring spot while the on-demand fallback is open/.test(m)).length,
      2,
    );
  });

  it("a policy's own fallbackWindowSeconds (a SpotPolicy's spec) sets how long the window stays open", async () => {
    const s = await setup();
    await s.scale("h1", 2);
    const p = { ...policy(1), fallbackWindowSeconds: 120 };
    for (let i = 0; i < 2; i++) await s.admit("h1", p, "10.0.0.1", true);
    const [stuck] = s.live().filter((x) => x.metadata.labels?.[ASSIGNMENT_LABEL] === "spot");
    assert.ok(stuck);
    await s.kube.patch(
      "Pod",
      stuck.metadata.name ?? "",
      { status: { conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable" }] } },
      { namespace: APP_NS, type: "merge" },
    );
    await until(
      "the pod watch to see the spot pod Unschedulable",
      () => s.live().some((x) => x.status?.conditions?.some((c) => c.reason === "Unschedulable") === true),
      s.clock,
    );
    const repair = repairOf(s, p);
    await s.clock.advance(91_000);
    await repair.tick();
    assert.deepEqual(
      repair.actions.map((a) => a.kind),
      ["fallback"],
    );
    const ledger = await s.allocator.update(workload, p);
    assert.equal(
      ledger.fallbackUntil - s.clock.now(),
      120_000,
      "the policy's window, not the default 10 min",
    );
  });

  it("a PodDisruptionBudget that allows no eviction: attempts back off (5 s doubled per refusal), a Warning Event each, no retry storm", async () => {
    const s = await setup();
    await s.scale("h1", 6);
    for (let i = 0; i < 6; i++) await s.admit("h1", policy(1));
    await s.kube.create(
      "PodDisruptionBudget",
      {
        apiVersion: "policy/v1",
        kind: "PodDisruptionBudget",
        metadata: { name: "api", namespace: APP_NS },
        spec: { selector: { matchLabels: { app: "api" } }, maxUnavailable: 0 },
      },
      { namespace: APP_NS },
    );
    let evictions = 0;
    s.kube.inject((r) => {
      if (r.op === "delete" && r.kind === "Pod") evictions++;
      return undefined;
    });
    const metrics = createSpotMetrics();
    const repair = repairOf(s, policy(3), { metrics });
    const at: number[] = [];
    for (let t = 0; t < 60; t++) {
      await s.clock.advance(1_000);
      const before = repair.actions.length;
      await repair.tick(); // the controller's pass runs every second
      if (repair.actions.length > before) at.push(s.clock.now());
    }
    assert.equal(s.live().length, 6, "the budget held: no pod went");
    // Grace 5 s, then refused attempts 10, 20, 40 s apart: three in a minute, not twelve.
    assert.equal(
      at.length,
      3,
      `attempts in 60 s: ${at.map((t) => t - (at[0] ?? 0)).join(", ")} ms after the first`,
    );
    for (let i = 1; i < at.length; i++)
      assert.ok((at[i] ?? 0) - (at[i - 1] ?? 0) >= 5_000 * 2 ** i, `attempt ${i + 1} waits ${5 * 2 ** i} s`);
    assert.equal(evictions, at.length, "one Eviction request per attempt");
    assert.ok(repair.actions.every((a) => a.kind === "shortfall" && a.outcome === "blocked"));
    const warnings = (await s.kube.list("Event", { namespace: APP_NS })).items.filter(
      (e) => e.reason === SPOT_REPAIR_EVENT_REASON,
    );
    assert.equal(warnings.length, at.length, "one Event per blocked attempt");
    for (const e of warnings) {
      assert.equal(e.type, "Warning");
      assert.equal(e.action, "EvictBlocked");
      assert.equal(e.reportingComponent, SPOT_REPAIR_EVENT_COMPONENT);
      assert.match(
        e.message ?? "",
        /^shop\/Deployment\/api: 1 of 6 live pods on-demand, target 3: .* — blocked by a PodDisruptionBudget, will retry in (10|20|40) s$/,
      );
    }
    assert.equal(
      await metrics.repairs.get({
        workload: "shop/Deployment/api",
        direction: "shortfall",
        outcome: "blocked",
      }),
      at.length,
    );
    // Once the budget allows a disruption, the next attempt (after the backed-off wait) evicts,
    // and the workload's cooldown is 5 s again.
    await s.kube.delete("PodDisruptionBudget", "api", { namespace: APP_NS });
    for (let t = 0; t < 60 && !repair.actions.some((a) => a.outcome === "evicted"); t++) {
      await s.clock.advance(1_000);
      await repair.tick();
    }
    assert.equal(repair.actions.at(-1)?.outcome, "evicted");
  });

  it("acts on one workload at most once per cooldown (5 s), however often it passes", async () => {
    const s = await setup();
    await s.scale("h1", 8);
    for (let i = 0; i < 8; i++) await s.admit("h1", policy(1));
    const raised = policy(5);
    // No grace: only the cooldown paces the evictions here.
    const repair = repairOf(s, raised, { timing: { graceMs: 0, cooldownMs: 5_000 } });
    const at: number[] = [];
    for (let t = 0; t < 40 && s.onDemand() < 5; t++) {
      const before = repair.actions.length;
      await repair.tick();
      const a = repair.actions[before];
      if (a) {
        at.push(s.clock.now());
        assert.equal(a.outcome, "evicted");
        await until("the eviction", () => !s.live().some((p) => p.metadata.name === a.pod), s.clock);
        await s.admit("h1", raised); // the ReplicaSet replaces the pod at once
      }
      await s.clock.advance(1_000);
    }
    assert.equal(s.onDemand(), 5, "the shortfall is repaired");
    assert.equal(at.length, 4, "one eviction per missing on-demand pod");
    for (let i = 1; i < at.length; i++)
      assert.ok((at[i] ?? 0) - (at[i - 1] ?? 0) >= 5_000, `evictions ≥ 5 s apart: ${at.join(", ")}`);
  });

  it("does nothing while a rollout runs, or when the policy switches repair off", async () => {
    const s = await setup();
    await s.scale("a", 3);
    for (let i = 0; i < 3; i++) await s.admit("a", policy(1));
    await s.scale("b", 1);
    await s.admit("b", policy(1));
    const repair = repairOf(s, policy(3));
    await s.clock.advance(10_000);
    await repair.tick();
    await s.clock.advance(10_000);
    await repair.tick();
    assert.equal(repair.actions.length, 0, "two revisions: a rollout");
    const off = repairOf(s, policy(3, { repair: false }));
    await s.clock.advance(10_000);
    await off.tick();
    assert.equal(off.actions.length, 0);
  });
});
