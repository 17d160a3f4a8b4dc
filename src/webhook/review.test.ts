import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { Pod } from "../objects/kube.ts";
import { FakeClock, flushMicrotasks } from "../shared/clock.ts";
import type { AdmissionReviewResponse, JsonPatchOp } from "./admission.ts";
import { SlotAllocator, type Allocator } from "./allocator.ts";
import { jsonPatch as applyJsonPatch } from "../kube/memory/patch.ts";
import { fixturePolicies } from "./placement.test-helper.ts";
import { createSpotMetrics } from "./metrics.ts";
import { decide, review, type ReviewDeps } from "./review.ts";
import { loadFixture, reviewFor } from "./test-helpers.ts";
import { ASSIGNMENT_LABEL, NOTE_ANNOTATION, SLOT_LABEL } from "../objects/wave.ts";
import { CAPACITY_TYPE_LABEL } from "../objects/karpenter.ts";

const policies = fixturePolicies({ web: 1, db: 3, api: 0, checkout: 2 });

function deps(over: Partial<ReviewDeps> = {}): ReviewDeps & { clock: FakeClock } {
  const clock = new FakeClock();
  const allocator = new SlotAllocator({ kube: new MemoryKube({ clock }), namespace: "wave", clock });
  return { policies, allocator, clock, ...over } as ReviewDeps & { clock: FakeClock };
}

function patchOf(res: AdmissionReviewResponse): JsonPatchOp[] {
  assert.equal(res.response.allowed, true);
  if (res.response.patch === undefined) return [];
  assert.equal(res.response.patchType, "JSONPatch");
  return JSON.parse(Buffer.from(res.response.patch, "base64").toString("utf8")) as JsonPatchOp[];
}

const patched = (r: ReturnType<typeof loadFixture>, res: AdmissionReviewResponse): Pod =>
  applyJsonPatch(r.request.object as Pod, patchOf(res));

describe("decide", () => {
  const lookup = (ref: Parameters<typeof policies.lookup>[0]) => policies.lookup(ref);
  it("resolves Deployment and StatefulSet pods to their policy", () => {
    const d = decide(loadFixture("deployment-pod-generatename").request, lookup);
    assert.deepEqual(d.action === "assign" && d.workload, {
      namespace: "shop",
      kind: "Deployment",
      name: "web",
    });
    const s = decide(loadFixture("statefulset-pod").request, lookup);
    assert.deepEqual(s.action === "assign" && s.workload, {
      namespace: "shop",
      kind: "StatefulSet",
      name: "db",
    });
  });

  it("allows Jobs, unknown operations and kinds unchanged", () => {
    assert.equal(decide(loadFixture("job-pod").request, lookup).action, "allow");
    const upd = loadFixture("deployment-pod-generatename").request;
    upd.operation = "UPDATE";
    assert.equal(decide(upd, lookup).action, "allow");
    const binding = loadFixture("deployment-pod-generatename").request;
    binding.subResource = "binding";
    assert.equal(decide(binding, lookup).action, "allow");
    const cm = loadFixture("deployment-pod-generatename").request;
    cm.kind = { group: "", version: "v1", kind: "ConfigMap" };
    assert.equal(decide(cm, lookup).action, "allow");
  });

  it("allows pods of workloads without a policy", () => {
    const r = loadFixture("deployment-pod-generatename").request;
    r.namespace = "other";
    assert.deepEqual(decide(r, lookup), { action: "allow", reason: "no spot policy for the workload" });
  });
});

describe("review", () => {
  it("assigns the first N pods on-demand and the rest spot-preferred", async () => {
    const d = deps();
    const caps: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = reviewFor("deployment-pod-generatename", i);
      const res = await review(r.request, d);
      assert.equal(res.response.uid, r.request.uid);
      const pod = patched(r, res);
      caps.push(pod.metadata.labels?.[ASSIGNMENT_LABEL] ?? "none");
    }
    assert.deepEqual(caps, ["on-demand", "spot", "spot"]);
  });

  it("leaves a pod that constrains capacity type itself, with a warning and an annotation", async () => {
    const r = loadFixture("capacity-constrained");
    const res = await review(r.request, deps());
    const pod = patched(r, res);
    assert.deepEqual(pod.spec, (r.request.object as Pod).spec);
    assert.match(
      pod.metadata.annotations?.[NOTE_ANNOTATION] ?? "",
      /already constrains karpenter\.sh\/capacity-type \(nodeSelector\)/,
    );
    assert.equal(pod.metadata.labels?.[ASSIGNMENT_LABEL], undefined);
    assert.equal(res.response.warnings?.length, 1);
  });

  it("re-asserts a reinvoked pod's slot without taking a new one", async () => {
    const d = deps();
    const r = reviewFor("statefulset-pod", 1);
    const first = patched(r, await review(r.request, d));
    const again = reviewFor("statefulset-pod", 2, (x) => (x.request.object = first));
    const res = await review(again.request, d);
    assert.deepEqual(patchOf(res), []);
    assert.equal(first.metadata.labels?.[SLOT_LABEL] !== undefined, true);
  });

  it("admits with the fallback when the ledger misses the deadline", async () => {
    const never: Allocator = { allocate: () => new Promise(() => undefined) };
    const d = deps({ allocator: never, deadlineMs: 800 });
    const r = loadFixture("deployment-pod-generatename");
    const pending = review(r.request, d);
    await flushMicrotasks();
    await d.clock.advance(800);
    const res = await pending;
    const pod = patched(r, res);
    assert.equal(pod.spec.affinity, undefined, "unchanged by default");
    assert.match(
      pod.metadata.annotations?.[NOTE_ANNOTATION] ?? "",
      /not placed by Wave: spot ledger not reached within 800 ms/,
    );
    assert.equal(res.response.warnings?.length, 1);
  });

  it("a workload's fallback and late-answer series start at 0 with its first admission, then count", async () => {
    const metrics = createSpotMetrics();
    const series = async (): Promise<string[]> =>
      (await metrics.registry.render())
        .split("\n")
        .filter((l) => /^wave_spot_(fallbacks|late_answers)_total\{/.test(l))
        .sort();
    assert.deepEqual(await series(), [], "nothing before any admission");
    const ok = deps({ metrics });
    await review(reviewFor("deployment-pod-generatename", 1).request, ok);
    const w = 'workload="shop/Deployment/web"';
    assert.deepEqual(await series(), [
      `wave_spot_fallbacks_total{${w},reason="deadline"} 0`,
      `wave_spot_fallbacks_total{${w},reason="error"} 0`,
      `wave_spot_late_answers_total{${w}} 0`,
    ]);
    const never: Allocator = { allocate: () => new Promise(() => undefined) };
    const slow = deps({ metrics, allocator: never, deadlineMs: 800 });
    const pending = review(reviewFor("deployment-pod-generatename", 2).request, slow);
    await flushMicrotasks();
    await slow.clock.advance(800);
    await pending;
    assert.ok((await series()).includes(`wave_spot_fallbacks_total{${w},reason="deadline"} 1`));
  });

  it("a late answer is recorded for the workload's Event; an in-time answer is not", async () => {
    const recorded: string[] = [];
    const lateAnswers = { record: (w: string) => recorded.push(w) };
    await review(reviewFor("deployment-pod-generatename", 1).request, deps({ lateAnswers }));
    assert.deepEqual(recorded, [], "answered in time");
    let release = (): void => undefined;
    const gate = new Promise<void>((res) => (release = res));
    // Grants after the fallback went out, whatever the abort signal says (a late answer).
    const late = { capacity: "spot" } as Awaited<ReturnType<Allocator["allocate"]>>;
    const slowAlloc: Allocator = { allocate: () => gate.then(() => late) };
    const slow = deps({ lateAnswers, allocator: slowAlloc, deadlineMs: 800 });
    const pending = review(reviewFor("deployment-pod-generatename", 2).request, slow);
    await flushMicrotasks();
    await slow.clock.advance(800);
    await pending;
    release();
    for (let i = 0; i < 20 && recorded.length === 0; i++) await flushMicrotasks();
    assert.deepEqual(recorded, ["shop/Deployment/web"]);
  });

  it("spot-preferred fallback adds only a preference and no slot labels", async () => {
    const failing: Allocator = { allocate: () => Promise.reject(new Error("boom")) };
    const r = loadFixture("deployment-pod-generatename");
    const pod = patched(r, await review(r.request, deps({ allocator: failing, fallback: "spot-preferred" })));
    assert.equal(
      pod.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.preference
        .matchExpressions?.[0]?.key,
      CAPACITY_TYPE_LABEL,
    );
    assert.equal(pod.metadata.labels?.[SLOT_LABEL], undefined);
  });

  it("a dry-run answer takes no slot", async () => {
    const d = deps();
    const dry = reviewFor("deployment-pod-generatename", 1, (x) => (x.request.dryRun = true));
    assert.equal(patched(dry, await review(dry.request, d)).metadata.labels?.[ASSIGNMENT_LABEL], "on-demand");
    const real = reviewFor("deployment-pod-generatename", 2);
    assert.equal(
      patched(real, await review(real.request, d)).metadata.labels?.[ASSIGNMENT_LABEL],
      "on-demand",
    );
  });
});
