import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MemoryKube } from "../kube/memory/memory.ts";
import type { Event, Node, Pod } from "../objects/kube.ts";
import { FakeClock } from "../shared/clock.ts";
import { node, pod } from "./fixtures.ts";
import { InformerSource } from "./informer-source.ts";
import { trim } from "./trim.ts";
import type { SourceChange } from "./source.ts";
import type { WireObject } from "../wire/wire.ts";
import type { SpotPolicyResource, WarmupPolicyResource } from "../objects/policy-crds.ts";

/** A fixture object as a client would create it (no server-set fields). */
function fresh(o: WireObject): unknown {
  const { resourceVersion: _rv, uid: _uid, ...metadata } = o.object.metadata;
  return { ...o.object, metadata };
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
      const { objects, changes } = await src.open(ac.signal);
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

  it("holds only trimmed objects: the snapshot, the informers' caches and the changes", async () => {
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
      const { objects, changes, trimmed } = await src.open(ac.signal);
      assert.equal(trimmed, true);
      const stored = await kube.get("Node", "node-1");
      assert.deepEqual(objects, [trim({ kind: "Node", object: stored })]);
      for (const inf of src.informers)
        for (const o of inf.list()) {
          assert.equal(JSON.stringify(o).includes("managedFields"), false);
          assert.equal(JSON.stringify(o).includes("last-applied"), false);
        }
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
      const { objects, changes } = await new InformerSource({ client: kube, clock }).open(ac.signal);
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
      const { objects } = await new InformerSource({ client: kube, clock }).open(ac.signal);
      assert.deepEqual(
        objects.map((o) => o.kind),
        ["Node"],
      );
    } finally {
      ac.abort();
    }
  });
});
