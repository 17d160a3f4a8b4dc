import { describe, it } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import assert from "node:assert/strict";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { Event, Node, Pod } from "../objects/kube.ts";
import { FakeClock } from "../shared/clock.ts";
import { node, pod } from "./fixtures.ts";
import { InformerSource } from "./informer-source.ts";
import { trim } from "./trim.ts";
import { ClusterState } from "../state/cluster.ts";
import type { SourceChange, SourceStream } from "./source.ts";
import type { WireObject } from "../wire/wire.ts";
import type { SpotPolicyResource, WarmupPolicyResource } from "../objects/policy-crds.ts";
import type { NodeOverlay } from "../objects/karpenter.ts";

/** A fixture object as a client would create it (no server-set fields). */
function fresh(o: WireObject): unknown {
  const { resourceVersion: _rv, uid: _uid, ...metadata } = o.object.metadata;
  return { ...o.object, metadata };
}

/** Everything one snapshot's listing gives. */
async function listAll(stream: SourceStream): Promise<WireObject[]> {
  const out: WireObject[] = [];
  for await (const page of stream.list() as AsyncIterable<readonly WireObject[]>) out.push(...page);
  return out;
}

function changed(c: SourceChange): { type: string; kind: string; name: string } {
  if (c.type === "replace") return { type: c.type, kind: "", name: "" };
  return { type: c.type, kind: c.object.kind, name: c.object.object.metadata.name ?? "" };
}

describe("InformerSource", () => {
  it("lists every kind as the snapshot, then streams adds, updates and deletes", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    await kube.create("Node", fresh(node(1)) as Node);
    await kube.create("Pod", fresh(pod(1, 2)) as Pod);
    const ac = new AbortController();
    try {
      const src = new InformerSource({ client: kube, clock });
      const stream = await src.open(ac.signal);
      const { changes } = stream;
      const objects = await listAll(stream);
      assert.deepEqual(objects.map((o) => `${o.kind}/${o.object.metadata.name ?? ""}`).sort(), [
        "Node/node-1",
        "Pod/app-1",
      ]);
      const it = changes[Symbol.asyncIterator]();
      const next = async (): Promise<SourceChange> => (await it.next()).value as SourceChange;

      await kube.create("Node", fresh(node(2)) as Node);
      assert.deepEqual(changed(await next()), { type: "upsert", kind: "Node", name: "node-2" });

      const ev: Event = {
        metadata: { name: "e1", namespace: "default" },
        involvedObject: { kind: "Node", name: "node-2" },
        reason: "DisruptionTerminating",
        message: "Disrupting Node: Empty",
      };
      await kube.create("Event", ev);
      assert.deepEqual(changed(await next()), { type: "upsert", kind: "Event", name: "e1" });

      await kube.delete("Pod", "app-1", { namespace: "ns-1" });
      assert.deepEqual(changed(await next()), { type: "delete", kind: "Pod", name: "app-1" });
    } finally {
      ac.abort();
    }
  });

  it("keeps no object: the informers' caches hold stubs, the snapshot and the changes are trimmed", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    const bulky = {
      managedFields: [{ manager: "kubelet", operation: "Update" as const, fieldsV1: { "f:status": {} } }],
      annotations: { "kubectl.kubernetes.io/last-applied-configuration": "x".repeat(500) },
    };
    const n = fresh(node(1)) as Node;
    await kube.create("Node", { ...n, metadata: { ...n.metadata, ...bulky } });
    const unrelated: Event = {
      metadata: { name: "pulled", namespace: "default" },
      involvedObject: { kind: "Pod", name: "p" },
      reason: "Pulled",
      source: { component: "kubelet" },
    };
    await kube.create("Event", unrelated);
    const ac = new AbortController();
    try {
      const src = new InformerSource({ client: kube, clock });
      const stream = await src.open(ac.signal);
      const { changes, trimmed } = stream;
      assert.equal(trimmed, true);
      const stored = await kube.get("Node", "node-1");
      assert.deepEqual(await listAll(stream), [trim({ kind: "Node", object: stored })]);
      assert.equal(stream.count?.(), 1);
      for (const inf of src.informers)
        for (const o of inf.list())
          assert.deepEqual(o, {
            metadata: { name: o.metadata.name, resourceVersion: stored.metadata.resourceVersion },
          });
      assert.equal(src.informers.find((i) => i.kind === "Event")?.size, 0, "unrelated Events not kept");

      const it = changes[Symbol.asyncIterator]();
      await kube.patch("Node", "node-1", { metadata: { labels: { moved: "1" } } });
      const c = (await it.next()).value as SourceChange;
      assert.equal(c.type, "upsert");
      assert.deepEqual(c.object, trim({ kind: "Node", object: await kube.get("Node", "node-1") }));
    } finally {
      ac.abort();
    }
  });
});

describe("InformerSource: the policy custom resources", () => {
  const spot: SpotPolicyResource = {
    apiVersion: "wave.sh/v1alpha1",
    kind: "SpotPolicy",
    metadata: { name: "web", namespace: "shop" },
    spec: { targetRef: { kind: "Deployment", name: "web" }, threshold: 2, strategy: "Prefer" },
  };
  const warm: WarmupPolicyResource = {
    apiVersion: "wave.sh/v1alpha1",
    kind: "WarmupPolicy",
    metadata: { name: "general" },
    spec: { nodePool: "general", enabled: true },
  };

  it("streams SpotPolicies and WarmupPolicies with who manages them, not their field sets", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    await kube.patch("SpotPolicy", "web", spot, {
      namespace: "shop",
      type: "apply",
      fieldManager: "argocd-controller",
    });
    const ac = new AbortController();
    try {
      const stream = await new InformerSource({ client: kube, clock }).open(ac.signal);
      const { changes } = stream;
      const objects = await listAll(stream);
      const found = objects.find((o) => o.kind === "SpotPolicy");
      assert.ok(found);
      const cr = found.object;
      assert.equal(cr.spec.threshold, 2);
      assert.deepEqual(
        cr.metadata.managedFields?.map((m) => [m.manager, m.operation, m.fieldsV1]),
        [["argocd-controller", "Apply", undefined]],
      );
      const it = changes[Symbol.asyncIterator]();
      await kube.patch("WarmupPolicy", "general", warm, { type: "apply", fieldManager: "wave-console" });
      assert.deepEqual(changed((await it.next()).value as SourceChange), {
        type: "upsert",
        kind: "WarmupPolicy",
        name: "general",
      });
    } finally {
      ac.abort();
    }
  });

  it("a cluster without the CRDs still gets its snapshot (the policy informers keep retrying)", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    await kube.create("Node", fresh(node(1)) as Node);
    kube.inject((req) =>
      req.kind === "SpotPolicy" || req.kind === "WarmupPolicy"
        ? {
            kind: "Status",
            code: 404,
            reason: "NotFound",
            message: "the server could not find the requested resource",
          }
        : undefined,
    );
    const ac = new AbortController();
    try {
      const objects = await listAll(await new InformerSource({ client: kube, clock }).open(ac.signal));
      assert.deepEqual(
        objects.map((o) => o.kind),
        ["Node"],
      );
    } finally {
      ac.abort();
    }
  });
});

describe("InformerSource: Karpenter's NodeOverlays (v1.8+)", () => {
  const overlay: NodeOverlay = {
    apiVersion: "karpenter.sh/v1alpha1",
    kind: "NodeOverlay",
    metadata: { name: "savings-plan", annotations: { note: "dropped" } },
    spec: {
      requirements: [{ key: "node.kubernetes.io/instance-type", operator: "In", values: ["m5.large"] }],
      priceAdjustment: "-30%",
      capacity: { "smarter-devices/fuse": "1" },
      weight: 10,
    },
    status: {
      conditions: [
        {
          type: "ValidationSucceeded",
          status: "True",
          reason: "ValidationSucceeded",
          lastTransitionTime: "t",
        },
        { type: "Ready", status: "True" },
      ],
    },
  };

  it("streams them trimmed to what pricing reads and keeps them in the warmup state", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    await kube.create("NodeOverlay", overlay);
    const state = new ClusterState();
    const ac = new AbortController();
    try {
      const stream = await new InformerSource({ client: kube, clock, state }).open(ac.signal);
      const found = (await listAll(stream)).find((o) => o.kind === "NodeOverlay");
      assert.ok(found);
      assert.deepEqual(found.object.spec, { ...overlay.spec, capacity: { "smarter-devices/fuse": "" } });
      assert.deepEqual(found.object.status, {
        conditions: [{ type: "ValidationSucceeded", status: "True", reason: "ValidationSucceeded" }],
      });
      assert.equal(found.object.metadata.annotations, undefined);
      assert.deepEqual(
        state.nodeOverlays().map((o) => o.spec.priceAdjustment),
        ["-30%"],
      );
    } finally {
      ac.abort();
    }
  });

  for (const [code, why] of [
    [404, "without the NodeOverlay CRD (Karpenter before v1.8)"],
    [403, "whose agent role cannot read NodeOverlays (a chart from before)"],
  ] as const)
    it(`a cluster ${why} streams everything else`, async () => {
      const clock = new FakeClock();
      const kube = new MemoryKube({ clock });
      await kube.create("Node", fresh(node(1)) as Node);
      kube.inject((req) =>
        req.kind === "NodeOverlay"
          ? { kind: "Status", code, reason: code === 404 ? "NotFound" : "Forbidden", message: why }
          : undefined,
      );
      const ac = new AbortController();
      try {
        const objects = await listAll(await new InformerSource({ client: kube, clock }).open(ac.signal));
        assert.deepEqual(
          objects.map((o) => o.kind),
          ["Node"],
        );
      } finally {
        ac.abort();
      }
    });
});

describe("InformerSource: the warmup projection (ClusterState beside the agent)", () => {
  /** A pod not bound yet, with the scheduling constraints warmup's fit reads. */
  function pending(name: string): Pod {
    const p = fresh(pod(1, 1)) as Pod;
    const { nodeName: _n, ...spec } = p.spec;
    return {
      ...p,
      metadata: { ...p.metadata, name, labels: { app: "web", "wave.sh/warmup": "false" } },
      spec: {
        ...spec,
        tolerations: [{ key: "spot", operator: "Exists", effect: "NoSchedule" }],
        nodeSelector: { "karpenter.sh/nodepool": "general" },
      },
      status: { phase: "Pending" },
    };
  }

  async function until(what: string, pred: () => boolean): Promise<void> {
    for (let i = 0; i < 200 && !pred(); i++) await new Promise((r) => setTimeout(r, 5));
    assert.ok(pred(), what);
  }

  it("a pending pod is kept whole; bound, it keeps what warmup reads of a node's pods; deleted, it is gone", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    await kube.create("Node", fresh(node(1)) as Node);
    await kube.create("Pod", pending("web-1"));
    const state = new ClusterState();
    const ac = new AbortController();
    try {
      await new InformerSource({ client: kube, clock, state }).open(ac.signal);
      const [p] = state.pendingPods();
      assert.ok(p);
      assert.deepEqual(p.spec.nodeSelector, { "karpenter.sh/nodepool": "general" });
      assert.equal(p.spec.tolerations?.length, 1);
      assert.equal(p.spec.containers[0]?.image, "registry.example/app:1.0");
      const requests = state.podRequests("ns-1", "web-1");
      assert.ok(requests);

      await kube.patch(
        "Pod",
        "web-1",
        { spec: { nodeName: "node-1" }, status: { phase: "Running" } },
        {
          namespace: "ns-1",
        },
      );
      await until("bound", () => state.pendingPods().length === 0);
      const [bound] = state.podsOnNode("node-1");
      assert.ok(bound);
      assert.equal(bound.spec.nodeName, "node-1");
      // Its pool's workload: the largest pod's constraints go to the warmup pod, its images are
      // pre-pulled. Limits are not read.
      assert.deepEqual(bound.spec.nodeSelector, { "karpenter.sh/nodepool": "general" });
      assert.equal(bound.spec.tolerations?.length, 1);
      assert.deepEqual(bound.spec.containers, [
        {
          name: "app",
          image: "registry.example/app:1.0",
          resources: { requests: { cpu: "100m", memory: "128Mi" } },
        },
      ]);
      assert.deepEqual(bound.metadata.labels, { "wave.sh/warmup": "false" }, "only Wave's labels");
      assert.equal(bound.metadata.ownerReferences, undefined, "only a DaemonSet owner is read");
      assert.equal(bound.status?.phase, "Running");
      assert.deepEqual(state.podRequests("ns-1", "web-1"), requests, "what it requests is what it did");

      await kube.delete("Pod", "web-1", { namespace: "ns-1" });
      await until("deleted", () => state.podsOnNode("node-1", { includeTerminal: true }).length === 0);
      assert.equal(state.counts().pods, 0);
    } finally {
      ac.abort();
    }
  });

  it("a relist after 410 Gone replaces the projection and forwards the deletes it finds", async () => {
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock, historyLimit: 1 });
    await kube.create("Pod", pending("a"));
    await kube.create("Pod", pending("b"));
    const state = new ClusterState();
    const ac = new AbortController();
    try {
      const src = new InformerSource({
        client: kube,
        clock,
        state,
        informer: { Pod: { backoff: { initialMs: 1, maxMs: 1 } } },
      });
      const { changes } = await src.open(ac.signal);
      const pods = src.informers.find((i) => i.kind === "Pod");
      assert.ok(pods);
      await until("watching", () => kube.watcherCount("Pod") === 1);
      kube.dropWatches("Pod", new Error("connection reset"));
      // While the informer is away, b goes and c comes, past the watch history: 410, relist.
      await kube.delete("Pod", "b", { namespace: "ns-1" });
      await kube.create("Pod", pending("c"));
      const d = pending("d");
      await kube.create("Pod", { ...d, spec: { ...d.spec, nodeName: "node-1" } });
      for (let i = 0; i < 200 && pods.stats.relists === 0; i++) {
        await clock.advance(1);
        await new Promise((r) => setTimeout(r, 2));
      }
      assert.equal(pods.stats.relists, 1);
      assert.deepEqual(
        state
          .pendingPods()
          .map((p) => p.metadata.name)
          .sort(),
        ["a", "c"],
      );
      const [bound] = state.podsOnNode("node-1");
      assert.equal(bound?.metadata.name, "d");
      assert.deepEqual(
        bound.metadata.labels,
        { "wave.sh/warmup": "false" },
        "a bound pod listed by the relist is projected too",
      );
      const it = changes[Symbol.asyncIterator]();
      const seen: { type: string; kind: string; name: string }[] = [];
      let last: SourceChange | undefined;
      for (let i = 0; i < 3; i++) {
        last = (await it.next()).value as SourceChange;
        seen.push(changed(last));
      }
      assert.equal(last?.type, "delete");
      // One object for the informer's cache and the state: the projection.
      const a = state.pendingPods().find((p) => p.metadata.name === "a");
      assert.ok(a);
      assert.equal(pods.get("a", "ns-1"), a);
      assert.deepEqual(seen, [
        { type: "upsert", kind: "Pod", name: "c" },
        { type: "upsert", kind: "Pod", name: "d" },
        { type: "delete", kind: "Pod", name: "b" },
      ]);
      assert.equal(
        src.informers.reduce((n, i) => n + i.size, 0),
        3,
      );
    } finally {
      ac.abort();
    }
  });

  it("keeps a bound pod in under 660 bytes of heap: projection, informer cache, state entry and indexes", async () => {
    // Issue 30: 300,000 such pods are most of a 10k-node agent. 685–719 B here before the pods'
    // objects were built without property arrays, keys shared their "namespace/" and the state's
    // entry shrank; 553–626 B after (Node 24; after this file's other tests, or alone). Measured
    // after full collections, the apiserver's copies made before.
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const used = (): number => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    const clock = new FakeClock();
    const kube = new MemoryKube({ clock });
    const pods = 6000;
    const nodes = pods / 30;
    for (let i = 0; i < nodes; i++) await kube.create("Node", fresh(node(i)) as Node);
    for (let i = 0; i < pods; i++) await kube.create("Pod", fresh(pod(i, nodes)) as Pod);
    const ac = new AbortController();
    try {
      const before = used();
      const state = new ClusterState();
      await new InformerSource({ client: kube, clock, state }).open(ac.signal);
      const perPod = (used() - before) / pods;
      assert.equal(state.podsOnNode("node-7").length, 30);
      assert.ok(perPod < 660, `${perPod.toFixed(0)} B per bound pod`);
    } finally {
      ac.abort();
    }
  });
});
