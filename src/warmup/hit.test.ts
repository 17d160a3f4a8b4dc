// What a hit is (issue 38): a pending pod of the pool placed on a node Wave's warmup made
// Karpenter launch, while it is held warm — counted once the pod runs, with its measured start. A
// warmup pod that lands on a node that ran before the warmup is no warm node: removed, nothing counted.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DO_NOT_DISRUPT_ANNOTATION, HOSTNAME_LABEL } from "../objects/karpenter.ts";
import {
  CREATED_AT_ANNOTATION,
  DEADLINE_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
} from "../objects/wave.ts";
import { iso, node, nodeClaim, pod, T0 } from "./testing/fixtures.ts";
import { launchFor, NS, setup, warmups } from "./testing/controller-setup.ts";

describe("warmup hits", () => {
  it("asks for no hostname: Karpenter ignores pods that name one (a restricted label)", async () => {
    const { kube, controller } = await setup();
    await controller().start();
    const [wp] = await warmups(kube);
    assert.ok(wp);
    const terms =
      wp.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
    assert.ok(!terms.some((t) => t.matchExpressions?.some((e) => e.key === HOSTNAME_LABEL)));
    assert.equal(wp.spec.nodeSelector?.[HOSTNAME_LABEL], undefined);
  });

  it("removes a warmup pod bound to a node older than the warmup and counts nothing", async () => {
    const { clock, kube, events, controller } = await setup();
    await clock.advance(11 * 3_600_000);
    const c = controller();
    await c.start();
    const [wp] = await warmups(kube);
    assert.ok(wp);
    // Room freed on the 11-hour-old n1 (its pod ended) and the scheduler bound the warmup pod there.
    await kube.delete("Pod", "big", { namespace: "apps" });
    await clock.advance(30_000);
    await kube.patch("Pod", wp.metadata.name ?? "", { spec: { nodeName: "n1" } }, { namespace: NS });
    await c.reconcile("general");
    assert.equal((await warmups(kube)).filter((p) => p.spec.nodeName === "n1").length, 0);
    assert.equal((await kube.get("Node", "n1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION], undefined);
    // A real pod then lands on n1: no hit, no miss — n1 was never warm.
    await kube.create(
      "Pod",
      pod("real", { cpu: "3", node: "n1", created: clock.now(), ready: clock.now() + 1_000 }),
    );
    await c.reconcile("general");
    assert.deepEqual(
      events.map((e) => e.type),
      ["created"],
    );
  });

  it("makes no warmup pod while an older node has room for it, warms once that room is gone", async () => {
    // Two warm slots wanted; n2 (empty, older than any warmup) is one. A warmup pod would be bound
    // to n2 and removed at once, pass after pass, and n2 — never empty for long — never consolidated.
    const { clock, kube, events, controller } = await setup({ maxWarmNodes: 2, cooldownSeconds: 0 });
    await kube.create("Node", node("n2", "general", { cpu: "4", memory: "16Gi" }));
    await clock.advance(3_600_000);
    const c = controller();
    await c.start();
    await c.reconcile("general");
    assert.deepEqual(await warmups(kube), []);
    assert.deepEqual(events, []);
    assert.equal(c.outcome("general")?.state, "idle");
    // Karpenter consolidates the empty n2: no room left, so warm nodes are launched for the pool.
    await kube.delete("Node", "n2");
    await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 1);
  });

  it("releases an old node carrying Wave's mark (an older build's) without counting a hit", async () => {
    const { clock, kube, events, controller } = await setup();
    await clock.advance(11 * 3_600_000);
    // n1 ran for 11 h; a warmup mark from T0 + 11 h is on it, and a real pod lands.
    const since = clock.now();
    await kube.patch("Node", "n1", {
      metadata: {
        annotations: {
          [DO_NOT_DISRUPT_ANNOTATION]: "true",
          [DO_NOT_DISRUPT_OWNER_ANNOTATION]: "warmup",
          [CREATED_AT_ANNOTATION]: iso(since),
          [DEADLINE_ANNOTATION]: iso(since + 600_000),
        },
      },
    });
    await kube.create("Pod", pod("real", { cpu: "1", node: "n1", created: since, ready: since + 1_000 }));
    await controller().reconcile("general");
    assert.equal((await kube.get("Node", "n1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION], undefined);
    assert.deepEqual(
      events.filter((e) => e.type === "hit" || e.type === "miss"),
      [],
    );
  });

  it("counts a hit once its pod runs, with the pod and its measured start; protected until then", async () => {
    const { clock, kube, events, controller } = await setup();
    const c = controller();
    await c.start();
    const [wp] = await warmups(kube);
    assert.ok(wp);
    await clock.advance(60_000);
    await launchFor(kube, wp, "w1");
    await c.reconcile("general");
    await clock.advance(30_000);
    const created = clock.now();
    // Preempts the warmup pod; starting (not Ready yet).
    await kube.delete("Pod", wp.metadata.name ?? "", { namespace: NS });
    await kube.create("Pod", pod("real", { cpu: "3", memory: "4Gi", node: "w1", created }));
    const r = await c.reconcile("general");
    assert.ok(r.requeueAfter <= 5_000, "looked at again soon");
    assert.equal((await kube.get("Node", "w1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION], "true");
    assert.deepEqual(
      events.map((e) => e.type),
      ["created"],
    );
    await clock.advance(4_000);
    await kube.patch(
      "Pod",
      "real",
      {
        status: { conditions: [{ type: "Ready", status: "True", lastTransitionTime: iso(created + 3_000) }] },
      },
      { namespace: "apps" },
    );
    await c.reconcile("general");
    assert.deepEqual(events.at(-1), {
      type: "hit",
      pool: "general",
      at: T0 + 94_000,
      node: "w1",
      pod: "apps/real",
      seconds: 3,
      since: T0,
    });
    assert.equal((await kube.get("Node", "w1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION], undefined);
  });

  it("counts a hit without a start when its pod never runs within the wait", async () => {
    const { clock, kube, events, controller } = await setup();
    const c = controller();
    await c.start();
    const [wp] = await warmups(kube);
    assert.ok(wp);
    await clock.advance(60_000);
    await kube.create("Node", node("w1", "general", { cpu: "4", memory: "16Gi" }));
    await kube.create("NodeClaim", nodeClaim("claim-w1", "general", "w1"));
    await kube.patch("Pod", wp.metadata.name ?? "", { spec: { nodeName: "w1" } }, { namespace: NS });
    await c.reconcile("general");
    await kube.create("Pod", pod("stuck", { cpu: "1", node: "w1", created: clock.now() }));
    await c.reconcile("general");
    assert.equal(events.filter((e) => e.type === "hit").length, 0);
    await clock.advance(10 * 60_000);
    await c.reconcile("general");
    const hit = events.find((e) => e.type === "hit");
    assert.deepEqual(hit && { pod: hit.pod, seconds: hit.seconds }, {
      pod: "apps/stuck",
      seconds: undefined,
    });
  });

  it("counts a hit when a real pod takes the node launched for the pending warmup pod before it binds", async () => {
    // kube-scheduler places higher-priority pods first: a pod that comes while the warm node boots
    // gets it, the negative-priority warmup pod stays pending and Karpenter would launch again.
    const { clock, kube, events, controller } = await setup();
    const c = controller();
    await c.start();
    const [wp] = await warmups(kube);
    assert.ok(wp);
    await clock.advance(30_000);
    const nominate = async (claim: string): Promise<void> => {
      await kube.create(
        "Event",
        {
          apiVersion: "v1",
          kind: "Event",
          metadata: { name: `${wp.metadata.name ?? ""}.${claim}`, namespace: NS },
          involvedObject: { kind: "Pod", name: wp.metadata.name ?? "", namespace: NS },
          reason: "Nominated",
          message: `Pod should schedule on: nodeclaim/${claim}`,
        },
        { namespace: NS },
      );
    };
    await nominate("claim-w1");
    await clock.advance(30_000);
    // Two new nodes, each with a real pod created since the warmup: w2 was launched for that pod
    // (the warmup pod was never nominated to it), w1 for the warmup pod.
    for (const n of ["w2", "w1"]) {
      await kube.create("Node", node(n, "general", { cpu: "4", memory: "16Gi" }));
      await kube.create("NodeClaim", nodeClaim(`claim-${n}`, "general", n));
      await kube.create(
        "Pod",
        pod(`real-${n}`, {
          cpu: "3",
          memory: "4Gi",
          node: n,
          created: T0 + 10_000,
          ready: clock.now() + 2_000,
        }),
      );
    }
    await clock.advance(5_000);
    await c.reconcile("general");
    assert.deepEqual(
      events.flatMap((e) => (e.type === "hit" ? [[e.node, e.pod, e.since]] : [])),
      [["w1", "apps/real-w1", T0]],
    );
    assert.deepEqual(await warmups(kube), [], "the warmup pod goes: Karpenter launches nothing more for it");
  });

  it("leaves a pending warmup pod waiting when only a node it was not nominated to holds a new pod", async () => {
    const { clock, kube, events, controller } = await setup();
    const c = controller();
    await c.start();
    await clock.advance(60_000);
    await kube.create("Node", node("w2", "general", { cpu: "4", memory: "16Gi" }));
    await kube.create("NodeClaim", nodeClaim("claim-w2", "general", "w2"));
    await kube.create("Pod", pod("real", { cpu: "3", memory: "4Gi", node: "w2", created: T0 + 10_000 }));
    await c.reconcile("general");
    assert.equal(events.filter((e) => e.type === "hit").length, 0);
    assert.equal((await warmups(kube)).length, 1);
  });
});
