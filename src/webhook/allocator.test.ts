import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { Pod } from "../objects/kube.ts";
import { FakeClock } from "../shared/clock.ts";
import {
  LEDGER_STATE_ANNOTATION,
  SlotAllocator,
  ledgerLeaseName,
  type AllocationResult,
} from "./allocator.ts";
import { ledgerId } from "./ledger.ts";
import { spotPolicy, WEB } from "../policy/spot.test-helper.ts";
import { ASSIGNMENT_LABEL, LEDGER_LABEL, SLOT_LABEL } from "../objects/wave.ts";

const NS = "wave";
const workload = WEB;
const policy = spotPolicy;

function setup(opts: { replicas?: number } = {}) {
  const clock = new FakeClock();
  const kube = new MemoryKube({ clock });
  let n = 0;
  const allocators = Array.from(
    { length: opts.replicas ?? 1 },
    (_, r) =>
      new SlotAllocator({ kube, namespace: NS, clock, replicaId: `r${r}`, token: () => `tok${r}-${n++}` }),
  );
  return { clock, kube, allocators, a: allocators[0]! };
}

const onDemandCount = (rs: AllocationResult[]): number => rs.filter((r) => r.capacity === "on-demand").length;

/** Creates the pod the apiserver would persist for an admitted allocation. */
async function createPod(kube: MemoryKube, r: AllocationResult, name: string): Promise<Pod> {
  return kube.create(
    "Pod",
    {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name,
        namespace: workload.namespace,
        labels: { [ASSIGNMENT_LABEL]: r.capacity, [SLOT_LABEL]: r.slot, [LEDGER_LABEL]: r.ledger },
      },
      spec: { containers: [{ name: "c" }] },
    },
    { namespace: workload.namespace },
  );
}

describe("SlotAllocator", () => {
  it("hands out exactly N on-demand slots and records them in a Lease in Wave's namespace", async () => {
    const { a, kube } = setup();
    const results: AllocationResult[] = [];
    for (let i = 0; i < 6; i++)
      results.push(await a.allocate({ workload, policy: policy(2), dryRun: false }));
    assert.deepEqual(
      results.map((r) => r.capacity),
      ["on-demand", "on-demand", "spot", "spot", "spot", "spot"],
    );
    const lease = await kube.get("Lease", ledgerLeaseName(ledgerId(workload)), NS);
    assert.match(lease.metadata.annotations?.[LEDGER_STATE_ANNOTATION] ?? "", /"tok0-0":\["o"/);
    assert.equal(lease.metadata.labels?.[LEDGER_LABEL], ledgerId(workload));
  });

  it("batches concurrent admissions into one write", async () => {
    const { a } = setup();
    const results = await Promise.all(
      Array.from({ length: 50 }, () => a.allocate({ workload, policy: policy(5), dryRun: false })),
    );
    assert.equal(onDemandCount(results), 5);
    assert.equal(a.stats.writes, 1);
    assert.equal(new Set(results.map((r) => r.slot)).size, 50, "every slot token is unique");
  });

  it("two replicas, 200 concurrent admissions: exactly N on-demand", async () => {
    const { allocators } = setup({ replicas: 2 });
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        allocators[i % 2]!.allocate({ workload, policy: policy(17), dryRun: false }),
      ),
    );
    assert.equal(onDemandCount(results), 17);
  });

  it("base + percentage across two replicas: base 2, 50 %, 10 pods → 6 on-demand, 100 pods → 51", async () => {
    const { allocators } = setup({ replicas: 2 });
    const burst = (n: number) =>
      Promise.all(
        Array.from({ length: n }, (_, i) =>
          allocators[i % 2]!.allocate({ workload, policy: policy(2, 50), dryRun: false }),
        ),
      );
    assert.equal(onDemandCount(await burst(10)), 6);
    assert.equal(onDemandCount(await burst(90)), 51 - 6);
  });

  it("keeps counting across a restart (the ledger is in the API, not in memory)", async () => {
    const { kube, clock, a } = setup();
    for (let i = 0; i < 3; i++) await a.allocate({ workload, policy: policy(4), dryRun: false });
    const restarted = new SlotAllocator({ kube, namespace: NS, clock });
    const next = [];
    for (let i = 0; i < 3; i++)
      next.push(await restarted.allocate({ workload, policy: policy(4), dryRun: false }));
    assert.deepEqual(
      next.map((r) => r.capacity),
      ["on-demand", "spot", "spot"],
    );
  });

  it("dry-run admissions are answered without writing", async () => {
    const { a, kube } = setup();
    const r = await a.allocate({ workload, policy: policy(1), dryRun: true });
    assert.equal(r.capacity, "on-demand");
    await assert.rejects(kube.get("Lease", ledgerLeaseName(ledgerId(workload)), NS), /not found/);
    await a.allocate({ workload, policy: policy(1), dryRun: false });
    const rv = (await kube.get("Lease", ledgerLeaseName(ledgerId(workload)), NS)).metadata.resourceVersion;
    assert.equal((await a.allocate({ workload, policy: policy(1), dryRun: true })).capacity, "spot");
    assert.equal(
      (await kube.get("Lease", ledgerLeaseName(ledgerId(workload)), NS)).metadata.resourceVersion,
      rv,
    );
  });

  it("refills the on-demand baseline first when an on-demand pod dies", async () => {
    const { a, kube, clock } = setup();
    const pods: Pod[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await a.allocate({ workload, policy: policy(2), dryRun: false });
      pods.push(await createPod(kube, r, `web-${i}`));
    }
    await clock.advance(2000);
    assert.equal((await a.allocate({ workload, policy: policy(2), dryRun: false })).capacity, "spot");
    const victim = pods.find((p) => p.metadata.labels?.[ASSIGNMENT_LABEL] === "on-demand")!;
    await kube.delete("Pod", victim.metadata.name!, { namespace: workload.namespace });
    // Gone without a terminating phase (force delete): freed once a list newer than skew misses it.
    await clock.advance(6000);
    assert.equal((await a.allocate({ workload, policy: policy(2), dryRun: false })).capacity, "on-demand");
    assert.equal((await a.allocate({ workload, policy: policy(2), dryRun: false })).capacity, "spot");
  });

  it("frees a terminating on-demand pod's slot at once (graceful deletion)", async () => {
    const { a, kube, clock } = setup();
    const r = await a.allocate({ workload, policy: policy(1), dryRun: false });
    const p = await createPod(kube, r, "web-0");
    p.metadata.finalizers = ["example.com/hold"]; // keeps it visible with a deletionTimestamp
    await kube.replace("Pod", p, { namespace: workload.namespace });
    await kube.delete("Pod", "web-0", { namespace: workload.namespace });
    assert.ok((await kube.get("Pod", "web-0", workload.namespace)).metadata.deletionTimestamp);
    await clock.advance(1000);
    assert.equal((await a.allocate({ workload, policy: policy(1), dryRun: false })).capacity, "on-demand");
  });

  it("expires reservations whose pod never appeared", async () => {
    const { a, clock } = setup();
    await a.allocate({ workload, policy: policy(1), dryRun: false }); // admitted, creation then failed
    assert.equal((await a.allocate({ workload, policy: policy(1), dryRun: false })).capacity, "spot");
    await clock.advance(61_000);
    assert.equal((await a.allocate({ workload, policy: policy(1), dryRun: false })).capacity, "on-demand");
  });

  it("rebuilds an unreadable ledger from the live pods", async () => {
    const { a, kube } = setup();
    const r = await a.allocate({ workload, policy: policy(1), dryRun: false });
    await createPod(kube, r, "web-0");
    const name = ledgerLeaseName(ledgerId(workload));
    const lease = await kube.get("Lease", name, NS);
    lease.metadata.annotations = { ...lease.metadata.annotations, [LEDGER_STATE_ANNOTATION]: "{garbage" };
    await kube.replace("Lease", lease, { namespace: NS });
    assert.equal((await a.allocate({ workload, policy: policy(1), dryRun: false })).capacity, "spot");
  });

  it("rejects when the API fails, so review() can fall back", async () => {
    const { a, kube } = setup();
    kube.failNext(
      "get",
      { code: 503, reason: "ServiceUnavailable", message: "etcd down" },
      { kind: "Lease" },
    );
    await assert.rejects(a.allocate({ workload, policy: policy(1), dryRun: false }), /etcd down/);
    assert.equal((await a.allocate({ workload, policy: policy(1), dryRun: false })).capacity, "on-demand");
  });

  it("drops aborted requests before writing them", async () => {
    const { a } = setup();
    const ctl = new AbortController();
    ctl.abort(new Error("deadline"));
    await assert.rejects(
      a.allocate({ workload, policy: policy(1), dryRun: false, signal: ctl.signal }),
      /deadline/,
    );
    assert.equal((await a.allocate({ workload, policy: policy(1), dryRun: false })).capacity, "on-demand");
  });
});
