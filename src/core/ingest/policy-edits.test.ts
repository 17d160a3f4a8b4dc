// Policy edits down the agent stream over the real gRPC path (ADR 0018): core sends the edit to
// the cluster's agent, the agent server-side applies it (field manager wave-console) against an
// apiserver — here the in-memory one — and the outcome or conflict comes back to the caller.
import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { applyPolicyEdit } from "../../agent/policy-apply.ts";
import { MemoryKube } from "../../kube/memory/memory.ts";
import type { SpotPolicyResource } from "../../objects/policy-crds.ts";
import { FakeClock } from "../../shared/clock.ts";
import { runAgent } from "./agent.test-helper.ts";
import { IngestCore } from "./core.ts";
import { PolicyEditUnavailable, PolicyEdits } from "./policy-edits.ts";
import { MemorySink } from "./sink.ts";
import { startIngestServer } from "./server.ts";
import { within } from "./testing.ts";

const TOKEN = "s3cret-token";
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const spot = (threshold: number, by = "token:admin"): SpotPolicyResource => ({
  apiVersion: "wave.sh/v1alpha1",
  kind: "SpotPolicy",
  metadata: { name: "web", namespace: "shop", annotations: { "wave.sh/changed-by": by } },
  spec: { targetRef: { kind: "Deployment", name: "web" }, threshold, strategy: "Prefer" },
});

async function rig(opts: { withKube?: boolean } = {}) {
  const kube = new MemoryKube();
  const core = new IngestCore({ sink: new MemorySink(), coreVersion: "test" });
  const server = await startIngestServer({ core, port: 0, host: "127.0.0.1", tokens: [TOKEN] });
  cleanups.push(() => server.close());
  const { agent, stop } = runAgent({
    coreUrl: `http://127.0.0.1:${server.port}`,
    token: TOKEN,
    clusterId: "alpha",
    ...(opts.withKube === false ? {} : { onPolicyEdit: (e) => applyPolicyEdit(kube, e) }),
  });
  cleanups.push(stop);
  await within(
    10_000,
    agent.until((a) => a.status === "streaming"),
    "agent streaming",
  );
  return { kube, core, stop };
}

const apply = (threshold: number, force = false) =>
  ({
    kind: "SpotPolicy",
    namespace: "shop",
    name: "web",
    op: "apply",
    object: spot(threshold),
    force,
  }) as const;

describe("policy edits over the agent stream", () => {
  it("applies an edit with field manager wave-console and returns the stored resource", async () => {
    const { kube, core } = await rig();
    const r = await within(10_000, core.edits.edit("alpha", apply(3)), "edit answer");
    assert.equal(r.outcome, "applied");
    const cr = await kube.get("SpotPolicy", "web", "shop");
    assert.equal(cr.spec.threshold, 3);
    assert.deepEqual(
      cr.metadata.managedFields?.map((m) => `${m.manager}/${m.operation}`),
      ["wave-console/Apply"],
    );
    assert.equal((r.object as SpotPolicyResource).metadata.resourceVersion, cr.metadata.resourceVersion);
  });

  it("a field another manager owns comes back as a conflict naming it, nothing changes; force takes it", async () => {
    const { kube, core } = await rig();
    await kube.patch("SpotPolicy", "web", spot(1, "git"), {
      namespace: "shop",
      type: "apply",
      fieldManager: "argocd-controller",
    });
    const before = await kube.get("SpotPolicy", "web", "shop");
    const r = await within(10_000, core.edits.edit("alpha", apply(4)), "edit answer");
    assert.equal(r.outcome, "conflict");
    assert.deepEqual(
      r.conflicts.map((c) => `${c.manager} ${c.field}`).sort(),
      [
        'argocd-controller .metadata.annotations["wave.sh/changed-by"]',
        "argocd-controller .spec.threshold",
      ].sort(),
    );
    assert.deepEqual(await kube.get("SpotPolicy", "web", "shop"), before);

    const forced = await within(10_000, core.edits.edit("alpha", apply(4, true)), "forced answer");
    assert.equal(forced.outcome, "applied");
    assert.equal((await kube.get("SpotPolicy", "web", "shop")).spec.threshold, 4);
  });

  it("create never overwrites an existing resource (the migration)", async () => {
    const { kube, core } = await rig();
    await kube.patch("SpotPolicy", "web", spot(1), {
      namespace: "shop",
      type: "apply",
      fieldManager: "kubectl",
    });
    const r = await within(10_000, core.edits.edit("alpha", { ...apply(9), op: "create" }), "create answer");
    assert.equal(r.outcome, "exists");
    assert.equal((await kube.get("SpotPolicy", "web", "shop")).spec.threshold, 1);
  });

  it("an agent that is not connected fails at once; one that disconnects fails its waiting edits", async () => {
    const { core, stop } = await rig({ withKube: false });
    await assert.rejects(
      core.edits.edit("beta", apply(1)),
      (e: unknown) =>
        e instanceof PolicyEditUnavailable &&
        e.reason === "disconnected" &&
        /beta is not connected/.test(e.message),
    );
    const edits = new PolicyEdits({ clock: new FakeClock() });
    const detach = edits.attach("alpha", () => undefined);
    const waiting = edits.edit("alpha", apply(1));
    detach();
    await assert.rejects(waiting, /disconnected before answering/);
    await stop();
  });

  it("an edit the agent does not answer in time fails with a timeout (injected clock)", async () => {
    const clock = new FakeClock();
    const edits = new PolicyEdits({ clock, timeoutMs: 5_000 });
    const sent: number[] = [];
    edits.attach("alpha", (e) => sent.push(e.id));
    const waiting = edits.edit("alpha", apply(1));
    const failed = assert.rejects(
      waiting,
      (e: unknown) => e instanceof PolicyEditUnavailable && e.reason === "timeout",
    );
    await clock.advance(5_000);
    await failed;
    // A late answer is dropped, not delivered to anyone.
    edits.settle("alpha", { id: sent[0] ?? 0, outcome: "applied", message: "", conflicts: [] });
  });
});
