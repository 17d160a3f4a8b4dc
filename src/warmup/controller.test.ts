import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DO_NOT_DISRUPT_ANNOTATION, NODE_POOL_LABEL } from "../objects/karpenter.ts";
import { WarmupController } from "./controller.ts";
import { PREPULL_COMMAND } from "./manifests.ts";
import {
  CREATED_AT_ANNOTATION,
  DEADLINE_ANNOTATION,
  DO_NOT_DISRUPT_NAMESPACE_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  LAST_WARMUP_AT_ANNOTATION,
  LAST_WARMUP_NAMESPACE_ANNOTATION,
  PREPULL_IMAGE_ANNOTATION,
  PREPULL_LABEL,
  WARMUP_LABEL,
  WARMUP_POOL_LABEL,
  WARMUP_PRIORITY_CLASS_NAME,
  WARMUP_UNUSED_STREAK_ANNOTATION,
} from "../objects/wave.ts";
import { DEFAULT_POLICY } from "../policy/warmup.ts";
import { iso, node, nodeClaim, nodePool, pod, T0 } from "./testing/fixtures.ts";
import { launchFor, NS, pulls, setup, warmups } from "./testing/controller-setup.ts";

describe("WarmupController", () => {
  it("creates a warmup pod when no Ready node fits the largest pod, and only one", async () => {
    const { kube, events, controller } = await setup();
    const c = controller();
    await c.start();
    const [wp, ...rest] = await warmups(kube);
    assert.ok(wp);
    assert.equal(rest.length, 0);
    assert.equal(wp.metadata.namespace, NS);
    assert.equal(wp.metadata.labels?.[WARMUP_POOL_LABEL], "general");
    assert.equal(wp.spec.priorityClassName, WARMUP_PRIORITY_CLASS_NAME);
    assert.equal(wp.spec.nodeSelector?.[NODE_POOL_LABEL], "general");
    assert.deepEqual(wp.spec.containers[0]?.resources?.requests, { cpu: "3", memory: "4Gi" });
    assert.equal(wp.metadata.annotations?.[DEADLINE_ANNOTATION], iso(T0 + 600_000));
    const pc = await kube.get("PriorityClass", WARMUP_PRIORITY_CLASS_NAME);
    assert.equal(pc.value, -10);
    assert.equal(pc.preemptionPolicy, "Never");
    const poolMarks = (await kube.get("NodePool", "general")).metadata.annotations;
    assert.equal(poolMarks?.[LAST_WARMUP_AT_ANNOTATION], iso(T0));
    assert.equal(poolMarks[LAST_WARMUP_NAMESPACE_ANNOTATION], NS);
    assert.deepEqual(
      events.map((e) => e.type),
      ["created"],
    );
    // Pending warmup: a second reconcile must not start another.
    const r = await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 1);
    assert.equal(r.requeueAfter, 5_000);
  });

  it("creates nothing when a node has room", async () => {
    const { kube, controller } = await setup();
    await kube.create("Node", node("n2", "general", { cpu: "8", memory: "32Gi" }));
    await controller().start();
    assert.equal((await warmups(kube)).length, 0);
  });

  it("creates nothing while the policy is disabled", async () => {
    const { kube, controller } = await setup({ enabled: false });
    await controller().start();
    assert.equal((await warmups(kube)).length, 0);
  });

  it("keeps up to maxWarmNodes warm slots, launching one at a time", async () => {
    const { kube, controller } = await setup({ maxWarmNodes: 2, cooldownSeconds: 0 });
    const c = controller();
    await c.start();
    const [first] = await warmups(kube);
    assert.ok(first);
    await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 1, "one launch in flight at a time");
    await launchFor(kube, first, "w1");
    await c.reconcile("general");
    const all = await warmups(kube);
    assert.equal(all.length, 2);
    const second = all.find((p) => p.metadata.name !== first.metadata.name);
    assert.ok(second);
    await launchFor(kube, second, "w2");
    await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 2);
  });

  it("does not warm up a pool at its spec.limits", async () => {
    const { kube, controller } = await setup();
    await kube.patch("NodePool", "general", {
      spec: { limits: { cpu: "6" } },
      status: { resources: { cpu: "4" } },
    });
    await controller().start();
    assert.equal((await warmups(kube)).length, 0);
  });

  it("protects the warm node until a real pod lands (hit), then cleans up", async () => {
    const { clock, kube, events, controller } = await setup();
    const c = controller();
    await c.start();
    const [wp] = await warmups(kube);
    assert.ok(wp);
    await clock.advance(60_000);
    await launchFor(kube, wp, "w1");
    const r = await c.reconcile("general");
    for (const kind of ["Node", "NodeClaim"] as const) {
      const a = (await kube.get(kind, kind === "Node" ? "w1" : "claim-w1")).metadata.annotations ?? {};
      assert.equal(a[DO_NOT_DISRUPT_ANNOTATION], "true", kind);
      assert.equal(a[DO_NOT_DISRUPT_OWNER_ANNOTATION], "warmup", kind);
    }
    // Next wake-up is no later than the TTL deadline.
    assert.ok(r.requeueAfter <= 540_000);
    // A DaemonSet pod is not a hit.
    await kube.create("Pod", pod("ds", { cpu: "100m", node: "w1", daemonSet: true, created: clock.now() }));
    await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 1);
    // A real pod lands on the warm node.
    await clock.advance(30_000);
    await kube.create(
      "Pod",
      pod("real", { cpu: "3", memory: "4Gi", node: "w1", created: clock.now(), ready: clock.now() + 2_000 }),
    );
    await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 0);
    for (const kind of ["Node", "NodeClaim"] as const) {
      const o = await kube.get(kind, kind === "Node" ? "w1" : "claim-w1");
      assert.equal(o.metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION], undefined, kind);
      assert.equal(o.metadata.annotations?.[DO_NOT_DISRUPT_OWNER_ANNOTATION], undefined, kind);
    }
    assert.deepEqual(
      events.map((e) => e.type),
      ["created", "hit"],
    );
    // Both nodes are full again, but the cooldown holds the next warmup back.
    await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 0);
  });

  it("ends a warmup nobody used at the TTL (miss) the same way", async () => {
    const { clock, kube, events, controller } = await setup();
    const c = controller();
    await c.start();
    const [wp] = await warmups(kube);
    assert.ok(wp);
    await launchFor(kube, wp, "w1");
    await c.reconcile("general");
    await clock.advance(599_000);
    await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 1);
    await clock.advance(1_000);
    await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 0);
    assert.equal((await kube.get("Node", "w1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION], undefined);
    assert.equal(
      (await kube.get("NodeClaim", "claim-w1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION],
      undefined,
    );
    assert.deepEqual(events.at(-1), {
      type: "miss",
      pool: "general",
      at: T0 + 600_000,
      reason: "ttl",
      node: "w1",
      since: T0,
    });
  });

  it("backs off after unused warm nodes Karpenter consolidates, and a hit resets it", async () => {
    const { clock, kube, events, controller } = await setup();
    const c = controller();
    await c.start();
    const streak = async (): Promise<string | undefined> =>
      (await kube.get("NodePool", "general")).metadata.annotations?.[WARMUP_UNUSED_STREAK_ANNOTATION];
    // A warm node nobody uses: TTL passes, Wave releases it, Karpenter consolidates it.
    const unused = async (name: string): Promise<void> => {
      const [wp] = await warmups(kube);
      assert.ok(wp, `a warmup pod for ${name}`);
      await launchFor(kube, wp, name);
      await c.reconcile("general");
      await clock.advance(600_000);
      await c.reconcile("general");
      await kube.delete("NodeClaim", `claim-${name}`);
      await kube.delete("Node", name);
    };
    await unused("w1");
    assert.equal(await streak(), "1");
    const createdAt = (): number[] => events.filter((e) => e.type === "created").map((e) => e.at);
    // The policy's cooldown (5 min) has long passed, but not the back-off: a TTL past the release.
    await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 0, "no new warm node right after the release");
    await clock.advance(599_000);
    await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 0, "still backing off");
    await clock.advance(1_000);
    await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 1, "warm again a TTL after the release");
    await unused("w2");
    assert.equal(await streak(), "2");
    const gaps = createdAt().map((t, i, all) => t - (all[i - 1] ?? t));
    // Second unused node: 10 min TTL + 20 min → 20 min after its release.
    await clock.advance(1_199_000);
    await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 0, "the cooldown doubled");
    await clock.advance(1_000);
    await c.reconcile("general");
    const [wp] = await warmups(kube);
    assert.ok(wp);
    // This one is used: the streak resets.
    await launchFor(kube, wp, "w3");
    await c.reconcile("general");
    await clock.advance(30_000);
    await kube.create(
      "Pod",
      pod("real", { cpu: "3", memory: "4Gi", node: "w3", created: clock.now(), ready: clock.now() + 2_000 }),
    );
    await c.reconcile("general");
    assert.equal(await streak(), "0");
    assert.deepEqual(gaps, [0, 1_200_000]);
  });

  it("never touches a do-not-disrupt the user set", async () => {
    const { clock, kube, controller } = await setup();
    const c = controller();
    await c.start();
    const [wp] = await warmups(kube);
    assert.ok(wp);
    await launchFor(kube, wp, "w1");
    await kube.patch("Node", "w1", { metadata: { annotations: { [DO_NOT_DISRUPT_ANNOTATION]: "true" } } });
    await c.reconcile("general");
    assert.equal(
      (await kube.get("Node", "w1")).metadata.annotations?.[DO_NOT_DISRUPT_OWNER_ANNOTATION],
      undefined,
    );
    await clock.advance(600_000);
    await c.reconcile("general");
    assert.equal((await warmups(kube)).length, 0);
    assert.equal((await kube.get("Node", "w1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION], "true");
  });

  it("leaves another Wave instance's warm node alone (found on the shared e2e rig)", async () => {
    const { clock, kube, events, controller } = await setup();
    const c = controller();
    await c.start();
    const [wp] = await warmups(kube);
    assert.ok(wp);
    await launchFor(kube, wp, "w1");
    await c.reconcile("general");
    const marks = (await kube.get("Node", "w1")).metadata.annotations ?? {};
    assert.equal(marks[DO_NOT_DISRUPT_NAMESPACE_ANNOTATION], NS);
    // A second install in another namespace, warmup off for this pool: to it, w1 has no live
    // warmup pod — yet it is not its node to release.
    const other = new WarmupController({
      client: kube,
      view: kube.state,
      clock,
      namespace: "wave-other",
      policyOf: () => DEFAULT_POLICY,
      onEvent: (e) => events.push(e),
    });
    await other.start();
    await other.reconcile("general");
    for (const kind of ["Node", "NodeClaim"] as const) {
      const a = (await kube.get(kind, kind === "Node" ? "w1" : "claim-w1")).metadata.annotations ?? {};
      assert.equal(a[DO_NOT_DISRUPT_ANNOTATION], "true", kind);
      assert.equal(a[DO_NOT_DISRUPT_OWNER_ANNOTATION], "warmup", kind);
    }
    assert.deepEqual(
      events.map((e) => e.type),
      ["created"],
    );
    // Later passes write nothing to it either.
    const before = kube.calls.length;
    await other.reconcile("general");
    assert.deepEqual(
      kube.calls.slice(before).filter((x) => x.kind === "Node" || x.kind === "NodeClaim"),
      [],
    );
    // The owner still ends it at its TTL.
    await clock.advance(600_000);
    await c.reconcile("general");
    assert.equal((await kube.get("Node", "w1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION], undefined);
    assert.equal(
      (await kube.get("Node", "w1")).metadata.annotations?.[DO_NOT_DISRUPT_NAMESPACE_ANNOTATION],
      undefined,
    );
  });

  it("resumes after a restart mid-warmup: adopts, leaves no orphans, still enforces the TTL", async () => {
    const { clock, kube, events, controller } = await setup();
    const first = controller();
    await first.start();
    const [wp] = await warmups(kube);
    assert.ok(wp);
    await launchFor(kube, wp, "w1");
    await first.reconcile("general");
    // Leftovers of a pool that no longer exists.
    await kube.create("Pod", {
      ...pod("stale", { namespace: NS }),
      metadata: {
        name: "stale",
        namespace: NS,
        labels: { [WARMUP_LABEL]: "true", [WARMUP_POOL_LABEL]: "gone" },
        annotations: { [CREATED_AT_ANNOTATION]: iso(T0), [DEADLINE_ANNOTATION]: iso(T0 + 600_000) },
      },
    });
    await clock.advance(120_000);
    // The first instance dies; a new one starts over the same store.
    const second = controller();
    const before = kube.calls.length;
    await second.start();
    const writes = kube.calls.slice(before).filter((x) => x.op !== "replace");
    assert.deepEqual(
      writes.map((x) => `${x.op} ${x.kind} ${x.name}`),
      ["delete Pod stale"],
    );
    assert.deepEqual(
      (await warmups(kube)).map((p) => p.metadata.name),
      [wp.metadata.name],
    );
    assert.equal(
      (await kube.get("Node", "w1")).metadata.annotations?.[DO_NOT_DISRUPT_OWNER_ANNOTATION],
      "warmup",
    );
    await clock.advance(480_000);
    await second.reconcile("general");
    assert.equal((await warmups(kube)).length, 0);
    assert.equal((await kube.get("Node", "w1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION], undefined);
    assert.deepEqual(
      events.map((e) => e.type),
      ["created", "miss", "miss"],
    );
  });

  /** A warm node w1 whose warmup pod the scheduler has just deleted (preempted), 10 s later. */
  async function preemptedWarmNode() {
    const env = await setup();
    const c = env.controller();
    await c.start();
    const [wp] = await warmups(env.kube);
    assert.ok(wp);
    await launchFor(env.kube, wp, "w1");
    await c.reconcile("general");
    await env.clock.advance(10_000);
    await env.kube.delete("Pod", wp.metadata.name ?? "", { namespace: NS });
    return { ...env, c };
  }

  it("resolves a warm node whose warmup pod vanished (preempted) as a hit", async () => {
    // The scheduler preempts the warmup pod for a real one; Wave was down meanwhile.
    const { clock, kube, events, controller } = await preemptedWarmNode();
    await kube.create(
      "Pod",
      pod("real", { cpu: "3", node: "w1", created: clock.now(), ready: clock.now() + 2_000 }),
    );
    await controller().start();
    assert.equal((await kube.get("Node", "w1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION], undefined);
    assert.equal(
      (await kube.get("NodeClaim", "claim-w1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION],
      undefined,
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ["created", "hit"],
    );
  });

  it("waits for a preemptor nominated to the warm node to bind (async preemption), then counts the hit", async () => {
    // kube-scheduler 1.36 deletes the victim first; the real pod is only nominated for a moment.
    const { clock, kube, events, c } = await preemptedWarmNode();
    const real = pod("real", { cpu: "3", created: clock.now() });
    real.status = { ...real.status, nominatedNodeName: "w1" };
    await kube.create("Pod", real);
    await c.reconcile("general");
    assert.equal(
      (await kube.get("Node", "w1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION],
      "true",
      "still warm",
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ["created"],
      "neither hit nor miss while only nominated",
    );
    await kube.delete("Pod", "real", { namespace: "apps" });
    await kube.create(
      "Pod",
      pod("real", { cpu: "3", node: "w1", created: clock.now(), ready: clock.now() + 2_000 }),
    );
    await c.reconcile("general");
    assert.equal((await kube.get("Node", "w1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION], undefined);
    assert.deepEqual(
      events.map((e) => e.type),
      ["created", "hit"],
    );
  });

  it("releases a NodeClaim left protected after its node was released (crash in between)", async () => {
    const { kube, events, controller } = await setup();
    await kube.create("Node", node("w1", "general"));
    const claim = nodeClaim("claim-w1", "general", "w1");
    claim.metadata.annotations = {
      [DO_NOT_DISRUPT_ANNOTATION]: "true",
      [DO_NOT_DISRUPT_OWNER_ANNOTATION]: "warmup",
      [DEADLINE_ANNOTATION]: iso(T0),
    };
    await kube.create("NodeClaim", claim);
    // A user's own claim annotation stays.
    const mine = nodeClaim("claim-n1", "general", "n1");
    mine.metadata.annotations = { [DO_NOT_DISRUPT_ANNOTATION]: "true" };
    await kube.create("NodeClaim", mine);
    await controller().start();
    assert.equal(
      (await kube.get("NodeClaim", "claim-w1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION],
      undefined,
    );
    assert.equal(
      (await kube.get("NodeClaim", "claim-n1")).metadata.annotations?.[DO_NOT_DISRUPT_ANNOTATION],
      "true",
    );
    assert.deepEqual(
      events.filter((e) => e.type !== "created"),
      [],
    );
  });

  it("pre-pulls the pool's missing images onto the warm node, all at once", async () => {
    const { kube, events, controller } = await setup({ prePull: true });
    // Another workload of the pool, pending, with an init container image.
    await kube.create(
      "Pod",
      pod("web", {
        cpu: "100m",
        nodeSelector: { [NODE_POOL_LABEL]: "general" },
        image: "example.com/web:2",
        initImage: "example.com/migrate:2",
      }),
    );
    // A pod of another pool must not contribute images.
    await kube.create("NodePool", nodePool("other", { labels: { team: "x" } }));
    await kube.create("Pod", pod("x", { nodeSelector: { team: "x" }, image: "example.com/other:1" }));
    const c = controller();
    await c.start();
    const [wp] = await warmups(kube);
    assert.ok(wp);
    // The node already has the web image.
    await launchFor(kube, wp, "w1", ["example.com/web:2"]);
    let inFlight = 0;
    let maxInFlight = 0;
    kube.createGate = async () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setImmediate(r));
      inFlight--;
    };
    await c.reconcile("general");
    const created = await pulls(kube);
    assert.deepEqual(created.map((p) => p.metadata.annotations?.[PREPULL_IMAGE_ANNOTATION]).sort(), [
      "example.com/big:1",
      "example.com/migrate:2",
    ]);
    assert.equal(maxInFlight, 2, "pull pods are created concurrently");
    for (const p of created) {
      assert.equal(p.spec.nodeName, "w1");
      assert.equal(p.metadata.namespace, NS);
      assert.equal(p.metadata.labels?.[PREPULL_LABEL], "true");
      assert.deepEqual(p.spec.containers[0]?.command, PREPULL_COMMAND);
    }
    // Still running: nothing new. Then one succeeds and one fails to start (no shell).
    await c.reconcile("general");
    assert.equal((await pulls(kube)).length, 2);
    const [a, b] = created;
    assert.ok(a && b);
    await kube.patch("Pod", a.metadata.name ?? "", { status: { phase: "Succeeded" } }, { namespace: NS });
    await kube.patch(
      "Pod",
      b.metadata.name ?? "",
      {
        status: {
          phase: "Failed",
          containerStatuses: [
            { name: "pull", state: { terminated: { reason: "StartError", exitCode: 128 } } },
          ],
        },
      },
      { namespace: NS },
    );
    await c.reconcile("general");
    assert.equal((await pulls(kube)).length, 0);
    // Recorded on the node, so KWOK-like nodes without image lists are not pulled again.
    await c.reconcile("general");
    assert.equal((await pulls(kube)).length, 0);
    assert.deepEqual(
      events.flatMap((e) => (e.type === "prepull" ? [e.outcome] : [])),
      ["pulled", "pulled"],
    );
  });

  it("removes pull pods past their deadline and when the warmup ends", async () => {
    const { clock, kube, controller } = await setup({ prePull: true, prePullDeadlineSeconds: 60 });
    const c = controller();
    await c.start();
    const [wp] = await warmups(kube);
    assert.ok(wp);
    await launchFor(kube, wp, "w1");
    await c.reconcile("general");
    assert.equal((await pulls(kube)).length, 1);
    await clock.advance(60_000);
    await c.reconcile("general");
    assert.equal((await pulls(kube)).length, 0);
    assert.ok((await kube.get("Node", "w1")).metadata.annotations?.["wave.sh/prepulled"]);
    await clock.advance(600_000);
    await c.reconcile("general");
    assert.equal((await kube.get("Node", "w1")).metadata.annotations?.["wave.sh/prepulled"], undefined);
  });
});
