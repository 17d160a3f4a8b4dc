// Adoption (issue 28): a policy set on a workload whose pods already run. On the in-memory
// apiserver with the real pod watch, slot ledger and repair: the pods were created before the
// policy (none of Wave's labels), on nodes whose capacity type says where they run. A small
// ReplicaSet controller replaces each evicted pod through the ledger, as the webhook admits it,
// and a scheduler puts it on a node of its assignment.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { Pod, ReplicaSet } from "../objects/kube.ts";
import { FakeClock } from "../shared/clock.ts";
import { POD_TEMPLATE_HASH_LABEL } from "./constants.ts";
import { isLivePod, ledgerId } from "./ledger.ts";
import type { SpotPolicy } from "../policy/spot.ts";
import type { InMemoryPolicySource } from "./policy-source.ts";
import { preferPolicy } from "../policy/spot.test-helper.ts";
import { SpotRepair } from "./repair.ts";
import { policySource, startedPods, testAllocator } from "./placement.test-helper.ts";
import { ASSIGNMENT_LABEL, LEDGER_LABEL, SLOT_LABEL, SPOT_REPAIR_EVENT_REASON } from "../objects/wave.ts";
import { CAPACITY_TYPE_LABEL } from "../objects/karpenter.ts";

const APP_NS = "shop";
const HASH = "h1";
const workload = { namespace: APP_NS, kind: "Deployment", name: "web" } as const;
const policy = (threshold: number, extra: Partial<SpotPolicy> = {}): SpotPolicy =>
  preferPolicy(workload, threshold, extra);
/** Nodes by name prefix: od-* on-demand, spot-* spot, other-* no capacity-type label. */
const nodeCapacity = (n: string | undefined): string =>
  n === undefined || n === ""
    ? "none"
    : n.startsWith("od-")
      ? "on-demand"
      : n.startsWith("spot-")
        ? "spot"
        : "unknown";

const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

async function setup(replicas: number) {
  const clock = new FakeClock();
  const kube = new MemoryKube({ clock });
  const pods = await startedPods(kube, clock);
  for (let i = 0; i < 50 && !pods.ready; i++) await settle();
  assert.ok(pods.ready, "the pod watch runs");
  let n = 0;
  const allocator = testAllocator(kube, clock, pods);
  const rs: ReplicaSet = await kube.create(
    "ReplicaSet",
    {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: { name: `web-${HASH}`, namespace: APP_NS },
      spec: { replicas, selector: { matchLabels: { app: "web" } } },
    },
    { namespace: APP_NS },
  );
  const owner = {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    name: rs.metadata.name ?? "",
    uid: rs.metadata.uid ?? "",
    controller: true,
  };
  let seq = 0;
  const podOf = (node: string, labels: Record<string, string>, spec: Partial<Pod["spec"]> = {}): Pod => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `web-${HASH}-${seq++}`,
      namespace: APP_NS,
      labels: { app: "web", [POD_TEMPLATE_HASH_LABEL]: HASH, ...labels },
      ownerReferences: [owner],
    },
    spec: { containers: [{ name: "c" }], nodeName: node, ...spec },
    status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
  });
  /** A pod that ran before any policy: none of Wave's labels. */
  const running = (node: string, spec: Partial<Pod["spec"]> = {}): Promise<Pod> =>
    kube.create("Pod", podOf(node, {}, spec), { namespace: APP_NS });
  const all = async (): Promise<Pod[]> =>
    (await kube.list("Pod", { namespace: APP_NS })).items.filter(isLivePod);
  /**
   * The ReplicaSet controller and the scheduler: each missing pod is admitted through the ledger
   * (as the webhook would) and runs on a node of its assignment.
   */
  const controller = async (p: SpotPolicy): Promise<number> => {
    const missing = replicas - (await all()).length;
    for (let i = 0; i < missing; i++) {
      const r = await allocator.allocate({
        workload,
        policy: p,
        dryRun: false,
        revision: HASH,
        owner: { kind: "ReplicaSet", namespace: APP_NS, name: owner.name, uid: owner.uid },
        source: "10.0.0.1",
      });
      const node = r.capacity === "on-demand" ? "od-1" : "spot-1";
      await kube.create(
        "Pod",
        podOf(node, { [ASSIGNMENT_LABEL]: r.capacity, [SLOT_LABEL]: r.slot, [LEDGER_LABEL]: r.ledger }),
        { namespace: APP_NS },
      );
      await settle();
    }
    return Math.max(0, missing);
  };
  /** Live pods on on-demand nodes: where they run, whatever their labels. */
  const onDemandNodes = async (): Promise<number> =>
    (await all()).filter((p) => nodeCapacity(p.spec.nodeName) === "on-demand").length;
  /** The repair over `policies` (a fixed set, or a source a test changes). */
  const repairFor = (
    policies: SpotPolicy[] | InMemoryPolicySource,
    extra: { dryRun?: boolean } = {},
  ): SpotRepair =>
    new SpotRepair({
      kube,
      pods,
      policies: Array.isArray(policies) ? policySource(...policies) : policies,
      allocator,
      clock,
      identity: "webhook-0",
      nodes: { synced: true, of: nodeCapacity },
      token: () => `adopt-${n++}`,
      ...extra,
    });
  /**
   * One second at a time for `seconds`: a repair pass, then the controller. Returns the lowest
   * on-demand count (by node) seen, and the evictions done.
   */
  const run = async (repair: SpotRepair, p: SpotPolicy, seconds: number) => {
    let lowest = Infinity;
    for (let s = 0; s < seconds; s++) {
      await repair.tick();
      await settle();
      await controller(p);
      await settle();
      lowest = Math.min(lowest, await onDemandNodes());
      await clock.advance(1_000);
      await settle();
    }
    const evicted = repair.actions.filter((a) => a.outcome === "evicted");
    return { lowest, evicted };
  };
  return { clock, kube, pods, allocator, running, all, onDemandNodes, repairFor, run, controller };
}

describe("adoption: a policy set on a workload that already runs (issue 28)", () => {
  it("8 pods running on spot, threshold 3 Prefer → exactly 3 on on-demand nodes, 3 evictions, one at a time", async () => {
    const s = await setup(8);
    for (let i = 0; i < 8; i++) await s.running("spot-1");
    // The PodDisruptionBudget of the issue: at most one pod unavailable.
    await s.kube.create(
      "PodDisruptionBudget",
      {
        apiVersion: "policy/v1",
        kind: "PodDisruptionBudget",
        metadata: { name: "web", namespace: APP_NS },
        spec: { maxUnavailable: 1, selector: { matchLabels: { app: "web" } } },
      },
      { namespace: APP_NS },
    );
    await settle();
    const p = policy(3);
    const repair = s.repairFor([p]);
    const { evicted } = await s.run(repair, p, 60);
    assert.equal(await s.onDemandNodes(), 3, "exactly 3 pods on on-demand nodes");
    assert.equal(evicted.length, 3, "one eviction per pod to move, none more");
    assert.ok(evicted.every((a) => a.kind === "shortfall"));
    const live = await s.all();
    assert.equal(live.length, 8);
    assert.ok(
      live.every((x) => x.metadata.labels?.[LEDGER_LABEL] === ledgerId(workload)),
      "every pod is placed (adopted or admitted)",
    );
    const ledger = await s.allocator.update(workload, p);
    assert.equal([...ledger.entries.values()].filter((e) => e.capacity === "on-demand").length, 3);
    const st = repair.status().get("shop/Deployment/web");
    assert.ok(st);
    assert.deepEqual([st.adopted, st.moved, st.toMove, st.next], [8, 3, 3, []], "adopted 8, moved 3 of 3");
    const events = (await s.kube.list("Event", { namespace: APP_NS })).items.filter(
      (e) => e.reason === SPOT_REPAIR_EVENT_REASON,
    );
    assert.deepEqual(
      events.map((e) => e.action).sort(),
      ["Adopt", "Evict", "Evict", "Evict"],
      "one Adopt Event, one per eviction",
    );
    assert.match(
      events.find((e) => e.action === "Adopt")?.message ?? "",
      /adopted 8 running pod\(s\).*0 on on-demand nodes, 8 on spot/,
    );
  });

  it("a PodDisruptionBudget allowing no eviction: the move is held, and the repair's status says by what (issue 43)", async () => {
    const s = await setup(4);
    for (let i = 0; i < 4; i++) await s.running("spot-1");
    await s.kube.create(
      "PodDisruptionBudget",
      {
        apiVersion: "policy/v1",
        kind: "PodDisruptionBudget",
        metadata: { name: "web-all", namespace: APP_NS },
        spec: { maxUnavailable: 0, selector: { matchLabels: { app: "web" } } },
      },
      { namespace: APP_NS },
    );
    await settle();
    const p = policy(2);
    const repair = s.repairFor([p]);
    const { evicted } = await s.run(repair, p, 30);
    assert.equal(evicted.length, 0);
    const st = repair.status().get("shop/Deployment/web");
    assert.ok(st);
    assert.deepEqual([st.adopted, st.moved, st.toMove], [4, 0, 2]);
    assert.match(st.heldBy ?? "", /refused by a PodDisruptionBudget/);
  });

  it("a workload already at its target: every pod adopted where it runs, 0 evictions", async () => {
    const s = await setup(8);
    for (let i = 0; i < 3; i++) await s.running("od-1");
    for (let i = 0; i < 5; i++) await s.running("spot-1");
    await settle();
    const p = policy(3);
    const repair = s.repairFor([p]);
    const { evicted } = await s.run(repair, p, 30);
    assert.equal(evicted.length, 0);
    assert.equal(repair.actions.length, 0);
    const live = await s.all();
    assert.equal(live.filter((x) => x.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand").length, 3);
    assert.ok(
      live
        .filter((x) => x.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand")
        .every(
          (x) =>
            x.spec.nodeName === "od-1" &&
            x.metadata.annotations?.["controller.kubernetes.io/pod-deletion-cost"] === "10000",
        ),
      "the on-demand label on the pods running on on-demand, with the deletion cost admission gives",
    );
    // A scale-up now: the ledger knows the adopted on-demand pods, so the new pod goes to spot.
    const ledger = await s.allocator.update(workload, p);
    assert.equal([...ledger.entries.values()].filter((e) => e.capacity === "on-demand").length, 3);
  });

  it("Require threshold 2 on 6 pods running on on-demand → 2, never below 2 while moving", async () => {
    const s = await setup(6);
    for (let i = 0; i < 6; i++) await s.running("od-1");
    await settle();
    const p = policy(2, { strategy: "Require" });
    const repair = s.repairFor([p]);
    const { lowest, evicted } = await s.run(repair, p, 80);
    assert.equal(await s.onDemandNodes(), 2);
    assert.equal(evicted.length, 4);
    assert.ok(evicted.every((a) => a.kind === "excess"));
    assert.equal(lowest, 2, "never below N while moving");
  });

  it("raised, then lowered on the running workload: converges each time; deleted: evicts nothing", async () => {
    const s = await setup(6);
    for (let i = 0; i < 6; i++) await s.running("spot-1");
    await settle();
    const source = policySource(policy(1));
    const repair = s.repairFor(source);
    await s.run(repair, policy(1), 30);
    assert.equal(await s.onDemandNodes(), 1);
    source.set({ apiVersion: "wave.sh/v1alpha1", kind: "SpotPolicySet", policies: [policy(4)] });
    await s.run(repair, policy(4), 60);
    assert.equal(await s.onDemandNodes(), 4, "raised 1 → 4");
    source.set({ apiVersion: "wave.sh/v1alpha1", kind: "SpotPolicySet", policies: [policy(2)] });
    const lowered = await s.run(repair, policy(2), 60);
    assert.equal(await s.onDemandNodes(), 2, "lowered 4 → 2");
    assert.ok(lowered.lowest >= 2);
    const before = repair.actions.length;
    source.set({ apiVersion: "wave.sh/v1alpha1", kind: "SpotPolicySet", policies: [] });
    await s.run(repair, policy(2), 30);
    assert.equal(repair.actions.length, before, "a deleted policy evicts nothing");
    assert.equal(repair.status().size, 0, "and its workload is forgotten");
  });

  it("a deleted policy never adopts nor evicts the pods that run", async () => {
    const s = await setup(6);
    for (let i = 0; i < 6; i++) await s.running("od-1");
    await settle();
    const repair = s.repairFor([]);
    await s.run(repair, policy(2), 30);
    assert.equal(repair.actions.length, 0);
    assert.ok((await s.all()).every((x) => x.metadata.labels?.[LEDGER_LABEL] === undefined));
  });

  it("pods that pin a capacity type themselves are never labelled nor moved", async () => {
    const s = await setup(8);
    const pinned: Pod[] = [];
    for (let i = 0; i < 4; i++)
      pinned.push(await s.running("od-1", { nodeSelector: { [CAPACITY_TYPE_LABEL]: "on-demand" } }));
    for (let i = 0; i < 4; i++) await s.running("spot-1");
    await settle();
    // Threshold 1: the pinned on-demand pods do not count, so one spot pod moves to on-demand.
    const p = policy(1, { strategy: "Require" });
    const repair = s.repairFor([p]);
    const { evicted } = await s.run(repair, p, 40);
    assert.equal(evicted.length, 1);
    const live = await s.all();
    for (const x of pinned) {
      const now = live.find((y) => y.metadata.name === x.metadata.name);
      assert.ok(now, `${x.metadata.name ?? ""} still runs`);
      assert.equal(now.metadata.labels?.[LEDGER_LABEL], undefined, "never labelled");
    }
    assert.equal(repair.status().get("shop/Deployment/web")?.pinned, 4);
  });

  it("dry-run: the planned evictions are listed as PlanEvict Events, nothing labelled or evicted", async () => {
    const s = await setup(6);
    for (let i = 0; i < 6; i++) await s.running("od-1");
    await settle();
    const p = policy(2, { strategy: "Require", repair: "dry-run" });
    const repair = s.repairFor([p]);
    await s.run(repair, p, 30);
    assert.equal(repair.actions.length, 0, "0 evictions");
    assert.ok(
      (await s.all()).every((x) => x.metadata.labels?.[LEDGER_LABEL] === undefined),
      "nothing labelled",
    );
    const planned = (await s.kube.list("Event", { namespace: APP_NS })).items.filter(
      (e) => e.reason === SPOT_REPAIR_EVENT_REASON && e.action === "PlanEvict",
    );
    assert.equal(planned.length, 4, "one Event per planned eviction, reported once");
    const onWorkload = (await s.kube.list("Event", { namespace: APP_NS })).items.filter(
      (e) => e.reason === "WaveSpotRepairPlan",
    );
    assert.deepEqual(
      onWorkload.map((e) => [e.involvedObject.kind, e.involvedObject.name]),
      [["Deployment", "web"]],
      "and one summary on the workload itself (kubectl describe)",
    );
    assert.match(
      onWorkload[0]?.message ?? "",
      /^shop\/Deployment\/web: dry-run: would evict 4 pod\(s\), one at a time: /,
    );
    assert.match(
      planned[0]?.message ?? "",
      /^shop\/Deployment\/web: dry-run: would evict on-demand pod web-h1-\d+ \(1 of 4\).*6 of 6 live pods on-demand, target 2; nothing evicted$/,
    );
    const st = repair.status().get("shop/Deployment/web");
    assert.ok(st);
    assert.deepEqual([st.mode, st.toMove, st.next.length, st.moved], ["dry-run", 4, 4, 0]);
    // The global setting does the same for every policy.
    const s2 = await setup(6);
    for (let i = 0; i < 6; i++) await s2.running("od-1");
    await settle();
    const global = s2.repairFor([policy(2)], { dryRun: true });
    await s2.run(global, policy(2), 20);
    assert.equal(global.actions.length, 0);
    assert.equal(global.status().get("shop/Deployment/web")?.toMove, 4);
  });

  it("dry-run switched to on: the same plan is carried out", async () => {
    const s = await setup(6);
    for (let i = 0; i < 6; i++) await s.running("od-1");
    await settle();
    const source = policySource(policy(2, { repair: "dry-run" }));
    const repair = s.repairFor(source);
    await s.run(repair, policy(2), 15);
    assert.equal(repair.actions.length, 0);
    source.set({ apiVersion: "wave.sh/v1alpha1", kind: "SpotPolicySet", policies: [policy(2)] });
    const { evicted } = await s.run(repair, policy(2), 80);
    assert.equal(evicted.length, 4);
    assert.equal(await s.onDemandNodes(), 2);
  });
});
